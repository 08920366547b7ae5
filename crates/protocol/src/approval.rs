//! How much the model may do without asking ([`ApprovalMode`]), and what the user allowed for
//! the rest of a session ([`Grant`]): values both sides of the seam name. The policy that
//! decides a call from them is the engine's.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How much the model may do without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Planning: reads, searches and commands run with the workspace read-only; the file
    /// tools' writes are refused; nothing is changed (docs/configuration.md, *Plan mode*).
    Plan,
    /// Reads run on their own; writes and shell commands ask.
    #[default]
    Ask,
    /// Reads and writes inside the workspace run on their own; shell commands ask.
    AutoEdit,
    /// Everything runs without asking.
    Full,
}

impl ApprovalMode {
    /// The spelling used in config files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Plan => "plan",
            ApprovalMode::Ask => "ask",
            ApprovalMode::AutoEdit => "auto-edit",
            ApprovalMode::Full => "full",
        }
    }
}

impl ApprovalMode {
    /// Every mode, in the order Shift+Tab cycles through them.
    pub const ALL: [ApprovalMode; 4] =
        [ApprovalMode::Plan, ApprovalMode::Ask, ApprovalMode::AutoEdit, ApprovalMode::Full];

    /// The mode after this one in the cycle: plan → ask → auto-edit → full → plan.
    pub fn next(self) -> ApprovalMode {
        let at = ApprovalMode::ALL.iter().position(|m| *m == self).unwrap_or(0);
        ApprovalMode::ALL[(at + 1) % ApprovalMode::ALL.len()]
    }
}

impl fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ApprovalMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "plan" => Ok(ApprovalMode::Plan),
            "ask" => Ok(ApprovalMode::Ask),
            "auto-edit" => Ok(ApprovalMode::AutoEdit),
            "full" => Ok(ApprovalMode::Full),
            other => Err(format!(
                "unknown approval mode {other:?}; use one of: plan, ask, auto-edit, full"
            )),
        }
    }
}

/// One thing the user allowed "always" for this session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// This exact shell command.
    Command(String),
    /// Shell commands whose words start with these (a program and its subcommand).
    Prefix(Vec<String>),
    /// `write_file` and `edit_file` inside the workspace.
    Edits,
    /// One tool of one MCP server.
    Tool { server: String, tool: String },
    /// `web_fetch` of one public host (`host` or `host:port`).
    Host(String),
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Grant::Command(command) => write!(f, "the command `{command}`"),
            Grant::Prefix(words) => write!(f, "commands starting with `{} …`", words.join(" ")),
            Grant::Edits => f.write_str("writes and edits inside the workspace"),
            Grant::Tool { server, tool } => write!(f, "the MCP tool `{tool}` of `{server}`"),
            Grant::Host(host) => write!(f, "fetching from {host}"),
        }
    }
}
