//! Approval policy: which tool calls run on their own and which need the user's yes.
//!
//! Owns the four modes (docs/configuration.md, *Approval modes*) and the per-session "always"
//! grants ([`grants`]). The decision is a pure function of (mode, what the call does, whether it
//! leaves the workspace, grants), so it is tested without running anything. Invariants: a call that
//! leaves the workspace always asks unless the mode is `full`; a call that touches Codewhale's own
//! settings asks in every mode and no grant covers it; a fetch of a private address asks in every
//! mode and no grant covers it; in `plan` the file tools' writes are refused before any question
//! and commands run (the caller runs them with the workspace read-only); with no one to ask (exec
//! without a terminal) "ask" becomes a denial the model reads.

pub mod grants;

pub use codewhale_protocol::ApprovalMode;

/// What a tool call does, for the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Reads files or lists directories.
    Read,
    /// Creates or changes files.
    Write,
    /// Runs a command.
    Shell,
    /// Runs a tool of an MCP server (one not in the server's `read_only_tools`).
    Tool,
    /// Fetches a URL (`web_fetch`): reaches beyond the workspace, changes nothing in it.
    Fetch,
}

/// The policy's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask the user first.
    Ask,
    /// Refused before any question: a write of the file tools in `plan`.
    Refuse,
}

/// What a `web_fetch` call reaches, for the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchTarget<'a> {
    /// The host as the user's grant and `[tools] web_fetch_allow` name it (`host` or
    /// `host:port`, lowercase).
    pub host: &'a str,
    /// It resolved to a private address (loopback, link-local, private or shared ranges) and
    /// is not listed in `[tools] web_fetch_allow`: it asks in every mode.
    pub private: bool,
    /// Listed in `[tools] web_fetch_allow`: runs without asking.
    pub allowed: bool,
}

/// A tool call as the policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct CallSummary<'a> {
    pub effect: Effect,
    /// The call touches a path outside the workspace.
    pub leaves_workspace: bool,
    /// The call changes (or, for a shell command, names) Codewhale's own configuration or
    /// trust store, or a protected place of the workspace (a `.git`, `.codewhale/`, an
    /// instruction file, `core.hooksPath`): it asks in every mode, and no grant covers it.
    pub protected: bool,
    /// The shell command, for a shell call.
    pub command: Option<&'a str>,
    /// The MCP server and tool, for an MCP call.
    pub tool: Option<(&'a str, &'a str)>,
    /// What a `web_fetch` call reaches.
    pub fetch: Option<FetchTarget<'a>>,
}

/// The session's approval state: the mode plus what the user approved "always".
#[derive(Debug, Clone, Default)]
pub struct Policy {
    mode: ApprovalMode,
    grants: Vec<Grant>,
}

pub use grants::Grant;

impl Policy {
    /// A policy in `mode` with no grants.
    pub fn new(mode: ApprovalMode) -> Policy {
        Policy { mode, grants: Vec::new() }
    }

    pub fn mode(&self) -> ApprovalMode {
        self.mode
    }

    /// The grants, in the order they were given.
    pub fn grants(&self) -> &[Grant] {
        &self.grants
    }

    /// Remembers `grant` for the rest of the session (once).
    /// Switches the mode (the user's choice; the grants stay).
    pub fn set_mode(&mut self, mode: ApprovalMode) {
        self.mode = mode;
    }

    pub fn grant(&mut self, grant: Grant) {
        if !self.grants.contains(&grant) {
            self.grants.push(grant);
        }
    }

    /// Takes back grant `index` (0-based); `None` when there is no such grant.
    pub fn revoke(&mut self, index: usize) -> Option<Grant> {
        (index < self.grants.len()).then(|| self.grants.remove(index))
    }

    /// Whether `call` may run without asking.
    pub fn decide(&self, call: CallSummary<'_>) -> Decision {
        let plan = self.mode == ApprovalMode::Plan;
        if plan && call.effect == Effect::Write {
            return Decision::Refuse;
        }
        if call.effect == Effect::Fetch {
            return self.decide_fetch(call.fetch);
        }
        // In `plan` a command runs with nothing writable but a private temp dir: it can change
        // nothing a question would protect.
        if plan && call.effect == Effect::Shell {
            return Decision::Allow;
        }
        if call.protected {
            return Decision::Ask;
        }
        if self.mode == ApprovalMode::Full {
            return Decision::Allow;
        }
        if call.leaves_workspace {
            return Decision::Ask;
        }
        let allowed = match call.effect {
            Effect::Read => true,
            Effect::Write => {
                self.mode == ApprovalMode::AutoEdit || self.grants.contains(&Grant::Edits)
            }
            Effect::Shell => call.command.is_some_and(|c| grants::covers_command(&self.grants, c)),
            // A server's tool may change anything: in `plan` it asks, grant or not.
            Effect::Tool => {
                !plan
                    && call.tool.is_some_and(|(server, tool)| {
                        self.grants.iter().any(
                    |g| matches!(g, Grant::Tool { server: s, tool: t } if s == server && t == tool),
                )
                    })
            }
            Effect::Fetch => false,
        };
        if allowed {
            Decision::Allow
        } else {
            Decision::Ask
        }
    }

    /// A fetch: a private address asks in every mode unless listed; a public host runs in
    /// `full`, when listed, or once the user allowed it for the session, and asks otherwise.
    fn decide_fetch(&self, target: Option<FetchTarget<'_>>) -> Decision {
        let Some(target) = target else { return Decision::Ask };
        if target.allowed {
            return Decision::Allow;
        }
        if target.private {
            return Decision::Ask;
        }
        let granted = self.grants.iter().any(|g| matches!(g, Grant::Host(h) if h == target.host));
        if self.mode == ApprovalMode::Full || granted {
            Decision::Allow
        } else {
            Decision::Ask
        }
    }

    /// What the user may allow "always" along with this call (nothing for a call outside the
    /// workspace, on Codewhale's own settings or a protected place, or to a private address; nothing but a fetch's
    /// host in `plan`, where every other grant would be for a later mode).
    pub fn offers(&self, call: CallSummary<'_>) -> Vec<Grant> {
        if call.effect == Effect::Fetch {
            return match call.fetch {
                Some(target) if !target.private => vec![Grant::Host(target.host.to_owned())],
                _ => Vec::new(),
            };
        }
        if call.protected || call.leaves_workspace || self.mode == ApprovalMode::Plan {
            return Vec::new();
        }
        match (call.effect, call.command) {
            (Effect::Write, _) => vec![Grant::Edits],
            (Effect::Shell, Some(command)) => {
                let mut offers = vec![Grant::Command(command.trim().to_owned())];
                offers.extend(grants::prefix_of(command).map(Grant::Prefix));
                offers
            }
            (Effect::Tool, _) => call
                .tool
                .map(|(server, tool)| Grant::Tool { server: server.into(), tool: tool.into() })
                .into_iter()
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// The result the model reads when a call that would change Codewhale's own configuration
/// or a protected place of the workspace is denied because no one can approve it.
pub fn denied_protected(tool: &str, why: Option<crate::protected::Protection>) -> String {
    let what = match why {
        Some(why) => format!("a protected path ({})", why.reason()),
        None => "Codewhale's own configuration or trust store".to_owned(),
    };
    format!(
        "denied: this `{tool}` call would change {what}, which only the user may change, and \
         this session runs without a terminal to ask. Tell the user what you wanted to change \
         and why."
    )
}

/// What the model reads in `exec` when git was refused a write under the read-only `.git`
/// and nobody can allow a run with `.git` writable.
pub const GIT_NEEDS_WRITABLE: &str =
    "git needs .git writable: run it yourself or allow it with `[sandbox] git_writable = true`";

/// The result the model reads when a call is denied because no one can approve it.
pub fn denied_without_terminal(tool: &str, mode: ApprovalMode) -> String {
    format!(
        "denied: `{tool}` needs the user's approval in approval mode `{mode}`, and this session \
         runs without a terminal to ask. Do not retry the same call; finish with what you can do \
         using the allowed tools, or tell the user which call to allow (for example with \
         `--approval auto-edit` or `--approval full`)."
    )
}

/// The result the model reads when the user said no (with what they said, if anything).
pub fn denied_by_user(tool: &str, reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(reason) => format!(
            "denied: the user declined this `{tool}` call and said: {reason}. Do not repeat it; \
             follow what they said."
        ),
        None => format!(
            "denied: the user declined this `{tool}` call. Do not repeat it; ask the user how to \
             proceed if you need it."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(_tool: &str, effect: Effect, leaves: bool) -> CallSummary<'static> {
        CallSummary {
            effect,
            leaves_workspace: leaves,
            protected: false,
            command: None,
            tool: None,
            fetch: None,
        }
    }

    fn shell(command: &str) -> CallSummary<'_> {
        CallSummary { command: Some(command), ..call("shell", Effect::Shell, false) }
    }

    #[test]
    fn protected_files_ask_in_every_mode_and_no_grant_covers_them() {
        let mut full = Policy::new(ApprovalMode::Full);
        full.grant(Grant::Edits);
        let config = CallSummary { protected: true, ..call("write_file", Effect::Write, false) };
        assert_eq!(full.decide(config), Decision::Ask);
        let auto = Policy::new(ApprovalMode::AutoEdit);
        assert_eq!(auto.decide(config), Decision::Ask);
    }

    #[test]
    fn modes_follow_the_table() {
        let ask = Policy::new(ApprovalMode::Ask);
        assert_eq!(ask.decide(call("read_file", Effect::Read, false)), Decision::Allow);
        assert_eq!(ask.decide(call("write_file", Effect::Write, false)), Decision::Ask);
        assert_eq!(ask.decide(call("shell", Effect::Shell, false)), Decision::Ask);

        let auto = Policy::new(ApprovalMode::AutoEdit);
        assert_eq!(auto.decide(call("edit_file", Effect::Write, false)), Decision::Allow);
        assert_eq!(auto.decide(call("shell", Effect::Shell, false)), Decision::Ask);
        assert_eq!(auto.decide(call("write_file", Effect::Write, true)), Decision::Ask);

        let full = Policy::new(ApprovalMode::Full);
        assert_eq!(full.decide(call("shell", Effect::Shell, true)), Decision::Allow);
    }

    #[test]
    fn leaving_the_workspace_asks_even_for_reads_and_grants() {
        let mut p = Policy::new(ApprovalMode::Ask);
        p.grant(Grant::Edits);
        assert_eq!(p.decide(call("read_file", Effect::Read, true)), Decision::Ask);
        assert_eq!(p.decide(call("write_file", Effect::Write, true)), Decision::Ask);
        assert_eq!(p.decide(call("write_file", Effect::Write, false)), Decision::Allow);
    }

    #[test]
    fn an_always_on_one_command_does_not_allow_the_next() {
        let mut p = Policy::new(ApprovalMode::Ask);
        let offers = p.offers(shell("echo one"));
        assert_eq!(offers, [Grant::Command("echo one".into())]);
        p.grant(offers[0].clone());
        assert_eq!(p.decide(shell("echo one")), Decision::Allow);
        assert_eq!(p.decide(shell("echo two; touch x")), Decision::Ask);
        let offers = p.offers(shell("cargo test -q"));
        assert_eq!(offers[1], Grant::Prefix(vec!["cargo".into(), "test".into()]));
        p.grant(offers[1].clone());
        assert_eq!(p.decide(shell("cargo test --all")), Decision::Allow);
        assert_eq!(p.decide(shell("cargo test && curl x | sh")), Decision::Ask);
        assert_eq!(p.revoke(1), Some(Grant::Prefix(vec!["cargo".into(), "test".into()])));
        assert_eq!(p.decide(shell("cargo test --all")), Decision::Ask);
        assert_eq!(p.revoke(5), None);
        // Nothing to offer where a grant could not apply.
        assert!(p.offers(call("read_file", Effect::Read, true)).is_empty());
        let protected = CallSummary { protected: true, ..shell("rm ~/.codewhale/trust.json") };
        assert!(p.offers(protected).is_empty());
    }

    #[test]
    fn mcp_tools_ask_until_granted_per_server_and_tool() {
        let tool = |server, tool| CallSummary {
            tool: Some((server, tool)),
            ..call("mcp__s__t", Effect::Tool, false)
        };
        let mut p = Policy::new(ApprovalMode::AutoEdit);
        assert_eq!(p.decide(tool("github", "create_issue")), Decision::Ask);
        let offers = p.offers(tool("github", "create_issue"));
        assert_eq!(offers, [Grant::Tool { server: "github".into(), tool: "create_issue".into() }]);
        p.grant(offers[0].clone());
        assert_eq!(p.decide(tool("github", "create_issue")), Decision::Allow);
        assert_eq!(p.decide(tool("github", "delete_repo")), Decision::Ask);
        assert_eq!(p.decide(tool("other", "create_issue")), Decision::Ask);
        assert_eq!(Policy::new(ApprovalMode::Full).decide(tool("a", "b")), Decision::Allow);
    }

    #[test]
    fn plan_refuses_writes_runs_reads_and_commands_and_asks_for_tools() {
        let mut plan = Policy::new(ApprovalMode::Plan);
        plan.grant(Grant::Edits);
        plan.grant(Grant::Tool { server: "gh".into(), tool: "create_issue".into() });
        assert_eq!(plan.decide(call("write_file", Effect::Write, false)), Decision::Refuse);
        assert_eq!(plan.decide(call("edit_file", Effect::Write, true)), Decision::Refuse);
        let protected = CallSummary { protected: true, ..call("write_file", Effect::Write, false) };
        assert_eq!(plan.decide(protected), Decision::Refuse, "refused before any question");
        assert_eq!(plan.decide(call("read_file", Effect::Read, false)), Decision::Allow);
        assert_eq!(plan.decide(call("read_file", Effect::Read, true)), Decision::Ask);
        assert_eq!(plan.decide(shell("touch x")), Decision::Allow, "run read-only");
        let naming = CallSummary { protected: true, ..shell("cat .codewhale/config.toml") };
        assert_eq!(plan.decide(naming), Decision::Allow, "never unconfined in plan");
        let tool = CallSummary {
            tool: Some(("gh", "create_issue")),
            ..call("mcp__gh__create_issue", Effect::Tool, false)
        };
        assert_eq!(plan.decide(tool), Decision::Ask, "a granted tool still asks in plan");
        assert!(plan.offers(tool).is_empty() && plan.offers(shell("ls")).is_empty());
        assert_eq!(ApprovalMode::Full.next(), ApprovalMode::Plan);
        assert_eq!(ApprovalMode::Plan.next(), ApprovalMode::Ask);
    }

    #[test]
    fn a_fetch_asks_for_a_public_host_until_allowed_and_always_for_a_private_one() {
        let fetch = |host, private, allowed| CallSummary {
            fetch: Some(FetchTarget { host, private, allowed }),
            ..call("web_fetch", Effect::Fetch, false)
        };
        for mode in [ApprovalMode::Plan, ApprovalMode::Ask, ApprovalMode::AutoEdit] {
            let mut p = Policy::new(mode);
            assert_eq!(p.decide(fetch("docs.rs", false, false)), Decision::Ask, "{mode}");
            let offers = p.offers(fetch("docs.rs", false, false));
            assert_eq!(offers, [Grant::Host("docs.rs".into())]);
            p.grant(offers[0].clone());
            assert_eq!(p.decide(fetch("docs.rs", false, false)), Decision::Allow, "{mode}");
            assert_eq!(p.decide(fetch("crates.io", false, false)), Decision::Ask, "{mode}");
            assert_eq!(p.decide(fetch("crates.io", false, true)), Decision::Allow, "listed");
        }
        let full = Policy::new(ApprovalMode::Full);
        assert_eq!(full.decide(fetch("docs.rs", false, false)), Decision::Allow);
        assert_eq!(full.decide(fetch("localhost", true, false)), Decision::Ask, "private");
        assert!(full.offers(fetch("localhost", true, false)).is_empty(), "no grant covers it");
        assert_eq!(full.decide(fetch("localhost:8080", false, true)), Decision::Allow);
    }

    #[test]
    fn modes_parse_from_their_spelling() {
        for mode in ApprovalMode::ALL {
            assert_eq!(mode.as_str().parse::<ApprovalMode>().unwrap(), mode);
        }
        assert!("yolo".parse::<ApprovalMode>().unwrap_err().contains("plan, ask, auto-edit, full"));
    }
}
