//! How the app follows the engine: [`App::on_engine`] sends each [`Event`] to one `on_*`
//! method, one line per event. The methods live with what they change: the session's facts
//! here; a turn, its stream and its calls in `turn_events`; compaction, the background note and
//! branch summaries in `compaction_events`; answers to questions (reports, lists, pickers) in
//! `answer_events`; history pages in `history_events`, which replays a page through the same
//! cell builders the live events use (`cell_builders`).
//!
//! Invariants: a turn's end (`TurnFinished`) always returns the lifecycle to `Idle` and
//! closes any approval view (its call no longer waits); a streamed reply is committed before
//! anything else is added after it, so the transcript keeps the engine's order.

use codewhale_protocol::{
    AnchorChange, ApprovalMode, CustomCommandInfo, Event, EventMsg, Figure, Grant, NoticeLevel,
    Plan,
};

use super::app::{App, Gauge, Pending};
use super::cell_builders::{notice_kind, Ending};
use super::cells::{AnchorCell, CompactionSummary, NoticeKind, SideCell};
use super::event::Effect;
use super::plan_cell::PlanCell;
use super::restore_view::{RestoreTarget, RestoreView};

impl App {
    pub(crate) fn on_engine(&mut self, msg: EventMsg) {
        let pending = self.outbox.answered(msg.id);
        match msg.event {
            Event::SessionOpening { bytes, .. } => self.session.opening = Some(bytes),
            Event::SessionConfigured {
                session_id,
                model,
                resumed,
                workspace,
                approval,
                instructions,
                commands,
                ..
            } => {
                self.on_extensions(instructions, commands);
                self.on_session_configured(session_id, model, resumed, workspace, approval)
            }
            Event::History { page } => self.on_history(page, pending),
            Event::MessageTakenBack { text } => self.message_taken_back(text),
            Event::ImagesAttached { images } => self.images_attached(images),
            Event::TurnStarted => self.on_turn_started(),
            Event::TextDelta { text } => self.on_text_delta(&text),
            Event::ThinkingDelta { text } => self.on_thinking_delta(&text),
            Event::ToolCallRequested { call_id, name, input } => {
                self.on_tool_call_requested(&call_id, &name, &input)
            }
            Event::ToolCallStarted { call_id, name } => self.on_tool_call_started(call_id, name),
            Event::ToolOutputDelta { call_id, text } => self.on_tool_output(&call_id, &text),
            Event::SubagentStarted { call_id, description, session_id } => {
                self.on_subagent_started(&call_id, &description, session_id)
            }
            Event::SubagentProgress { call_id, step, tokens, compactions } => {
                self.on_subagent_progress(&call_id, &step, tokens, compactions)
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
            } => self.on_tool_call_finished(
                &call_id,
                Ending { end, exit_code, exit_code_in_output, reason, output },
                diff,
            ),
            Event::UserShellStarted { call_id, command } => {
                self.on_user_shell_started(call_id, &command)
            }
            Event::UserShellFinished { call_id, output, end, exit_code, .. } => {
                self.on_user_shell_finished(&call_id, Ending::user_shell(&output, end, exit_code))
            }
            Event::ApprovalNeeded { call_id, name, input, reason, offers, diff } => {
                self.on_approval_needed(call_id, name, &input, reason, offers, diff)
            }
            Event::Retrying { attempt, max_attempts, wait_ms, reason } => {
                self.on_retrying(attempt, max_attempts, wait_ms, &reason)
            }
            Event::TurnFinished { status, stats, .. } => self.on_turn_finished(status, &stats),
            Event::Grants { mode, grants, sandbox } => self.show_grants(mode, grants, sandbox),
            Event::McpServers { servers } => self.show_mcp_servers(servers),
            Event::UserMessages { messages } => self.show_branch_points(messages, pending),
            Event::Branches { branches } => self.show_branch_tips(branches, pending),
            Event::Models { models } => self.show_models(models),
            Event::WorkspaceDiff { diff, files, since } => {
                self.on_workspace_diff(&diff, files, &since)
            }
            Event::Status { status } => self.on_status(&status, pending),
            Event::Transcript { transcript } => self.on_transcript(*transcript, pending),
            Event::RestorePreview { files, .. } => self.on_restore_preview(files, pending),
            Event::ContextReport { report } => self.on_context_report(&report),
            Event::Anchors { anchors } => self.on_anchors(&anchors, pending),
            // After a checkout's page and its message: offered, never written without a yes.
            Event::BranchFiles { from, files } => {
                self.views.push(RestoreView::new(RestoreTarget::Checkout { from }, files))
            }
            Event::SideAnswer { question, answer, model, cost_usd, .. } => {
                self.on_side_answer(SideCell { question, answer, model, cost_usd })
            }
            Event::ComposerText { text } => self.edit_again(text),
            Event::Usage { pressure, usable_input, window_unverified, model, .. } => {
                self.on_usage(pressure, usable_input, window_unverified, model)
            }
            Event::Plan { plan, updated } => self.on_plan(plan, updated),
            Event::Notice { level, message } => self.notice(notice_kind(level), message),
            Event::AnchorChanged { change, message } => self.on_anchor_changed(change, message),
            Event::ModelSwitched { model, message } => self.on_model_switched(model, message),
            Event::ApprovalChanged { mode, message } => {
                self.on_approval_changed(mode, message, msg.id)
            }
            Event::HeadMoved { level, message, .. } => self.on_head_moved(level, message),
            Event::GrantRevoked { grant } => self.on_grant_revoked(&grant),
            Event::Error { message, .. } => self.on_error(message, pending),
            Event::CompactionStarted { .. } => self.on_compaction_started(),
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
            } => self.on_compaction_finished(
                CompactionSummary {
                    id,
                    trigger,
                    path,
                    covered,
                    retained,
                    tokens_before,
                    tokens_after,
                    background,
                },
                note,
            ),
            Event::CompactionProgress { request, of, tokens } => {
                self.on_compaction_progress(request, of, tokens)
            }
            Event::CompactionFailed { reason } => self.on_compaction_failed(&reason),
            Event::CompactionRefused { reason } => self.on_compaction_refused(&reason),
            Event::CompactionCancelled => self.on_compaction_cancelled(),
            Event::BackgroundNote { state } => self.session.background_note = state,
            Event::BranchSummary { state, summary, reason } => {
                self.on_branch_summary(state, summary, reason)
            }
            Event::ShutdownComplete => self.on_shutdown_complete(),
            // The notice before it says what was restored, and the page shows the new view.
            Event::FilesRestored { .. } => {}
            // `Event` is `#[non_exhaustive]`: an event a newer engine sends is skipped here.
            other => tracing::debug!("an engine event this UI does not know: {other:?}"),
        }
    }

    /// What the session found for its workspace: the instruction files it read (`/init`
    /// writes the workspace's own) and the custom commands (a clash with a built-in is said
    /// once).
    fn on_extensions(&mut self, instructions: Vec<String>, commands: Vec<CustomCommandInfo>) {
        self.session.instructions = instructions;
        if let Some(clash) = super::slash::clashes(&commands) {
            self.notice(NoticeKind::Warning, clash);
        }
        self.session.commands = commands;
    }

    fn on_session_configured(
        &mut self,
        session_id: String,
        model: String,
        resumed: bool,
        workspace: String,
        approval: ApprovalMode,
    ) {
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
            // The new session's id shares the old one's first characters (both begin with the
            // time): the prefix offered is worked out against every session.
            self.effects.push(Effect::NameKept { old, new: session_id.clone() });
        }
        self.session.session_id = session_id;
        self.session.model = model;
    }

    fn on_usage(
        &mut self,
        pressure: Figure,
        usable_input: u64,
        window_unverified: bool,
        model: String,
    ) {
        self.session.gauge = Some(Gauge { pressure, usable_input, window_unverified });
        self.session.model = model;
    }

    fn on_plan(&mut self, plan: Option<Plan>, updated: bool) {
        if let (Some(plan), true) = (&plan, updated) {
            self.transcript.push(PlanCell { plan: plan.clone() });
            self.session.plan_presented = true;
        }
        self.session.plan = plan;
    }

    /// A `/btw` answer: a cell where it was asked, and the overlay (Esc closes it).
    fn on_side_answer(&mut self, cell: SideCell) {
        let mut text = cell.answer.clone();
        text.push_str(&format!("\n\n{}", cell.footer()));
        let title = format!("btw: {}", cell.question);
        super::cell_builders::side(&mut self.transcript, cell);
        self.views.push(super::views::TextView::new(title, &text));
        self.lifecycle = super::app::Lifecycle::Idle;
        self.send_queued();
    }

    /// The note as the engine pinned it (redacted), beside the conversation; a withdrawal is
    /// said.
    fn on_anchor_changed(&mut self, change: AnchorChange, message: String) {
        match change {
            AnchorChange::Pinned { text, .. } => self.transcript.push_beside(AnchorCell { text }),
            AnchorChange::Removed { .. } => self.notice(NoticeKind::Info, message),
        }
    }

    fn on_model_switched(&mut self, model: String, message: String) {
        self.session.model = model;
        self.notice(NoticeKind::Info, message);
    }

    /// The mode the engine applies; while a later Shift+Tab waits for its answer, the mode
    /// shown already follows that press.
    fn on_approval_changed(
        &mut self,
        mode: ApprovalMode,
        message: String,
        id: codewhale_protocol::SubmissionId,
    ) {
        match self.session.approval_asked {
            Some(last) if last != id => {}
            _ => {
                self.session.approval = mode;
                self.session.approval_asked = None;
            }
        }
        self.notice(NoticeKind::Info, message);
    }

    /// After the page of the new HEAD: shown under its conversation.
    fn on_head_moved(&mut self, level: NoticeLevel, message: String) {
        self.notice(notice_kind(level), message)
    }

    fn on_grant_revoked(&mut self, grant: &Grant) {
        self.notice(NoticeKind::Info, format!("revoked: always for {grant}"))
    }

    fn on_error(&mut self, message: String, pending: Option<Pending>) {
        if pending == Some(Pending::Compact) {
            // The pass never started (something else runs).
            self.end_compaction();
        }
        if pending == Some(Pending::SideQuestion) {
            self.lifecycle = super::app::Lifecycle::Idle;
            self.send_queued();
        }
        self.notice(NoticeKind::Error, message)
    }

    /// Only a quit shuts the engine down; anything else is the engine's own end, which the
    /// error before it explains.
    fn on_shutdown_complete(&mut self) {
        if self.keys.quitting {
            self.effects.push(Effect::Exit);
        }
    }
}
