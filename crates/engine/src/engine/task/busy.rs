//! What the engine task does while work runs (a turn, a compaction, a side question, `!CMD`):
//! it still reads ops. `Interrupt` cancels the work, `Approve`/`Deny` reach the waiting call,
//! `Shutdown` cancels and then stops, the focus and the approval mode are noted, the MCP
//! servers and a running subagent's conversation are answered at once, the read-only
//! questions wait for the work to end, and any other op gets an error saying something is
//! running.

use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use super::super::idle_ops::handle_idle_op;
use super::super::replies::{approval_changed, mcp_servers_event, no_such_call};
use super::Ops;
use crate::compaction::compactor::Compactor;
use crate::events::{ApprovalGate, ApprovalReply, EventSink};
use crate::session::Session;
use codewhale_protocol::{ErrorKind, Event, Op, SubmissionId};

/// Read-only questions asked while a turn or a compaction ran: answered as soon as it ends.
pub(super) type Deferred = Vec<(SubmissionId, Op)>;

/// Runs `work` (a turn, a compaction) while still reading ops; returns the id of a `Shutdown`
/// received meanwhile and the questions to answer once the work is done.
pub(super) async fn listening<F: std::future::Future>(
    work: F,
    ops: &mut Ops,
    sink: &EventSink,
    gate: &ApprovalGate,
    cancel: &CancellationToken,
    (mcp, family): (&codewhale_mcp::Servers, &Family),
) -> (Option<SubmissionId>, Deferred) {
    tokio::pin!(work);
    let mut shutdown = None;
    let mut deferred = Vec::new();
    let mut ops_open = true;
    loop {
        tokio::select! {
            _ = &mut work => break,
            op = ops.recv(), if ops_open => match op {
                None => {
                    // The front end is gone: nobody will see the rest of this work.
                    ops_open = false;
                    cancel.cancel();
                }
                Some((_, Op::Interrupt)) => cancel.cancel(),
                Some((oid, Op::Shutdown)) => {
                    shutdown = Some(oid);
                    cancel.cancel();
                }
                Some((oid, Op::Approve { call_id, scope })) => {
                    answer(gate, sink, oid, &call_id, ApprovalReply::Approve(scope))
                }
                Some((oid, Op::Deny { call_id, reason })) => {
                    answer(gate, sink, oid, &call_id, ApprovalReply::Deny(reason))
                }
                Some((oid, Op::ListMcpServers)) => sink.emit(oid, mcp_servers_event(mcp)),
                // A running subagent's conversation is read from its file, at once.
                Some((oid, Op::GetSubagentTranscript { session_id })) => {
                    let event = crate::children::transcript_event(&family.dir, &family.id, &session_id);
                    sink.emit(oid, event);
                }
                // Typing during a turn changes nothing the turn does.
                Some((_, Op::Typing)) => {}
                Some((_, Op::Focus { focused })) => gate.set_focused(focused),
                Some((oid, Op::SetApproval { mode })) => {
                    // Applies from the turn's next call on.
                    gate.switch_mode(mode);
                    sink.emit(oid, approval_changed(mode));
                }
                Some((
                    oid,
                    op @ (Op::GetContext
                    | Op::ListAnchors
                    | Op::GetHistory { .. }
                    | Op::GetTranscript
                    | Op::ListGrants
                    | Op::RevokeGrant { .. }
                    | Op::ListUserMessages
                    | Op::ListBranches
                    | Op::GetStatus
                    | Op::GetDiff
                    | Op::ListModels),
                )) => deferred.push((oid, op)),
                Some((oid, _)) => sink.emit(oid, Event::Error {
                    kind: ErrorKind::Busy,
                    message: "a turn or a compaction is running; wait for it to finish or \
                              interrupt it first"
                        .into(),
                }),
            },
        }
    }
    (shutdown, deferred)
}

/// Where the session's `task` children are found while it is busy: its journal's folder and
/// its id.
pub(super) struct Family {
    dir: PathBuf,
    id: String,
}

impl Family {
    pub(super) fn of(session: &Session) -> Family {
        let dir = session.path().parent().map(std::path::Path::to_path_buf).unwrap_or_default();
        Family { dir, id: session.id().to_owned() }
    }
}

pub(super) async fn answer_deferred(
    session: &mut Session,
    compactor: &mut Compactor,
    sink: &EventSink,
    deferred: Deferred,
) {
    for (id, op) in deferred {
        handle_idle_op(session, compactor, sink, id, op).await;
    }
}

fn answer(gate: &ApprovalGate, sink: &EventSink, id: SubmissionId, call: &str, r: ApprovalReply) {
    if !gate.answer(call, r) {
        sink.emit(id, no_such_call(call));
    }
}
