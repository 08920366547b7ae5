//! The background note's second half (docs/compaction.md, *Background compaction*): settling a
//! request that ended (a failure journaled, a note composed into its record), taking the note at
//! the threshold within the wait bound, committing it, and cancelling it; what became of a note
//! a pass tried ([`Tried`]). Its first half, the snapshot and the request, is `start`. Below
//! `start`, `idle` and `close`, which call it, and below `pass`, which commits a note through
//! [`try_commit`]; it imports only the plain `state` and `decide` of its own module.

use std::time::{Duration, Instant};

use codewhale_journal::{render_with_record, Entry, Level, SystemPayload, Trigger, View};
use codewhale_provider::CancellationToken;

use crate::anchors::AnchorStore;
use crate::compaction::commit::{self, Proposal, Written};
use crate::compaction::conversation;
use crate::compaction::judge::Refusal;
use crate::compaction::plain::PlainView;
use crate::compaction::port::Conversation;
use crate::compaction::record::{self, SummaryRecord};
use crate::compaction::standing::Standing;
use crate::compaction::summarize::SummaryError;
use crate::compaction::summary::SummaryStats;
use crate::events::EventSink;
use codewhale_protocol::{Event, SubmissionId};

use super::decide::{stale, wait_bound, Basis};
use super::state::{Prepared, Slot, Snapshot};

/// What became of a prepared note.
#[derive(Debug)]
pub(crate) enum Tried {
    Written(Written),
    /// Checked and sound, but the view it yields is not below the threshold: the pass
    /// summarizes on top of it (view and plain form with the note folded in).
    FoldIn(Box<(View, PlainView)>),
    /// Refused by a check: the pass goes on as if there had been no note.
    Discard,
}

pub(super) fn basis(session: &dyn Conversation) -> Basis {
    Basis {
        model: session.model().to_owned(),
        anchors: anchors(session),
        records: session.journal().compactions().count(),
    }
}

/// The anchors in their redacted form, as a pass compares and restates them.
pub(super) fn anchors(session: &dyn Conversation) -> Option<String> {
    AnchorStore::new(session.workspace())
        .text()
        .ok()
        .flatten()
        .map(|a| session.redactor().redact(&a).into_owned())
}

/// Settles a pass that has ended: a stale note is dropped, a failure is journaled (and backs
/// off) now, a finished note is composed into its record and waits for the threshold.
pub(super) async fn settle(
    session: &mut dyn Conversation,
    standing: &mut Standing,
    sink: &EventSink,
    submission: SubmissionId,
) {
    let Some(slot) = &standing.note_pass.job.slot else { return };
    let head = session.journal().head_id().clone();
    let on_spine = session.journal().is_ancestor(slot.state.snapshot.head.as_str(), head.as_str());
    if let Some(why) = stale(&slot.state.snapshot.basis, &basis(session), on_spine) {
        cancel(standing, sink, submission, why);
        return;
    }
    // The task says its request ended just before it returns: then its answer is a wait of no
    // time away (taking an unfinished task for a running one left a ready note uncommitted).
    if !slot.has_ended() {
        return;
    }
    if let Some(slot) = standing.note_pass.job.slot.take() {
        match finish(session, standing, sink, submission, slot, ENDING).await {
            Finished::Ready(slot) | Finished::Late(slot) => {
                standing.note_pass.job.slot = Some(slot)
            }
            Finished::Gone => {}
        }
    }
}

/// How long a task that said its request ended is waited for: it only has to return.
pub(super) const ENDING: Duration = Duration::from_secs(5);

/// What became of a background request waited for.
pub(super) enum Finished {
    /// Its note is composed into the slot's record.
    Ready(Slot),
    /// Not answered within the bound: the slot, still running.
    Late(Slot),
    /// Failed (journaled), refused or stopped: nothing to use.
    Gone,
}

/// Waits up to `bound` for the request of `slot` and composes its record.
pub(super) async fn finish(
    session: &mut dyn Conversation,
    standing: &mut Standing,
    sink: &EventSink,
    submission: SubmissionId,
    mut slot: Slot,
    bound: Duration,
) -> Finished {
    let Some(mut task) = slot.task.take() else { return Finished::Ready(slot) };
    let joined = if task.is_finished() {
        Ok(task.await)
    } else {
        tokio::time::timeout(bound, &mut task).await.map_err(|_| task)
    };
    let (text, stats) = match joined {
        Ok(Ok(Ok(done))) => done,
        Ok(Ok(Err(err))) => {
            failed(session, standing, sink, submission, err);
            return Finished::Gone;
        }
        Ok(Err(join)) => {
            tracing::warn!("the background note task stopped: {join}");
            return Finished::Gone;
        }
        Err(task) => {
            // Paid for already: it keeps running, and no second request is sent meanwhile.
            tracing::info!(?bound, "background note not ready in time; it goes on");
            slot.task = Some(task);
            return Finished::Late(slot);
        }
    };
    match prepare(session, &slot.state.snapshot, &text, &stats).await {
        Some(prepared) => {
            slot.state.prepared = Some(prepared);
            Finished::Ready(slot)
        }
        None => Finished::Gone,
    }
}

/// Journals a failed background note exactly as a failed foreground pass is journaled.
pub(super) fn failed(
    session: &mut dyn Conversation,
    standing: &mut Standing,
    sink: &EventSink,
    submission: SubmissionId,
    err: SummaryError,
) {
    standing.note_pass.spent_at = Some(session.journal().compactions().count());
    let emit = |event| sink.emit(submission, event);
    let (reason, summary_failed) = match err {
        SummaryError::Cancelled => return,
        SummaryError::Failed(reason) => (reason, false),
        SummaryError::Unusable(reason) => {
            standing.summary_failed(session, &reason, &emit);
            (reason, true)
        }
        SummaryError::WindowLearned { window, source } => {
            // The window is the session's now: the next pass plans under it.
            if let Err(err) = crate::compaction::conversation::learned_from_summary(
                session, window, source, &emit,
            ) {
                tracing::error!("cannot journal the window learned: {err}");
            }
            let reason = format!(
                "the provider rejected the summary request as too long; the next note is written \
                 for the {window}-token window"
            );
            (reason, false)
        }
    };
    tracing::warn!(%reason, "background note failed");
    let text =
        format!("compaction (auto, in the background) failed, nothing was changed: {reason}");
    let mut payload = SystemPayload::new(Level::Warning, text);
    payload.summary_failed = summary_failed;
    let parent = session.journal().head_id().clone();
    if let Err(err) = session.append_entry(Entry::new(Some(parent), payload)) {
        tracing::error!("cannot journal the background failure: {err}");
    }
}

/// Cancels the background pass, if any (nothing is written) and re-arms the early mark.
pub(crate) fn cancel(
    standing: &mut Standing,
    sink: &EventSink,
    submission: SubmissionId,
    why: &str,
) -> bool {
    standing.note_pass.spent_at = None;
    let stopped = standing.note_pass.job.stop();
    if stopped {
        tracing::info!(%why, "background note cancelled");
        sink.emit(submission, Event::BackgroundNote { state: None });
    }
    stopped
}

/// What the pass at the threshold gets from the background ([`take`]).
#[derive(Debug)]
pub(crate) enum Taken {
    /// No background note (none ran, it was stale, failed or refused): a pass runs as usual.
    Nothing,
    /// The finished note, as a record to commit or fold in; it is used up.
    Note(Box<Prepared>),
    /// Its request is still in flight after the wait bound: it goes on, and no second summary
    /// request is sent for this crossing (the request is trimmed meanwhile).
    Late,
    /// The user interrupted the wait; the note is stopped.
    Cancelled,
}

/// At the threshold: the background note as a record to commit, waiting for it at most
/// [`wait_bound`] — what the last summary request of its model took — or until `cancel`.
pub(crate) async fn take(
    session: &mut dyn Conversation,
    standing: &mut Standing,
    sink: &EventSink,
    submission: SubmissionId,
    cancel: &CancellationToken,
) -> Taken {
    settle(session, standing, sink, submission).await;
    let Some(slot) = standing.note_pass.job.slot.take() else { return Taken::Nothing };
    if let Some(prepared) = slot.state.prepared.clone() {
        used_up(session, standing, sink, submission);
        slot.stop();
        return Taken::Note(Box::new(prepared));
    }
    let bound = wait_bound(standing.clock.measured(&slot.state.snapshot.summary_model));
    let waited = Instant::now();
    let own = slot.cancel.clone();
    let finished = tokio::select! {
        finished = finish(session, standing, sink, submission, slot, bound) => Some(finished),
        () = cancel.cancelled() => None,
    };
    let taken = match finished {
        None => {
            // The interrupted turn drops the wait, and with it the task's handle: stop it.
            own.cancel();
            Taken::Cancelled
        }
        Some(Finished::Late(slot)) => {
            standing.note_pass.job.slot = Some(slot);
            return Taken::Late;
        }
        Some(Finished::Gone) => Taken::Nothing,
        Some(Finished::Ready(slot)) => {
            tracing::info!(
                waited_ms = waited.elapsed().as_millis() as u64,
                "background note taken"
            );
            let prepared = slot.state.prepared.clone();
            slot.stop();
            prepared.map_or(Taken::Nothing, |p| Taken::Note(Box::new(p)))
        }
    };
    used_up(session, standing, sink, submission);
    taken
}

/// The note of this crossing is used up: no new background pass until the next record.
pub(super) fn used_up(
    session: &mut dyn Conversation,
    standing: &mut Standing,
    sink: &EventSink,
    submission: SubmissionId,
) {
    standing.note_pass.spent_at = Some(session.journal().compactions().count());
    sink.emit(submission, Event::BackgroundNote { state: None });
}

/// The record of a finished note: the note composed now on the snapshot's covered part.
pub(super) async fn prepare(
    session: &dyn Conversation,
    snapshot: &Snapshot,
    text: &str,
    stats: &SummaryStats,
) -> Option<Prepared> {
    let note_chars = codewhale_compaction::budget::note_chars(&snapshot.limits.note_window());
    let summary = crate::compaction::extract::with_extract(
        session.journal(),
        &snapshot.view,
        &snapshot.plain,
        text,
        stats,
        note_chars,
    );
    let covered = &snapshot.plain.messages[..snapshot.plan.cut];
    let previous = snapshot.view.compaction.as_ref();
    let anchors = snapshot.basis.anchors.clone();
    let (note, files) =
        conversation::build_note(session, covered, previous, &summary, anchors.as_deref()).await;
    let mut record = record::summary_record(SummaryRecord {
        plain: &snapshot.plain,
        plan: &snapshot.plan,
        previous,
        trigger: Trigger::Auto,
        focus: None,
        summary,
        note,
        files_touched: files.paths(),
        anchors,
        model: snapshot.summary_model.clone(),
    })?;
    record.background = true;
    crate::compaction::record::cost(&mut record, stats);
    let first = record.covers.as_ref()?.first.clone();
    let parent = session
        .journal()
        .get(first.as_str())
        .and_then(|e| e.parent.clone())
        .unwrap_or_else(|| session.journal().header_entry().id.clone());
    Some(Prepared { record, parent, reaches_aim: snapshot.reaches_aim })
}

/// What the pass needs to try a prepared note against the current view.
pub(crate) struct Current<'a> {
    pub view: &'a View,
    pub plain: &'a PlainView,
    pub anchors: Option<&'a str>,
    /// Pressure before the pass, for `tokens_before`.
    pub before: u64,
    /// What the view it yields must be at or below: the aim of an auto pass (docs/compaction.md,
    /// *The cut*: a pass buys room), in provider tokens.
    pub target: u64,
}

/// Commits `prepared` when the view it yields is at or below the aim and passes every check of
/// `commit` (the survival contract against the current view among them); otherwise says
/// whether to fold it in (sound but too big) or discard it (refused by a check).
pub(crate) async fn try_commit(
    session: &mut dyn Conversation,
    prepared: &Prepared,
    current: Current<'_>,
) -> Tried {
    let mut record = prepared.record.clone();
    let budget = session.budget();
    let policy = budget.limits().cut_policy(budget.calibration());
    record::receipt_now(current.plain, &mut record, current.anchors, &policy);
    let proposal = Proposal {
        plain: current.plain,
        previous: current.view.compaction.as_ref().map(|c| &c.record),
        record,
        parent: prepared.parent.clone(),
        anchors: current.anchors,
        tokens_before: current.before,
        target: current.target,
        exact: true,
    };
    match commit::commit(session, proposal).await {
        Ok(written) => Tried::Written(written),
        Err(Refusal::OverTarget) => {
            tracing::info!("the background note leaves the view over its target; folding it in");
            let entry = commit::record_entry(&prepared.parent, prepared.record.clone());
            let head = session.journal().head_id().clone();
            let view = render_with_record(session.journal(), head.as_str(), &entry);
            let plain = commit::plain_with_note(session, &view, &entry);
            Tried::FoldIn(Box::new((view, plain)))
        }
        Err(Refusal::Failed(reason) | Refusal::NoGain(reason)) => {
            tracing::info!(%reason, "background note refused; a foreground pass runs");
            Tried::Discard
        }
        Err(Refusal::NoChange) => Tried::Discard,
    }
}
