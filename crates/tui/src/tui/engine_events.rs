//! How the app follows the engine: each [`Event`] updates the lifecycle, the transcript, the
//! status figures or the view stack.
//!
//! Invariants: a turn's end (`TurnFinished`) always returns the lifecycle to `Idle` and
//! closes any approval view (its call no longer waits); a streamed reply is committed before
//! anything else is added after it, so the transcript keeps the engine's order.

use codewhale_engine::protocol::{Event, EventMsg, NoticeLevel, TurnStatus};

use super::app::{App, Gauge, Lifecycle, Pending};
use super::cells::{
    AnchorCell, CompactionCell, CompactionSummary, NoticeKind, ToolCell, ToolState,
};
use super::event::Effect;
use super::views::ApprovalView;

/// How much of each argument the approval view shows: enough to judge a command or a path,
/// never a whole file being written (which would push the keys off the screen).
const APPROVAL_ARGUMENT_CHARS: usize = 240;

/// One line per argument, each clipped, so a short `path` stays visible beside a long
/// `content`.
fn approval_arguments(input: &serde_json::Value) -> String {
    match input {
        serde_json::Value::Object(map) => map
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    serde_json::Value::String(s) => s.replace('\n', "⏎"),
                    other => other.to_string(),
                };
                format!("{k}: {}", clip(&v, APPROVAL_ARGUMENT_CHARS))
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => clip(&other.to_string(), APPROVAL_ARGUMENT_CHARS),
    }
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}… ({} more characters)", text.chars().count() - max)
}

impl App {
    pub(crate) fn on_engine(&mut self, msg: EventMsg) {
        let pending =
            self.pending.iter().position(|(id, _)| *id == msg.id).map(|i| self.pending.remove(i).1);
        match msg.event {
            Event::SessionConfigured { session_id, model, resumed, path, workspace } => {
                self.workspace = Some(workspace.into());
                if resumed {
                    self.effects.push(Effect::LoadHistory { path: path.clone(), replace: false });
                }
                self.session_path = path;
                let short: String = session_id.chars().take(8).collect();
                let what = if resumed { "resumed session" } else { "new session" };
                self.notice(
                    NoticeKind::Info,
                    format!("{what} {short} · {model} · /help lists the commands"),
                );
                self.session_id = session_id;
                self.model = model;
            }
            Event::TurnStarted => self.lifecycle = Lifecycle::Streaming { thinking: false },
            Event::TextDelta { text } => {
                self.transcript.push_delta(&text);
                self.lifecycle = Lifecycle::Streaming { thinking: false };
            }
            Event::ThinkingDelta { .. } => self.lifecycle = Lifecycle::Streaming { thinking: true },
            Event::ToolCallRequested { call_id, name, input } => {
                self.transcript.push(ToolCell::new(call_id, name, &input));
            }
            Event::ToolCallStarted { call_id, name } => {
                self.set_tool_state(&call_id, ToolState::Running);
                self.lifecycle = Lifecycle::RunningTool { name };
            }
            Event::ToolCallFinished { call_id, is_error, output, .. } => {
                self.set_tool_state(&call_id, ToolState::Done { is_error, output });
                self.lifecycle = Lifecycle::Streaming { thinking: false };
            }
            Event::ApprovalNeeded { call_id, name, input, reason } => {
                let input = approval_arguments(&input);
                self.views.push(Box::new(ApprovalView { call_id, name, input, reason }));
                self.lifecycle = Lifecycle::AwaitingApproval;
            }
            Event::Usage { pressure, usable_input, window_unverified, .. } => {
                self.gauge = Some(Gauge { pressure, usable_input, window_unverified });
            }
            Event::Notice { level, message } => match pending {
                Some(Pending::Anchor(text)) => self.transcript.push(AnchorCell { text }),
                Some(Pending::HeadMove) => {
                    // The conversation on screen is the old branch's: show the new HEAD's.
                    self.notice(NoticeKind::Info, message);
                    let path = self.session_path.clone();
                    self.effects.push(Effect::LoadHistory { path, replace: true });
                }
                None => {
                    let kind = match level {
                        NoticeLevel::Info => NoticeKind::Info,
                        NoticeLevel::Warning => NoticeKind::Warning,
                    };
                    self.notice(kind, message);
                }
            },
            Event::Error { message, .. } => self.notice(NoticeKind::Error, message),
            Event::CompactionStarted { trigger } => {
                self.lifecycle = Lifecycle::Compacting { in_turn: self.lifecycle.turn_running() };
                self.compaction_trigger = Some(trigger);
            }
            Event::CompactionFinished {
                id,
                path,
                tokens_before,
                tokens_after,
                covered,
                retained,
            } => {
                let trigger = self.compaction_trigger.take().unwrap_or_else(|| "auto".to_owned());
                let summary = CompactionSummary {
                    id: id.clone(),
                    trigger,
                    path,
                    covered,
                    retained,
                    tokens_before,
                    tokens_after,
                };
                self.transcript.push(CompactionCell::new(summary, None));
                self.effects.push(Effect::LoadNote { id });
                self.end_compaction();
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
            Event::TurnFinished { status, .. } => {
                self.transcript.finish_active(status != TurnStatus::Completed);
                if status == TurnStatus::Interrupted {
                    self.notice(
                        NoticeKind::Warning,
                        "interrupted; the session keeps what was done",
                    );
                }
                self.views.retain(|v| v.approval_call().is_none());
                self.lifecycle = Lifecycle::Idle;
            }
            Event::ShutdownComplete if self.quitting => self.effects.push(Effect::Exit),
            // The protocol grows; an event this version does not know changes nothing shown.
            _ => {}
        }
    }

    fn end_compaction(&mut self) {
        self.compaction_trigger = None;
        self.lifecycle = match self.lifecycle {
            Lifecycle::Compacting { in_turn: true } => Lifecycle::Streaming { thinking: false },
            Lifecycle::Compacting { in_turn: false } => Lifecycle::Idle,
            ref other => other.clone(),
        };
    }

    fn set_tool_state(&mut self, call_id: &str, state: ToolState) {
        self.transcript.update_last(|cell| {
            cell.as_tool_mut().is_some_and(|tool| {
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
