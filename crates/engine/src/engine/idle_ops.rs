//! The ops an idle engine answers without a turn: anchors, reports, history, branch moves,
//! restores, model switches and grants.
//!
//! Invariant: an explicit user action (an anchor, a HEAD move, a model switch) is synced to disk
//! before the front end is told it happened, and every change of what the model reads ends
//! with a `Usage` event.

use crate::error::EngineError;
use crate::events::EventSink;
use crate::history_pages::FIRST_PAGE;
use crate::rewind::ops::{Move, Request};
use crate::session::Session;
use codewhale_protocol::{
    AnchorChange, ErrorKind, Event, HeadMove, NoticeLevel, Op, SubmissionId, TakeBack,
};

use super::{mcp_servers_event, no_such_call};
use crate::compaction::compactor::{Change, Compactor};

/// Ops that need no turn: anchors, reports, history, branch moves, model switches, and the
/// ones only meaningful in a turn.
pub(super) async fn handle_idle_op(
    session: &mut Session,
    compactor: &mut Compactor,
    sink: &EventSink,
    id: SubmissionId,
    op: Op,
) {
    let notice = |message: String| Event::Notice { level: NoticeLevel::Info, message };
    match op {
        Op::Interrupt if compactor.background_state().is_some() => {
            compactor.on_change(sink, id, Change::Interrupted);
            sink.emit(id, notice("the note being written in the background was cancelled".into()));
        }
        Op::Interrupt => sink.emit(id, notice("nothing to interrupt: no turn is running".into())),
        // The engine loop restarts its idle clock on every op; typing needs nothing else.
        Op::Typing => {}
        Op::Approve { call_id, .. } | Op::Deny { call_id, .. } => {
            sink.emit(id, no_such_call(&call_id))
        }
        Op::ListGrants => sink.emit(id, grants_event(session)),
        Op::SetApproval { mode } => {
            session.set_approval_mode(mode);
            sink.emit(id, super::approval_changed(mode));
        }
        Op::ListMcpServers => sink.emit(id, mcp_servers_event(session.mcp())),
        Op::RevokeGrant { index } => {
            match index.checked_sub(1).and_then(|i| session.revoke_grant(i)) {
                Some(grant) => sink.emit(id, Event::GrantRevoked { grant }),
                None => sink.emit(
                    id,
                    Event::Error {
                        kind: ErrorKind::NoSuchCall,
                        message: format!(
                            "there is no grant {index}; /approval lists them with their numbers"
                        ),
                    },
                ),
            }
            sink.emit(id, grants_event(session));
        }
        Op::ListUserMessages => {
            sink.emit(id, Event::UserMessages { messages: session.user_messages() })
        }
        Op::GetStatus => sink.emit(id, Event::Status { status: Box::new(session.status_report()) }),
        Op::GetDiff => {
            // git hashes the worktree: off the engine task's thread.
            let (store, workspace) = (session.file_store(), session.workspace().to_path_buf());
            let recorded = crate::checkpoint::restore::changes_from(session.journal(), 0);
            let found = tokio::task::spawn_blocking(move || {
                crate::checkpoint::workspace_diff::since_start(&store, &workspace, recorded)
            })
            .await;
            match found {
                Ok(Ok(d)) => sink.emit(
                    id,
                    Event::WorkspaceDiff { diff: d.diff, files: d.files as u64, since: d.since },
                ),
                Ok(Err(reason)) => sink.emit(
                    id,
                    Event::Error {
                        kind: ErrorKind::Io,
                        message: format!("cannot compare the workspace: {reason}"),
                    },
                ),
                Err(e) => sink.emit(
                    id,
                    Event::Error { kind: ErrorKind::Io, message: format!("/diff stopped: {e}") },
                ),
            }
        }
        Op::ListModels => sink.emit(id, Event::Models { models: session.model_choices().await }),
        Op::ListBranches => sink
            .emit(id, Event::Branches { branches: crate::branches::branches(session.journal()) }),
        Op::GetContext => sink.emit(
            id,
            Event::ContextReport {
                report: Box::new(crate::answers::context_report(
                    session,
                    compactor.background_state(),
                )),
            },
        ),
        Op::ListAnchors => {
            sink.emit(id, Event::Anchors { anchors: crate::answers::anchor_infos(session) })
        }
        Op::GetSubagentTranscript { session_id } => {
            let dir = session.path().parent().map(std::path::Path::to_path_buf).unwrap_or_default();
            sink.emit(id, crate::children::transcript_event(&dir, session.id(), &session_id));
        }
        Op::GetTranscript => {
            let transcript = Box::new(crate::answers::transcript(session));
            sink.emit(id, Event::Transcript { transcript });
        }
        Op::GetHistory { before, limit } => {
            let page = crate::answers::history_page(session, before.as_deref(), limit, false);
            sink.emit(id, Event::History { page });
        }
        Op::AddAnchor { text } => {
            let result = crate::anchors::add_to_session(session, &text);
            let result = durable(session, result).await;
            compactor.on_change(sink, id, Change::AnchorsChanged);
            anchor_changed(session, sink, id, result);
        }
        Op::RemoveAnchor { index } => {
            let result = crate::answers::withdraw_anchor(session, index);
            let result = durable(session, result).await;
            compactor.on_change(sink, id, Change::AnchorsChanged);
            anchor_changed(session, sink, id, result);
        }
        Op::SwitchModel { model } => {
            let switched = match session.switch_model(&model) {
                Ok(()) => session.sync().await,
                Err(err) => Err(err),
            };
            match switched {
                Ok(()) => {
                    compactor.on_change(sink, id, Change::ModelSwitched);
                    let message = format!("model switched to {model}");
                    sink.emit(id, Event::ModelSwitched { model, message });
                    sink.emit(id, session.usage_event(None, None));
                }
                Err(err) => sink.emit(id, err.event()),
            }
        }
        Op::Checkout { to } => {
            move_head(session, compactor, sink, id, |j| j.checkout(&to), HeadMove::Checkout).await
        }
        Op::Fork { at } => {
            let m = Move {
                to: at,
                take: TakeBack::Conversation,
                fork: true,
                before: false,
                force: false,
            };
            Request { session, sink, id }.take_back(m).await
        }
        Op::Rewind { to } => {
            let m =
                Move { to, take: TakeBack::Conversation, fork: false, before: false, force: false };
            Request { session, sink, id }.take_back(m).await
        }
        Op::TakeBack { to, take, fork, before, force } => {
            Request { session, sink, id }.take_back(Move { to, take, fork, before, force }).await
        }
        Op::PreviewRestore { to } => Request { session, sink, id }.preview(to),
        Op::Undo { force } => Request { session, sink, id }.undo(force).await,
        Op::RestoreBranchFiles { from, force } => {
            Request { session, sink, id }.restore_branch(from, force).await
        }
        // Handled in `run`.
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
        _ => sink.emit(
            id,
            Event::Error {
                kind: ErrorKind::Unsupported,
                message: "this engine does not know that request; update codewhale".into(),
            },
        ),
    }
}

/// An explicit user action is on disk before the front end is told it happened (and before
/// `codewhale context` could read the file).
async fn durable(
    session: &mut Session,
    result: Result<(AnchorChange, String), String>,
) -> Result<(AnchorChange, String), String> {
    let (change, message) = result?;
    session.sync().await.map_err(|e| format!("{message}, but {e}"))?;
    Ok((change, message))
}

fn grants_event(session: &Session) -> Event {
    Event::Grants {
        mode: session.policy().mode(),
        grants: session.policy().grants().to_vec(),
        sandbox: session.sandbox_report(),
    }
}

/// After an anchor was pinned or unpinned: the outcome, the list, and the new figures.
fn anchor_changed(
    session: &mut Session,
    sink: &EventSink,
    id: SubmissionId,
    result: Result<(AnchorChange, String), String>,
) {
    match result {
        Ok((change, message)) => {
            sink.emit(id, Event::AnchorChanged { change, message });
            sink.emit(id, Event::Anchors { anchors: crate::answers::anchor_infos(session) });
            sink.emit(id, session.usage_event(None, None));
        }
        Err(message) => sink.emit(id, Event::Error { kind: ErrorKind::Anchor, message }),
    }
}

async fn move_head(
    session: &mut Session,
    compactor: &mut Compactor,
    sink: &EventSink,
    id: SubmissionId,
    record: impl FnOnce(
        &codewhale_journal::Journal,
    ) -> Result<codewhale_journal::Entry, codewhale_journal::BranchError>,
    how: HeadMove,
) {
    let old = session.journal().head_id().clone();
    let moved = async {
        let entry = record(session.journal())?;
        session.append_entry(entry)?;
        // A HEAD move is an explicit user action: it is on disk before the UI is told it
        // happened, so a crash right after cannot silently put the user back on the old branch.
        session.sync().await?;
        Ok::<(), EngineError>(())
    }
    .await;
    if let Err(err) = moved {
        sink.emit(id, err.event());
        return;
    }
    compactor.on_change(sink, id, Change::HeadMoved);
    // The last reported prompt was the old branch's: the budget is the new view's, replayed.
    session.replay_budget();
    let head = session.journal().head_id().to_string();
    let verb = match how {
        HeadMove::Checkout => "checked out",
        HeadMove::Fork => "forked at",
        HeadMove::Rewind => "rewound to",
    };
    let mut message = format!("{verb} {head}");
    let mut level = NoticeLevel::Info;
    // The disk and the branch's history never disagree silently: after a checkout, the files
    // its tools changed that the disk does not hold as it left them are named and offered back.
    let files = match how {
        HeadMove::Checkout => branch_files_differing(session, &old),
        HeadMove::Fork | HeadMove::Rewind => None,
    };
    if let Some((_, differing)) = &files {
        level = NoticeLevel::Warning;
        message.push('\n');
        message.push_str(&crate::rewind::branch_files::line(differing));
    }
    // The new view first; what moved is shown under it.
    sink.emit(
        id,
        Event::History { page: crate::answers::history_page(session, None, FIRST_PAGE, true) },
    );
    sink.emit(id, Event::HeadMoved { how, head, level, message });
    if let Some((from, files)) = files {
        sink.emit(id, Event::BranchFiles { from: from.to_string(), files });
    }
    crate::branch_summary::after_move(session, sink, id, &old);
    sink.emit(id, session.plan_event(false));
    sink.emit(id, session.usage_event(None, None));
}

/// After a checkout away from `old`: the branch point and the files of the checked-out branch
/// that do not hold what it last gave them, when there are any.
fn branch_files_differing(
    session: &Session,
    old: &codewhale_journal::EntryId,
) -> Option<(codewhale_journal::EntryId, Vec<codewhale_protocol::RestoreFile>)> {
    use crate::rewind::branch_files;
    let from = branch_files::branch_point(session.journal(), old.as_str())?;
    let plan = match branch_files::plan(session, &from) {
        Ok(plan) => plan,
        Err(e) => {
            tracing::warn!(error = %e, "cannot compare the checked-out branch's files");
            return None;
        }
    };
    let files = branch_files::differing(&plan);
    (!files.is_empty()).then_some((from, files))
}
