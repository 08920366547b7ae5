//! Reading a file through a bound: the one reader for files Codewhale did not write — a
//! repository's `AGENTS.md`, its `.codewhale/config.toml`, `.codewhale/instructions.md` and
//! `anchors.md`, a workspace file a checkpoint keeps ([`read`], [`hash`]) — and for Codewhale's
//! own files, whose folder a command may have reached — checkpoint blobs, image blobs, a
//! restore's intent ([`read_own`]).
//!
//! A cloned repository chooses its files, so it may make them anything: a symlink to
//! `/dev/zero` (git keeps symlinks), a FIFO that never delivers a byte, a gigabyte of text.
//! Invariants: only a regular file is read (the type is checked before opening and again on
//! the opened descriptor, which is opened non-blocking so a FIFO swapped in between cannot
//! hang the open); never more than `limit + 1` bytes are read, whatever the file claims, so a
//! file growing while it is read costs no more; what is not a regular file is reported as such,
//! for one notice, and never an error that stops a session. Codewhale's own files are opened
//! without following a link at all (`O_NOFOLLOW`): a blob linked to `/etc/shadow` is refused,
//! not read.

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

/// Reads the whole regular file at `path`, one of Codewhale's own (module docs): `None` when
/// there is none; an error, saying what stands there, for a link, a FIFO, a device or a file
/// over `limit` bytes — none of which is opened for reading or read.
pub fn read_own(path: &Path, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    let Some(file) = open_regular(path, false)? else { return Ok(None) };
    let size = file.metadata()?.len();
    if size > limit {
        return Err(too_big(size, limit));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_big(bytes.len() as u64, limit));
    }
    Ok(Some(bytes))
}

/// The SHA-256 (lower-case hex) of the regular file at `path`, a symlink followed only to a
/// regular file, read in pieces so any size costs the same memory: `None` when there is no
/// file; an error for what is not a regular file.
pub fn hash(path: &Path) -> std::io::Result<Option<String>> {
    use sha2::Digest as _;
    let Some(mut file) = open_regular(path, true)? else { return Ok(None) };
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()))
}

/// Reads at most `limit` bytes of the regular file at `path` (a symlink followed only to a
/// regular file): `None` when there is no file, `Some((bytes, cut))` otherwise; an error for
/// what is not a regular file, which is never opened for reading.
pub fn read_regular(path: &Path, limit: u64) -> std::io::Result<Option<(Vec<u8>, bool)>> {
    let Some(file) = open_regular(path, true)? else { return Ok(None) };
    match read_open(file, usize::try_from(limit).unwrap_or(usize::MAX))? {
        Bounded::Read { bytes, cut } => Ok(Some((bytes, cut))),
        Bounded::Missing | Bounded::NotRegular(_) => Ok(None),
    }
}

/// Opens the regular file at `path` for reading without blocking (and, unless `follow`,
/// without following a link): `None` when there is none; an error naming what is there
/// otherwise ("pipe is a FIFO, not a regular file").
fn open_regular(path: &Path, follow: bool) -> std::io::Result<Option<File>> {
    use rustix::fs::OFlags;
    let mut flags = OFlags::NONBLOCK | OFlags::NOCTTY;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    let opened =
        std::fs::OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(path);
    let file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // ELOOP: the last component is a link, refused by `O_NOFOLLOW`.
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Err(not_regular_error(path, "a symbolic link"))
        }
        // ENXIO: a socket, or a FIFO opened for writing; neither is read.
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NXIO.raw_os_error()) => {
            return Err(not_regular_error(path, "not a regular file"))
        }
        Err(e) => return Err(e),
    };
    match not_regular(&file.metadata()?.file_type()) {
        Some(kind) => Err(not_regular_error(path, kind)),
        None => Ok(Some(file)),
    }
}

fn not_regular_error(path: &Path, kind: &str) -> std::io::Error {
    let name = path
        .file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{name} is {kind}, not a regular file"),
    )
}

fn too_big(size: u64, limit: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("it holds {size} bytes, more than the {limit} it may"),
    )
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
    fn own_files_are_never_followed_blocked_on_or_read_past_their_bound() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("own");
        std::fs::write(&f, "0123456789").unwrap();
        assert_eq!(read_own(&f, 10).unwrap().unwrap(), b"0123456789");
        let err = read_own(&f, 9).unwrap_err();
        assert!(err.to_string().contains("more than the 9"), "{err}");
        assert_eq!(read_own(&dir.path().join("none"), 9).unwrap(), None);
        std::os::unix::fs::symlink(&f, dir.path().join("link")).unwrap();
        let err = read_own(&dir.path().join("link"), 99).unwrap_err();
        assert_eq!(err.to_string(), "link is a symbolic link, not a regular file");
        let fifo = dir.path().join("pipe");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from_raw_mode(0o600))
            .unwrap();
        // Each of these would block forever if the FIFO were opened for a read.
        assert_eq!(
            read_own(&fifo, 99).unwrap_err().to_string(),
            "pipe is a FIFO, not a regular file"
        );
        assert!(hash(&fifo).is_err());
        assert!(read_regular(&fifo, 99).is_err());
        assert_eq!(
            hash(&dir.path().join("link")).unwrap().unwrap(),
            "84d89877f0d4041efb6bf91a16f0248f2fd573e6af05c19f96bedb9f882f7882"
        );
        assert_eq!(read_regular(&f, 4).unwrap().unwrap(), (b"0123".to_vec(), true));
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
