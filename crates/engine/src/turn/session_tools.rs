//! The session's own tools, run by the turn one at a time and never asking: `update_plan` sets
//! the live plan, `recall` reads what the journal holds — the conversation's entries and the
//! `task` children's journals (docs/subagents.md).
//!
//! Invariants: a recall's text is within its own cap and the room the window leaves, and is
//! not cut again; nothing here writes the journal (the caller journals the result).

use super::ctx::TurnCtx;
use super::tool_call::ToolCall;
use crate::tools::ToolOutput;

/// Runs a call of one of the session's own tools; true with the output when it set the plan.
pub(super) fn run_session_tool(ctx: &TurnCtx<'_>, call: &ToolCall) -> (ToolOutput, bool) {
    if call.name == crate::plan::TOOL {
        return match crate::plan::parse(&call.input) {
            Ok(plan) => (ToolOutput::capped(&crate::plan::confirmation(&plan)), true),
            Err(message) => (ToolOutput::error(message), false),
        };
    }
    let session = &*ctx.session;
    // A child's journal, named by its id or its `task` call's id (docs/subagents.md).
    let room = session.recall_room_chars();
    let max = call
        .input
        .get("max_chars")
        .and_then(serde_json::Value::as_u64)
        .map_or(crate::recall::DEFAULT_MAX_CHARS, |n| usize::try_from(n).unwrap_or(usize::MAX))
        .min(room);
    if let Some(found) = crate::children::entry(session, &call.input, max) {
        return match found {
            Ok(text) => {
                let bytes = text.len() as u64;
                (ToolOutput { bytes, is_error: false, ..ToolOutput::error(text) }, false)
            }
            Err(message) => (ToolOutput::error(message), false),
        };
    }
    let view = session.render();
    let recall = crate::recall::RecallContext {
        journal: session.journal(),
        view: &view,
        room_chars: session.recall_room_chars(),
        redactor: session.redactor(),
        trim: None,
    };
    let query = call.input.get("query").and_then(serde_json::Value::as_str).unwrap_or("");
    let in_children = crate::children::search(session, query);
    let found = match crate::recall::run(&recall, &call.input) {
        Err(_) if !in_children.is_empty() && max >= 200 => {
            Ok(crate::recall::cap(in_children.trim_start().to_owned(), max))
        }
        Ok(text) if !in_children.is_empty() => Ok(crate::recall::cap(text + &in_children, max)),
        other => other,
    };
    match found {
        // Already within its own cap and the room: not cut again.
        Ok(text) => {
            let bytes = text.len() as u64;
            (ToolOutput { bytes, is_error: false, ..ToolOutput::error(text) }, false)
        }
        Err(message) => (ToolOutput::error(message), false),
    }
}
