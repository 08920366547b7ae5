//! A server's tools as Codewhale keeps them, and the on-disk cache of the last successful
//! listing.
//!
//! The cache lets a session offer a server's tools in its first request without waiting for
//! the server to start. Invariants: a cached list is used only for the same server name and
//! command (or URL) — see [`crate::ServerConfig::fingerprint`]; a cache file is replaced whole
//! (written aside, then renamed), so a crash never leaves a half-written list; an unreadable
//! cache is treated as absent.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One tool of a server, as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// The tool's own name on its server.
    pub name: String,
    pub description: String,
    /// The input schema as the server sent it.
    pub input_schema: Map<String, Value>,
    /// The server's own annotation says the tool changes nothing (informational: what runs
    /// without asking is the user's `read_only_tools`, never the server's word).
    #[serde(default)]
    pub read_only_hint: bool,
}

impl ToolInfo {
    /// Codewhale's copy of an rmcp tool.
    pub fn from_rmcp(tool: &rmcp::model::Tool) -> ToolInfo {
        ToolInfo {
            name: tool.name.to_string(),
            description: tool
                .description
                .as_deref()
                .or(tool.title.as_deref())
                .unwrap_or_default()
                .to_owned(),
            input_schema: (*tool.input_schema).clone(),
            read_only_hint: tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct CacheFile {
    server: String,
    fingerprint: String,
    tools: Vec<ToolInfo>,
}

/// Where cached tool lists live (`$CODEWHALE_HOME/mcp`).
#[derive(Debug, Clone)]
pub struct ToolCache {
    dir: PathBuf,
}

impl ToolCache {
    pub fn new(dir: impl Into<PathBuf>) -> ToolCache {
        ToolCache { dir: dir.into() }
    }

    fn file(&self, server: &str, fingerprint: &str) -> PathBuf {
        let safe: String = server
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
            .collect();
        self.dir.join(format!("{safe}-{fingerprint}.json"))
    }

    /// The last list stored for this server, if any.
    pub fn load(&self, server: &str, fingerprint: &str) -> Option<Vec<ToolInfo>> {
        let text = std::fs::read(self.file(server, fingerprint)).ok()?;
        let file: CacheFile = serde_json::from_slice(&text).ok()?;
        (file.server == server && file.fingerprint == fingerprint).then_some(file.tools)
    }

    /// Stores `tools` as this server's list. Failing to write only costs the next session a
    /// wait, so the error is logged, not returned.
    pub fn store(&self, server: &str, fingerprint: &str, tools: &[ToolInfo]) {
        if let Err(err) = self.try_store(server, fingerprint, tools) {
            tracing::warn!(server, "cannot cache the MCP tool list: {err}");
        }
    }

    fn try_store(
        &self,
        server: &str,
        fingerprint: &str,
        tools: &[ToolInfo],
    ) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let file = CacheFile {
            server: server.to_owned(),
            fingerprint: fingerprint.to_owned(),
            tools: tools.to_vec(),
        };
        let bytes = serde_json::to_vec(&file).map_err(std::io::Error::other)?;
        let path = self.file(server, fingerprint);
        let aside = path.with_extension("json.tmp");
        std::fs::write(&aside, bytes)?;
        std::fs::rename(&aside, &path)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: "d".into(),
            input_schema: Map::new(),
            read_only_hint: false,
        }
    }

    #[test]
    fn a_stored_list_comes_back_only_for_the_same_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ToolCache::new(dir.path().join("mcp"));
        assert_eq!(cache.load("s", "f1"), None);
        cache.store("s", "f1", &[tool("echo")]);
        assert_eq!(cache.load("s", "f1"), Some(vec![tool("echo")]));
        assert_eq!(cache.load("s", "f2"), None);
        std::fs::write(cache.file("s", "f1"), "{not json").unwrap();
        assert_eq!(cache.load("s", "f1"), None, "a damaged cache is no cache");
    }
}
