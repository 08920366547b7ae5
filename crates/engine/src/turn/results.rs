//! A call's output on its way out: streamed to the front end while the call runs
//! ([`live_output`]), how it ended and the user's `PostToolUse` hooks ([`journal_result`]),
//! and its result journaled and shown ([`finish`]).
//!
//! Invariants: every result is journaled with how the call ended (`end`, `exit_code`, the
//! user's reason) as data, never to be read back from the text; what the front end is shown
//! is what was journaled, its secrets redacted; an interrupted call runs no `PostToolUse` hook.

use super::ctx::TurnCtx;
use super::tool_call::ToolCall;
use crate::error::EngineError;
use crate::tools::{self, ToolOutput};
use codewhale_journal::ToolResultPayload;
use codewhale_protocol::{CallEnd, Event};

/// What a running call prints, as events (redacted like everything the UI shows).
pub(super) fn live_output(ctx: &TurnCtx<'_>, call_id: &str) -> tools::Progress {
    let events = ctx.events.clone();
    let submission = ctx.submission;
    let redactor = ctx.session.redactor().clone();
    let call_id = call_id.to_owned();
    std::sync::Arc::new(move |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes);
        let text = redactor.redact(&text).into_owned();
        events.emit(submission, Event::ToolOutputDelta { call_id: call_id.clone(), text });
    })
}

/// How a call ended, with what the user said when they declined it.
pub(super) struct Ending {
    pub end: CallEnd,
    pub reason: Option<String>,
}

impl Ending {
    pub(super) fn of(end: CallEnd) -> Ending {
        Ending { end, reason: None }
    }
}

pub(super) fn finish(
    ctx: &mut TurnCtx<'_>,
    call: &ToolCall,
    output: ToolOutput,
    Ending { end, reason }: Ending,
    diff: Option<String>,
) -> Result<(), EngineError> {
    let mut payload =
        ToolResultPayload::new(call.id.clone(), output.content.clone(), output.is_error);
    // The original size, so a pruned stub (and anyone reading the journal) knows how much the
    // tool produced even when `content` holds only a capped head and tail.
    payload.bytes = Some(output.bytes);
    if !output.files.is_empty() {
        payload.files = Some(output.files.clone());
    }
    // How it ended travels as data: no front end reads it back from the text.
    let exit_code = output.exit_code;
    payload.end = Some(crate::call_end::to_journal(end));
    payload.exit_code = exit_code.map(i64::from);
    payload.reason = reason;
    let id = ctx.session.append(payload)?;
    // Show what was journaled: the output and the user's words with their secrets redacted.
    let (shown, reason) = match ctx.session.journal().get(id.as_str()).map(|e| &e.payload) {
        Some(codewhale_journal::Payload::ToolResult(r)) => {
            (r.content.to_string(), r.reason.clone())
        }
        _ => (output.content, None),
    };
    ctx.emit(Event::ToolCallFinished {
        call_id: call.id.clone(),
        name: call.name.clone(),
        is_error: output.is_error,
        output: shown,
        end,
        exit_code,
        // The shell tool states the code as the output's last line.
        exit_code_in_output: exit_code.is_some(),
        reason,
        diff,
    });
    Ok(())
}

/// How a call that ran ended, its `PostToolUse` hooks (unless it was interrupted), and its
/// result journaled.
pub(super) async fn journal_result(
    ctx: &mut TurnCtx<'_>,
    call: &ToolCall,
    output: ToolOutput,
    diff: Option<String>,
) -> Result<(), EngineError> {
    let end = if ctx.cancel.is_cancelled() && output.is_error {
        CallEnd::Interrupted
    } else if output.timed_out {
        CallEnd::TimedOut
    } else if output.is_error {
        CallEnd::Failed
    } else {
        CallEnd::Completed
    };
    let diff = diff.filter(|_| end == CallEnd::Completed);
    if end != CallEnd::Interrupted {
        let (id, cancel) = (ctx.submission, ctx.cancel.clone());
        let (name, input, response) = (&call.name, &call.input, &output.content);
        crate::hooks::post_tool_use(ctx.session, id, name, input, response, &cancel).await;
    }
    finish(ctx, call, output, Ending::of(end), diff)
}
