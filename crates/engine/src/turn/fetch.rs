//! The `web_fetch` calls of a reply, around the approval step (docs/tools.md, *`web_fetch`*):
//! each URL is resolved and judged before the policy decides ([`prepare`]), so the question is
//! asked about the addresses the request will go to, and a redirect is followed only where
//! that decision covers it ([`follows`]).

use super::tool_call::ToolCall;
use crate::approval::{Decision, Policy};
use crate::session::Session;
use crate::tools::web_fetch::{self, Target};

/// Per call of a reply: `None` for a call that is not a `web_fetch` (or when the tool is not
/// offered), else its target or the error the model reads.
pub(super) type Prepared = Vec<Option<Result<Target, String>>>;

/// Resolves and judges the URL of every `web_fetch` call of `calls`.
pub(super) async fn prepare(session: &Session, calls: &[ToolCall]) -> Prepared {
    let tools = &session.config().tools;
    let mut out = Vec::with_capacity(calls.len());
    for call in calls {
        out.push(if call.name == web_fetch::TOOL && tools.web_fetch_enabled() {
            Some(web_fetch::target_of(&call.input, tools).await)
        } else {
            None
        });
    }
    out
}

/// Whether a redirect from `first` (cleared, by the policy or the user) to `next` is covered
/// without a new question: the policy runs `next` on its own, or it is the same host, port
/// and kind of address the clearing was for.
pub(super) fn follows(policy: &Policy, first: &Target, next: &Target) -> bool {
    let assessment = next.assessment();
    let allowed = assessment.summary().is_some_and(|s| policy.decide(s) == Decision::Allow);
    allowed || (next.host == first.host && next.port == first.port && next.private == first.private)
}

/// The question asked before a fetch.
pub(super) fn question(target: &Target) -> String {
    if target.private {
        format!(
            "fetch {}? It is a private address (this machine or its network): asked in every \
             approval mode",
            target.shown()
        )
    } else {
        format!("fetch {}?", target.shown())
    }
}

/// The result the model reads when a fetch would ask and nobody can answer.
pub(super) fn denied_without_terminal(target: &Target) -> String {
    let allow = format!("list {} in [tools] web_fetch_allow", target.host);
    let how = if target.private {
        format!("a private address asks in every approval mode; the user can {allow}")
    } else {
        format!("the user can run with --approval full or {allow}")
    };
    format!(
        "denied: fetching {} needs the user's approval, and this session runs without a \
         terminal to ask ({how}). Do not retry it; go on without the page.",
        target.url
    )
}
