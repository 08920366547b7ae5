//! The turn loop: one user message and every model request and tool call it leads to.
//!
//! Per request: [`hooks::before_request`] (the compaction seam), render the view, verify it,
//! convert it ([`crate::convert`]), stream the reply (deltas become events), journal the
//! assistant entry with usage, `reads` and its token count, run its tool calls
//! ([`calls`]), and loop until the model stops. Invariants: an interrupt at any
//! point — streaming, a tool running, an approval pending — leaves a journal whose view passes
//! the check: a partial reply is kept as an `interrupted` assistant entry and every call
//! without a result gets an "interrupted" one; the journal is synced at the end of every turn,
//! however it ends.

pub mod calls;
mod clearance;
mod ctx;
mod fetch;
pub mod fit;
pub mod hooks;
mod intake;
mod mode_note;

use codewhale_journal::{AssistantPayload, Entry, Level, Reads, SystemPayload, Usage as JUsage};
use codewhale_provider::{ErrorKind, ProviderFailure, Response, StopReason, StreamEvent};

use crate::convert::{self, RequestParams};
use crate::error::EngineError;
use calls::ToolCall;
use codewhale_protocol::{ErrorKind as ProtocolErrorKind, Event, NoticeLevel, TurnStatus};
pub use ctx::{TurnCtx, TurnOutcome};
pub use hooks::{before_request, on_context_overflow};
pub use intake::UserMessage;

/// How many times one request of a turn is sent again after the provider rejected it as too
/// long: each time smaller (an unnumbered overflow takes 10 % off the window at least), so a
/// window far below the catalog's is found within a turn.
const MAX_OVERFLOW_RETRIES: u32 = 4;

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

async fn drive(ctx: &mut TurnCtx<'_>, message: UserMessage) -> Result<TurnOutcome, EngineError> {
    // A crash or an earlier interrupt may have left calls unanswered; answer them before the
    // new message, or the user message would sit between a call and its result.
    if ctx.session.heal_dangling_calls()? > 0 {
        // A subagent the crash stopped is answered too (docs/subagents.md, *Files*).
        crate::subagent::run::heal_children(ctx.session).await;
    }
    ctx.compactor.turn_started();
    // Plan mode begun or ended since the model last heard: it reads so before the message.
    mode_note::sync(ctx)?;
    let intake::Taken { payload, images, attachments } = intake::take(ctx, message);
    let input = payload.content.iter().filter_map(|b| b.as_text()).collect::<String>();
    // The user's `UserPromptSubmit` hooks: exit 2 keeps the prompt from being sent.
    let cancel = ctx.cancel.clone();
    let submitted = crate::hooks::prompt_submitted(ctx.session, ctx.submission, &input, &cancel);
    if let Err(why) = submitted.await {
        return Ok(prompt_refused(ctx, input, &why));
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
    // What the user said is on disk before any request goes out: a crash or a kill while the
    // reply is awaited leaves it in the journal, to be offered back when the session reopens.
    ctx.session.sync().await?;
    // An estimate right away, so a gauge moves before the first reply reports.
    ctx.emit_usage(None, None);
    let mut overflows = 0;
    let mut images_retried = false;
    loop {
        if ctx.cancel.is_cancelled() {
            return Ok(TurnOutcome { status: TurnStatus::Interrupted, text: String::new() });
        }
        // A Shift+Tab into or out of plan mode during the tool loop is heard here.
        mode_note::sync(ctx)?;
        // The window the local server states, before anything is decided from the window.
        if ctx.session.probe_before_request().await? {
            ctx.emit_usage(None, None);
        }
        before_request(ctx).await?;
        // MCP tools are fixed (or refreshed after a server announced a change) before the
        // view is fitted, so the fit counts their schemas.
        let cancel = ctx.cancel.clone();
        ctx.session.refresh_mcp_tools(&cancel).await;
        let view = ctx.session.render();
        let unreadable = ctx.session.journal().take_unreadable();
        if unreadable > 0 {
            ctx.emit(Event::Notice {
                level: NoticeLevel::Warning,
                message: format!(
                    "{unreadable} line(s) of the session file could not be read back (the file \
                     changed on disk or the disk failed), so this request leaves them out; \
                     `codewhale journal check` names them"
                ),
            });
        }
        let (view, trimmed) = match fit::fit_view(ctx, view).await {
            Ok(fitted) => fitted,
            Err(outcome) => return Ok(outcome),
        };
        codewhale_journal::check_view(&view)
            .map_err(|source| EngineError::View { source, hint: ctx.session.hints().rewind() })?;
        if let Some(reason) = convert::unreadable_output(&view) {
            return Err(EngineError::Unreadable { reason });
        }
        let limits = *ctx.session.budget().limits();
        let max_output = codewhale_provider::lookup_model(ctx.session.model())
            .max_output
            .min(limits.reserved_output)
            .max(1);
        let blobs = ctx.session.blob_dir();
        let images = if ctx.session.images_refused() {
            convert::Images::Refused
        } else {
            convert::Images::Send(&blobs)
        };
        let mut request = convert::to_request(
            &view,
            RequestParams {
                model: ctx.session.model(),
                system: ctx.session.system_prompt(),
                tools: ctx.session.tool_specs(),
                max_output_tokens: u32::try_from(max_output).unwrap_or(u32::MAX),
                images,
            },
        );
        ctx.carries_images = request.messages.iter().any(|m| {
            m.content.iter().any(|b| matches!(b, codewhale_provider::Block::Image { .. }))
        });
        // After the system prompt's cache breakpoint, so the cached prefix stays as it was.
        if let Some(notice) = trimmed.as_ref().and_then(|t| t.notice.clone()) {
            request.system.push(codewhale_provider::SystemBlock::text(notice));
        }
        let estimate =
            trimmed.as_ref().map_or_else(|| ctx.session.budget().raw_estimate(), |t| t.estimate);
        // The gauge shows what is sent: after a trimmed request, the provider's report of it.
        ctx.session.budget_mut().set_trimmed(trimmed.is_some());
        let mut reads =
            Reads::new(view.head.clone(), view.compaction.as_ref().map(|c| c.id.clone()));
        if let Some(t) = trimmed {
            reads.trimmed_before = t.first;
            reads.bounded = (!t.bounded.is_empty()).then_some(t.bounded);
        }
        drop(view);
        let client = ctx.session.client().clone();
        let events = ctx.events.clone();
        let submission = ctx.submission;
        let result = client
            .complete_with(&request, ctx.cancel.clone(), move |event| match event {
                StreamEvent::TextDelta { text } => {
                    events.emit(submission, Event::TextDelta { text: text.clone() })
                }
                StreamEvent::ThinkingDelta { text } if !text.is_empty() => {
                    events.emit(submission, Event::ThinkingDelta { text: text.clone() })
                }
                // A silent server is named while it lasts (on stderr in `exec`).
                StreamEvent::Waiting { silent } => events.emit(
                    submission,
                    Event::Notice {
                        level: codewhale_protocol::NoticeLevel::Info,
                        message: format!("waiting for the server ({} s)", silent.as_secs()),
                    },
                ),
                StreamEvent::Retrying { attempt, max_attempts, wait, reason } => events.emit(
                    submission,
                    Event::Retrying {
                        attempt: *attempt,
                        max_attempts: *max_attempts,
                        wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                        reason: reason.clone(),
                    },
                ),
                _ => {}
            })
            .await;
        let response = match result {
            Ok(response) => response,
            Err(failure) => {
                if failure.error.rejects_images()
                    && ctx.carries_images
                    && !images_retried
                    && failure.partial.is_none()
                {
                    images_retried = true;
                    intake::images_refused(ctx, &failure.error);
                    continue;
                }
                // Each retry follows a compaction or a smaller window, so it is a shorter
                // request; a provider that keeps rejecting stops the turn after a few.
                if failure.error.is_context_overflow()
                    && overflows < MAX_OVERFLOW_RETRIES
                    && failure.partial.is_none()
                {
                    overflows += 1;
                    if on_context_overflow(ctx, &failure.error, estimate).await? {
                        continue;
                    }
                }
                return stopped(ctx, failure, reads);
            }
        };
        let text = response.text();
        let calls: Vec<ToolCall> = response
            .tool_uses()
            .map(|(id, name, input)| ToolCall {
                id: id.to_owned(),
                name: name.to_owned(),
                input: input.clone(),
            })
            .collect();
        let stop = response.stop_reason.clone();
        record_response(ctx, &response, reads, estimate, false)?;
        if let Some(StopReason::Other(reason)) = &stop {
            if let Some(message) = cut_by_provider(reason) {
                ctx.emit(Event::Notice { level: NoticeLevel::Warning, message });
            }
        }
        learn_cut(ctx).await?;
        if calls.is_empty() {
            if stop == Some(StopReason::MaxTokens) {
                ctx.emit(Event::Notice {
                    level: NoticeLevel::Warning,
                    message: "the reply stopped at the output token limit".into(),
                });
            }
            return Ok(TurnOutcome { status: TurnStatus::Completed, text });
        }
        for call in &calls {
            ctx.emit(Event::ToolCallRequested {
                call_id: call.id.clone(),
                name: call.name.clone(),
                input: call.input.clone(),
            });
        }
        if !calls::run_calls(ctx, &calls).await? {
            return Ok(TurnOutcome { status: TurnStatus::Interrupted, text });
        }
        if ctx.passes_per_request {
            // A child's long loop gets its passes as an interactive session's turns would.
            ctx.compaction_passes = 0;
        }
    }
}

/// What the user is told when the provider itself cut the reply (a content filter on any wire,
/// the Responses API's `incomplete_details.reason`, Anthropic's `refusal`): `None` for a
/// reason that is no cut.
fn cut_by_provider(reason: &str) -> Option<String> {
    match reason {
        "content_filter" => Some(
            "the provider's content filter cut the reply short (content_filter); what came \
             before the cut is kept — rephrase the request to go on"
                .to_owned(),
        ),
        "refusal" => Some(
            "the model refused to go on (refusal); what came before is kept — rephrase the \
             request to go on"
                .to_owned(),
        ),
        _ => None,
    }
}

/// The reply just journaled was silently cut by the server: the window is learned — the one
/// the server states, else the count it reported — and the user is told once, in one sentence,
/// how to raise it; the next request is fitted to it.
async fn learn_cut(ctx: &mut TurnCtx<'_>) -> Result<(), EngineError> {
    let Some((kept, estimate)) = ctx.cut.take() else { return Ok(()) };
    let sent = ctx.session.budget().calibrated(estimate);
    let (window, stated) = ctx.session.learn_cut_window(kept, estimate).await?;
    let whose = match stated {
        Some(source) => format!("the {window}-token window {} states", source.describe()),
        None => format!("a {window}-token window"),
    };
    let message = format!(
        "the server kept only part of the prompt (it read {kept} of about {sent} tokens, so the \
         model did not see the start of the conversation); Codewhale now uses {whose} and \
         compacts to fit it, and a larger window on the server (OLLAMA_CONTEXT_LENGTH for \
         Ollama, --ctx-size for llama.cpp) gives the model more"
    );
    ctx.emit(Event::Notice { level: codewhale_protocol::NoticeLevel::Warning, message });
    ctx.emit_usage(None, None);
    Ok(())
}

/// Journals the assistant entry of a response and updates the budget from its usage.
fn record_response(
    ctx: &mut TurnCtx<'_>,
    response: &Response,
    reads: Reads,
    estimate: u64,
    interrupted: bool,
) -> Result<(), EngineError> {
    let mut payload = AssistantPayload::new(convert::from_response_blocks(&response.content));
    payload.model = response.model.clone().or_else(|| Some(ctx.session.model().to_owned()));
    payload.stop_reason = response.stop_reason.as_ref().map(|s| s.as_str().to_owned());
    let price = ctx.session.price();
    payload.usage = response.usage.map(|u| JUsage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        cache_read_tokens: u.cache_read_tokens,
        cache_write_tokens: u.cache_write_tokens,
        cost_usd: price.map(|p| p.cost_usd(&u)),
        ..JUsage::default()
    });
    if let Some(u) = &response.usage {
        ctx.session.spend().replies.add(u, price.as_ref());
    }
    let mut reads = reads;
    // With the reported figure, a reopened session recovers the calibration.
    reads.estimate = (estimate > 0).then_some(estimate);
    payload.reads = Some(reads);
    payload.interrupted = interrupted;
    // The report covers the prompt without this reply: record it first, so the reply counts
    // as added since the report.
    ctx.stats.requests += 1;
    match response.usage {
        Some(u) => {
            ctx.stats.input_tokens += u.input_tokens;
            ctx.stats.output_tokens += u.output_tokens;
        }
        None => ctx.stats.reported = false,
    }
    let reported = response.usage.map(|u| u.input_tokens).filter(|n| *n > 0);
    if let Some(reported) = reported {
        let may_cut = ctx.session.client().config().may_truncate_silently();
        // A request with images is left out of the rule: their count is the providers'
        // published estimate, not a measure.
        let may_cut = may_cut && !ctx.carries_images;
        if may_cut && ctx.session.budget().cut_silently(reported, estimate) {
            // Never a calibration: the count is of what the server kept, not of what was sent.
            // The window is learned once the reply is journaled ([`learn_cut`]).
            ctx.cut = Some((reported, estimate));
        } else {
            ctx.session.budget_mut().record_report(reported, estimate);
        }
    }
    ctx.session.append(payload)?;
    ctx.replied = true;
    ctx.emit_usage(reported, response.usage.map(|u| u.output_tokens));
    Ok(())
}

/// A wait the provider asked for, as a person would say it: "45 s", "3 min", "2 h 5 min".
fn human_wait(wait: std::time::Duration) -> String {
    let secs = wait.as_secs().max(1);
    match secs {
        0..=119 => format!("{secs} s"),
        120..=7199 => format!("{} min", secs.div_ceil(60)),
        _ => format!("{} h {} min", secs / 3600, (secs % 3600).div_ceil(60)),
    }
}

/// The request failed or was cancelled: keep what streamed, report, and end the turn.
fn stopped(
    ctx: &mut TurnCtx<'_>,
    failure: ProviderFailure,
    reads: Reads,
) -> Result<TurnOutcome, EngineError> {
    let text = failure.partial.as_ref().map(Response::text).unwrap_or_default();
    if let Some(partial) = failure.partial.as_ref().filter(|p| !p.content.is_empty()) {
        record_response(ctx, partial, reads, 0, true)?;
    }
    if failure.error.kind == ErrorKind::Cancelled {
        return Ok(TurnOutcome { status: TurnStatus::Interrupted, text });
    }
    let hints = ctx.session.hints();
    let advice = match failure.error.kind {
        ErrorKind::ContextOverflow { .. } => format!(
            "; the conversation still does not fit the model's window after compacting: {} writes \
             a shorter note, or {}",
            hints.compact_with_focus(),
            hints.larger_window()
        ),
        ErrorKind::Auth => "; check the API key".to_owned(),
        ErrorKind::RateLimited { retry_after: Some(wait) } => {
            format!("; the provider asks to wait {} before the next request", human_wait(wait))
        }
        ErrorKind::RateLimited { .. } | ErrorKind::Overloaded | ErrorKind::Network => {
            "; try again in a moment".to_owned()
        }
        _ => String::new(),
    };
    let message = format!("the model request failed: {}{advice}", failure.error);
    ctx.fail(crate::error::provider_kind(&failure.error.kind), message);
    Ok(TurnOutcome { status: TurnStatus::Failed, text })
}
