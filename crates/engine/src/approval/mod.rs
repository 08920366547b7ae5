//! Approval policy: which tool calls run on their own and which need the user's yes.
//!
//! Owns the three modes (docs/configuration.md, *Approval modes*) and the per-session "always"
//! grants ([`grants`]). The decision is a pure function of (mode, what the call does, whether it
//! leaves the workspace, grants), so it is tested without running anything. Invariants: a call that
//! leaves the workspace always asks unless the mode is `full`; a call that touches Codewhale's own
//! settings asks in every mode and no grant covers it; with no one to ask (exec without a terminal)
//! "ask" becomes a denial the model reads.

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
}

/// The policy's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask the user first.
    Ask,
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
            Effect::Tool => call.tool.is_some_and(|(server, tool)| {
                self.grants.iter().any(
                    |g| matches!(g, Grant::Tool { server: s, tool: t } if s == server && t == tool),
                )
            }),
        };
        if allowed {
            Decision::Allow
        } else {
            Decision::Ask
        }
    }

    /// What the user may allow "always" along with this call (nothing for a call outside the
    /// workspace or on Codewhale's own settings).
    pub fn offers(call: CallSummary<'_>) -> Vec<Grant> {
        if call.protected || call.leaves_workspace {
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
        let offers = Policy::offers(shell("echo one"));
        assert_eq!(offers, [Grant::Command("echo one".into())]);
        p.grant(offers[0].clone());
        assert_eq!(p.decide(shell("echo one")), Decision::Allow);
        assert_eq!(p.decide(shell("echo two; touch x")), Decision::Ask);
        let offers = Policy::offers(shell("cargo test -q"));
        assert_eq!(offers[1], Grant::Prefix(vec!["cargo".into(), "test".into()]));
        p.grant(offers[1].clone());
        assert_eq!(p.decide(shell("cargo test --all")), Decision::Allow);
        assert_eq!(p.decide(shell("cargo test && curl x | sh")), Decision::Ask);
        assert_eq!(p.revoke(1), Some(Grant::Prefix(vec!["cargo".into(), "test".into()])));
        assert_eq!(p.decide(shell("cargo test --all")), Decision::Ask);
        assert_eq!(p.revoke(5), None);
        // Nothing to offer where a grant could not apply.
        assert!(Policy::offers(call("read_file", Effect::Read, true)).is_empty());
        let protected = CallSummary { protected: true, ..shell("rm ~/.codewhale/trust.json") };
        assert!(Policy::offers(protected).is_empty());
    }

    #[test]
    fn mcp_tools_ask_until_granted_per_server_and_tool() {
        let tool = |server, tool| CallSummary {
            tool: Some((server, tool)),
            ..call("mcp__s__t", Effect::Tool, false)
        };
        let mut p = Policy::new(ApprovalMode::AutoEdit);
        assert_eq!(p.decide(tool("github", "create_issue")), Decision::Ask);
        let offers = Policy::offers(tool("github", "create_issue"));
        assert_eq!(offers, [Grant::Tool { server: "github".into(), tool: "create_issue".into() }]);
        p.grant(offers[0].clone());
        assert_eq!(p.decide(tool("github", "create_issue")), Decision::Allow);
        assert_eq!(p.decide(tool("github", "delete_repo")), Decision::Ask);
        assert_eq!(p.decide(tool("other", "create_issue")), Decision::Ask);
        assert_eq!(Policy::new(ApprovalMode::Full).decide(tool("a", "b")), Decision::Allow);
    }

    #[test]
    fn modes_parse_from_their_spelling() {
        for mode in [ApprovalMode::Ask, ApprovalMode::AutoEdit, ApprovalMode::Full] {
            assert_eq!(mode.as_str().parse::<ApprovalMode>().unwrap(), mode);
        }
        assert!("yolo".parse::<ApprovalMode>().unwrap_err().contains("ask, auto-edit, full"));
    }
}
