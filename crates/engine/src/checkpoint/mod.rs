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
//! tool showed them.

mod baseline;
mod git_index;
pub mod restore;
pub mod snapshot;
pub mod store;
pub mod workspace_diff;

use std::path::Path;

use codewhale_journal::FileChange;
pub use store::FileStore;

/// What a file held: its bytes, or `None` when there was no file.
pub fn read_state(path: &Path) -> Result<Option<Vec<u8>>, std::io::Error> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Keeps `state` in the store: its hash, or `None` for an absent file.
pub fn keep(store: &FileStore, state: Option<&[u8]>) -> std::io::Result<Option<String>> {
    state.map(|bytes| store.put(bytes)).transpose()
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
    // Bounded: a file over the store's limit is not kept (nor read for it); the result says so
    // once.
    let max = store.max_file_bytes();
    let size = std::fs::symlink_metadata(path).ok().filter(|m| m.is_file()).map(|m| m.len());
    if let Some(size) = size.filter(|&s| s > max) {
        let text = change()?;
        let named = unkept_once(store, &[(shown.to_owned(), size)]);
        let text = match named.first() {
            Some(line) => format!("{text}\n[{line}]"),
            None => text,
        };
        return Ok((text, None));
    }
    // A directory or an unreadable file: the tool itself says what is wrong.
    let Ok(before) = read_state(path) else { return change().map(|text| (text, None)) };
    let before = keep(store, before.as_deref()).map_err(|e| {
        format!(
            "could not keep a checkpoint of {shown} before changing it ({e}); the file was not \
             changed. Free some disk space in the Codewhale home, or ask the user"
        )
    })?;
    let text = change()?;
    // The file changed: record what it holds now (it is the content a later restore expects
    // to find). If it cannot be read back, the change is still recorded with what it was.
    // A new content over the limit is known by its hash alone (a restore goes back to the
    // `before`, never to it).
    let after = match read_state(path) {
        Ok(Some(bytes)) if bytes.len() as u64 > max => Some(FileStore::hash(&bytes)),
        Ok(state) => keep(store, state.as_deref()).ok().flatten(),
        Err(_) => None,
    };
    let change = FileChange { path: shown.to_owned(), before, after, extra: Default::default() };
    Ok((text, Some(change)))
}

/// "big.bin is not kept for rewind: 191 MiB", for each file not named before in this run.
pub(crate) fn unkept_once(store: &FileStore, skipped: &[(String, u64)]) -> Vec<String> {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock, PoisonError};
    static NAMED: OnceLock<Mutex<HashSet<(std::path::PathBuf, String)>>> = OnceLock::new();
    let mut named =
        NAMED.get_or_init(Mutex::default).lock().unwrap_or_else(PoisonError::into_inner);
    skipped
        .iter()
        .filter(|(path, _)| named.insert((store.dir().to_path_buf(), path.clone())))
        .map(|(path, bytes)| {
            let mib = |b: u64| format!("{:.1}", b as f64 / (1024.0 * 1024.0));
            let (size, max) = (mib(*bytes), mib(store.max_file_bytes()));
            let size = size.trim_end_matches(".0");
            format!(
                "{path} is not kept for rewind: {size} MiB, over the {} MiB a checkpoint keeps",
                max.trim_end_matches(".0")
            )
        })
        .collect()
}
