//! The events the engine task words itself: an MCP server's trouble, the list of MCP servers,
//! a change of approval mode and an answer to a call that is not waiting. Each is built in one
//! place, so the same thing reads the same whether a turn runs or not.

use codewhale_protocol::{ErrorKind, Event, NoticeLevel};

pub(super) fn no_such_call(call: &str) -> Event {
    Event::Error {
        kind: ErrorKind::NoSuchCall,
        message: format!("no tool call {call} is waiting for approval"),
    }
}

pub(super) fn mcp_servers_event(mcp: &codewhale_mcp::Servers) -> Event {
    let servers = mcp.reports().into_iter().map(crate::session::mcp_tools::server_info).collect();
    Event::McpServers { servers }
}

/// What the user hears about an MCP server (once per failure).
pub(super) fn mcp_notice(event: codewhale_mcp::ServerEvent) -> Event {
    use codewhale_mcp::ServerEvent;
    let (level, message) = match event {
        ServerEvent::Failed { server, reason } => (
            NoticeLevel::Warning,
            format!(
                "MCP server `{server}` is not available: {reason}; the session goes on without \
                 its tools (/mcp shows the servers)"
            ),
        ),
        ServerEvent::Stopped { server, reason } => (
            NoticeLevel::Warning,
            format!("MCP server `{server}` stopped: {reason}; its tools are unavailable now"),
        ),
        ServerEvent::ToolsChanged { server, tools } => (
            NoticeLevel::Info,
            format!("MCP server `{server}` changed its tools ({tools} now); the next request offers them"),
        ),
    };
    Event::Notice { level, message }
}

/// What a change of approval mode is told as.
pub(super) fn approval_changed(mode: crate::approval::ApprovalMode) -> Event {
    use crate::approval::ApprovalMode;
    let what = match mode {
        ApprovalMode::Plan => {
            "reads, searches and read-only commands run; nothing in the workspace changes"
        }
        ApprovalMode::Ask => "reads run on their own; edits and commands ask first",
        ApprovalMode::AutoEdit => {
            "edits inside the workspace run without asking; commands ask first"
        }
        ApprovalMode::Full => "edits and commands run without asking, inside the sandbox",
    };
    Event::ApprovalChanged { mode, message: format!("approval mode {mode}: {what}") }
}
