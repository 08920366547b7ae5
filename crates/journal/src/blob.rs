//! The session's blob store: the bytes of the images a user message carries
//! (docs/journal-format.md, *Images*).
//!
//! Owns `<session-id>.blobs/` beside the journal: one file per distinct content, named
//! `<sha256>.<ext>`, created mode 0600. Invariants: a blob is written whole (a temporary file,
//! `sync_data`, renamed, then the folder synced) before the entry that names it is appended, so
//! a kill between the two leaves an unused blob, never an entry without its blob; a blob is
//! never rewritten or deleted while its session exists; the journal never holds image bytes.

use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::replace::{replace_file, PRIVATE};

/// The blob folder of the session whose journal is `journal` (`<id>.jsonl` → `<id>.blobs`).
pub fn blob_dir(journal: &Path) -> PathBuf {
    journal.with_extension("blobs")
}

/// The name a blob of `bytes` has: its sha256 in hex and `ext`.
pub fn blob_name(bytes: &[u8], ext: &str) -> String {
    let digest = Sha256::digest(bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}.{ext}")
}

/// Stores `bytes` in `dir` and returns the blob's name. Durable when it returns: the file and
/// its name are synced. A blob already stored is not written again.
pub fn write_blob(dir: &Path, bytes: &[u8], ext: &str) -> io::Result<String> {
    let name = blob_name(bytes, ext);
    let path = dir.join(&name);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() == bytes.len() as u64) {
        return Ok(name);
    }
    crate::private::create_dir_all(dir)?;
    replace_file(&path, PRIVATE, bytes)?;
    sync_dir(dir)?;
    Ok(name)
}

/// Where blob `name` lives in `dir`. A name that is not a plain file name is refused, so a
/// journal line cannot point outside the store. Whoever reads it opens it as its own file
/// (no link followed, no FIFO waited on, within the image bound) and checks [`names_bytes`].
pub fn blob_path(dir: &Path, name: &str) -> io::Result<PathBuf> {
    let plain = !name.is_empty()
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '.');
    if !plain {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a blob name"));
    }
    Ok(dir.join(name))
}

/// Whether `bytes` are the content blob `name` names (its sha256 before the extension).
pub fn names_bytes(name: &str, bytes: &[u8]) -> bool {
    let stem = name.split_once('.').map_or(name, |(stem, _)| stem);
    let digest = Sha256::digest(bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    stem.eq_ignore_ascii_case(&hex)
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blob_is_named_by_its_content_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = blob_dir(&dir.path().join("s1.jsonl"));
        assert!(blobs.ends_with("s1.blobs"));
        let name = write_blob(&blobs, b"\x89PNG fake", "png").unwrap();
        assert_eq!(name.len(), 64 + 4);
        assert_eq!(write_blob(&blobs, b"\x89PNG fake", "png").unwrap(), name, "stored once");
        let path = blob_path(&blobs, &name).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"\x89PNG fake");
        assert!(names_bytes(&name, b"\x89PNG fake"));
        assert!(!names_bytes(&name, b"\x89PNG other"));
        assert_eq!(std::fs::read_dir(&blobs).unwrap().count(), 1);
    }

    #[test]
    fn a_name_that_leaves_the_store_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["../s1.jsonl", "/etc/passwd", "", ".hidden"] {
            let err = blob_path(dir.path(), name).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{name}");
        }
    }
}
