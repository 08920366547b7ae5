//! Summaries of the branches HEAD leaves (docs/journal-format.md, *`branch_summary`*): when a
//! rewind, a fork or a checkout moves HEAD off a branch tip that holds at least two model-visible
//! messages after the branch point, the summarizer (the session's model, or `compaction_model`)
//! writes a short account of the part left, in the background, and it is appended on HEAD as a
//! `branch_summary` entry, so the model on the new branch knows what was already tried.
//!
//! Invariants:
//! - at most one summary is being written ([`Pending`] holds one slot); the request never
//!   outlives its timeout (`compaction.branch_summary_timeout_sec`, default [`DEFAULT_TIMEOUT`]),
//!   so every wait for it is bounded by that too;
//! - fail open: a provider error, an empty reply, one over 2,000 characters, the timeout or a
//!   cancellation journal nothing (a `dropped` event and a log line say why);
//! - the entry is appended only where it was meant: on HEAD, when HEAD is the entry the move
//!   landed on or continues from it. An explicit HEAD move while a summary is written drops it
//!   (the branch it was for was left too); a turn started meanwhile waits for it before its
//!   message is journaled, so the model's first reply on the new branch already reads it;
//!   closing the session drops it (`codewhale rewind` waits first, with
//!   [`codewhale_protocol::Op::AwaitBranchSummary`]);
//! - it is appended only between turns, never between a call and its result.

mod left;

use std::time::Duration;

use codewhale_journal::{BranchSummaryPayload, EntryId};
use codewhale_provider::{CancellationToken, Message, Request, SystemBlock};

use crate::budget::Limits;
use crate::events::EventSink;
use crate::session::job::{Running, Signal};
use crate::session::summary_slot::Meant;
use crate::session::Session;
use codewhale_protocol::{BranchSummaryState, Event, SubmissionId};

/// How long a branch summary may take when `compaction.branch_summary_timeout_sec` is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The instruction the summarizer gets (our own words).
const INSTRUCTION: &str = include_str!("../../../../assets/prompts/branch-summary.md");

/// Room for the reply: 2,000 characters are about 500 tokens; a reasoning model needs more.
const MAX_OUTPUT_TOKENS: u32 = 2_048;

/// The most the transcript of a left branch carries, in characters, whatever the window.
const TRANSCRIPT_MAX_CHARS: usize = 120_000;

fn event(state: BranchSummaryState, summary: Option<String>, reason: Option<String>) -> Event {
    Event::BranchSummary { state, summary, reason }
}

/// After an explicit HEAD move away from `old`: drops a summary still being written (HEAD
/// left the branch it was for), then starts one of the part of `old`'s branch that was left,
/// when it is worth one.
pub(crate) fn after_move(session: &mut Session, sink: &EventSink, id: SubmissionId, old: &EntryId) {
    drop_pending(session, sink, id, "HEAD moved again before it was written");
    if session.config().compaction.branch_summaries == Some(false) {
        return;
    }
    let new = session.journal().head_id().clone();
    let Some(left) = left::left_part(session.journal(), old.as_str(), new.as_str()) else {
        return;
    };
    if let Some(why) = session.no_model() {
        let why = why.trim_end_matches('.');
        return dropped(sink, id, format!("it needs a model, and {why}"));
    }
    let model = session.summarizer_model();
    let limits = if model == session.model() {
        *session.budget().limits()
    } else {
        Limits::for_model(session.config(), &model)
    };
    // About three characters per token, within the summarizer's usable input.
    let budget = usize::try_from(limits.usable_input.saturating_mul(3))
        .unwrap_or(usize::MAX)
        .min(TRANSCRIPT_MAX_CHARS);
    let transcript = left::transcript(session.journal(), &left, budget);
    let mut request = Request::new(model, MAX_OUTPUT_TOKENS);
    request.system = vec![SystemBlock::text(INSTRUCTION)];
    request.messages = vec![Message::user_text(transcript)];
    let timeout = session.config().compaction.branch_summary_timeout.unwrap_or(DEFAULT_TIMEOUT);
    let mut payload = BranchSummaryPayload::new(left.branch_id.clone(), String::new());
    payload.parent_branch_id = left.parent_branch_id.clone();
    payload.from = Some(left.from.clone());
    payload.tip = Some(left.tip.clone());
    let cancel = CancellationToken::new();
    let (signal, (done, ended)) = session.branch_summary().signal();
    let task =
        tokio::spawn(write(session.client().clone(), request, timeout, cancel.clone(), signal));
    tracing::info!(tip = %left.tip, from = %left.from, messages = left.messages, "branch summary started");
    let state = Meant { meant: new, payload };
    session.branch_summary_mut().start(Running { state, cancel, task: Some(task), done, ended });
    sink.emit(id, event(BranchSummaryState::Writing, None, None));
}

/// The background task: one request, bounded by `timeout`, its reply judged.
async fn write(
    client: codewhale_provider::Client,
    request: Request,
    timeout: Duration,
    cancel: CancellationToken,
    signal: Signal,
) -> Result<String, String> {
    let reply = tokio::time::timeout(timeout, client.complete(&request, cancel)).await;
    let result = match reply {
        Err(_) => Err(format!("it took longer than {} s", timeout.as_secs_f64())),
        Ok(Err(failure)) => Err(format!("the summary request failed: {}", failure.error)),
        Ok(Ok(response)) => left::usable(&response.text()),
    };
    signal.done();
    result
}

/// Drops the summary being written, if any: nothing is journaled.
fn drop_pending(session: &mut Session, sink: &EventSink, id: SubmissionId, why: &str) {
    if let Some(slot) = session.branch_summary_mut().slot.take() {
        slot.stop();
        dropped(sink, id, why.to_owned());
    }
}

fn dropped(sink: &EventSink, id: SubmissionId, reason: String) {
    tracing::info!(%reason, "no branch summary was written");
    sink.emit(id, event(BranchSummaryState::Dropped, None, Some(reason)));
}

/// On close: a summary still being written is dropped.
pub(crate) fn close(session: &mut Session) {
    if let Some(slot) = session.branch_summary_mut().slot.take() {
        tracing::info!("the session closed before the branch summary was written; none is kept");
        slot.stop();
    }
}

/// Between turns, after a request ended: its summary is appended (or dropped) now.
pub(crate) async fn settle_idle(session: &mut Session, sink: &EventSink) {
    // The task wakes the engine just before it returns: `done` says the answer is in, so
    // waiting for the handle takes no time.
    if !session.branch_summary().slot.as_ref().is_some_and(Running::is_done) {
        return;
    }
    if let Some(Running { state, task: Some(task), .. }) = session.branch_summary_mut().slot.take()
    {
        let joined = task.await;
        finish(session, sink, SubmissionId(0), Done { state, joined }).await;
    }
}

/// Waits for the summary being written (bounded by its timeout, or until `cancel`) and
/// appends it: before a turn journals its message, and for `Op::AwaitBranchSummary`.
pub(crate) async fn wait(
    session: &mut Session,
    sink: &EventSink,
    id: SubmissionId,
    cancel: &CancellationToken,
) -> BranchSummaryState {
    let Some(task) = session.branch_summary_mut().slot.as_mut().and_then(|s| s.task.as_mut())
    else {
        return BranchSummaryState::None;
    };
    let joined = tokio::select! {
        joined = task => joined,
        () = cancel.cancelled() => return BranchSummaryState::Writing,
    };
    let Some(Running { state, .. }) = session.branch_summary_mut().slot.take() else {
        return BranchSummaryState::None;
    };
    finish(session, sink, id, Done { state, joined }).await
}

/// A request that has ended, with what the entry needs.
struct Done {
    state: Meant,
    joined: Result<Result<String, String>, tokio::task::JoinError>,
}

/// Appends (or drops) the summary of a request that has ended. The `written` event carries the
/// text, so a front end adds the entry where HEAD is without reloading the conversation (which
/// would drop the notices of the move it just showed).
async fn finish(
    session: &mut Session,
    sink: &EventSink,
    id: SubmissionId,
    done: Done,
) -> BranchSummaryState {
    let result = match done.joined {
        Ok(result) => result,
        Err(join) => Err(format!("the summary task stopped: {join}")),
    };
    let summary = match result {
        Ok(summary) => summary,
        Err(reason) => {
            dropped(sink, id, reason);
            return BranchSummaryState::Dropped;
        }
    };
    let head = session.journal().head_id().clone();
    if !session.journal().is_ancestor(done.state.meant.as_str(), head.as_str()) {
        dropped(sink, id, "HEAD is no longer on the branch it was written for".into());
        return BranchSummaryState::Dropped;
    }
    let mut payload = done.state.payload;
    payload.summary = summary;
    let appended = match session.append(payload) {
        Ok(entry) => session.sync().await.map(|()| entry),
        Err(err) => Err(err),
    };
    let entry = match appended {
        Ok(entry) => entry,
        Err(err) => {
            tracing::error!("cannot journal the branch summary: {err}");
            dropped(sink, id, format!("it could not be journaled: {err}"));
            return BranchSummaryState::Dropped;
        }
    };
    tracing::info!(%entry, "branch summary written");
    // Read back as journaled (redacted), which is what the model reads.
    let text = match session.journal().get(entry.as_str()).map(|e| &e.payload) {
        Some(codewhale_journal::Payload::BranchSummary(b)) => b.summary.clone(),
        _ => String::new(),
    };
    sink.emit(id, event(BranchSummaryState::Written, Some(text), None));
    sink.emit(id, session.usage_event(None, None));
    BranchSummaryState::Written
}
