//! A turn as the engine reports it: its start, the streamed reply and thinking, each tool
//! call from request to result, the user's own `!CMD`, approvals, retries, and the turn's end
//! with its footer. The cells come from `cell_builders`, which a history page's replay uses
//! too; what is added here is the live part (the lifecycle, the clocks, the queue).

use codewhale_protocol::{ApprovalOffer, TurnStats, TurnStatus};

use super::app::{App, Lifecycle, Retry, TurnProgress};
use super::approval_view::ApprovalView;
use super::cell_builders::{self as build, Ending};
use super::cells::{short_tokens, NoticeKind};
use super::tool_cell::ToolState;
use super::views::ViewKind;

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

impl App {
    pub(super) fn on_turn_started(&mut self) {
        self.session.plan_presented = false;
        self.lifecycle = Lifecycle::Streaming { thinking: false };
        self.progress.clock = self.progress.clock.max(std::time::Instant::now());
        self.progress.turn_progress = Some(TurnProgress { since: self.progress.clock, bytes: 0 });
    }

    pub(super) fn on_text_delta(&mut self, text: &str) {
        self.progress.retry = None;
        if let Some(p) = self.progress.turn_progress.as_mut() {
            p.bytes += text.len();
        }
        self.transcript.push_delta(text);
        self.lifecycle = Lifecycle::Streaming { thinking: false };
    }

    pub(super) fn on_thinking_delta(&mut self, text: &str) {
        self.transcript.push_thinking(text);
        self.lifecycle = Lifecycle::Streaming { thinking: true };
    }

    pub(super) fn on_tool_call_requested(
        &mut self,
        call_id: &str,
        name: &str,
        input: &serde_json::Value,
    ) {
        build::tool_requested(&mut self.transcript, call_id, name, input, false);
    }

    pub(super) fn on_tool_call_started(&mut self, call_id: String, name: String) {
        let running = ToolState::Running { elapsed_secs: 0, live: String::new() };
        build::call_state(&mut self.transcript, &call_id, running);
        self.started_running(call_id);
        self.lifecycle = Lifecycle::RunningTool { name };
    }

    /// The clock ticks only while something animates; it stood still while a call waited for
    /// approval, which is not the call's time.
    fn started_running(&mut self, call_id: String) {
        self.progress.clock = self.progress.clock.max(std::time::Instant::now());
        self.progress.running_since.push((call_id, self.progress.clock));
    }

    pub(super) fn on_tool_output(&mut self, call_id: &str, text: &str) {
        self.transcript.update_last(|cell| {
            super::tool_cell::tool_mut(cell).is_some_and(|tool| {
                let hit = tool.call_id == call_id;
                if hit {
                    tool.push_live(text);
                }
                hit
            })
        });
    }

    /// A `task` call's child started: its cell names the child (for Ctrl+T) and says so live.
    pub(super) fn on_subagent_started(&mut self, call_id: &str, description: &str, id: String) {
        let step = format!("subagent \"{description}\" started");
        self.transcript.update_last(|cell| {
            super::tool_cell::tool_mut(cell).is_some_and(|tool| {
                let hit = tool.call_id == call_id;
                if hit {
                    tool.subagent = Some(id.clone());
                    tool.set_subagent_step(&step, 0, 0);
                }
                hit
            })
        });
    }

    /// What a running child does now, on its `task` call's cell.
    pub(super) fn on_subagent_progress(
        &mut self,
        call_id: &str,
        step: &str,
        tokens: u64,
        compactions: u32,
    ) {
        self.transcript.update_last(|cell| {
            super::tool_cell::tool_mut(cell).is_some_and(|tool| {
                let hit = tool.call_id == call_id;
                if hit {
                    tool.set_subagent_step(step, tokens, compactions);
                }
                hit
            })
        });
    }

    pub(super) fn on_tool_call_finished(
        &mut self,
        call_id: &str,
        ending: Ending,
        diff: Option<String>,
    ) {
        self.progress.running_since.retain(|(id, _)| id != call_id);
        build::call_finished(&mut self.transcript, call_id, ending);
        if let Some(diff) = diff {
            build::diff(&mut self.transcript, diff);
        }
        self.lifecycle = Lifecycle::Streaming { thinking: false };
    }

    pub(super) fn on_user_shell_started(&mut self, call_id: String, command: &str) {
        build::user_shell_started(&mut self.transcript, &call_id, command, false);
        self.started_running(call_id);
        self.lifecycle = Lifecycle::RunningTool { name: format!("!{command}") };
    }

    pub(super) fn on_user_shell_finished(&mut self, call_id: &str, ending: Ending) {
        self.progress.running_since.retain(|(id, _)| id != call_id);
        build::call_finished(&mut self.transcript, call_id, ending);
        self.lifecycle = Lifecycle::Idle;
        self.send_queued();
    }

    pub(super) fn on_approval_needed(
        &mut self,
        call_id: String,
        name: String,
        input: &serde_json::Value,
        reason: String,
        offers: Vec<ApprovalOffer>,
        diff: Option<String>,
    ) {
        self.call_back(&format!("Codewhale: {name} waits for your approval"));
        let view = ApprovalView::new(call_id, name, input, reason, offers, diff);
        self.views.push(view);
        self.lifecycle = Lifecycle::AwaitingApproval;
    }

    pub(super) fn on_retrying(
        &mut self,
        attempt: u32,
        max_attempts: u32,
        wait_ms: u64,
        reason: &str,
    ) {
        let wait = std::time::Duration::from_millis(wait_ms);
        self.progress.retry =
            Some(Retry { attempt, max_attempts, until: self.progress.clock + wait });
        let secs = wait_ms.div_ceil(1000);
        self.notice(
            NoticeKind::Warning,
            format!("{reason}; retrying in {secs} s (attempt {attempt} of {max_attempts})"),
        );
    }

    pub(super) fn on_turn_finished(&mut self, status: TurnStatus, stats: &TurnStats) {
        self.call_back(match status {
            TurnStatus::Completed => "Codewhale: the turn is done",
            TurnStatus::Interrupted => "Codewhale: the turn was interrupted",
            TurnStatus::Failed => "Codewhale: the turn failed",
        });
        self.progress.turn_ended();
        self.transcript.finish_active(status != TurnStatus::Completed);
        if stats.requests > 0 {
            self.notice(NoticeKind::Info, stats_line(stats, status));
        }
        if status == TurnStatus::Interrupted {
            self.notice(NoticeKind::Warning, "interrupted; the session keeps what was done");
        }
        self.views.close(ViewKind::Approval);
        self.lifecycle = Lifecycle::Idle;
        // In plan mode, a turn that presented a plan offers where to start it.
        let presented = std::mem::take(&mut self.session.plan_presented);
        if status == TurnStatus::Completed
            && presented
            && self.session.approval == codewhale_protocol::ApprovalMode::Plan
            && self.outbox.queued.is_empty()
        {
            self.views.push(super::plan_ready::view());
        }
        self.send_queued();
    }
}
