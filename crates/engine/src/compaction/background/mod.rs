//! Background compaction (docs/compaction.md, *Background compaction*): the note is written before
//! it is needed, so the turn that crosses the threshold does not wait for a summary.
//!
//! When pressure crosses the early mark (`compaction.background_at`, default 0.6 × `U`) and no
//! pass is running, [`maybe_start`] takes a **snapshot** — the view, its cut plan, the anchors,
//! the summarizer (system prompt, tools, client) — and spawns the summary request on it; turns
//! go on meanwhile. When pressure reaches the threshold, the auto pass asks [`take`] for the
//! note: a finished one becomes a [`Prepared`] record (the note composed then, on the snapshot's
//! covered part), which the pass commits through [`try_commit`] when the view it yields is below
//! the threshold and passes the survival contract, or else folds in as the previous note of an
//! ordinary pass. A note not ready yet is waited for at most as long as a summary request of its
//! model takes ([`wait_bound`], measured by `clock`); past that it goes on and no second summary
//! request is sent for the same crossing ([`Taken::Late`]): the request goes out trimmed to fit
//! meanwhile, and the note is taken when it is ready.
//!
//! Invariants:
//! - at most one background pass ([`NotePass`] holds one slot);
//! - nothing reaches the journal but a committed record (through `commit`, like any pass) or,
//!   for a failed note, the same `system` notice a failed foreground pass leaves (so the backoff
//!   of §5.1 holds across processes); a cancelled or unused note leaves no trace;
//! - a snapshot is used only while it still describes the session ([`stale`]): same model,
//!   same anchors, no record written since, and its HEAD still on HEAD's spine. The engine also
//!   cancels it outright on `/compact`, a HEAD move, `/model`, an anchor change, an interrupt
//!   and close ([`cancel`]).
//!
//! The decisions ([`should_start`], [`stale`], [`wait_bound`], [`early_mark`]) are pure; the
//! rest is the thin async shell around them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use codewhale_journal::{render_with_record, Entry, Level, SystemPayload, Trigger, View};
use codewhale_provider::CancellationToken;

use super::commit::{self, Proposal, Written};
use super::cut::{self, CutPolicy};
use super::judge::Refusal;
use super::pass_plan::{worth_sending, SendCheck};
use super::plain::PlainView;
use super::record::{self, SummaryRecord};
use super::steps;
use super::summarize::{self, Summarizer, SummaryError, SummaryJob};
use super::summary::SummaryStats;
use crate::anchors::AnchorStore;
use crate::events::EventSink;
use crate::session::Session;
use codewhale_protocol::{BackgroundState, Event, SubmissionId};

mod close;
mod decide;
pub mod idle;
pub(crate) mod state;

use crate::session::job::Signal;
pub(crate) use close::close;
pub use decide::{
    early_mark, should_start, snapshot_tail_fraction, stale, wait_bound, Basis, StartCheck,
};
pub(crate) use idle::{activity, idle_after, on_idle};
pub use state::Prepared;
use state::{Note, Slot, Snapshot};

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

fn basis(session: &Session) -> Basis {
    Basis {
        model: session.model().to_owned(),
        anchors: anchors(session),
        records: session.journal().compactions().count(),
    }
}

/// The anchors in their redacted form, as a pass compares and restates them.
pub(super) fn anchors(session: &Session) -> Option<String> {
    AnchorStore::new(session.workspace())
        .text()
        .ok()
        .flatten()
        .map(|a| session.redactor().redact(&a).into_owned())
}

/// When a background pass is asked to start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StartAt {
    /// Before a request or after a turn: the note waits for the threshold. `in_tool_loop`: the
    /// turn already has a reply (a one-turn `exec` starts a pass only then).
    Turn { in_tool_loop: bool },
    /// The session is idle: the note is committed as soon as it is ready, before the
    /// conversation grows again.
    Idle,
}

/// Before a request (and after a turn, and when idle): settles a finished pass, drops a stale
/// one, and starts one when pressure has crossed the early mark.
pub(crate) async fn maybe_start(
    session: &mut Session,
    sink: &EventSink,
    submission: SubmissionId,
    at: StartAt,
) {
    let in_tool_loop = matches!(at, StartAt::Idle | StartAt::Turn { in_tool_loop: true });
    settle(session, sink, submission).await;
    let config = &session.config().compaction;
    let limits = *session.budget().limits();
    let records = session.journal().compactions().count();
    let check = StartCheck {
        enabled: config.background.unwrap_or(true),
        pressure: session.budget().pressure().tokens,
        early_mark: early_mark(&limits, config.background_at),
        threshold: limits.threshold,
        busy: session.compaction.note_pass.job.slot.is_some(),
        spent: session.compaction.note_pass.spent_at == Some(records),
        backing_off: steps::backing_off(session),
        allowed_here: !session.one_turn() || in_tool_loop,
    };
    if !should_start(&check) || !steps::auto_worthwhile(session) {
        return;
    }
    // The user's `PreCompact` hooks, as the pass starts: exit 2 skips it (a failed pass).
    if let Some(why) = crate::hooks::pre_compact(session, &Trigger::Auto).await {
        return failed(session, sink, submission, SummaryError::Unusable(why));
    }
    let Some(snapshot) = snapshot(session, at) else { return };
    let summarizer = Summarizer::of(session, &snapshot.summary_model);
    let max_output = steps::summary_max_output(&limits);
    let snapshot = Arc::new(snapshot);
    let cancel = CancellationToken::new();
    let (signal, (done, ended)) = session.compaction.note_pass.job.signal();
    let task = tokio::spawn(write_note(
        snapshot.clone(),
        summarizer,
        max_output,
        steps::max_summary_requests(session),
        cancel.clone(),
        Notify { sink: sink.clone(), submission, signal },
    ));
    tracing::info!(
        pressure = check.pressure,
        early_mark = check.early_mark,
        cut = snapshot.plan.cut,
        "background note started"
    );
    let state = Note { snapshot, prepared: None, commit_when_idle: false };
    session.compaction.note_pass.job.start(Slot { state, cancel, task: Some(task), done, ended });
    sink.emit(submission, Event::BackgroundNote { state: Some(BackgroundState::Writing) });
}

/// The view, cut and anchors an auto pass would use now; `None` when there is nothing to cover,
/// or when the note could not be committed where it will be: a note folded into another summary
/// request costs two requests for one note.
fn snapshot(session: &Session, at: StartAt) -> Option<Snapshot> {
    let view = session.render();
    let plain = PlainView::new(&view, |item| session.known_tokens(item));
    if plain.messages.len() < cut::MIN_MESSAGES {
        return None;
    }
    let limits = session.budget().limits();
    let pressure = session.budget().pressure().tokens;
    let calibration = session.budget().calibration();
    let policy = CutPolicy {
        retained_tokens: session.config().compaction.retained_user_tokens,
        tail_fraction: snapshot_tail_fraction(limits, pressure),
        ..CutPolicy::of(limits, calibration)
    };
    // The note is committed at the threshold, when the conversation has grown by what is still
    // to come: the view it leaves then must be at the aim of an auto pass.
    let anchors = anchors(session);
    let to_come = match at {
        StartAt::Idle => 0,
        StartAt::Turn { .. } => crate::budget::from_provider(
            limits.threshold.saturating_sub(pressure) as f64,
            calibration,
        ),
    };
    let (room, median) =
        steps::room(session, &plain, view.compaction.as_ref(), anchors.as_deref(), to_come);
    let plan = super::pass_plan::aimed_cut(&plain.messages, &plain.tokens, &policy, &room).ok()?;
    // Whether the view the note leaves at the threshold can be at the aim; when not even the
    // smallest view can, the note is committed if it leaves a median turn of room.
    let leaves = room.fixed + plan.tail_tokens + plan.retained_tokens + to_come;
    let reaches_aim = leaves <= crate::budget::from_provider(room.aim as f64, calibration);
    let threshold = crate::budget::from_provider(limits.threshold as f64, calibration);
    if !reaches_aim && leaves + median > threshold {
        tracing::info!(
            leaves,
            median,
            threshold,
            "no background note: it would be folded into another"
        );
        return None;
    }
    // Nothing before the protected part: a note would cover nothing new.
    record::covers(&plain, &plan, view.compaction.as_ref())?;
    // Nor is a note written that could not be committed (no request is paid for nothing).
    let covered = &plain.messages[..plan.cut];
    let check = SendCheck {
        before: plain.total(),
        tail: plan.tail_tokens,
        retained: plan.retained_tokens,
        note_fixed: steps::note_fixed_tokens(
            session,
            covered,
            view.compaction.as_ref(),
            anchors.as_deref(),
        ),
        note_budget: steps::note_budget_tokens(limits),
        prefix: session.budget().system_tokens(),
        threshold,
        manual: false,
        spare: Some(median),
    };
    if let Err(why) = worth_sending(&check) {
        tracing::info!(%why, "no background note: it could not be committed");
        return None;
    }
    let summary_model = session.summarizer_model();
    Some(Snapshot {
        limits: *limits,
        head: session.journal().head_id().clone(),
        basis: basis(session),
        view,
        plain,
        plan,
        summary_model,
        reaches_aim,
    })
}

struct Notify {
    sink: EventSink,
    submission: SubmissionId,
    signal: Signal,
}

/// The background task: the summary request on the snapshot, nothing else.
async fn write_note(
    snapshot: Arc<Snapshot>,
    summarizer: Summarizer,
    max_output: u32,
    max_requests: u32,
    cancel: CancellationToken,
    notify: Notify,
) -> Result<(String, SummaryStats), SummaryError> {
    let job = SummaryJob {
        summarizer: &summarizer,
        view: &snapshot.view,
        plain: &snapshot.plain,
        cut: snapshot.plan.cut,
        focus: None,
        model: &snapshot.summary_model,
        max_output,
        max_requests,
        note_chars: steps::note_chars(&snapshot.limits),
        progress: None,
    };
    let result = summarize::summarize(&job, cancel).await;
    match &result {
        Ok(_) => {
            let ready = Event::BackgroundNote { state: Some(BackgroundState::Ready) };
            notify.sink.emit(notify.submission, ready);
            notify.signal.done();
        }
        // The engine journals the failure when it next looks ([`settle`]).
        Err(_) => {
            notify.sink.emit(notify.submission, Event::BackgroundNote { state: None });
            notify.signal.failed();
        }
    }
    result
}

/// Between turns, when a background request ended: journal its failure or compose its note now.
pub(crate) async fn settle_idle(session: &mut Session, sink: &EventSink) {
    settle(session, sink, SubmissionId(0)).await;
    if idle::wanted(session) {
        // Asked for by idle compaction, and the session is still idle: commit it now.
        idle::commit(session, sink, SubmissionId(0), Trigger::Idle).await;
    }
}

/// Settles a pass that has ended: a stale note is dropped, a failure is journaled (and backs
/// off) now, a finished note is composed into its record and waits for the threshold.
async fn settle(session: &mut Session, sink: &EventSink, submission: SubmissionId) {
    let Some(slot) = &session.compaction.note_pass.job.slot else { return };
    let head = session.journal().head_id().clone();
    let on_spine = session.journal().is_ancestor(slot.state.snapshot.head.as_str(), head.as_str());
    if let Some(why) = stale(&slot.state.snapshot.basis, &basis(session), on_spine) {
        cancel(session, sink, submission, why);
        return;
    }
    // The task says its request ended just before it returns: then its answer is a wait of no
    // time away (taking an unfinished task for a running one left a ready note uncommitted).
    if !slot.has_ended() {
        return;
    }
    if let Some(slot) = session.compaction.note_pass.job.slot.take() {
        match finish(session, sink, submission, slot, ENDING).await {
            Finished::Ready(slot) | Finished::Late(slot) => {
                session.compaction.note_pass.job.slot = Some(slot)
            }
            Finished::Gone => {}
        }
    }
}

/// How long a task that said its request ended is waited for: it only has to return.
const ENDING: Duration = Duration::from_secs(5);

/// What became of a background request waited for.
enum Finished {
    /// Its note is composed into the slot's record.
    Ready(Slot),
    /// Not answered within the bound: the slot, still running.
    Late(Slot),
    /// Failed (journaled), refused or stopped: nothing to use.
    Gone,
}

/// Waits up to `bound` for the request of `slot` and composes its record.
async fn finish(
    session: &mut Session,
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
            failed(session, sink, submission, err);
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
fn failed(session: &mut Session, sink: &EventSink, submission: SubmissionId, err: SummaryError) {
    session.compaction.note_pass.spent_at = Some(session.journal().compactions().count());
    let emit = |event| sink.emit(submission, event);
    let (reason, summary_failed) = match err {
        SummaryError::Cancelled => return,
        SummaryError::Failed(reason) => (reason, false),
        SummaryError::Unusable(reason) => {
            steps::summary_failed(session, &reason, &emit);
            (reason, true)
        }
        SummaryError::WindowLearned { window, source } => {
            // The window is the session's now: the next pass plans under it.
            if let Err(err) = super::pass::learned_from_summary(session, window, source, &emit) {
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
pub(crate) fn cancel(session: &mut Session, sink: &EventSink, submission: SubmissionId, why: &str) {
    session.compaction.note_pass.spent_at = None;
    if session.compaction.note_pass.job.stop() {
        tracing::info!(%why, "background note cancelled");
        sink.emit(submission, Event::BackgroundNote { state: None });
    }
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
    session: &mut Session,
    sink: &EventSink,
    submission: SubmissionId,
    cancel: &CancellationToken,
) -> Taken {
    settle(session, sink, submission).await;
    let Some(slot) = session.compaction.note_pass.job.slot.take() else { return Taken::Nothing };
    if let Some(prepared) = slot.state.prepared.clone() {
        used_up(session, sink, submission);
        slot.stop();
        return Taken::Note(Box::new(prepared));
    }
    let bound = wait_bound(session.compaction.clock.measured(&slot.state.snapshot.summary_model));
    let waited = Instant::now();
    let own = slot.cancel.clone();
    let finished = tokio::select! {
        finished = finish(session, sink, submission, slot, bound) => Some(finished),
        () = cancel.cancelled() => None,
    };
    let taken = match finished {
        None => {
            // The interrupted turn drops the wait, and with it the task's handle: stop it.
            own.cancel();
            Taken::Cancelled
        }
        Some(Finished::Late(slot)) => {
            session.compaction.note_pass.job.slot = Some(slot);
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
    used_up(session, sink, submission);
    taken
}

/// The note of this crossing is used up: no new background pass until the next record.
pub(super) fn used_up(session: &mut Session, sink: &EventSink, submission: SubmissionId) {
    session.compaction.note_pass.spent_at = Some(session.journal().compactions().count());
    sink.emit(submission, Event::BackgroundNote { state: None });
}

/// The record of a finished note: the note composed now on the snapshot's covered part.
async fn prepare(
    session: &Session,
    snapshot: &Snapshot,
    text: &str,
    stats: &SummaryStats,
) -> Option<Prepared> {
    let note_chars = steps::note_chars(&snapshot.limits);
    let summary =
        steps::with_extract(session, &snapshot.view, &snapshot.plain, text, stats, note_chars);
    let covered = &snapshot.plain.messages[..snapshot.plan.cut];
    let previous = snapshot.view.compaction.as_ref();
    let anchors = snapshot.basis.anchors.clone();
    let (note, files) =
        steps::build_note(session, covered, previous, &summary, anchors.as_deref()).await;
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
    steps::record_cost(&mut record, stats);
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
    session: &mut Session,
    prepared: &Prepared,
    current: Current<'_>,
) -> Tried {
    let mut record = prepared.record.clone();
    let budget = session.budget();
    let policy = CutPolicy::of(budget.limits(), budget.calibration());
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
