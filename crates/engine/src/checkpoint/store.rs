//! The session's content-addressed file store, `<sessions>/<session-id>.files/`
//! (docs/journal-format.md, *The file store*).
//!
//! Each blob is named by the SHA-256 of its bytes (lower-case hex) and lives at
//! `objects/<first two hex digits>/<rest>`. Invariants: a blob is written to a private temporary
//! file (mode 0600) and renamed into place, so a reader never sees half a blob and a crash
//! leaves at most a stray temporary file; a blob that exists is never rewritten; nothing is ever
//! deleted while the session exists. The directories are created mode 0700: the store holds
//! the user's file contents, which may be private. A blob is read back only as a regular file
//! (never through a link, never a FIFO), within the store's bound, and only if its bytes hash
//! to its name: a blob replaced by a link to `/etc/shadow`, or by other bytes, is refused.
//! A content that holds secrets is not kept at all: only its hash is, marked withheld
//! (`withheld/<hash>`), so a restore can say why it cannot bring it back.

use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The file store of one session.
#[derive(Debug, Clone)]
pub struct FileStore {
    dir: PathBuf,
    /// A file larger than this is not kept for rewind (`[checkpoints] max_file_bytes`).
    max_file_bytes: u64,
}

impl FileStore {
    /// The store next to the journal at `journal` (`<id>.jsonl` → `<id>.files/`).
    pub fn beside(journal: &Path) -> FileStore {
        FileStore {
            dir: journal.with_extension("files"),
            max_file_bytes: super::snapshot::MAX_FILE_BYTES,
        }
    }

    /// The same store keeping files of at most `bytes`.
    pub fn with_max_file_bytes(mut self, bytes: u64) -> FileStore {
        self.max_file_bytes = bytes;
        self
    }

    /// The largest file a checkpoint keeps.
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_bytes
    }

    /// The store's own directory (`<id>.files/`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The sessions directory the store lies in.
    pub fn sessions_dir(&self) -> Option<&Path> {
        self.dir.parent()
    }

    /// Where the worktree snapshots live (Codewhale's own git directory and index).
    pub fn snapshot_dir(&self) -> PathBuf {
        self.dir.join("snapshots")
    }

    /// The hash a blob of `bytes` is stored under.
    pub fn hash(bytes: &[u8]) -> String {
        let digest = Sha256::digest(bytes);
        let mut out = String::with_capacity(64);
        for b in digest {
            out.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
            out.push(char::from_digit(u32::from(b & 0xf), 16).unwrap_or('0'));
        }
        out
    }

    /// Keeps `bytes` and returns their hash; a blob already stored is not written again.
    pub fn put(&self, bytes: &[u8]) -> io::Result<String> {
        let hash = FileStore::hash(bytes);
        let path = self.blob_path(&hash)?;
        if path.is_file() {
            return Ok(hash);
        }
        let parent = path.parent().unwrap_or(&self.dir);
        DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
        codewhale_journal::replace::replace_file(
            &path,
            codewhale_journal::replace::PRIVATE,
            bytes,
        )?;
        Ok(hash)
    }

    /// The bytes stored under `hash`: a regular file within the store's bound whose bytes hash
    /// to `hash` (module docs), or an error that says what is wrong with it.
    pub fn get(&self, hash: &str) -> io::Result<Vec<u8>> {
        let limit = self.max_file_bytes.max(super::snapshot::MAX_FILE_BYTES);
        let bytes = crate::bounded::read_own(&self.blob_path(hash)?, limit)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such checkpoint"))?;
        if FileStore::hash(&bytes) != hash.to_ascii_lowercase() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the checkpoint's bytes do not match its name (the store was changed)",
            ));
        }
        Ok(bytes)
    }

    /// Records that the content hashed `hash` holds secrets and was not kept.
    pub fn withhold(&self, hash: &str) -> io::Result<()> {
        let path = self.withheld_path(hash)?;
        DirBuilder::new().recursive(true).mode(0o700).create(self.dir.join("withheld"))?;
        codewhale_journal::replace::replace_file(&path, codewhale_journal::replace::PRIVATE, b"")
    }

    /// Whether the content hashed `hash` was withheld because it holds secrets.
    pub fn is_withheld(&self, hash: &str) -> bool {
        self.withheld_path(hash).is_ok_and(|p| p.symlink_metadata().is_ok_and(|m| m.is_file()))
    }

    fn withheld_path(&self, hash: &str) -> io::Result<PathBuf> {
        self.blob_path(hash)?;
        Ok(self.dir.join("withheld").join(hash))
    }

    /// Whether a blob is stored under `hash`.
    pub fn contains(&self, hash: &str) -> bool {
        // The blob itself, never what a link in its place points to.
        self.blob_path(hash).is_ok_and(|p| p.symlink_metadata().is_ok_and(|m| m.is_file()))
    }

    /// Bytes the store holds on disk (blobs and snapshot objects); 0 when it does not exist.
    pub fn size_bytes(&self) -> u64 {
        dir_bytes(&self.dir)
    }

    fn blob_path(&self, hash: &str) -> io::Result<PathBuf> {
        // A hash comes from the journal, which anyone may edit: never let it name a path
        // outside the store.
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{hash:?} is not a content hash of this store"),
            ));
        }
        Ok(self.dir.join("objects").join(&hash[..2]).join(&hash[2..]))
    }
}

fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn blobs_are_private_deduplicated_and_bounded_to_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::beside(&dir.path().join("s.jsonl"));
        assert_eq!(store.size_bytes(), 0);
        let h = store.put(b"hello\0world").unwrap();
        assert_eq!(h, FileStore::hash(b"hello\0world"));
        assert_eq!(store.put(b"hello\0world").unwrap(), h);
        assert_eq!(store.get(&h).unwrap(), b"hello\0world");
        assert_eq!(store.size_bytes(), 11);
        let blob = store.blob_path(&h).unwrap();
        assert_eq!(fs::metadata(&blob).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(blob.starts_with(dir.path().join("s.files")));
        assert!(store.get("../../etc/passwd").is_err());
        assert!(!store.contains(&"0".repeat(64)));
    }

    #[test]
    fn a_blob_linked_elsewhere_or_changed_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::beside(&dir.path().join("s.jsonl"));
        let secret = dir.path().join("shadow");
        fs::write(&secret, "root:x:0:0").unwrap();
        // A blob named for some content, made a link to another file.
        let h = FileStore::hash(b"root:x:0:0");
        let blob = store.blob_path(&h).unwrap();
        fs::create_dir_all(blob.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&secret, &blob).unwrap();
        let err = store.get(&h).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        // Other bytes under a blob's name.
        let h2 = store.put(b"kept").unwrap();
        fs::write(store.blob_path(&h2).unwrap(), "forged").unwrap();
        let err = store.get(&h2).unwrap_err();
        assert!(err.to_string().contains("do not match its name"), "{err}");
        // A FIFO under a blob's name is refused at once (a plain read would wait forever).
        let h3 = FileStore::hash(b"x");
        let fifo = store.blob_path(&h3).unwrap();
        fs::create_dir_all(fifo.parent().unwrap()).unwrap();
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from_raw_mode(0o600))
            .unwrap();
        assert!(store.get(&h3).unwrap_err().to_string().contains("FIFO"));
        // Withheld contents are remembered by hash only.
        assert!(!store.is_withheld(&h));
        store.withhold(&h).unwrap();
        assert!(store.is_withheld(&h) && !store.contains(&h2.replace('0', "1")));
    }
}
