//! Codewhale's Model Context Protocol client, on the official Rust SDK (`rmcp`).
//!
//! Owns everything between the configured `[mcp_servers.NAME]` tables and the engine's tool
//! loop: starting servers (stdio child processes or streamable-HTTP endpoints) in the
//! background, their status, the tools offered to the model as `mcp__<server>__<tool>` with
//! schemas both providers accept, the cache of each server's last tool list, calls with their
//! timeouts, and turning results into text the model reads. The engine decides approvals and
//! journals calls and results like any other tool's.

pub mod client;
pub mod config;
pub mod content;
pub mod names;
pub mod servers;
pub mod stdio;
#[cfg(feature = "test-support")]
pub mod test_support;
pub mod tools;

pub use config::{ServerConfig, Transport, DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT};
pub use names::{MAX_NAME, PREFIX};
pub use servers::{
    CallOutput, EnvReader, OfferedTool, ReportedTool, Reporter, ServerEvent, ServerReport, Servers,
    Status,
};
pub use tools::{ToolCache, ToolInfo};
