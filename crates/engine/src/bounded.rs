//! Reading a file Codewhale did not write — a repository's `AGENTS.md`, its
//! `.codewhale/config.toml`, `.codewhale/instructions.md` and `anchors.md` — through a bound.
//!
//! A cloned repository chooses these files, so it may make them anything: a symlink to
//! `/dev/zero` (git keeps symlinks), a FIFO that never delivers a byte, a gigabyte of text.
//! Invariants: only a regular file is read (the type is checked before opening and again on
//! the opened descriptor, which is opened non-blocking so a FIFO swapped in between cannot
//! hang the open); never more than `limit + 1` bytes are read, whatever the file claims, so a
//! file growing while it is read costs no more; what is not a regular file is reported as such,
//! for one notice, and never an error that stops a session.

use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

/// What reading a file through a bound found.
#[derive(Debug, PartialEq, Eq)]
pub enum Bounded {
    /// There is no such file.
    Missing,
    /// Something other than a regular file is there (named for the notice: "a FIFO").
    NotRegular(&'static str),
    /// The file's first bytes, at most the limit.
    Read {
        bytes: Vec<u8>,
        /// The file holds more than the limit.
        cut: bool,
    },
}

/// Reads at most `limit` bytes of the regular file at `path` (a symlink is followed only to a
/// regular file).
pub fn read(path: &Path, limit: usize) -> std::io::Result<Bounded> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Bounded::Missing),
        Err(e) => return Err(e),
    };
    if let Some(kind) = not_regular(&meta.file_type()) {
        return Ok(Bounded::NotRegular(kind));
    }
    // Non-blocking: if the file was swapped for a FIFO since the check, opening it returns at
    // once instead of waiting for a writer, and the check below refuses it.
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Bounded::Missing),
        Err(e) => return Err(e),
    };
    if let Some(kind) = not_regular(&file.metadata()?.file_type()) {
        return Ok(Bounded::NotRegular(kind));
    }
    read_open(file, limit)
}

fn read_open(file: File, limit: usize) -> std::io::Result<Bounded> {
    let mut bytes = Vec::with_capacity(limit.min(64 * 1024) + 1);
    file.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    let cut = bytes.len() > limit;
    bytes.truncate(limit);
    Ok(Bounded::Read { bytes, cut })
}

/// What a file type is called in a notice, or `None` for a regular file.
fn not_regular(t: &std::fs::FileType) -> Option<&'static str> {
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() || t.is_block_device() {
        Some("a device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

/// The notice for a file skipped because it is not a regular file.
pub fn skipped_notice(path: &Path, kind: &str) -> String {
    format!(
        "skipped {}: it is {kind}, not a regular file, so Codewhale does not read it; replace it \
         with a regular file to use it",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_up_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a");
        std::fs::write(&f, "0123456789").unwrap();
        assert_eq!(
            read(&f, 10).unwrap(),
            Bounded::Read { bytes: b"0123456789".to_vec(), cut: false }
        );
        assert_eq!(read(&f, 4).unwrap(), Bounded::Read { bytes: b"0123".to_vec(), cut: true });
        assert_eq!(read(&dir.path().join("none"), 4).unwrap(), Bounded::Missing);
        std::os::unix::fs::symlink(&f, dir.path().join("link")).unwrap();
        assert!(matches!(read(&dir.path().join("link"), 4).unwrap(), Bounded::Read { .. }));
    }

    #[test]
    fn devices_fifos_and_directories_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert_eq!(read(&zero, 4).unwrap(), Bounded::NotRegular("a device"));
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from_raw_mode(0o600))
            .unwrap();
        assert_eq!(read(&fifo, 4).unwrap(), Bounded::NotRegular("a FIFO"));
        assert_eq!(read(dir.path(), 4).unwrap(), Bounded::NotRegular("a directory"));
    }
}
