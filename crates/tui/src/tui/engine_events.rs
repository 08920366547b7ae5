//! How the app follows the engine: each [`Event`] updates the lifecycle, the transcript, the
//! status figures or the view stack.
//!
//! Invariants: a turn's end (`TurnFinished`) always returns the lifecycle to `Idle` and
//! closes any approval view (its call no longer waits); a streamed reply is committed before
//! anything else is added after it, so the transcript keeps the engine's order.

use codewhale_protocol::{
    AnchorChange, BranchSummaryState, CompactionTrigger, Event, EventMsg, HistoryPage, NoticeLevel,
    TurnStats, TurnStatus,
};

use super::app::{App, Gauge, Lifecycle, Pending, Retry, TurnProgress};
use super::approval_view::ApprovalView;
use super::branch_cell::BranchSummaryCell;
use super::cells::short_tokens;
use super::cells::{AnchorCell, CompactionCell, CompactionSummary, NoticeKind};
use super::event::Effect;
use super::page_cells;
use super::plan_cell::PlanCell;
use super::slash_dispatch::{anchors_text, context_text, cost_text, status_text};
use super::tool_cell::{ToolCell, ToolState};
use super::views::{TextView, ViewKind};

/// "12.3 s · 45.2k tokens in · 1.2k out · $0.0123": what a turn took, its cost when the model
/// has a known price (summary requests named apart). A turn cut short before any reply
/// finished has no counts to report, which is not the provider's fault.
fn stats_line(stats: &TurnStats, status: TurnStatus) -> String {
    let secs = stats.elapsed_ms as f64 / 1000.0;
    let time = if secs < 60.0 {
        format!("{secs:.1} s")
    } else {
        format!("{} min {} s", stats.elapsed_ms / 60_000, (stats.elapsed_ms / 1000) % 60)
    };
    let requests = match stats.requests {
        1 => String::new(),
        n => format!(" in {n} requests"),
    };
    let cost = match (stats.cost_usd, stats.compaction_cost_usd) {
        (Some(turn), Some(summaries)) if summaries > 0.0 => {
            format!(
                " · {} (+ {} for summaries)",
                crate::figures::dollars(turn),
                crate::figures::dollars(summaries)
            )
        }
        (Some(turn), _) => format!(" · {}", crate::figures::dollars(turn)),
        (None, _) => String::new(),
    };
    if stats.reported {
        format!(
            "{time}{requests} · {} tokens in · {} out{cost}",
            short_tokens(stats.input_tokens),
            short_tokens(stats.output_tokens)
        )
    } else if status == TurnStatus::Completed {
        format!("{time}{requests} · the provider did not report token counts")
    } else {
        format!("{time}{requests} · cut short before the provider reported token counts")
    }
}

fn notice_kind(level: NoticeLevel) -> NoticeKind {
    match level {
        NoticeLevel::Info => NoticeKind::Info,
        NoticeLevel::Warning => NoticeKind::Warning,
        NoticeLevel::Error => NoticeKind::Error,
    }
}

impl App {
    pub(crate) fn on_engine(&mut self, msg: EventMsg) {
        let pending = self.outbox.answered(msg.id);
        match msg.event {
            Event::SessionOpening { bytes, .. } => self.session.opening = Some(bytes),
            Event::SessionConfigured {
                session_id, model, resumed, workspace, approval, ..
            } => {
                self.session.workspace = Some(workspace.into());
                self.session.approval = approval;
                self.session.opening = None;
                let short: String = session_id.chars().take(8).collect();
                let what = if resumed { "resumed session" } else { "new session" };
                let text = format!("{what} {short} · {model} · /help lists the commands");
                if resumed {
                    // Shown under the conversation, which the engine's first page brings.
                    self.paging.reset_notice = Some(text);
                } else {
                    self.notice(NoticeKind::Info, text);
                }
                if let Some(old) = self.session.kept.take().filter(|_| !resumed) {
                    // The new session's id shares the old one's first characters (both begin
                    // with the time): the prefix offered is worked out against every session.
                    self.effects.push(Effect::NameKept { old, new: session_id.clone() });
                }
                self.session.session_id = session_id;
                self.session.model = model;
            }
            Event::History { page } => self.on_history(page, pending),
            Event::MessageTakenBack { text } => self.message_taken_back(text),
            Event::ImagesAttached { images } => self.images_attached(images),
            Event::TurnStarted => {
                self.lifecycle = Lifecycle::Streaming { thinking: false };
                self.progress.clock = self.progress.clock.max(std::time::Instant::now());
                self.progress.turn_progress =
                    Some(TurnProgress { since: self.progress.clock, bytes: 0 });
            }
            Event::TextDelta { text } => {
                self.progress.retry = None;
                if let Some(p) = self.progress.turn_progress.as_mut() {
                    p.bytes += text.len();
                }
                self.transcript.push_delta(&text);
                self.lifecycle = Lifecycle::Streaming { thinking: false };
            }
            Event::ThinkingDelta { text } => {
                self.transcript.push_thinking(&text);
                self.lifecycle = Lifecycle::Streaming { thinking: true };
            }
            Event::ToolCallRequested { call_id, name, input } => {
                self.transcript.push(ToolCell::new(call_id, name, &input));
            }
            Event::ToolCallStarted { call_id, name } => {
                let running = ToolState::Running { elapsed_secs: 0, live: String::new() };
                self.set_tool_state(&call_id, running);
                // The clock ticks only while something animates; it stood still while the
                // call waited for approval, which is not the call's time.
                self.progress.clock = self.progress.clock.max(std::time::Instant::now());
                self.progress.running_since.push((call_id, self.progress.clock));
                self.lifecycle = Lifecycle::RunningTool { name };
            }
            Event::UserShellStarted { call_id, command } => {
                let running = ToolState::Running { elapsed_secs: 0, live: String::new() };
                self.transcript.push(ToolCell::user_shell(call_id.clone(), &command, running));
                self.progress.clock = self.progress.clock.max(std::time::Instant::now());
                self.progress.running_since.push((call_id, self.progress.clock));
                self.lifecycle = Lifecycle::RunningTool { name: format!("!{command}") };
            }
            Event::UserShellFinished { call_id, output, end, exit_code, .. } => {
                self.progress.running_since.retain(|(id, _)| *id != call_id);
                let done = ToolState::Done {
                    end,
                    exit_code,
                    exit_code_in_output: exit_code.is_some(),
                    reason: None,
                    output,
                };
                self.set_tool_state(&call_id, done);
                self.lifecycle = Lifecycle::Idle;
                self.send_queued();
            }
            Event::ToolOutputDelta { call_id, text } => {
                self.transcript.update_last(|cell| {
                    super::tool_cell::tool_mut(cell).is_some_and(|tool| {
                        let hit = tool.call_id == call_id;
                        if hit {
                            tool.push_live(&text);
                        }
                        hit
                    })
                });
            }
            Event::ToolCallFinished {
                call_id,
                output,
                end,
                exit_code,
                exit_code_in_output,
                reason,
                diff,
                ..
            } => {
                self.progress.running_since.retain(|(id, _)| *id != call_id);
                let done = ToolState::Done { end, exit_code, exit_code_in_output, reason, output };
                self.set_tool_state(&call_id, done);
                if let Some(diff) = diff {
                    // What the write or edit changed, folded under its call.
                    self.transcript.push(super::diff_cell::DiffCell { diff, ..Default::default() });
                }
                self.lifecycle = Lifecycle::Streaming { thinking: false };
            }
            Event::ApprovalNeeded { call_id, name, input, reason, offers, diff } => {
                self.call_back(&format!("Codewhale: {name} waits for your approval"));
                let view = ApprovalView::new(call_id, name, &input, reason, offers, diff);
                self.views.push(view);
                self.lifecycle = Lifecycle::AwaitingApproval;
            }
            Event::Retrying { attempt, max_attempts, wait_ms, reason } => {
                let wait = std::time::Duration::from_millis(wait_ms);
                self.progress.retry =
                    Some(Retry { attempt, max_attempts, until: self.progress.clock + wait });
                let secs = wait_ms.div_ceil(1000);
                self.notice(
                    NoticeKind::Warning,
                    format!("{reason}; retrying in {secs} s (attempt {attempt} of {max_attempts})"),
                );
            }
            Event::Grants { mode, grants, sandbox } => self.show_grants(mode, grants, sandbox),
            Event::McpServers { servers } => self.show_mcp_servers(servers),
            Event::UserMessages { messages } => self.show_branch_points(messages, pending),
            Event::Branches { branches } => self.show_branch_tips(branches, pending),
            Event::Models { models } => self.show_models(models),
            Event::WorkspaceDiff { diff, files, since } => {
                if files == 0 {
                    self.notice(NoticeKind::Info, format!("no changes since {since}"));
                } else {
                    let lines = diff
                        .lines()
                        .map(|l| {
                            let style = super::diff_cell::diff_style(l);
                            ratatui::text::Line::styled(l.to_owned(), style)
                        })
                        .collect();
                    let s = if files == 1 { "" } else { "s" };
                    let title = format!("{files} file{s} changed since {since}");
                    self.views.push(TextView::from_lines(title, lines));
                }
            }
            Event::Status { status } if pending == Some(Pending::Cost) => {
                self.views.push(TextView::new("cost", &cost_text(&status.spend)))
            }
            Event::Status { status } => {
                self.views.push(TextView::new("status", &status_text(&status)))
            }
            Event::Transcript { transcript } => self.on_transcript(*transcript, pending),
            Event::RestorePreview { files, .. } => self.on_restore_preview(files, pending),
            Event::ComposerText { text } => self.edit_again(text),
            Event::Usage { pressure, usable_input, window_unverified, model, .. } => {
                self.session.gauge = Some(Gauge { pressure, usable_input, window_unverified });
                self.session.model = model;
            }
            Event::Plan { plan, updated } => {
                if let (Some(plan), true) = (&plan, updated) {
                    self.transcript.push(PlanCell { plan: plan.clone() });
                }
                self.session.plan = plan;
            }
            Event::ContextReport { report } => {
                self.views.push(TextView::new("context", &context_text(&report)))
            }
            Event::Anchors { anchors } if pending == Some(Pending::ListAnchors) => {
                if anchors.is_empty() {
                    self.notice(NoticeKind::Info, "no anchors; /anchor <text> pins one");
                } else {
                    self.notice(NoticeKind::Info, anchors_text(&anchors));
                }
            }
            // The list after a change: the change itself was shown; `/anchor list` shows this.
            Event::Anchors { .. } => {}
            Event::Notice { level, message } => self.notice(notice_kind(level), message),
            // The note as the engine pinned it (redacted), beside the conversation.
            Event::AnchorChanged { change: AnchorChange::Pinned { text, .. }, .. } => {
                self.transcript.push_beside(AnchorCell { text })
            }
            Event::AnchorChanged { change: AnchorChange::Removed { .. }, message } => {
                self.notice(NoticeKind::Info, message)
            }
            Event::ModelSwitched { model, message } => {
                self.session.model = model;
                self.notice(NoticeKind::Info, message);
            }
            Event::ApprovalChanged { mode, message } => {
                self.session.approval = mode;
                self.notice(NoticeKind::Info, message);
            }
            // After the page of the new HEAD: shown under its conversation.
            Event::HeadMoved { level, message, .. } => self.notice(notice_kind(level), message),
            Event::GrantRevoked { grant } => {
                self.notice(NoticeKind::Info, format!("revoked: always for {grant}"))
            }
            Event::Error { message, .. } => {
                if pending == Some(Pending::Compact) {
                    // The pass never started (something else runs).
                    self.end_compaction();
                }
                self.notice(NoticeKind::Error, message)
            }
            Event::CompactionStarted { .. } => {
                let in_turn = self.lifecycle.turn_running();
                self.lifecycle = Lifecycle::Compacting { in_turn };
            }
            Event::CompactionFinished {
                id,
                trigger,
                path,
                tokens_before,
                tokens_after,
                covered,
                retained,
                note,
                background,
            } => {
                let summary = CompactionSummary {
                    id,
                    trigger,
                    path,
                    covered,
                    retained,
                    tokens_before,
                    tokens_after,
                    background,
                };
                // One inside a turn is followed by the turn's own end: called back once; one
                // done while idle is nothing the user waited for.
                let waited = trigger != CompactionTrigger::Idle;
                if waited && self.lifecycle == (Lifecycle::Compacting { in_turn: false }) {
                    let said = format!(
                        "Codewhale: compacted, {} → {} tokens",
                        short_tokens(tokens_before),
                        short_tokens(tokens_after)
                    );
                    self.call_back(&said);
                }
                self.transcript.push(CompactionCell::new(summary, Some(note)));
                self.end_compaction();
            }
            Event::BackgroundNote { state } => self.session.background_note = state,
            Event::CompactionProgress { request, of, tokens } => {
                self.session.compaction_progress = Some((request, of, tokens, self.progress.clock))
            }
            Event::BranchSummary { state, summary, reason } => {
                self.on_branch_summary(state, summary, reason)
            }
            Event::CompactionFailed { reason } => {
                self.notice(NoticeKind::Error, format!("compaction failed: {reason}"));
                self.end_compaction();
            }
            Event::CompactionRefused { reason } => {
                // Nothing could or needed to shrink: information, not a failure.
                self.notice(NoticeKind::Info, format!("nothing to compact: {reason}"));
                self.end_compaction();
            }
            Event::CompactionCancelled => {
                self.notice(NoticeKind::Warning, "compaction cancelled; nothing was changed");
                self.end_compaction();
            }
            Event::TurnFinished { status, stats, .. } => {
                self.call_back(match status {
                    TurnStatus::Completed => "Codewhale: the turn is done",
                    TurnStatus::Interrupted => "Codewhale: the turn was interrupted",
                    TurnStatus::Failed => "Codewhale: the turn failed",
                });
                self.progress.turn_ended();
                self.transcript.finish_active(status != TurnStatus::Completed);
                if stats.requests > 0 {
                    self.notice(NoticeKind::Info, stats_line(&stats, status));
                }
                if status == TurnStatus::Interrupted {
                    self.notice(
                        NoticeKind::Warning,
                        "interrupted; the session keeps what was done",
                    );
                }
                self.views.close(ViewKind::Approval);
                self.lifecycle = Lifecycle::Idle;
                self.send_queued();
            }
            Event::ShutdownComplete if self.keys.quitting => self.effects.push(Effect::Exit),
            // Only a quit shuts the engine down; anything else is the engine's own end, which
            // the error before it explains.
            Event::ShutdownComplete => {}
            // The notice before it says what was restored, and the page shows the new view.
            Event::FilesRestored { .. } => {}
        }
    }

    /// A page of the conversation: the newest one replaces what is shown (a session opened,
    /// HEAD moved); an older one goes above it.
    fn on_history(&mut self, page: HistoryPage, pending: Option<Pending>) {
        if pending == Some(Pending::KeepTranscript) {
            // HEAD did not move: what the user saw stays, footers, diffs and notices included;
            // the restore's notice follows.
            return;
        }
        if pending == Some(Pending::HeadBack) && page.reset && self.back_to(&page) {
            return;
        }
        let earlier = page_cells::transcript_of(&page);
        if page.reset {
            self.transcript = earlier;
            if let Some(text) = self.paging.reset_notice.take() {
                self.notice(NoticeKind::Info, text);
            }
            if let Some(text) = self.paging.carried_notice.take() {
                self.notice(NoticeKind::Info, text);
            }
            self.paging.older = page.older;
        } else if pending == Some(Pending::OlderHistory) {
            self.transcript.prepend(earlier);
            self.paging.older = page.older;
        }
    }

    /// HEAD went back to before an earlier message (a rewind, a fork, Esc Esc): when the
    /// transcript shows the whole conversation, it keeps what came before that point — turn
    /// footers, diffs and notices, as the user saw them — and drops only what followed; the
    /// move's notice comes next. `false` when the transcript cannot be matched (a resumed
    /// session shows only its newest page): the page then replaces it.
    fn back_to(&mut self, page: &HistoryPage) -> bool {
        if page.older.is_some() || self.paging.older.is_some() {
            return false;
        }
        let kept: Vec<&str> = page
            .items
            .iter()
            .filter_map(|i| match i {
                codewhale_protocol::HistoryItem::User { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        self.transcript.cut_after_user_messages(&kept)
    }

    /// The summary of the branch the user left: quiet while it is written; once written, its
    /// cell goes where the journal has it — at the end when idle, before the message just sent
    /// when a turn was starting.
    fn on_branch_summary(
        &mut self,
        state: BranchSummaryState,
        summary: Option<String>,
        reason: Option<String>,
    ) {
        self.session.branch_summary_writing = state == BranchSummaryState::Writing;
        match state {
            BranchSummaryState::Written => {
                if let Some(summary) = summary {
                    let cell = BranchSummaryCell { summary, ..Default::default() };
                    if self.lifecycle.turn_running() {
                        self.transcript.insert_before_last(cell);
                    } else {
                        self.transcript.push(cell);
                    }
                }
            }
            BranchSummaryState::Dropped => {
                let why = reason.unwrap_or_else(|| "it could not be written".into());
                self.notice(NoticeKind::Info, format!("no summary of the branch you left: {why}"));
            }
            // Writing shows in the status line; "none" answers an op only `codewhale rewind`
            // sends.
            BranchSummaryState::Writing | BranchSummaryState::None => {}
        }
    }

    fn end_compaction(&mut self) {
        self.session.compaction_progress = None;
        self.lifecycle = match self.lifecycle {
            Lifecycle::Compacting { in_turn: true } => Lifecycle::Streaming { thinking: false },
            Lifecycle::Compacting { in_turn: false } => Lifecycle::Idle,
            ref other => other.clone(),
        };
        self.send_queued();
    }

    fn set_tool_state(&mut self, call_id: &str, state: ToolState) {
        self.transcript.update_last(|cell| {
            super::tool_cell::tool_mut(cell).is_some_and(|tool| {
                if tool.call_id == call_id {
                    tool.state = state.clone();
                    true
                } else {
                    false
                }
            })
        });
    }
}
