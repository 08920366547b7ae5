//! A server's tools as Codewhale keeps them, and the on-disk cache of the last successful
//! listing.
//!
//! The cache lets a session offer a server's tools in its first request without waiting for
//! the server to start. Invariants: a cached list is used only for the same server name and
//! command (or URL) — see [`crate::ServerConfig::fingerprint`]; a cache file is replaced whole
//! (written aside, then renamed), so a crash never leaves a half-written list; an unreadable
//! cache is treated as absent, and so is one that is not a regular file or is larger than
//! [`MAX_CACHE_BYTES`] (it is read through that bound, never whole).

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
        let path = self.file(server, fingerprint);
        let text = match read_bounded(&path) {
            Ok(text) => text?,
            Err(why) => {
                tracing::warn!(path = %path.display(), "ignoring the cached MCP tool list: {why}");
                return None;
            }
        };
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
        codewhale_journal::private::create_dir_all(&self.dir)?;
        let file = CacheFile {
            server: server.to_owned(),
            fingerprint: fingerprint.to_owned(),
            tools: tools.to_vec(),
        };
        let bytes = serde_json::to_vec(&file).map_err(std::io::Error::other)?;
        let path = self.file(server, fingerprint);
        codewhale_journal::replace::replace_file(&path, codewhale_journal::replace::PRIVATE, &bytes)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The largest cache file read: a tool list is small, so a larger file is not one of ours.
pub const MAX_CACHE_BYTES: usize = 8 * 1024 * 1024;

/// The bytes of the regular file at `path` (`None` when there is none), read through
/// [`MAX_CACHE_BYTES`]; an error says why the file is not read.
fn read_bounded(path: &Path) -> Result<Option<Vec<u8>>, String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let regular = |meta: std::fs::Metadata| {
        if meta.is_file() {
            Ok(())
        } else {
            Err("it is not a regular file".to_owned())
        }
    };
    match std::fs::metadata(path) {
        Ok(meta) => regular(meta)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    }
    // Non-blocking, so a FIFO swapped in since the check cannot hang the open.
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
        .map_err(|e| e.to_string())?;
    regular(file.metadata().map_err(|e| e.to_string())?)?;
    let mut bytes = Vec::new();
    file.take(MAX_CACHE_BYTES as u64 + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() > MAX_CACHE_BYTES {
        return Err(format!("it is larger than {MAX_CACHE_BYTES} bytes"));
    }
    Ok(Some(bytes))
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

    #[test]
    fn a_fifo_or_an_oversized_cache_is_treated_as_absent_without_hanging() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ToolCache::new(dir.path().join("mcp"));
        cache.store("s", "f1", &[tool("a")]);
        let path = cache.file("s", "f1");
        std::fs::remove_file(&path).unwrap();
        rustix::fs::mkfifoat(rustix::fs::CWD, &path, rustix::fs::Mode::from_raw_mode(0o600))
            .unwrap();
        assert_eq!(cache.load("s", "f1"), None);
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        assert_eq!(cache.load("s", "f1"), None);
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, vec![b' '; MAX_CACHE_BYTES + 1]).unwrap();
        assert_eq!(cache.load("s", "f1"), None);
        cache.store("s", "f1", &[tool("a")]);
        assert_eq!(cache.load("s", "f1").map(|t| t.len()), Some(1));
    }
}
