//! The turn loop: one user message and every model request and tool call it leads to.
//!
//! Per request: [`hooks::before_request`] (the compaction seam), render the view, verify it,
//! convert it ([`crate::convert`]) — `request.rs`; stream the reply (deltas become events),
//! journal the assistant entry with usage, `reads` and its token count — `reply.rs`, or send
//! the request again or stop when the provider rejected it — `failed.rs`; run its tool calls
//! ([`calls`]), and loop until the model stops. Invariants: an interrupt at any
//! point — streaming, a tool running, an approval pending — leaves a journal whose view passes
//! the check: a partial reply is kept as an `interrupted` assistant entry and every call
//! without a result gets an "interrupted" one; the journal is synced at the end of every turn,
//! however it ends.

pub mod calls;
mod clearance;
mod ctx;
mod failed;
mod fetch;
pub mod fit;
pub mod hooks;
mod intake;
mod mode_note;
mod reply;
mod request;
mod results;
mod session_tools;
mod tasks;
pub mod tool_call;

use codewhale_journal::{Entry, Level, SystemPayload};

use crate::error::EngineError;
use calls::run_calls;
use codewhale_protocol::{ErrorKind as ProtocolErrorKind, Event, NoticeLevel, TurnStatus};
pub use ctx::{TurnCtx, TurnOutcome};
use failed::Retries;
pub use hooks::{before_request, on_context_overflow};
pub use intake::UserMessage;
use request::Outgoing;

/// Runs one user turn to its end. Emits `TurnStarted` … `TurnFinished`; errors that stop the
/// turn are emitted as `Error` events and journaled as `system` notices.
pub async fn run_turn(ctx: &mut TurnCtx<'_>, message: UserMessage) -> TurnOutcome {
    ctx.emit(Event::TurnStarted);
    let outcome = match drive(ctx, message).await {
        Ok(outcome) => outcome,
        Err(err) => {
            ctx.fail(err.kind(), err.to_string());
            TurnOutcome { status: TurnStatus::Failed, text: String::new() }
        }
    };
    // Whatever happened, no call may be left without a result, and the turn is durable. A reply is
    // complete only once its entry is on disk: a write error fails the turn, and the reply is not
    // handed out as an answer (docs/journal-format.md, *Crash safety: what is promised*, "durable
    // or failed").
    let mut outcome = outcome;
    let mut saved = ctx.session.heal_dangling_calls().map(drop);
    if saved.is_ok() {
        if let Some((kind, message)) = ctx.failure.clone() {
            saved = journal_failure(ctx, kind, &message);
        }
    }
    if saved.is_ok() && outcome.status != TurnStatus::Completed && !ctx.replied {
        saved = take_back(ctx);
    }
    let synced = match saved {
        Ok(()) => ctx.session.sync().await,
        Err(err) => Err(err),
    };
    if let Err(err) = synced {
        if outcome.status != TurnStatus::Failed {
            ctx.fail(err.kind(), err.to_string());
        }
        outcome = TurnOutcome { status: TurnStatus::Failed, text: String::new() };
    }
    ctx.gate.clear();
    // The user's `Stop` hooks (and, in `exec`, `Notification`): the turn has ended.
    crate::hooks::flush(ctx.session);
    let status = match outcome.status {
        TurnStatus::Completed => "completed",
        TurnStatus::Interrupted => "interrupted",
        TurnStatus::Failed => "failed",
    };
    // A subagent's run is no turn of the user's: its parent's turn says when it ends.
    let child = ctx.session.subagent().is_some();
    if !child {
        crate::hooks::stop(ctx.session, ctx.submission, status).await;
    }
    if !child && (ctx.session.one_turn() || ctx.gate.user_away()) {
        let said = format!("the turn ended ({status})");
        crate::hooks::notification(ctx.session, ctx.submission, &said).await;
    }
    if let Err(err) = ctx.session.sync().await {
        ctx.emit(err.event());
    }
    let asked_for_counts = crate::tokens::is_ready() || crate::tokens::is_building();
    if ctx.session.one_turn() && ctx.session.has_provisional_figures() && asked_for_counts {
        // A one-turn process that reports figures (`exec --json` builds the encoder while the
        // model answers) ends on the exact one, the figure `codewhale context` gives after it,
        // not the provisional upper bound (docs/cli.md, *Output*).
        crate::tokens::wait_ready();
        ctx.emit_usage(None, None);
    }
    if outcome.status == TurnStatus::Completed && !ctx.session.one_turn() {
        // The user reads and types now: the time a background note is written in.
        let (compactor, mut turn) = ctx.lend();
        compactor.turn_ended(&mut turn).await;
    }
    let mut stats = ctx.stats;
    stats.elapsed_ms = u64::try_from(ctx.started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let (replies, summaries) = ctx.spent_at_start;
    stats.cost_usd = ctx.session.spend().replies.read().since(&replies).cost_usd();
    stats.compaction_cost_usd = ctx.session.spend().summaries.read().since(&summaries).cost_usd();
    stats.reported &= stats.requests > 0;
    ctx.emit(Event::TurnFinished { status: outcome.status, text: outcome.text.clone(), stats });
    outcome
}

/// The turn ended before any reply: the message was never answered, so it is taken back —
/// HEAD moves to the entry before it (an `edit` record; the message stays in the file) and the
/// front end gets its text to edit or send again. Otherwise the next message would be merged
/// with it into one prompt.
fn take_back(ctx: &mut TurnCtx<'_>) -> Result<(), EngineError> {
    let Some((id, text)) = ctx.message.take() else { return Ok(()) };
    let record = ctx.session.journal().edit(id.as_str())?;
    ctx.session.append_entry(record)?;
    ctx.session.replay_budget();
    ctx.emit(Event::MessageTakenBack { text });
    ctx.emit_usage(None, None);
    Ok(())
}

/// A `UserPromptSubmit` hook refused the prompt: it is neither journaled nor sent; the
/// refusal is (the turn's failure notice), and the user gets the text back to edit.
fn prompt_refused(ctx: &mut TurnCtx<'_>, input: String, why: &str) -> TurnOutcome {
    let message = format!("a UserPromptSubmit hook refused the prompt, which was not sent: {why}");
    ctx.fail(ProtocolErrorKind::Hook, message);
    ctx.emit(Event::MessageTakenBack { text: input });
    TurnOutcome { status: TurnStatus::Failed, text: String::new() }
}

/// The `system` notice of the error that stopped the turn.
fn journal_failure(
    ctx: &mut TurnCtx<'_>,
    kind: ProtocolErrorKind,
    message: &str,
) -> Result<(), EngineError> {
    let name = kind.as_str();
    let parent = ctx.session.journal().head_id().clone();
    let notice =
        Entry::new(Some(parent), SystemPayload::new(Level::Error, format!("{name}: {message}")));
    ctx.session.append_entry(notice)
}

/// The turn's steps (docs/architecture.md, *A turn*): calls left dangling answered, the message
/// taken in and made durable, then one request after another until a reply has no tool calls —
/// each readied, fitted to the window, converted, streamed (sent again when a smaller or
/// imageless request answers its rejection), journaled, and its calls run.
async fn drive(ctx: &mut TurnCtx<'_>, message: UserMessage) -> Result<TurnOutcome, EngineError> {
    heal(ctx).await?;
    ctx.compactor.turn_started();
    // Plan mode begun or ended since the model last heard: it reads so before the message.
    mode_note::sync(ctx)?;
    if let Some(refused) = take_message(ctx, message).await? {
        return Ok(refused);
    }
    // What the user said is on disk before any request goes out: a crash or a kill while the
    // reply is awaited leaves it in the journal, to be offered back when the session reopens.
    ctx.session.sync().await?;
    // An estimate right away, so a gauge moves before the first reply reports.
    ctx.emit_usage(None, None);
    let mut retries = Retries::default();
    loop {
        if ctx.cancel.is_cancelled() {
            return Ok(TurnOutcome { status: TurnStatus::Interrupted, text: String::new() });
        }
        request::ready(ctx).await?;
        let view = request::rendered(ctx);
        let (view, trimmed) = match fit::fit_view(ctx, view).await {
            Ok(fitted) => fitted,
            Err(outcome) => return Ok(outcome),
        };
        let Outgoing { request, estimate, reads } = Outgoing::of(ctx, view, trimmed)?;
        let response = match reply::stream(ctx, &request).await {
            Ok(response) => response,
            Err(failure) => {
                if retries.again(ctx, &failure, estimate).await? {
                    continue;
                }
                return failed::stopped(ctx, failure, reads);
            }
        };
        let reply = reply::journal(ctx, &response, reads, estimate).await?;
        if reply.calls.is_empty() {
            reply.warn_at_limit(ctx);
            return Ok(TurnOutcome { status: TurnStatus::Completed, text: reply.text });
        }
        for call in &reply.calls {
            ctx.emit(Event::ToolCallRequested {
                call_id: call.id.clone(),
                name: call.name.clone(),
                input: call.input.clone(),
            });
        }
        if !run_calls(ctx, &reply.calls).await? {
            return Ok(TurnOutcome { status: TurnStatus::Interrupted, text: reply.text });
        }
        if ctx.passes_per_request {
            // A child's long loop gets its passes as an interactive session's turns would.
            ctx.compaction_passes = 0;
        }
    }
}

/// A crash or an earlier interrupt may have left calls unanswered; they are answered before the
/// new message, or the user message would sit between a call and its result.
async fn heal(ctx: &mut TurnCtx<'_>) -> Result<(), EngineError> {
    if ctx.session.heal_dangling_calls()? > 0 {
        // A subagent the crash stopped is answered too (docs/subagents.md, *Files*).
        tasks::heal_children(ctx.session).await;
    }
    Ok(())
}

/// Takes the user's message in: its images stored, the `UserPromptSubmit` hooks asked, its
/// entry appended and its attachments after it. `Some` with the turn's outcome when a hook
/// refused it (nothing was journaled).
async fn take_message(
    ctx: &mut TurnCtx<'_>,
    message: UserMessage,
) -> Result<Option<TurnOutcome>, EngineError> {
    let intake::Taken { payload, images, attachments } = intake::take(ctx, message);
    let input = payload.content.iter().filter_map(|b| b.as_text()).collect::<String>();
    // The user's `UserPromptSubmit` hooks: exit 2 keeps the prompt from being sent.
    let cancel = ctx.cancel.clone();
    let submitted = crate::hooks::prompt_submitted(ctx.session, ctx.submission, &input, &cancel);
    if let Err(why) = submitted.await {
        return Ok(Some(prompt_refused(ctx, input, &why)));
    }
    ctx.session.append(payload)?;
    ctx.message = Some((ctx.session.journal().head_id().clone(), input));
    crate::hooks::after_prompt(ctx.session);
    if !images.is_empty() {
        ctx.emit(Event::ImagesAttached { images });
    }
    for raw in &attachments {
        match crate::attachments::attach(ctx.session, raw) {
            Ok(entry) => drop(ctx.session.append(entry)?),
            Err(reason) => ctx.emit(Event::Notice {
                level: NoticeLevel::Warning,
                message: format!("@{raw} was not attached: {reason}"),
            }),
        }
    }
    Ok(None)
}
