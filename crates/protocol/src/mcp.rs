//! MCP servers as the front end sees them: each server's status (an enum, never a string the UI
//! compares) and its tools, built from the MCP crate's reports.

use serde::{Deserialize, Serialize};

/// One MCP server in [`Event::McpServers`](super::Event::McpServers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerInfo {
    pub name: String,
    /// The command line or URL.
    pub target: String,
    pub status: McpStatus,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its tools (from the running server, else from its last listing when `cached`).
    pub tools: Vec<McpToolInfo>,
    #[serde(default)]
    pub cached: bool,
}

/// Where an MCP server is (serialized as one word: `starting`, `ready`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpStatus {
    /// `enabled = false`.
    Disabled,
    /// Configured, but not started (a command that needs no servers, or one whose tool list
    /// is cached and none of its tools was called).
    Idle,
    Starting,
    Ready,
    /// It failed; [`McpServerInfo::reason`] says why.
    Failed,
}

impl McpStatus {
    /// The word lists show.
    pub fn word(self) -> &'static str {
        match self {
            McpStatus::Disabled => "disabled",
            McpStatus::Idle => "idle",
            McpStatus::Starting => "starting",
            McpStatus::Ready => "ready",
            McpStatus::Failed => "failed",
        }
    }
}

/// One tool in [`McpServerInfo`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpToolInfo {
    /// The name the model calls it by (`mcp__<server>__<tool>`).
    pub name: String,
    pub description: String,
    /// In the server's `read_only_tools`: runs without asking.
    pub read_only: bool,
}
