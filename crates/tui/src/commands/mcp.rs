//! `codewhale mcp list [--json]`: the configured MCP servers, each started and given its
//! startup timeout, with its status and tools. Never contacts a model provider.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use codewhale_engine::offline;
use codewhale_protocol::{McpServerInfo, McpStatus};

use crate::cli::GlobalArgs;

/// Lists the servers; exit 0 even when some failed (the listing says why).
pub fn list(
    home: &Path,
    global: &GlobalArgs,
    workspace: Option<&Path>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace_dir(workspace)?;
    let overrides = super::exec::overrides(global);
    let runtime = super::runtime()?;
    let (servers, untrusted) = runtime.block_on(offline::mcp_servers(
        home,
        &workspace,
        &overrides,
        crate::sandbox_helper::path().as_deref(),
    ))?;
    if let Some(untrusted) = untrusted {
        errln!(
            "codewhale: ignoring {} from {}: this workspace is not trusted; run with --trust to \
             use them",
            untrusted.keys.join(", "),
            untrusted.file.display()
        );
    }
    if json {
        let value = serde_json::json!({ "servers": servers });
        outln!("{}", serde_json::to_string(&value).context("cannot encode the list")?);
    } else {
        out!("{}", human(&servers));
    }
    Ok(ExitCode::SUCCESS)
}

/// The text listing: one line per server, then its tools indented.
pub fn human(servers: &[McpServerInfo]) -> String {
    if servers.is_empty() {
        return "no MCP servers configured: add an [mcp_servers.NAME] table to config.toml \
                (see docs/mcp.md)\n"
            .to_owned();
    }
    let mut out = String::new();
    for server in servers {
        let status = match (&server.reason, server.status) {
            (Some(reason), _) => format!("failed: {reason}"),
            (None, McpStatus::Ready) => format!("ready, {} tools", server.tools.len()),
            (None, status) => status.word().to_owned(),
        };
        out.push_str(&format!("{}  {status}\n  {}\n", server.name, server.target));
        for tool in &server.tools {
            let read_only = if tool.read_only { " [runs without asking]" } else { "" };
            let description = tool.description.lines().next().unwrap_or_default();
            out.push_str(&format!("    {}{read_only}  {description}\n", tool.name));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use codewhale_protocol::McpToolInfo;

    use super::*;

    #[test]
    fn the_listing_names_status_target_and_tools() {
        let servers = vec![
            McpServerInfo {
                name: "everything".into(),
                target: "node index.js stdio".into(),
                status: McpStatus::Ready,
                reason: None,
                tools: vec![McpToolInfo {
                    name: "mcp__everything__echo".into(),
                    description: "Echoes back the input\nmore".into(),
                    read_only: true,
                }],
                cached: false,
            },
            McpServerInfo {
                name: "gone".into(),
                target: "/nonexistent".into(),
                status: McpStatus::Failed,
                reason: Some("cannot start `/nonexistent`".into()),
                tools: Vec::new(),
                cached: false,
            },
        ];
        assert_eq!(
            human(&servers),
            "everything  ready, 1 tools\n  node index.js stdio\n    mcp__everything__echo [runs \
             without asking]  Echoes back the input\ngone  failed: cannot start `/nonexistent`\n  \
             /nonexistent\n"
        );
        assert!(human(&[]).starts_with("no MCP servers configured"));
    }
}
