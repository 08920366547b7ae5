//! The engine task: it owns the session and the compactor beside it, reads ops and writes
//! events until `Shutdown` (or until the front end is gone), then closes the session. [`run`]
//! reads as its three steps: [`Task::start`] ([`start`]: the session's services started and
//! the session shown), the loop (take the next op, handling the wake-ups that come first in
//! [`wakes`], and send it in one line to the handler that owns it) and [`Task::close`]
//! ([`close`]). The handlers: the turns in [`turn_ops`], the other work in [`work_ops`], and
//! the ops answered without a turn in [`super::idle_ops`].
//!
//! Invariants: nothing else holds the session, so nothing else writes the journal; work that
//! takes long (a turn, a compaction, a side question, `!CMD`) runs while ops are still read
//! ([`busy`]); an op that starts work restarts the idle clock when the work ends.

use super::idle_ops::handle_idle_op;
use super::Ops;
use crate::compaction::compactor::Compactor;
use crate::events::{ApprovalGate, EventSink};
use crate::session::Session;
use codewhale_protocol::{ErrorKind, Event, Op, SubmissionId};

mod busy;
mod close;
mod start;
mod turn_ops;
mod wakes;
mod work_ops;

use wakes::Wakes;

/// The submission the events that answer no op carry (opening, wake-ups, closing).
const START: SubmissionId = SubmissionId(0);

/// Runs the engine task on `session` until `Shutdown` or until the front end is gone.
pub(super) async fn run(session: Session, ops: Ops, sink: EventSink, gate: ApprovalGate) {
    let (mut task, mut wakes) = Task::start(session, ops, sink, gate).await;
    task.serve(&mut wakes).await;
    task.close().await;
}

/// What the engine task holds: the session, compaction's standing beside it, the ops it reads
/// and the events it writes.
struct Task {
    session: Session,
    compactor: Compactor,
    ops: Ops,
    sink: EventSink,
    gate: ApprovalGate,
    /// The parent of a subagent's session opened on its own: such a session is shown, never
    /// written (docs/subagents.md).
    read_only: Option<String>,
    /// The `Shutdown` that ended the loop.
    shutdown: Option<SubmissionId>,
}

impl Task {
    /// Reads ops until `Shutdown`, or until the front end is gone.
    async fn serve(&mut self, wakes: &mut Wakes) {
        while self.shutdown.is_none() {
            let Some((id, op)) = self.next_op(wakes).await else { break };
            if self.refused(id, &op) {
                continue;
            }
            if let Op::Focus { focused } = op {
                // The terminal's focus is no activity: the idle clock runs on.
                self.gate.set_focused(focused);
                continue;
            }
            self.compactor.on_activity();
            wakes.on_activity();
            // A mode chosen while the last turn ran, which made no call after it.
            if let Some(mode) = self.gate.take_mode() {
                self.session.set_approval_mode(mode);
            }
            self.dispatch(id, op).await;
            // Idle from the end of what the op started (a turn may have run for minutes).
            wakes.restart_idle_clock();
        }
    }

    /// Sends `op` to the handler that owns it.
    async fn dispatch(&mut self, id: SubmissionId, op: Op) {
        match op {
            Op::UserInput { text, attachments, images } => {
                self.user_input(id, text, attachments, images).await
            }
            Op::CarryOutPlan { mode } => self.carry_out_plan(id, mode).await,
            Op::SideQuestion { question } => self.side_question(id, question).await,
            Op::RunCommand { name, args } => self.run_command(id, &name, &args).await,
            Op::Compact { focus } => self.compact(id, focus).await,
            Op::UserShell { command } => self.user_shell(id, command).await,
            Op::AwaitBranchSummary => self.await_branch_summary(id).await,
            Op::Shutdown => self.shutdown = Some(id),
            op => handle_idle_op(&mut self.session, &mut self.compactor, &self.sink, id, op).await,
        }
    }

    /// A subagent's session opened on its own refuses what would write it, in words (a turn it
    /// refuses also ends, failed); `true` when `op` was refused.
    fn refused(&self, id: SubmissionId, op: &Op) -> bool {
        let sink = &self.sink;
        let read_only = &self.read_only;
        if let Some(why) = read_only.as_deref().and_then(|p| crate::subagent::refusal(p, op)) {
            sink.emit(id, Event::Error { kind: ErrorKind::Command, message: why });
            if matches!(op, Op::UserInput { .. } | Op::RunCommand { .. } | Op::CarryOutPlan { .. })
            {
                let status = codewhale_protocol::TurnStatus::Failed;
                let finished =
                    Event::TurnFinished { status, text: String::new(), stats: Default::default() };
                sink.emit(id, finished);
            }
            return true;
        }
        false
    }
}
