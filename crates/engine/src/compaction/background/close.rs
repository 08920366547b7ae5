//! Closing a session with a background note (docs/compaction.md, *Background compaction*):
//! every answered summary request ends as a committed note, never thrown away and paid for
//! again by the next process.
//!
//! A note already written is committed (trigger `auto`, `background: true`) when the view it
//! yields is below the threshold and passes every check. In a process that lives for one turn
//! (`exec`), a note whose request is still in flight is waited for first — at most as long as a
//! summary request of its model takes ([`wait_bound`]), never more than [`MOST_AT_CLOSE`], and
//! saying so — since the next `exec --last` would otherwise send the same request again; in the
//! terminal UI it is dropped. A failure already
//! in is journaled (the backoff holds across processes); a pass still running is cancelled.

use codewhale_journal::Trigger;

use super::decide::wait_bound;
use super::idle;
use super::settle::{failed, finish, settle, Finished};
use crate::compaction::port::Conversation;
use crate::compaction::standing::Standing;
use crate::events::EventSink;
use codewhale_protocol::{Event, NoticeLevel, SubmissionId};

/// The longest a one-turn process waits at exit for a note in flight.
const MOST_AT_CLOSE: std::time::Duration = std::time::Duration::from_secs(30);

/// Closes the background pass of `session` (module docs).
pub(crate) async fn close(
    session: &mut dyn Conversation,
    standing: &mut Standing,
    sink: &EventSink,
    submission: SubmissionId,
) {
    settle(session, standing, sink, submission).await;
    if session.one_turn() {
        wait_for_in_flight(session, standing, sink, submission).await;
    }
    if standing.note_pass.job.slot.as_ref().is_some_and(|s| s.state.prepared.is_some()) {
        idle::commit(session, standing, sink, submission, Trigger::Auto).await;
    }
    let Some(mut slot) = standing.note_pass.job.slot.take() else { return };
    let failure = match slot.task.take() {
        Some(task) if task.is_finished() => task.await.ok().and_then(Result::err),
        task => {
            slot.task = task;
            None
        }
    };
    slot.stop();
    if let Some(err) = failure {
        let (sink, _unheard) = crate::events::channel();
        failed(session, standing, &sink, SubmissionId(0), err);
    }
}

async fn wait_for_in_flight(
    session: &mut dyn Conversation,
    standing: &mut Standing,
    sink: &EventSink,
    submission: SubmissionId,
) {
    let Some(slot) = standing.note_pass.job.slot.take() else { return };
    if slot.state.prepared.is_some() || slot.task.is_none() {
        standing.note_pass.job.slot = Some(slot);
        return;
    }
    let bound =
        wait_bound(standing.clock.measured(&slot.state.snapshot.summary_model)).min(MOST_AT_CLOSE);
    tracing::info!(?bound, "closing: waiting for the note written in the background");
    // Said, so a script that waits on `exec` knows why it has not exited yet.
    let message = format!(
        "finishing the handoff note being written in the background (at most {} s), so the \
         next run does not pay for it again",
        bound.as_secs().max(1)
    );
    sink.emit(submission, Event::Notice { level: NoticeLevel::Info, message });
    match finish(session, standing, sink, submission, slot, bound).await {
        Finished::Ready(slot) | Finished::Late(slot) => standing.note_pass.job.slot = Some(slot),
        Finished::Gone => {}
    }
}
