//! The background note's first half (docs/compaction.md, *Background compaction*): when
//! pressure crosses the early mark, [`maybe_start`] takes the snapshot and spawns the summary
//! request on it. Above `settle` (a pass that ended is settled before another starts), below
//! `idle`, which starts a note when the session is idle.

use std::sync::Arc;

use codewhale_journal::Trigger;
use codewhale_provider::CancellationToken;

use crate::compaction::conversation;
use crate::compaction::cut::{self, CutPolicy};
use crate::compaction::pass_plan::{worth_sending, SendCheck};
use crate::compaction::port::Conversation;
use crate::compaction::record;
use crate::compaction::standing::Standing;
use crate::compaction::summarize::{self, Summarizer, SummaryError, SummaryJob};
use crate::compaction::summary::SummaryStats;
use crate::events::EventSink;
use codewhale_protocol::{BackgroundState, Event, SubmissionId};

use super::decide::{early_mark, should_start, snapshot_tail_fraction, StartCheck};
use super::settle::{anchors, basis, failed, settle};
use super::state::{Note, Slot, Snapshot};
use crate::session::job::Signal;

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
    session: &mut dyn Conversation,
    standing: &mut Standing,
    sink: &EventSink,
    submission: SubmissionId,
    at: StartAt,
) {
    let in_tool_loop = matches!(at, StartAt::Idle | StartAt::Turn { in_tool_loop: true });
    settle(session, standing, sink, submission).await;
    let config = &session.config().compaction;
    let limits = *session.budget().limits();
    let records = session.journal().compactions().count();
    let check = StartCheck {
        enabled: config.background.unwrap_or(true),
        pressure: session.budget().pressure().tokens,
        early_mark: early_mark(&limits, config.background_at),
        threshold: limits.threshold,
        busy: standing.note_pass.job.slot.is_some(),
        spent: standing.note_pass.spent_at == Some(records),
        backing_off: standing.backing_off(),
        allowed_here: !session.one_turn() || in_tool_loop,
    };
    if !should_start(&check) || !standing.auto_worthwhile(session) {
        return;
    }
    // The user's `PreCompact` hooks, as the pass starts: exit 2 skips it (a failed pass).
    if let Some(why) = session.pre_compact(&Trigger::Auto).await {
        return failed(session, standing, sink, submission, SummaryError::Unusable(why));
    }
    let Some(snapshot) = snapshot(session, at) else { return };
    let summarizer = Summarizer::of(session, &standing.clock, &snapshot.summary_model);
    let max_output = codewhale_compaction::budget::summary_max_output(&limits.note_window());
    let snapshot = Arc::new(snapshot);
    let cancel = CancellationToken::new();
    let (signal, (done, ended)) = standing.note_pass.job.signal();
    let task = tokio::spawn(write_note(
        snapshot.clone(),
        summarizer,
        max_output,
        conversation::max_summary_requests(session),
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
    standing.note_pass.job.start(Slot { state, cancel, task: Some(task), done, ended });
    sink.emit(submission, Event::BackgroundNote { state: Some(BackgroundState::Writing) });
}

/// The view, cut and anchors an auto pass would use now; `None` when there is nothing to cover,
/// or when the note could not be committed where it will be: a note folded into another summary
/// request costs two requests for one note.
fn snapshot(session: &dyn Conversation, at: StartAt) -> Option<Snapshot> {
    let view = session.render();
    let plain = crate::compaction::plain::of(&view, |item| session.known_tokens(item));
    if plain.messages.len() < cut::MIN_MESSAGES {
        return None;
    }
    let limits = session.budget().limits();
    let pressure = session.budget().pressure().tokens;
    let calibration = session.budget().calibration();
    let policy = CutPolicy {
        retained_tokens: session.config().compaction.retained_user_tokens,
        tail_fraction: snapshot_tail_fraction(limits, pressure),
        ..limits.cut_policy(calibration)
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
        conversation::room(session, &plain, view.compaction.as_ref(), anchors.as_deref(), to_come);
    let plan =
        crate::compaction::pass_plan::aimed_cut(&plain.messages, &plain.tokens, &policy, &room)
            .ok()?;
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
        note_fixed: conversation::note_fixed_tokens(
            session,
            covered,
            view.compaction.as_ref(),
            anchors.as_deref(),
        ),
        note_budget: codewhale_compaction::budget::note_budget_tokens(&limits.note_window()),
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
        max_output,
        max_requests,
        note_chars: codewhale_compaction::budget::note_chars(&snapshot.limits.note_window()),
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
