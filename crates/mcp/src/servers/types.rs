//! What the servers module reports: events for the user, statuses, listings, offered tools and
//! call outputs. Plain data.

use serde_json::Value;

/// Something the user should be told about a server (once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerEvent {
    /// It could not be started or reached; the session goes on without it.
    Failed { server: String, reason: String },
    /// It was running and stopped.
    Stopped { server: String, reason: String },
    /// It announced a new tool list; the next request offers it.
    ToolsChanged { server: String, tools: usize },
}

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// `enabled = false`.
    Disabled,
    /// Configured, but the session has not started it (a command that needs no servers).
    Idle,
    Starting,
    Ready,
    Failed(String),
}

impl Status {
    /// One word for lists: `starting`, `ready`, `failed`, `disabled`, `idle`.
    pub fn word(&self) -> &'static str {
        match self {
            Status::Disabled => "disabled",
            Status::Idle => "idle",
            Status::Starting => "starting",
            Status::Ready => "ready",
            Status::Failed(_) => "failed",
        }
    }
}

/// A server as `/mcp` and `mcp list` show it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerReport {
    pub name: String,
    /// The command line or URL.
    pub target: String,
    pub status: Status,
    /// Its tools (live, else from the cache), with the names the model sees them by.
    pub tools: Vec<ReportedTool>,
    /// Whether `tools` comes from the cache rather than the running server.
    pub cached: bool,
}

/// One tool in a [`ServerReport`].
#[derive(Debug, Clone, PartialEq)]
pub struct ReportedTool {
    pub name: String,
    pub description: String,
    /// In `read_only_tools`: runs without asking.
    pub read_only: bool,
}

/// A tool as the model is offered it.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferedTool {
    /// `mcp__<server>__<tool>`, cut to the providers' limits.
    pub name: String,
    pub server: String,
    pub tool: String,
    pub description: String,
    /// The input schema, sanitized for both providers.
    pub input_schema: Value,
}

/// What a call returned, as the model will read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOutput {
    pub text: String,
    pub is_error: bool,
}

impl CallOutput {
    pub(super) fn error(text: String) -> CallOutput {
        CallOutput { text, is_error: true }
    }
}
