//! The `/diff` baseline of a git workspace: the index of the first worktree snapshot a session
//! took, kept once in its file store. Written by the snapshot that comes first, read by the
//! workspace diff; it knows neither, only the bytes.

use super::FileStore;

/// Where the baseline is kept.
pub fn path(store: &FileStore) -> std::path::PathBuf {
    store.snapshot_dir().join("baseline-index")
}

/// Keeps `index` (the first snapshot's index bytes) as the session's baseline unless one is kept
/// already.
pub fn keep(store: &FileStore, index: &[u8]) {
    let path = path(store);
    if path.exists() {
        return;
    }
    let written =
        codewhale_journal::replace::replace_file(&path, codewhale_journal::replace::PRIVATE, index);
    if let Err(e) = written {
        tracing::warn!("cannot keep the worktree baseline for /diff: {e}");
    }
}
