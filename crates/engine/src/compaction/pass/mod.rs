//! One compaction pass: the thin async shell around the pure core (docs/compaction.md).
//!
//! The three triggers share [`run`]. A pass tries, in order:
//! 1. **prune** (auto and reactive): stub old tool output; when that gets below the prune
//!    target, a prune-only record is written and no model is called;
//! 2. **summarize** (at least four messages and something before the protected part): plan the
//!    cut, ask the model for a summary (quality gate, one stricter retry, overflow handled by
//!    dropping the oldest whole exchanges), compose the note, build the record;
//! 3. **bound** (when there is nothing to summarize): a prune-only record that shortens what the
//!    contract allows, largest first, so the request fits — room is always found.
//!
//! Which steps apply is the pure [`super::pass_plan::plan`]; this shell runs them in that order.
//! Every record then goes through `commit`, which fits it under the
//! threshold, checks it and writes it. Invariants: a refused or failed pass writes no record
//! and changes nothing the model reads (it leaves a `system` notice); every outcome is emitted
//! as an event and logged with its figures. A [`super::pass_plan::PassMode::BoundOnly`] pass never calls the
//! model: it is the last resort before a request that would not fit.
//!
//! This module owns [`run`], which retries an attempt under a window a rejected summary request
//! taught and reports how the pass ended; `request` owns the pass's request, its outcome and
//! why an attempt stopped, `attempt` the steps of one attempt and `summary_path` the summary
//! request and the record it yields. Inside `pass/` the imports run one way too: `mod.rs` →
//! `attempt.rs` → `summary_path.rs` → `request.rs`, which imports none of them.
//!
//! Where it sits: below the Compactor's doors and `triggers`, which call [`run`] with the
//! standing they lend (`&mut Standing`, never the `Compactor`); above `background`, whose
//! finished note (`background::Prepared`) a pass takes and commits through `background::try_commit`, and
//! above `commit`, `summarize` and `conversation`. Nothing below imports it.

use codewhale_journal::{Entry, Level, SystemPayload, Trigger};
use codewhale_provider::CancellationToken;

use super::conversation;
use super::standing::Standing;
use crate::compaction::port::Conversation;
use attempt::attempt;
use codewhale_protocol::Event;

mod attempt;
mod request;
mod summary_path;

use request::Stop;
pub use request::{PassOutcome, PassRequest};

/// How many times one pass plans again under a window a rejected summary request taught.
const WINDOW_RETRIES: u32 = 3;

/// Runs one pass on `session`, emitting the events of docs/compaction.md, *Background compaction*
/// through `emit`.
pub async fn run(
    session: &mut dyn Conversation,
    standing: &mut Standing,
    request: PassRequest,
    cancel: CancellationToken,
    emit: &(dyn Fn(Event) + Send + Sync),
) -> PassOutcome {
    let typed_trigger = crate::history_pages::trigger_of(&request.trigger);
    emit(Event::CompactionStarted { trigger: typed_trigger });
    let (outcome, summary_failed) = attempts(session, standing, &request, cancel, emit).await;
    report(session, &request.trigger, &outcome, summary_failed, emit);
    outcome
}

/// The pass's attempts: none when the user's `PreCompact` hooks skip it, else [`attempt()`], again
/// under each window a rejected summary request teaches, at most [`WINDOW_RETRIES`] times more.
/// Says too whether the summarizer failed (auto passes back off after that).
async fn attempts(
    session: &mut dyn Conversation,
    standing: &mut Standing,
    request: &PassRequest,
    cancel: CancellationToken,
    emit: &(dyn Fn(Event) + Send + Sync),
) -> (PassOutcome, bool) {
    let mut summary_failed = false;
    let mut relearned = 0;
    // The user's `PreCompact` hooks, before the pass sends anything: exit 2 skips it.
    let mut skipped = session.pre_compact(&request.trigger).await;
    let outcome = loop {
        if let Some(reason) = skipped.take() {
            standing.summary_failed(session, &reason, emit);
            summary_failed = true;
            break PassOutcome::Failed(reason);
        }
        break match attempt(session, &standing.clock, request, cancel.clone(), emit).await {
            Ok(done) => {
                summary_succeeded(standing, &done);
                done
            }
            Err(Stop::Refused(reason)) => PassOutcome::Refused(reason),
            Err(Stop::Failed(reason)) => PassOutcome::Failed(reason),
            Err(Stop::SummaryFailed(reason)) => {
                standing.summary_failed(session, &reason, emit);
                summary_failed = true;
                PassOutcome::Failed(reason)
            }
            Err(Stop::Cancelled) => PassOutcome::Cancelled,
            Err(Stop::WindowLearned { window, source }) => {
                if let Err(err) = conversation::learned_from_summary(session, window, source, emit)
                {
                    PassOutcome::Failed(format!("cannot journal the window learned: {err}"))
                } else if relearned < WINDOW_RETRIES {
                    relearned += 1;
                    continue;
                } else {
                    PassOutcome::Failed(
                        "the provider rejected the summary request as too long, even shortened"
                            .into(),
                    )
                }
            }
        };
    };
    (outcome, summary_failed)
}

/// How the pass ended, told: logged with its figures, emitted as an event and, when it was
/// refused or failed, journaled as a `system` notice (a failed summary marked on it).
fn report(
    session: &mut dyn Conversation,
    trigger: &Trigger,
    outcome: &PassOutcome,
    summary_failed: bool,
    emit: &(dyn Fn(Event) + Send + Sync),
) {
    let typed_trigger = crate::history_pages::trigger_of(trigger);
    let trigger = trigger.as_str().to_owned();
    let pressure = session.budget().pressure().tokens;
    let (threshold, usable_input) =
        (session.budget().limits().threshold, session.budget().limits().usable_input);
    match outcome {
        PassOutcome::Compacted { id, path, tokens_before, tokens_after, fits } => {
            tracing::info!(%trigger, %id, path = path.as_str(), tokens_before, tokens_after, fits, "compaction pass finished");
            emit(super::commit::finished_event(
                session,
                id,
                typed_trigger,
                (*tokens_before, *tokens_after),
            ));
        }
        PassOutcome::Refused(reason) => {
            tracing::info!(%trigger, %reason, pressure, threshold, usable_input, "nothing to compact");
            let text = format!("nothing to compact ({trigger}): {reason}");
            notice(session, SystemPayload::new(Level::Info, text));
            emit(Event::CompactionRefused { reason: reason.clone() });
        }
        PassOutcome::Failed(reason) => {
            tracing::warn!(%trigger, %reason, pressure, threshold, usable_input, "compaction failed");
            let text = format!("compaction ({trigger}) failed, nothing was changed: {reason}");
            let mut payload = SystemPayload::new(Level::Warning, text);
            // Journaled, so the backoff holds across processes (each `exec` is one).
            payload.summary_failed = summary_failed;
            notice(session, payload);
            emit(Event::CompactionFailed { reason: reason.clone() });
        }
        PassOutcome::Cancelled => {
            // Nothing is written: an interrupted pass leaves the file as it was.
            tracing::info!(%trigger, "compaction cancelled");
            emit(Event::CompactionCancelled);
        }
    }
}

/// Called when a pass wrote a summary: auto passes run normally again.
fn summary_succeeded(standing: &mut Standing, outcome: &PassOutcome) {
    if matches!(
        outcome,
        PassOutcome::Compacted { path: codewhale_journal::CompactionPath::Summary, .. }
    ) {
        standing.summary_written();
    }
}

fn notice(session: &mut dyn Conversation, payload: SystemPayload) {
    let parent = session.journal().head_id().clone();
    if let Err(err) = session.append_entry(Entry::new(Some(parent), payload)) {
        tracing::error!("cannot journal the compaction notice: {err}");
    }
}
