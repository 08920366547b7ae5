//! Replacing a whole file atomically: the one way every crate above this one rewrites a file
//! it owns (caches, sidecars, stores, settings), so a reader sees the old file or the new one,
//! never a half-written one, and two processes writing at once never share a temporary file.
//!
//! Invariants: the new content is written to a fresh, uniquely named temporary file in the
//! same directory (so the rename cannot cross a file system), flushed and `sync_data`'d, then
//! renamed over the target; on any failure the temporary file is removed and the target is
//! left as it was. The temporary file is created with the given mode (less the umask), which
//! the target then has.

use std::io::{self, BufWriter, Write};
#[cfg(unix)]
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

/// Files only the user may read: session data, caches, stores.
pub const PRIVATE: u32 = 0o600;
/// Files the user's other tools read too, such as a workspace's `.codewhale/anchors.md`.
pub const SHARED: u32 = 0o644;

/// Replaces `path` with what `write` writes, atomically (module docs).
pub fn replace_with(
    path: &Path,
    mode: u32,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    builder.permissions(std::fs::Permissions::from_mode(mode));
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = builder.tempfile_in(dir)?;
    {
        let mut out = BufWriter::new(file.as_file_mut());
        write(&mut out)?;
        out.flush()?;
    }
    file.as_file().sync_data()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Replaces `path` with `bytes`, atomically (module docs).
pub fn replace_file(path: &Path, mode: u32, bytes: &[u8]) -> io::Result<()> {
    replace_with(path, mode, |out| out.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.json");
        replace_file(&path, PRIVATE, b"old").unwrap();
        replace_file(&path, PRIVATE, b"new and longer").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new and longer");
        let names: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["cache.json"]);
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_removes_its_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.json");
        replace_file(&path, PRIVATE, b"kept").unwrap();
        let failed = replace_with(&path, PRIVATE, |out| {
            out.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        });
        assert_eq!(failed.unwrap_err().to_string(), "disk full");
        assert_eq!(std::fs::read(&path).unwrap(), b"kept");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn the_file_gets_the_mode_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust.json");
        replace_file(&path, PRIVATE, b"{}").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn two_writers_never_share_a_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("list.json");
        std::thread::scope(|scope| {
            for n in 0..8u8 {
                let path = &path;
                scope.spawn(move || {
                    for _ in 0..20 {
                        replace_file(path, PRIVATE, &[n; 4096]).unwrap();
                    }
                });
            }
        });
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 4096, "one writer's whole content");
        assert!(bytes.iter().all(|b| *b == bytes[0]));
    }
}
