//! File checkpoints (docs/journal-format.md, *The file store*): what a tool
//! changed, kept so the user can take it back.
//!
//! Before `write_file` or `edit_file` changes a file, [`capture`] keeps its current bytes in
//! the session's [`FileStore`]; after a successful call, the new bytes too; the tool result
//! records `files: [{path, before, after}]` (content hashes, `None` for an absent file).
//! [`restore`] reads those records back from HEAD's spine to plan and apply a restore.
//!
//! Invariants: a change is recorded only for a call that changed the file (a refused edit
//! records nothing); a checkpoint that cannot be stored stops the call before the file is
//! touched, so every recorded change can be taken back; paths are workspace-relative, as the
//! tool showed them. A file is read for a checkpoint only as a regular file (a FIFO is never
//! opened for a read, so the tool can refuse it) and only up to the store's bound; a content
//! that holds secrets ([`secrets`]) is known by its hash alone.

mod baseline;
mod git_index;
pub mod restore;
pub mod secrets;
pub mod snapshot;
pub mod store;
pub mod workspace_diff;

use std::path::Path;

use codewhale_journal::FileChange;
pub use store::FileStore;

/// What a workspace file holds, read for a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// There is no file.
    Absent,
    /// Its bytes, at most the bound asked for.
    Bytes(Vec<u8>),
    /// It holds more than the bound: this many bytes (not read).
    TooBig(u64),
}

/// What the regular file at `path` holds, read through `limit` (a symlink is followed only to
/// a regular file); an error for a FIFO, a device, a directory or an unreadable file, none of
/// which is opened for reading.
pub fn read_state(path: &Path, limit: u64) -> Result<FileState, std::io::Error> {
    // A file known to be over the bound is not read at all.
    if let Some(size) = std::fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| m.len()) {
        if size > limit {
            return Ok(FileState::TooBig(size));
        }
    }
    match crate::bounded::read_regular(path, limit)? {
        None => Ok(FileState::Absent),
        Some((bytes, false)) => Ok(FileState::Bytes(bytes)),
        Some((_, true)) => {
            Ok(FileState::TooBig(std::fs::metadata(path).map_or(limit + 1, |m| m.len())))
        }
    }
}

/// Why a file is not kept for rewind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unkept {
    /// It holds this many bytes, over `[checkpoints] max_file_bytes`.
    TooBig(u64),
    /// It holds secrets ([`secrets`]).
    Secrets,
}

/// Keeps `bytes`, the content of `shown`, for rewind: its hash, and its bytes unless they hold
/// secrets (then the hash is marked withheld and the reason returned).
fn keep_content(
    store: &FileStore,
    shown: &str,
    bytes: &[u8],
) -> std::io::Result<(String, Option<Unkept>)> {
    if secrets::holds_secrets(shown, bytes) {
        let hash = FileStore::hash(bytes);
        store.withhold(&hash)?;
        return Ok((hash, Some(Unkept::Secrets)));
    }
    store.put(bytes).map(|hash| (hash, None))
}

/// Runs `change` on the file at `path` (shown to the model as `shown`) with a checkpoint of it
/// before and after: the change, or the tool's error. Without a store (a test context), the
/// call runs unrecorded.
pub fn capture(
    store: Option<&FileStore>,
    path: &Path,
    shown: &str,
    change: impl FnOnce() -> Result<String, String>,
) -> Result<(String, Option<FileChange>), String> {
    let Some(store) = store else { return change().map(|text| (text, None)) };
    // Bounded: a file over the store's limit is not kept (nor read whole for it); the result
    // says so once. A FIFO, a device or an unreadable file: the tool itself says what is wrong.
    let max = store.max_file_bytes();
    let before = match read_state(path, max) {
        Ok(FileState::TooBig(size)) => {
            let text = change()?;
            return Ok((
                with_unkept(text, store, &[(shown.to_owned(), Unkept::TooBig(size))]),
                None,
            ));
        }
        Ok(FileState::Absent) => None,
        Ok(FileState::Bytes(bytes)) => Some(bytes),
        Err(_) => return change().map(|text| (text, None)),
    };
    let mut unkept = Vec::new();
    let before = match before {
        None => None,
        Some(bytes) => {
            let (hash, why) = keep_content(store, shown, &bytes).map_err(|e| {
                format!(
                    "could not keep a checkpoint of {shown} before changing it ({e}); the file \
                     was not changed. Free some disk space in the Codewhale home, or ask the user"
                )
            })?;
            unkept.extend(why.map(|why| (shown.to_owned(), why)));
            Some(hash)
        }
    };
    let text = change()?;
    // The file changed: record what it holds now (it is the content a later restore expects
    // to find). If it cannot be read back, the change is still recorded with what it was.
    // A new content over the limit is known by its hash alone, hashed in pieces (a restore
    // goes back to the `before`, never to it).
    let after = match read_state(path, max) {
        Ok(FileState::TooBig(_)) => crate::bounded::hash(path).ok().flatten(),
        Ok(FileState::Absent) => None,
        Ok(FileState::Bytes(bytes)) => match keep_content(store, shown, &bytes) {
            Ok((hash, why)) => {
                unkept.extend(why.map(|why| (shown.to_owned(), why)));
                Some(hash)
            }
            Err(_) => None,
        },
        Err(_) => None,
    };
    unkept.dedup();
    let change = FileChange { path: shown.to_owned(), before, after, extra: Default::default() };
    Ok((with_unkept(text, store, &unkept), Some(change)))
}

/// `text` with a line for each file not named before in this run.
fn with_unkept(text: String, store: &FileStore, unkept: &[(String, Unkept)]) -> String {
    let named = unkept_once(store, unkept);
    if named.is_empty() {
        return text;
    }
    let lines: Vec<String> = named.iter().map(|line| format!("[{line}]")).collect();
    format!("{text}\n{}", lines.join("\n"))
}

/// "big.bin is not kept for rewind: 191 MiB", "not kept for rewind: .env holds secrets", for
/// each file not named before in this run.
pub(crate) fn unkept_once(store: &FileStore, skipped: &[(String, Unkept)]) -> Vec<String> {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock, PoisonError};
    static NAMED: OnceLock<Mutex<HashSet<(std::path::PathBuf, String)>>> = OnceLock::new();
    let mut named =
        NAMED.get_or_init(Mutex::default).lock().unwrap_or_else(PoisonError::into_inner);
    skipped
        .iter()
        .filter(|(path, _)| named.insert((store.dir().to_path_buf(), path.clone())))
        .map(|(path, why)| match why {
            Unkept::Secrets => secrets::unkept_line(path),
            Unkept::TooBig(bytes) => {
                let mib = |b: u64| format!("{:.1}", b as f64 / (1024.0 * 1024.0));
                let (size, max) = (mib(*bytes), mib(store.max_file_bytes()));
                let size = size.trim_end_matches(".0");
                format!(
                    "{path} is not kept for rewind: {size} MiB, over the {} MiB a checkpoint keeps",
                    max.trim_end_matches(".0")
                )
            }
        })
        .collect()
}
