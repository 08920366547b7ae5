//! A reply of the model (docs/architecture.md, *A turn*): streamed as events while it comes
//! ([`stream`]), journaled with its usage, what it read and its estimate ([`record_response`]),
//! and what its end says told to the user — a cut by the provider, a prompt the server silently
//! cut ([`learn_cut`]), the output token limit reached ([`Reply::warn_at_limit`]).
//!
//! Invariants: a reply is journaled before anything is learned from it and before its calls
//! run; a reported count the server may have cut silently never calibrates the budget.

use codewhale_journal::{AssistantPayload, Reads, Usage as JUsage};
use codewhale_provider::{ProviderFailure, Request, Response, StopReason, StreamEvent};

use super::ctx::TurnCtx;
use super::tool_call::ToolCall;
use crate::convert;
use crate::error::EngineError;
use codewhale_protocol::{Event, NoticeLevel};

/// A reply on disk: its text, its tool calls and why it stopped.
pub(super) struct Reply {
    pub text: String,
    pub calls: Vec<ToolCall>,
    stop: Option<StopReason>,
}

impl Reply {
    /// A reply without calls that stopped at the output token limit says so.
    pub(super) fn warn_at_limit(&self, ctx: &TurnCtx<'_>) {
        if self.stop == Some(StopReason::MaxTokens) {
            ctx.emit(Event::Notice {
                level: NoticeLevel::Warning,
                message: "the reply stopped at the output token limit".into(),
            });
        }
    }
}

/// Sends `request` and streams the reply: its text and thinking, a silent server's wait and the
/// client's retries become events as they come.
pub(super) async fn stream(
    ctx: &mut TurnCtx<'_>,
    request: &Request,
) -> Result<Response, ProviderFailure> {
    let client = ctx.session.client().clone();
    let events = ctx.events.clone();
    let submission = ctx.submission;
    client
        .complete_with(request, ctx.cancel.clone(), move |event| match event {
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
        .await
}

/// Journals a complete `response` and tells what its end says: a cut by the provider, a
/// window learned from a silent cut.
pub(super) async fn journal(
    ctx: &mut TurnCtx<'_>,
    response: &Response,
    reads: Reads,
    estimate: u64,
) -> Result<Reply, EngineError> {
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
    record_response(ctx, response, reads, estimate, false)?;
    if let Some(StopReason::Other(reason)) = &stop {
        if let Some(message) = cut_by_provider(reason) {
            ctx.emit(Event::Notice { level: NoticeLevel::Warning, message });
        }
    }
    learn_cut(ctx).await?;
    Ok(Reply { text, calls, stop })
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
pub(super) fn record_response(
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
