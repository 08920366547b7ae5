//! The session's MCP servers and the tools of theirs a request offers.
//!
//! Owns the offered list: fixed from the servers' cached lists when the session opens, and
//! refreshed only at a request boundary after a server announced a change (so the tool list,
//! part of the prompt-cache prefix, never changes in the middle of a turn's requests).

use std::path::Path;
use std::sync::Arc;

use codewhale_provider::ToolSpec;

use crate::config::Config;
use codewhale_protocol::{McpServerInfo, McpStatus, McpToolInfo};

/// The servers and what of theirs the next request offers.
#[derive(Debug)]
pub(crate) struct McpTools {
    servers: codewhale_mcp::Servers,
    /// The MCP tools offered in requests, as last fixed.
    specs: Vec<ToolSpec>,
    /// The servers' offered-list generation `specs` was built from (`u64::MAX`: none yet).
    generation: u64,
}

impl McpTools {
    /// The servers, offering what their cached lists hold.
    pub(crate) fn new(servers: codewhale_mcp::Servers) -> McpTools {
        let specs = mcp_specs(&servers.offered_now());
        McpTools { servers, specs, generation: u64::MAX }
    }

    pub(crate) fn servers(&self) -> &codewhale_mcp::Servers {
        &self.servers
    }

    /// The MCP tools the next request offers.
    pub(crate) fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// Fixes (on the first call, possibly waiting for a server without a cached list) or
    /// refreshes (after a server announced a change) the offered tools; true when they changed.
    /// `cancel` ends a wait.
    pub(crate) async fn refresh(&mut self, cancel: &tokio_util::sync::CancellationToken) -> bool {
        if self.servers.is_empty() {
            return false;
        }
        let servers = self.servers.clone();
        let changed = tokio::select! {
            changed = servers.offered_since(self.generation) => changed,
            () = cancel.cancelled() => return false,
        };
        let Some((generation, offered)) = changed else { return false };
        self.generation = generation;
        let specs = mcp_specs(&offered);
        if specs == self.specs {
            return false;
        }
        self.specs = specs;
        true
    }
}

/// The configured MCP servers of `config`, not yet started; their cached tool lists live in
/// the home's `mcp` directory. A server reads Codewhale's own environment only for the few
/// variables passed through and those its table names.
pub(crate) fn mcp_servers(
    config: &Config,
    workspace: &Path,
    home: &Path,
) -> codewhale_mcp::Servers {
    codewhale_mcp::Servers::new(
        config.mcp_servers.clone(),
        workspace.to_path_buf(),
        Some(home.join("mcp")),
        Arc::new(|name: &str| std::env::var(name).ok()),
    )
}

/// MCP tools as the provider request carries them.
pub(crate) fn mcp_specs(offered: &[codewhale_mcp::OfferedTool]) -> Vec<ToolSpec> {
    offered
        .iter()
        .map(|t| ToolSpec {
            name: t.name.clone(),
            description: if t.description.is_empty() {
                format!("The tool `{}` of the MCP server `{}`.", t.tool, t.server)
            } else {
                t.description.clone()
            },
            input_schema: t.input_schema.clone(),
        })
        .collect()
}

/// The protocol's form of a server report.
pub(crate) fn server_info(r: codewhale_mcp::ServerReport) -> McpServerInfo {
    let (status, reason) = match &r.status {
        codewhale_mcp::Status::Disabled => (McpStatus::Disabled, None),
        codewhale_mcp::Status::Idle => (McpStatus::Idle, None),
        codewhale_mcp::Status::Starting => (McpStatus::Starting, None),
        codewhale_mcp::Status::Ready => (McpStatus::Ready, None),
        codewhale_mcp::Status::Failed(reason) => (McpStatus::Failed, Some(reason.clone())),
    };
    let tools = r
        .tools
        .into_iter()
        .map(|t| McpToolInfo { name: t.name, description: t.description, read_only: t.read_only })
        .collect();
    McpServerInfo { name: r.name, target: r.target, status, reason, tools, cached: r.cached }
}
