//! What the user brought (docs/extending.md): the custom slash commands found for a
//! workspace, as a front end lists and completes them. Types only; the engine finds the files,
//! reads them and runs a command ([`Op::RunCommand`](super::Op::RunCommand)).

use serde::{Deserialize, Serialize};

/// Where a custom command, a skill or a hook comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtensionSource {
    /// `$CODEWHALE_HOME/...`: the user's own.
    Home,
    /// The workspace's `.codewhale/...`: honoured only in a trusted workspace.
    Workspace,
}

impl ExtensionSource {
    /// How it is named to the user: `home` or `workspace`.
    pub fn name(self) -> &'static str {
        match self {
            ExtensionSource::Home => "home",
            ExtensionSource::Workspace => "workspace",
        }
    }
}

/// One custom slash command found for the session's workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomCommandInfo {
    /// The name typed after `/` (`review`, `git:pr` for `git/pr.md`).
    pub name: String,
    /// Its front matter's `description` (empty when it has none).
    #[serde(default)]
    pub description: String,
    /// Its front matter's `argument-hint` (empty when it has none), shown after the name.
    #[serde(default)]
    pub argument_hint: String,
    pub source: ExtensionSource,
    /// Why it cannot run here (a command of a workspace that is not trusted); `None` when it
    /// can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}
