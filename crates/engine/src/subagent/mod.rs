//! `task{description, prompt, tools?}`: a subagent — a child session with its own journal,
//! budget, compaction, background note and plan, opened through the same path as any session
//! (docs/subagents.md).
//!
//! Ownership: the parent's turn runs its `task` calls (`turn/tasks.rs`); each child is a
//! [`Session`] of its own, owned by the future that runs its one turn and closed when it ends.
//! The parent never reads the child's conversation, only the result the call returns
//! ([`outcome`]); the child's journal stays beside the parent's, where `recall` reads it
//! ([`crate::children`]).
//!
//! Invariants: a child is never offered `task` (no grandchildren); in `ask` and `plan` a child
//! is offered only the read-only tools, whatever its call asked for; a child that fails or is
//! stopped is a result the parent's model reads, never an error that ends the parent's turn;
//! at most `[tools] max_subagents` children run at once in the process ([`slots`]).

pub mod outcome;
pub mod slots;

use crate::approval::ApprovalMode;
use crate::session::Session;
pub use crate::tools::task::{
    parse, Link, Request, DEFAULT_MAX_SUBAGENTS, READ_ONLY_TOOLS, RESULT_TOKENS, TOOL,
};

/// The tools a child of `parent` is offered for `asked`, and one line per name left out with
/// the reason (the parent's model reads them in the result).
pub fn tool_set(parent: &Session, asked: Option<&[String]>) -> (Vec<String>, Vec<String>) {
    let mode = parent.policy().mode();
    let mut offered: Vec<String> = READ_ONLY_TOOLS
        .iter()
        .filter(|t| **t != "web_fetch" || parent.config().tools.web_fetch_enabled())
        .map(|t| (*t).to_owned())
        .collect();
    let mut left_out = Vec::new();
    let Some(asked) = asked else { return (offered, left_out) };
    let parent_has: Vec<String> = parent.tool_specs().into_iter().map(|s| s.name).collect();
    for name in asked {
        if offered.contains(name) {
            continue;
        }
        if name == TOOL {
            left_out.push(format!("{TOOL} (a subagent cannot start subagents of its own)"));
        } else if !parent_has.contains(name) {
            left_out.push(format!("{name} (no such tool in this session)"));
        } else if matches!(mode, ApprovalMode::Ask | ApprovalMode::Plan) {
            left_out.push(format!(
                "{name} (approval mode `{mode}` keeps a subagent read-only; `auto-edit` or `full` \
                 allows more)"
            ));
        } else {
            offered.push(name.clone());
        }
    }
    (offered, left_out)
}

/// The parent of a subagent's session opened on its own (`resume`, `exec --session`): such a
/// session is read-only. `None` for a session of its own, and for a child while its `task`
/// call runs it.
pub fn read_only_parent(session: &Session) -> Option<&str> {
    if session.subagent().is_some() {
        return None;
    }
    session.journal().header().parent_session.as_deref()
}

/// The line shown when a subagent's session is opened on its own.
pub fn read_only_notice(parent: &str) -> String {
    format!(
        "this is a subagent's session, started by a task call of session {parent}: it is shown \
         read-only; `codewhale resume {parent}` continues the conversation it belongs to"
    )
}

/// Why `op` is refused in a subagent's session opened on its own (everything that would write
/// its journal or the workspace); `None` for what only reads.
pub fn refusal(parent: &str, op: &codewhale_protocol::Op) -> Option<String> {
    use codewhale_protocol::Op;
    let reads = matches!(
        op,
        Op::GetContext
            | Op::GetHistory { .. }
            | Op::GetTranscript
            | Op::GetSubagentTranscript { .. }
            | Op::ListAnchors
            | Op::ListGrants
            | Op::ListUserMessages
            | Op::ListBranches
            | Op::ListMcpServers
            | Op::GetStatus
            | Op::GetDiff
            | Op::ListModels
            | Op::PreviewRestore { .. }
            | Op::Typing
            | Op::Interrupt
            | Op::SetApproval { .. }
            | Op::Shutdown
    );
    (!reads).then(|| {
        format!(
            "this subagent's session is read-only: it belongs to a task call of session \
             {parent}; run `codewhale resume {parent}` to go on with that conversation"
        )
    })
}

#[cfg(test)]
mod tests;
