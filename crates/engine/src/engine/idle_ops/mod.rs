//! The ops an idle engine answers without a turn: anchors, reports, history, branch moves,
//! restores, model switches and grants. This file is the table that sends each op to the
//! function that answers it: the read-only questions are in [`questions`] (each answered by one
//! event), what an op changes of the session — the background note, the approval mode, grants,
//! the model, anchors — in [`changes`], HEAD's moves in [`head`], and restores in
//! [`crate::rewind::ops`].
//!
//! Invariant: an explicit user action (an anchor, a HEAD move, a model switch) is synced to disk
//! before the front end is told it happened, and every change of what the model reads ends
//! with a `Usage` event.

use crate::compaction::compactor::Compactor;
use crate::events::EventSink;
use crate::rewind::ops::{Move, Request};
use crate::session::Session;
use codewhale_protocol::{ErrorKind, Event, Op, SubmissionId};

use super::replies::{mcp_servers_event, no_such_call};

mod changes;
mod head;
mod questions;

/// Ops that need no turn: anchors, reports, history, branch moves, model switches, and the
/// ones only meaningful in a turn.
pub(super) async fn handle_idle_op(
    session: &mut Session,
    compactor: &mut Compactor,
    sink: &EventSink,
    id: SubmissionId,
    op: Op,
) {
    match op {
        Op::Interrupt => changes::interrupt(compactor, sink, id),
        // The engine loop restarts its idle clock on every op; typing needs nothing else.
        Op::Typing => {}
        Op::Approve { call_id, .. } | Op::Deny { call_id, .. } => {
            sink.emit(id, no_such_call(&call_id))
        }
        Op::ListGrants => sink.emit(id, questions::grants_event(session)),
        Op::SetApproval { mode } => changes::set_approval(session, sink, id, mode),
        Op::ListMcpServers => sink.emit(id, mcp_servers_event(session.mcp())),
        Op::RevokeGrant { index } => changes::revoke_grant(session, sink, id, index),
        Op::ListUserMessages => sink.emit(id, questions::user_messages(session)),
        Op::GetStatus => sink.emit(id, questions::status(session)),
        Op::GetDiff => sink.emit(id, questions::diff(session).await),
        Op::ListModels => sink.emit(id, questions::models(session).await),
        Op::ListBranches => sink.emit(id, questions::branches(session)),
        Op::GetContext => sink.emit(id, questions::context(session, compactor)),
        Op::ListAnchors => sink.emit(id, questions::anchors(session)),
        Op::GetSubagentTranscript { session_id } => {
            sink.emit(id, questions::subagent_transcript(session, &session_id))
        }
        Op::GetTranscript => sink.emit(id, questions::transcript(session)),
        Op::GetHistory { before, limit } => {
            sink.emit(id, questions::history(session, before, limit))
        }
        Op::AddAnchor { text } => changes::add_anchor(session, compactor, sink, id, &text).await,
        Op::RemoveAnchor { index } => {
            changes::remove_anchor(session, compactor, sink, id, index).await
        }
        Op::SwitchModel { model } => {
            changes::switch_model(session, compactor, sink, id, model).await
        }
        Op::Checkout { to } => head::checkout(session, compactor, sink, id, &to).await,
        Op::Fork { at } => Request { session, sink, id }.take_back(head::fork(at)).await,
        Op::Rewind { to } => Request { session, sink, id }.take_back(head::rewind(to)).await,
        Op::TakeBack { to, take, fork, before, force } => {
            Request { session, sink, id }.take_back(Move { to, take, fork, before, force }).await
        }
        Op::PreviewRestore { to } => Request { session, sink, id }.preview(to),
        Op::Undo { force } => Request { session, sink, id }.undo(force).await,
        Op::RestoreBranchFiles { from, force } => {
            Request { session, sink, id }.restore_branch(from, force).await
        }
        // Handled by the engine task's loop before it comes here.
        Op::UserInput { .. }
        | Op::RunCommand { .. }
        | Op::CarryOutPlan { .. }
        | Op::SideQuestion { .. }
        | Op::Compact { .. }
        | Op::UserShell { .. }
        | Op::Focus { .. }
        | Op::Shutdown
        | Op::AwaitBranchSummary => {}
        // `Op` is `#[non_exhaustive]`: an op added to the protocol that this engine does not
        // handle yet is refused in words, never dropped in silence.
        _ => sink.emit(id, unsupported()),
    }
}

/// What an op this engine does not know is answered with.
fn unsupported() -> Event {
    Event::Error {
        kind: ErrorKind::Unsupported,
        message: "this engine does not know that request; update codewhale".into(),
    }
}
