//! The TOML shape of a config file, as serde reads it: every table and key a file may hold,
//! with the spans errors point at. Nothing here is checked beyond its TOML type: the checks
//! live with the parser (`parse_scoped`) and the value types (`config::values`).
//!
//! Invariant: every table denies unknown fields, so a misspelt key is an error, never ignored.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use crate::approval::ApprovalMode;

/// `provider = "openai"`, or a `[provider]` table: `name` (the same value),
/// `idle_timeout_sec` (the top-level key means the same) and `hosted` (the server is a hosted
/// API whatever its address: never probed, never suspected of silent truncation).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum FileProvider {
    Name(String),
    Table(FileProviderTable),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileProviderTable {
    pub(super) name: Option<String>,
    pub(super) idle_timeout_sec: Option<f64>,
    pub(super) hosted: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    pub(super) provider: Option<Spanned<FileProvider>>,
    pub(super) model: Option<String>,
    pub(super) base_url: Option<String>,
    pub(super) server: Option<Spanned<String>>,
    pub(super) context_window: Option<Spanned<u64>>,
    pub(super) reserved_output: Option<Spanned<u64>>,
    pub(super) approval: Option<ApprovalMode>,
    pub(super) api_key_env: Option<Spanned<String>>,
    pub(super) idle_timeout_sec: Option<Spanned<f64>>,
    pub(super) reasoning_effort: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) compaction: FileCompaction,
    #[serde(default)]
    pub(super) shell: FileShell,
    #[serde(default)]
    pub(super) tools: FileTools,
    #[serde(default)]
    pub(super) redaction: FileRedaction,
    #[serde(default)]
    pub(super) sandbox: FileSandbox,
    #[serde(default)]
    pub(super) tui: FileTui,
    #[serde(default)]
    pub(super) checkpoints: FileCheckpoints,
    #[serde(default)]
    pub(super) pricing: BTreeMap<String, Spanned<codewhale_provider::Price>>,
    pub(super) trusted_workspaces: Option<Spanned<Vec<String>>>,
    // Not `Spanned`: a table written with dotted keys (`mcp_servers.x.command = "sh"`) has no
    // span of its own, and `Spanned` refuses it; errors find the table in the text instead.
    #[serde(default)]
    pub(super) mcp_servers: BTreeMap<String, FileMcpServer>,
    // Any shape: a broken hook table is a notice, never a refused file (`super::hooks`).
    pub(super) hooks: Option<toml::Value>,
}

/// One `[mcp_servers.NAME]` table, in the shape Codex CLI uses (its key names, so a pasted
/// block works), with `_ms` variants of the timeouts and `read_only_tools`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileMcpServer {
    pub(super) command: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) args: Vec<String>,
    #[serde(default)]
    pub(super) env: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) env_vars: Vec<Spanned<String>>,
    pub(super) cwd: Option<String>,
    pub(super) url: Option<Spanned<String>>,
    pub(super) bearer_token_env_var: Option<Spanned<String>>,
    #[serde(default, alias = "headers")]
    pub(super) http_headers: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) env_http_headers: BTreeMap<String, Spanned<String>>,
    pub(super) enabled: Option<bool>,
    pub(super) startup_timeout_sec: Option<Spanned<f64>>,
    pub(super) startup_timeout_ms: Option<Spanned<u64>>,
    pub(super) tool_timeout_sec: Option<Spanned<f64>>,
    pub(super) tool_timeout_ms: Option<Spanned<u64>>,
    pub(super) enabled_tools: Option<Vec<String>>,
    #[serde(default)]
    pub(super) disabled_tools: Vec<String>,
    #[serde(default)]
    pub(super) read_only_tools: Vec<String>,
    pub(super) sandbox: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileCompaction {
    pub(super) threshold: Option<Spanned<f64>>,
    pub(super) compaction_model: Option<String>,
    pub(super) retained_user_tokens: Option<u64>,
    pub(super) background: Option<bool>,
    pub(super) background_at: Option<Spanned<f64>>,
    pub(super) branch_summary_timeout_sec: Option<Spanned<f64>>,
    pub(super) branch_summaries: Option<bool>,
    pub(super) max_summary_requests: Option<Spanned<u32>>,
    pub(super) idle_after_sec: Option<Spanned<f64>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileShell {
    #[serde(default)]
    pub(super) env: BTreeMap<String, String>,
    pub(super) keep_background: Option<bool>,
    pub(super) max_processes: Option<Spanned<u32>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileTools {
    pub(super) web_fetch: Option<bool>,
    #[serde(default)]
    pub(super) web_fetch_allow: Vec<Spanned<String>>,
    pub(super) subagent_model: Option<String>,
    pub(super) max_subagents: Option<Spanned<u32>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileSandbox {
    pub(super) mode: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) writable: Vec<String>,
    pub(super) network: Option<bool>,
    pub(super) namespaces: Option<bool>,
    pub(super) git_writable: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileTui {
    pub(super) notify: Option<codewhale_protocol::Notify>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileCheckpoints {
    pub(super) max_file_bytes: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileRedaction {
    #[serde(default)]
    pub(super) patterns: Vec<Spanned<String>>,
}
