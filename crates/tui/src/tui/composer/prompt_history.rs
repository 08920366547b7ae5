//! The prompt history on disk: what the user sent in a workspace, kept across runs in
//! `$CODEWHALE_HOME/history/<workspace hash>.jsonl`, one `{"text": ...}` object per line,
//! oldest first.
//!
//! Bounded: at most [`MAX_ENTRIES`] are read back, a message over [`MAX_ENTRY_BYTES`] (a huge
//! paste) is not kept, and the file is rewritten to its newest entries once it holds twice
//! that many. A message that holds something taken for a secret (an API key, a token) is
//! never written. A line that cannot be read is skipped; a history that cannot be read or
//! written never stops a session (the caller logs the error).

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Entries read back (and kept when the file is rewritten).
pub const MAX_ENTRIES: usize = 1_000;
/// Messages longer than this are not kept.
pub const MAX_ENTRY_BYTES: usize = 16 * 1024;

#[derive(Serialize, Deserialize)]
struct Line {
    text: String,
}

/// The history file of `workspace` (its canonical path, hashed) under `home`.
pub fn file_for(home: &Path, workspace: &Path) -> PathBuf {
    let canonical = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_owned());
    let name = format!("{:016x}.jsonl", fnv1a(canonical.to_string_lossy().as_bytes()));
    home.join("history").join(name)
}

/// FNV-1a, 64 bits: stable across builds, unlike the standard library's hasher.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3))
}

/// The newest [`MAX_ENTRIES`] entries, oldest first; nothing when there is no file yet.
pub fn load(path: &Path) -> io::Result<Vec<String>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let entries: Vec<String> =
        text.lines().filter_map(|l| serde_json::from_str::<Line>(l).ok()).map(|l| l.text).collect();
    let skip = entries.len().saturating_sub(MAX_ENTRIES);
    Ok(entries.into_iter().skip(skip).collect())
}

/// Whether `text` may be kept: not empty, not huge, no secret.
pub fn keepable(text: &str) -> bool {
    !text.trim().is_empty()
        && text.len() <= MAX_ENTRY_BYTES
        && !codewhale_engine::holds_secret(text)
}

/// Appends `text` (when [`keepable`]) and trims the file when it has grown to twice the bound.
pub fn append(path: &Path, text: &str) -> io::Result<()> {
    if !keepable(text) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        codewhale_engine::private::create_dir_all(dir)?;
    }
    let line = serde_json::to_string(&Line { text: text.to_owned() }).map_err(io::Error::other)?;
    let mut file = codewhale_engine::private::options().create(true).append(true).open(path)?;
    file.write_all(format!("{line}\n").as_bytes())?;
    drop(file);
    let lines = std::fs::read_to_string(path)?.lines().count();
    if lines >= 2 * MAX_ENTRIES {
        trim(path)?;
    }
    Ok(())
}

/// Rewrites the file with its newest entries (replaced atomically).
fn trim(path: &Path) -> io::Result<()> {
    let kept = load(path)?;
    let mut out = String::new();
    for text in kept {
        let line = serde_json::to_string(&Line { text }).map_err(io::Error::other)?;
        out.push_str(&line);
        out.push('\n');
    }
    codewhale_engine::replace::replace_file(
        path,
        codewhale_engine::replace::PRIVATE,
        out.as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_survive_a_restart_bounded_and_without_secrets() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let path = file_for(home.path(), ws.path());
        assert_eq!(load(&path).unwrap(), Vec::<String>::new());
        append(&path, "first prompt").unwrap();
        append(&path, "with a\nnewline").unwrap();
        append(&path, "my key is sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCD").unwrap();
        append(&path, &"x".repeat(MAX_ENTRY_BYTES + 1)).unwrap();
        append(&path, "   ").unwrap();
        assert_eq!(load(&path).unwrap(), ["first prompt", "with a\nnewline"]);
        // Another workspace has its own file.
        let other = tempfile::tempdir().unwrap();
        assert_ne!(file_for(home.path(), other.path()), path);
        // A damaged line is skipped, not fatal.
        std::fs::write(&path, "{\"text\":\"ok\"}\nnot json\n").unwrap();
        assert_eq!(load(&path).unwrap(), ["ok"]);
    }

    #[test]
    fn the_file_is_trimmed_to_its_newest_entries() {
        let home = tempfile::tempdir().unwrap();
        let path = file_for(home.path(), Path::new("/some/workspace"));
        for i in 0..2 * MAX_ENTRIES {
            append(&path, &format!("prompt {i}")).unwrap();
        }
        let kept = load(&path).unwrap();
        assert_eq!(kept.len(), MAX_ENTRIES);
        assert_eq!(kept.last().map(String::as_str), Some("prompt 1999"));
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        assert_eq!(lines, MAX_ENTRIES);
    }
}
