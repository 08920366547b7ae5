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

mod git_index;
pub(crate) mod intent;
pub(crate) mod ops;
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
    let after = match read_state(path) {
        Ok(state) => keep(store, state.as_deref()).ok().flatten(),
        Err(_) => None,
    };
    let change = FileChange { path: shown.to_owned(), before, after, extra: Default::default() };
    Ok((text, Some(change)))
}
