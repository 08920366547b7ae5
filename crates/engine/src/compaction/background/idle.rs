//! Idle compaction (docs/compaction.md, *Idle compaction*): a session left idle — no turn, no
//! typing — for `compaction.idle_after_sec` (default 270 s: the common 5-minute prompt-cache
//! lifetime minus a margin) whose pressure is at or above the early mark gets its note while the
//! provider's cache is still warm, so the user's next turn sends a short prompt instead of
//! re-reading the whole history uncached.
//!
//! A ready background note is committed at once (trigger `idle`); otherwise a background pass
//! starts (or the running one is marked) and its note is committed as soon as it is ready, if
//! the session is still idle. Any op from the front end (a message, typing, a command) ends the
//! idle spell: a note then waits for the threshold as every background note does (committed or
//! folded in, never thrown away). Invariants: it never runs in a process that lives for one turn,
//! nor while a turn runs (the engine loop only calls it between ops); what it commits passes the
//! same checks as any background record.

use std::time::Duration;

use codewhale_journal::Trigger;

use super::decide::early_mark;
use super::settle::{anchors, settle, try_commit, used_up, Current, Tried};
use super::start::{maybe_start, StartAt};
use crate::compaction::conversation;
use crate::compaction::port::Conversation;
use crate::compaction::standing::Standing;
use crate::events::EventSink;
use codewhale_protocol::{Event, SubmissionId};

/// docs/compaction.md, *Limits and configuration*: idle time before idle compaction.
pub const DEFAULT_IDLE_AFTER: Duration = Duration::from_secs(270);

/// How long the engine waits idle before idle compaction, or `None` when it never runs here:
/// turned off (`idle_after_sec = 0`), or a process that lives for one turn.
pub(crate) fn idle_after(session: &dyn Conversation) -> Option<Duration> {
    if session.one_turn() {
        return None;
    }
    let after = session.config().compaction.idle_after.unwrap_or(DEFAULT_IDLE_AFTER);
    (!after.is_zero()).then_some(after)
}

/// Between turns, when a background request ended: journal its failure or compose its note now.
pub(crate) async fn settle_idle(
    session: &mut dyn Conversation,
    standing: &mut Standing,
    sink: &EventSink,
) {
    settle(session, standing, sink, SubmissionId(0)).await;
    if wanted(standing) {
        // Asked for by idle compaction, and the session is still idle: commit it now.
        commit(session, standing, sink, SubmissionId(0), Trigger::Idle).await;
    }
}

/// The session has been idle for [`idle_after`]: commit a ready note, or have one written.
pub(crate) async fn on_idle(
    session: &mut dyn Conversation,
    standing: &mut Standing,
    sink: &EventSink,
) {
    let limits = *session.budget().limits();
    let early = early_mark(&limits, session.config().compaction.background_at);
    if session.budget().pressure().tokens < early {
        return;
    }
    // A note that became ready before the timer fired is composed now (its wake-up may have
    // come before its task returned), then committed below.
    settle(session, standing, sink, SubmissionId(0)).await;
    if standing.note_pass.job.slot.is_none() {
        // `maybe_start` settles first and then starts a pass when nothing holds it back.
        maybe_start(session, standing, sink, SubmissionId(0), StartAt::Idle).await;
    }
    let Some(slot) = standing.note_pass.job.slot.as_mut() else { return };
    if slot.state.prepared.is_some() {
        commit(session, standing, sink, SubmissionId(0), Trigger::Idle).await;
    } else {
        tracing::info!("idle: the background note is committed when it is ready");
        slot.state.commit_when_idle = true;
    }
}

/// A front-end op arrived: the session is no longer idle.
pub(crate) fn activity(standing: &mut Standing) {
    if let Some(slot) = standing.note_pass.job.slot.as_mut() {
        slot.state.commit_when_idle = false;
    }
}

/// Whether a note just prepared should be committed now (the session stayed idle).
pub(super) fn wanted(standing: &Standing) -> bool {
    standing
        .note_pass
        .job
        .slot
        .as_ref()
        .is_some_and(|s| s.state.commit_when_idle && s.state.prepared.is_some())
}

/// Commits the prepared note as a record of `trigger` (`idle`; `auto` when the session closes
/// with a note ready) when the view it yields is below the threshold and passes every check;
/// otherwise it stays for the threshold (or is dropped when a check refuses it).
pub(super) async fn commit(
    session: &mut dyn Conversation,
    standing: &mut Standing,
    sink: &EventSink,
    submission: SubmissionId,
    trigger: Trigger,
) {
    let Some(mut slot) = standing.note_pass.job.slot.take() else { return };
    let Some(mut prepared) = slot.state.prepared.clone() else {
        standing.note_pass.job.slot = Some(slot);
        return;
    };
    prepared.record.trigger = trigger.clone();
    let shown = crate::history_pages::trigger_of(&trigger);
    let view = session.render();
    let plain = crate::compaction::plain::of(&view, |item| session.known_tokens(item));
    let anchors = anchors(session);
    let before = session.budget().pressure().tokens;
    let previous = view.compaction.as_ref();
    let target = conversation::commit_target(
        session,
        &plain,
        previous,
        anchors.as_deref(),
        prepared.reaches_aim,
    );
    let current =
        Current { view: &view, plain: &plain, anchors: anchors.as_deref(), before, target };
    match try_commit(session, &prepared, current).await {
        Tried::Written(done) => {
            slot.stop();
            // Nothing waits on this record: it is on disk before anyone is told.
            if let Err(err) = session.sync().await {
                tracing::error!("cannot sync the idle note: {err}");
            }
            used_up(session, standing, sink, submission);
            tracing::info!(id = %done.id, before, after = done.tokens_after, trigger = trigger.as_str(), "ready note committed");
            let (id, figures) = (done.id.to_string(), (done.tokens_before, done.tokens_after));
            sink.emit(submission, Event::CompactionStarted { trigger: shown });
            let finished = crate::compaction::commit::finished_event(session, &id, shown, figures);
            sink.emit(submission, finished);
            sink.emit(submission, session.usage_event(None, None));
        }
        Tried::FoldIn(_) => {
            // Sound, but the view is still too big: it waits for the threshold's pass.
            slot.state.commit_when_idle = false;
            standing.note_pass.job.slot = Some(slot);
        }
        Tried::Discard => {
            slot.stop();
            used_up(session, standing, sink, submission);
        }
    }
}
