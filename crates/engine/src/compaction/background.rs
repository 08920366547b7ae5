//! Background compaction (DESIGN §5.8): the note is written before it is needed, so the turn
//! that crosses the threshold does not wait for a summary.
//!
//! When pressure crosses the early mark (`compaction.background_at`, default 0.6 × `U`) and no
//! pass is running, [`maybe_start`] takes a **snapshot** — the view, its cut plan, the anchors,
//! the summarizer (system prompt, tools, client) — and spawns the summary request on it; turns
//! go on meanwhile. When pressure reaches the threshold, the auto pass asks [`take`] for the
//! note: a finished one becomes a [`Prepared`] record (the note composed then, on the snapshot's
//! covered part), which the pass commits through [`try_commit`] when the view it yields is below
//! the threshold and passes the survival contract, or else folds in as the previous note of an
//! ordinary pass. A note not ready yet is waited for at most as long as a foreground pass takes
//! ([`wait_bound`]).
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

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codewhale_journal::{
    render_with_record, CompactionPayload, Entry, EntryId, Level, SystemPayload, Trigger, View,
};
use codewhale_provider::CancellationToken;
use tokio::task::JoinHandle;

use super::commit::{self, Proposal, Refusal, Written};
use super::cut::{self, CutPlan, CutPolicy};
use super::plain::PlainView;
use super::record::{self, SummaryRecord};
use super::summarize::{self, SummaryError, SummaryJob, Summarizer};
use super::summary;
use crate::anchors::AnchorStore;
use crate::budget::Limits;
use crate::events::EventSink;
use crate::protocol::{BackgroundState, Event, SubmissionId};
use crate::session::Session;

/// DESIGN §9: a background pass starts at this fraction of usable input.
pub const DEFAULT_BACKGROUND_AT: f64 = 0.6;

/// How long a note not ready yet is waited for when no summary pass of this session has been
/// timed yet: about what a 12,000-character note takes a real model to write.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(90);

/// The early mark, in provider tokens: `fraction × U` (default [`DEFAULT_BACKGROUND_AT`]).
pub fn early_mark(limits: &Limits, fraction: Option<f64>) -> u64 {
    (limits.usable_input as f64 * fraction.unwrap_or(DEFAULT_BACKGROUND_AT)).floor() as u64
}

/// What decides whether a background pass starts now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartCheck {
    /// `compaction.background` (default true).
    pub enabled: bool,
    pub pressure: u64,
    pub early_mark: u64,
    pub threshold: u64,
    /// A background pass is running or its note waits.
    pub busy: bool,
    /// A note was already used up since the last record (the mark re-arms after a record).
    pub spent: bool,
    /// Auto passes hold back after failed summaries (DESIGN §5.1).
    pub backing_off: bool,
    /// `exec` lives for one turn: only inside its tool loop (after the turn's first reply).
    pub allowed_here: bool,
}

/// Whether a background pass starts: between the early mark and the threshold (at the threshold
/// the foreground pass runs anyway), when none runs and nothing holds it back.
pub fn should_start(c: &StartCheck) -> bool {
    c.enabled
        && c.allowed_here
        && !c.busy
        && !c.spent
        && !c.backing_off
        && c.early_mark < c.threshold
        && c.pressure >= c.early_mark
        && c.pressure < c.threshold
}

/// What a snapshot was taken on, and what the session is now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Basis {
    pub model: String,
    pub anchors: Option<String>,
    /// Compaction records in the journal.
    pub records: usize,
}

/// Why a snapshot no longer describes the session, if it does not.
pub fn stale(then: &Basis, now: &Basis, head_on_spine: bool) -> Option<&'static str> {
    if !head_on_spine {
        Some("HEAD moved off the branch it was written on")
    } else if then.model != now.model {
        Some("the model changed")
    } else if then.anchors != now.anchors {
        Some("the anchors changed")
    } else if then.records != now.records {
        Some("another compaction record was written")
    } else {
        None
    }
}

/// How long a note not ready yet is waited for: as long as a foreground pass would take — the
/// last summary pass timed in this session, else [`DEFAULT_WAIT`].
pub fn wait_bound(last_pass: Option<Duration>) -> Duration {
    last_pass.unwrap_or(DEFAULT_WAIT)
}

/// Everything fixed when a background pass starts.
#[derive(Debug)]
struct Snapshot {
    view: View,
    plain: PlainView,
    plan: CutPlan,
    basis: Basis,
    /// HEAD when the snapshot was taken.
    head: EntryId,
    summary_model: String,
}

/// The one background pass of a session, if any.
#[derive(Debug, Default)]
pub(crate) struct NotePass {
    slot: Option<Slot>,
    /// Records in the journal when the last note was used up: no new pass until another record
    /// is written (the early mark re-arms after every record).
    spent_at: Option<usize>,
    /// How long the last summary pass of this session took (the wait bound).
    last_pass: Option<Duration>,
}

#[derive(Debug)]
struct Slot {
    snapshot: Arc<Snapshot>,
    cancel: CancellationToken,
    task: JoinHandle<Result<String, SummaryError>>,
    ready: Arc<AtomicBool>,
    started: Instant,
}

impl NotePass {
    /// Where the background note is, for the status line and `context --json`.
    pub fn state(&self) -> Option<BackgroundState> {
        self.slot.as_ref().map(|s| {
            if s.ready.load(Ordering::Acquire) {
                BackgroundState::Ready
            } else {
                BackgroundState::Writing
            }
        })
    }

    /// Records how long a summary pass took.
    pub fn timed(&mut self, took: Duration) {
        self.last_pass = Some(took);
    }

    fn drop_slot(&mut self) -> bool {
        match self.slot.take() {
            Some(slot) => {
                slot.cancel.cancel();
                slot.task.abort();
                true
            }
            None => false,
        }
    }
}

impl Drop for NotePass {
    fn drop(&mut self) {
        self.drop_slot();
    }
}

/// A finished background note as the record a pass may commit.
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    pub record: CompactionPayload,
    /// The splice point: the entry just before the covered segment.
    pub parent: EntryId,
}

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
fn anchors(session: &Session) -> Option<String> {
    AnchorStore::new(session.workspace())
        .text()
        .ok()
        .flatten()
        .map(|a| session.redactor().redact(&a).into_owned())
}

/// Before a request (and after a turn): settles a finished pass, drops a stale one, and starts
/// one when pressure has crossed the early mark. `in_tool_loop`: the turn already has a reply
/// (a one-turn `exec` starts a pass only then).
pub(crate) async fn maybe_start(
    session: &mut Session,
    sink: &EventSink,
    submission: SubmissionId,
    in_tool_loop: bool,
) {
    settle(session, sink, submission).await;
    let config = &session.config().compaction;
    let limits = *session.budget().limits();
    let records = session.journal().compactions().count();
    let check = StartCheck {
        enabled: config.background.unwrap_or(true),
        pressure: session.budget().pressure().tokens,
        early_mark: early_mark(&limits, config.background_at),
        threshold: limits.threshold,
        busy: session.note_pass.slot.is_some(),
        spent: session.note_pass.spent_at == Some(records),
        backing_off: super::triggers::backing_off(session),
        allowed_here: !session.one_turn() || in_tool_loop,
    };
    if !should_start(&check) || !super::pass::auto_worthwhile(session) {
        return;
    }
    let Some(snapshot) = snapshot(session) else { return };
    let summarizer = Summarizer::of(session, &snapshot.summary_model);
    let max_output = super::pass::summary_max_output(&limits);
    let snapshot = Arc::new(snapshot);
    let cancel = CancellationToken::new();
    let ready = Arc::new(AtomicBool::new(false));
    let task = tokio::spawn(write_note(
        snapshot.clone(),
        summarizer,
        max_output,
        cancel.clone(),
        Notify { sink: sink.clone(), submission, ready: ready.clone() },
    ));
    tracing::info!(
        pressure = check.pressure,
        early_mark = check.early_mark,
        cut = snapshot.plan.cut,
        "background note started"
    );
    session.note_pass.slot = Some(Slot { snapshot, cancel, task, ready, started: Instant::now() });
    sink.emit(submission, Event::BackgroundNote { state: Some(BackgroundState::Writing) });
}

/// The view, cut and anchors an auto pass would use now; `None` when there is nothing to cover.
fn snapshot(session: &Session) -> Option<Snapshot> {
    let view = session.render();
    let plain = PlainView::new(&view, |item| session.known_tokens(item));
    if plain.messages.len() < cut::MIN_MESSAGES {
        return None;
    }
    let limits = session.budget().limits();
    let policy = CutPolicy {
        retained_tokens: session.config().compaction.retained_user_tokens,
        ..CutPolicy::new(limits.usable_input, session.budget().calibration())
    };
    let plan = cut::plan(&plain.messages, &plain.tokens, &policy).ok()?;
    // Nothing before the protected part: a note would cover nothing new.
    record::covers(&plain, &plan, view.compaction.as_ref())?;
    let summary_model = session
        .config()
        .compaction
        .compaction_model
        .clone()
        .unwrap_or_else(|| session.model().to_owned());
    Some(Snapshot {
        head: session.journal().head_id().clone(),
        basis: basis(session),
        view,
        plain,
        plan,
        summary_model,
    })
}

struct Notify {
    sink: EventSink,
    submission: SubmissionId,
    ready: Arc<AtomicBool>,
}

/// The background task: the summary request on the snapshot, nothing else.
async fn write_note(
    snapshot: Arc<Snapshot>,
    summarizer: Summarizer,
    max_output: u32,
    cancel: CancellationToken,
    notify: Notify,
) -> Result<String, SummaryError> {
    let job = SummaryJob {
        summarizer: &summarizer,
        view: &snapshot.view,
        plain: &snapshot.plain,
        cut: snapshot.plan.cut,
        focus: None,
        model: &snapshot.summary_model,
        max_output,
    };
    let result = summarize::summarize(&job, cancel).await.map(|(text, _)| text);
    match &result {
        Ok(_) => {
            notify.ready.store(true, Ordering::Release);
            let ready = Event::BackgroundNote { state: Some(BackgroundState::Ready) };
            notify.sink.emit(notify.submission, ready);
        }
        // The engine journals the failure when it next looks ([`settle`]).
        Err(_) => notify.sink.emit(notify.submission, Event::BackgroundNote { state: None }),
    }
    result
}

/// Settles a pass that has ended: a failure is journaled (and backs off) now, a stale note is
/// dropped. A finished note stays until the threshold asks for it.
async fn settle(session: &mut Session, sink: &EventSink, submission: SubmissionId) {
    let Some(slot) = &session.note_pass.slot else { return };
    let head = session.journal().head_id().clone();
    let on_spine = session.journal().is_ancestor(slot.snapshot.head.as_str(), head.as_str());
    if let Some(why) = stale(&slot.snapshot.basis, &basis(session), on_spine) {
        cancel(session, sink, submission, why);
        return;
    }
    if !slot.task.is_finished() || slot.ready.load(Ordering::Acquire) {
        return;
    }
    if let Some(slot) = session.note_pass.slot.take() {
        if let Ok(Err(err)) = slot.task.await {
            failed(session, sink, submission, err);
        }
    }
}

/// Journals a failed background note exactly as a failed foreground pass is journaled.
fn failed(session: &mut Session, sink: &EventSink, submission: SubmissionId, err: SummaryError) {
    session.note_pass.spent_at = Some(session.journal().compactions().count());
    let emit = |event| sink.emit(submission, event);
    let (reason, summary_failed) = match err {
        SummaryError::Cancelled => return,
        SummaryError::Failed(reason) => (reason, false),
        SummaryError::Unusable(reason) => {
            super::triggers::summary_failed(session, &reason, &emit);
            (reason, true)
        }
    };
    tracing::warn!(%reason, "background note failed");
    let text = format!("compaction (auto, in the background) failed, nothing was changed: {reason}");
    let mut payload = SystemPayload::new(Level::Warning, text);
    payload.summary_failed = summary_failed;
    let parent = session.journal().head_id().clone();
    if let Err(err) = session.append_entry(Entry::new(Some(parent), payload)) {
        tracing::error!("cannot journal the background failure: {err}");
    }
}

/// Cancels the background pass, if any (nothing is written) and re-arms the early mark.
pub(crate) fn cancel(session: &mut Session, sink: &EventSink, submission: SubmissionId, why: &str) {
    session.note_pass.spent_at = None;
    if session.note_pass.drop_slot() {
        tracing::info!(%why, "background note cancelled");
        sink.emit(submission, Event::BackgroundNote { state: None });
    }
}

/// On close: a failure already in is journaled; a pass still running is cancelled.
pub(crate) async fn close(session: &mut Session) {
    let Some(slot) = session.note_pass.slot.take() else { return };
    if slot.task.is_finished() && !slot.ready.load(Ordering::Acquire) {
        if let Ok(Err(err)) = slot.task.await {
            let (sink, _rx) = crate::events::channel();
            failed(session, &sink, SubmissionId(0), err);
        }
    } else {
        slot.cancel.cancel();
        slot.task.abort();
    }
}

/// At the threshold: the background note as a record to commit, waiting for it at most
/// [`wait_bound`] (or until `cancel`). `None` when there is none, it is stale, it failed or it
/// was not ready in time; the note is used up either way.
pub(crate) async fn take(
    session: &mut Session,
    sink: &EventSink,
    submission: SubmissionId,
    cancel: &CancellationToken,
) -> Option<Prepared> {
    settle(session, sink, submission).await;
    let slot = session.note_pass.slot.take()?;
    session.note_pass.spent_at = Some(session.journal().compactions().count());
    sink.emit(submission, Event::BackgroundNote { state: None });
    let Slot { snapshot, cancel: own, mut task, started, .. } = slot;
    let bound = wait_bound(session.note_pass.last_pass);
    let waited = Instant::now();
    let joined = tokio::select! {
        joined = tokio::time::timeout(bound, &mut task) => joined,
        () = cancel.cancelled() => {
            own.cancel();
            task.abort();
            return None;
        }
    };
    let text = match joined {
        Ok(Ok(Ok(text))) => text,
        Ok(Ok(Err(err))) => {
            failed(session, sink, submission, err);
            return None;
        }
        Ok(Err(join)) => {
            tracing::warn!("the background note task stopped: {join}");
            return None;
        }
        Err(_) => {
            tracing::info!(?bound, "background note not ready in time; a foreground pass runs");
            own.cancel();
            task.abort();
            return None;
        }
    };
    session.note_pass.timed(started.elapsed());
    tracing::info!(waited_ms = waited.elapsed().as_millis() as u64, "background note taken");
    prepare(session, &snapshot, &text).await
}

/// The record of a finished note: the note composed now on the snapshot's covered part.
async fn prepare(session: &Session, snapshot: &Snapshot, text: &str) -> Option<Prepared> {
    let summary = summary::cap(text);
    let covered = &snapshot.plain.messages[..snapshot.plan.cut];
    let previous = snapshot.view.compaction.as_ref();
    let anchors = snapshot.basis.anchors.clone();
    let (note, files) =
        super::pass::build_note(session, covered, previous, &summary, anchors.as_deref()).await;
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
    let first = record.covers.as_ref()?.first.clone();
    let parent = session
        .journal()
        .get(first.as_str())
        .and_then(|e| e.parent.clone())
        .unwrap_or_else(|| session.journal().header_entry().id.clone());
    Some(Prepared { record, parent })
}

/// What the pass needs to try a prepared note against the current view.
pub(crate) struct Current<'a> {
    pub view: &'a View,
    pub plain: &'a PlainView,
    pub anchors: Option<&'a str>,
    /// Pressure before the pass, for `tokens_before`.
    pub before: u64,
    pub threshold: u64,
}

/// Commits `prepared` when the view it yields is below the threshold and passes every check of
/// `commit` (the survival contract against the current view among them); otherwise says
/// whether to fold it in (sound but too big) or discard it (refused by a check).
pub(crate) async fn try_commit(
    session: &mut Session,
    prepared: &Prepared,
    current: Current<'_>,
) -> Tried {
    let proposal = Proposal {
        plain: current.plain,
        previous: current.view.compaction.as_ref().map(|c| &c.record),
        record: prepared.record.clone(),
        parent: prepared.parent.clone(),
        anchors: current.anchors,
        tokens_before: current.before,
        target: current.threshold,
        exact: true,
    };
    match commit::commit(session, proposal).await {
        Ok(written) => Tried::Written(written),
        Err(Refusal::OverTarget) => {
            tracing::info!("the background note leaves the view over the threshold; folding it in");
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

#[cfg(test)]
mod tests {
    use super::*;

    fn check() -> StartCheck {
        StartCheck {
            enabled: true,
            pressure: 6_500,
            early_mark: 6_000,
            threshold: 8_000,
            busy: false,
            spent: false,
            backing_off: false,
            allowed_here: true,
        }
    }

    #[test]
    fn starts_between_the_early_mark_and_the_threshold_only() {
        assert!(should_start(&check()));
        assert!(!should_start(&StartCheck { pressure: 5_999, ..check() }));
        assert!(should_start(&StartCheck { pressure: 6_000, ..check() }));
        assert!(!should_start(&StartCheck { pressure: 8_000, ..check() }), "foreground's turn");
    }

    #[test]
    fn one_at_a_time_and_never_when_held_back() {
        for held in [
            StartCheck { busy: true, ..check() },
            StartCheck { spent: true, ..check() },
            StartCheck { backing_off: true, ..check() },
            StartCheck { enabled: false, ..check() },
            StartCheck { allowed_here: false, ..check() },
            StartCheck { early_mark: 8_000, ..check() },
        ] {
            assert!(!should_start(&held), "{held:?}");
        }
    }

    #[test]
    fn a_snapshot_goes_stale_on_every_change_it_was_built_on() {
        let then = Basis { model: "m".into(), anchors: Some("a".into()), records: 1 };
        assert_eq!(stale(&then, &then.clone(), true), None);
        assert!(stale(&then, &then.clone(), false).unwrap().contains("HEAD"));
        let model = Basis { model: "n".into(), ..then.clone() };
        assert!(stale(&then, &model, true).unwrap().contains("model"));
        let anchors = Basis { anchors: None, ..then.clone() };
        assert!(stale(&then, &anchors, true).unwrap().contains("anchors"));
        let records = Basis { records: 2, ..then.clone() };
        assert!(stale(&then, &records, true).unwrap().contains("record"));
    }

    #[test]
    fn the_wait_is_bounded_by_a_foreground_pass() {
        assert_eq!(wait_bound(Some(Duration::from_secs(3))), Duration::from_secs(3));
        assert_eq!(wait_bound(None), DEFAULT_WAIT);
    }

    #[test]
    fn the_early_mark_defaults_to_six_tenths_of_usable_input() {
        let limits = Limits::compute(20_000, crate::budget::WindowSource::Config, None, 0.8);
        assert_eq!(early_mark(&limits, None), (limits.usable_input as f64 * 0.6) as u64);
        assert_eq!(early_mark(&limits, Some(0.5)), limits.usable_input / 2);
    }
}
