//! Running the tool calls of one model response: approval, scheduling, journaling results.
//!
//! Invariants: results are journaled in call order, as consecutive entries on the chain right
//! after the assistant entry; consecutive read-only calls run concurrently, anything that
//! writes or runs a command runs alone; every call gets exactly one result — a denial, the
//! tool's output, or "interrupted" when the user stopped the turn first.

use serde_json::Value;

use codewhale_journal::ToolResultPayload;

use super::TurnCtx;
use crate::approval::{denied_by_user, denied_protected, denied_without_terminal, Decision};
use crate::error::EngineError;
use crate::events::ApprovalReply;
use crate::protocol::{ApprovalScope, Event};
use crate::session::INTERRUPTED_RESULT;
use crate::tools::{self, Assessment, ToolOutput};

/// One call of a response.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// What the approval step decided for a call.
enum Cleared {
    Run,
    Refused(String),
    Interrupted,
}

/// Runs `calls` in order; returns false when the turn was interrupted.
pub(crate) async fn run_calls(
    ctx: &mut TurnCtx<'_>,
    calls: &[ToolCall],
) -> Result<bool, EngineError> {
    let tool_ctx = ctx.session.tool_context(ctx.cancel.clone());
    let protected = ctx.session.protected();
    let assessments: Vec<Assessment> = calls
        .iter()
        .map(|c| tools::assess(ctx.session.workspace(), &protected, &c.name, &c.input))
        .collect();
    let mut i = 0;
    let mut interrupted = false;
    while i < calls.len() {
        if ctx.cancel.is_cancelled() {
            interrupted = true;
            break;
        }
        match clear(ctx, &calls[i], &assessments[i]).await {
            Cleared::Interrupted => {
                interrupted = true;
                break;
            }
            Cleared::Refused(message) => {
                finish(ctx, &calls[i], ToolOutput::error(message))?;
                i += 1;
                continue;
            }
            Cleared::Run => {}
        }
        // Extend a read-only call into a batch of the read-only calls after it that need no
        // approval; they run concurrently.
        let mut end = i + 1;
        if assessments[i].is_read_only() {
            while end < calls.len()
                && assessments[end].is_read_only()
                && allowed_without_asking(ctx, &calls[end], &assessments[end])
            {
                end += 1;
            }
        }
        for call in &calls[i..end] {
            ctx.emit(Event::ToolCallStarted { call_id: call.id.clone(), name: call.name.clone() });
        }
        let outputs = futures::future::join_all(
            calls[i..end].iter().map(|c| tools::execute(&tool_ctx, &c.name, &c.input)),
        )
        .await;
        for (call, output) in calls[i..end].iter().zip(outputs) {
            finish(ctx, call, output)?;
        }
        i = end;
    }
    for call in &calls[i..] {
        finish(ctx, call, ToolOutput::error(INTERRUPTED_RESULT))?;
    }
    Ok(!interrupted && !ctx.cancel.is_cancelled())
}

fn allowed_without_asking(ctx: &TurnCtx<'_>, call: &ToolCall, a: &Assessment) -> bool {
    match a.summary(&call.name) {
        Some(summary) => ctx.session.policy.decide(summary) == Decision::Allow,
        None => true,
    }
}

async fn clear(ctx: &mut TurnCtx<'_>, call: &ToolCall, a: &Assessment) -> Cleared {
    if allowed_without_asking(ctx, call, a) {
        return Cleared::Run;
    }
    let mode = ctx.session.policy.mode();
    if !ctx.gate.is_interactive() {
        if a.protected {
            return Cleared::Refused(denied_protected(&call.name));
        }
        return Cleared::Refused(denied_without_terminal(&call.name, mode));
    }
    let reason = if a.protected {
        "it changes Codewhale's own configuration; only you may allow that".to_owned()
    } else if a.leaves_workspace {
        "it touches a path outside the workspace".to_owned()
    } else {
        format!("approval mode `{mode}` asks before `{}`", call.name)
    };
    let reply = ctx.gate.wait_for(&call.id);
    ctx.emit(Event::ApprovalNeeded {
        call_id: call.id.clone(),
        name: call.name.clone(),
        input: call.input.clone(),
        reason,
    });
    let answer = tokio::select! {
        answer = reply => answer.ok(),
        () = ctx.cancel.cancelled() => None,
    };
    match answer {
        Some(ApprovalReply::Approve(scope)) => {
            if scope == ApprovalScope::Always && !a.leaves_workspace && !a.protected {
                ctx.session.policy.grant_always(&call.name);
            }
            Cleared::Run
        }
        Some(ApprovalReply::Deny) => Cleared::Refused(denied_by_user(&call.name)),
        None => Cleared::Interrupted,
    }
}

fn finish(ctx: &mut TurnCtx<'_>, call: &ToolCall, output: ToolOutput) -> Result<(), EngineError> {
    let mut payload =
        ToolResultPayload::new(call.id.clone(), output.content.clone(), output.is_error);
    // The original size, so a pruned stub (and anyone reading the journal) knows how much the
    // tool produced even when `content` holds only a capped head and tail.
    payload.bytes = Some(output.bytes);
    let id = ctx.session.append(payload)?;
    // Show what was journaled: the output with its secrets redacted.
    let shown = match ctx.session.journal().get(id.as_str()).map(|e| &e.payload) {
        Some(codewhale_journal::Payload::ToolResult(r)) => r.content.to_string(),
        _ => output.content,
    };
    ctx.emit(Event::ToolCallFinished {
        call_id: call.id.clone(),
        name: call.name.clone(),
        is_error: output.is_error,
        output: shown,
    });
    Ok(())
}
