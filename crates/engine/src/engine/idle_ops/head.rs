//! HEAD's moves an idle engine makes: `/checkout` here, `/fork` and `/rewind` as the moves
//! [`crate::rewind::ops`] carries out.
//!
//! Invariant: a HEAD move is on disk before the front end is told; the new view is sent first,
//! what moved under it, then the plan and the figures of the new branch.

use crate::compaction::compactor::{Change, Compactor};
use crate::error::EngineError;
use crate::events::EventSink;
use crate::history_pages::FIRST_PAGE;
use crate::rewind::ops::Move;
use crate::session::Session;
use codewhale_protocol::{Event, HeadMove, NoticeLevel, SubmissionId, TakeBack};

/// `/checkout TO`: HEAD moves to another branch's tip (or any entry).
pub(super) async fn checkout(
    session: &mut Session,
    compactor: &mut Compactor,
    sink: &EventSink,
    id: SubmissionId,
    to: &str,
) {
    move_head(session, compactor, sink, id, |j| j.checkout(to), HeadMove::Checkout).await
}

/// `/fork AT`: a new branch from `at`, the conversation taken back to it, the files left alone.
pub(super) fn fork(at: String) -> Move {
    Move { to: at, take: TakeBack::Conversation, fork: true, before: false, force: false }
}

/// `/rewind TO`: the conversation taken back to `to` on this branch, the files left alone.
pub(super) fn rewind(to: String) -> Move {
    Move { to, take: TakeBack::Conversation, fork: false, before: false, force: false }
}

/// Records the move `record` makes as an entry, syncs it, and tells the front end where HEAD
/// went (after a checkout, with the files of the branch the disk does not hold as it left them).
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
