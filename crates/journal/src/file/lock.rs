//! One writer per session file: an advisory lock on the sidecar `<file>.lock` that records
//! the holder's pid, so a second process is told who has the session open.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::{io_phrase, OpenError};

/// The advisory lock on `<file>.lock`, recording the holder's pid. The lock file is removed
/// when the lock is released, so a session closed cleanly leaves no `.lock` behind; an opener
/// that locked a lock file removed meanwhile sees that its file is no longer the one at the
/// path and tries again, so removal never lets two holders in.
pub(super) struct Lock {
    file: File,
    path: PathBuf,
}

impl Drop for Lock {
    /// Unlinked while still locked (the file closes after this body), so no one who opens the
    /// path from now on can lock the old file and believe it is the lock.
    fn drop(&mut self) {
        if is_the_file_at(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether `file` is the file `path` names now (not one removed or replaced since it was
/// opened).
fn is_the_file_at(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        false
    }
}

/// Attempts at a lock whose file another holder removed as it let go.
const LOCK_ATTEMPTS: usize = 5;

impl Lock {
    pub(super) fn acquire(path: &Path) -> Result<Lock, OpenError> {
        let mut attempt = 0;
        loop {
            let lock = Lock::acquire_once(path)?;
            attempt += 1;
            if cfg!(not(unix)) || is_the_file_at(&lock.file, &lock.path) || attempt >= LOCK_ATTEMPTS
            {
                return Ok(lock);
            }
            // The holder removed the file as it let go; this one is no longer the lock (and
            // dropping it removes nothing, as it is not the file at the path).
            drop(lock);
        }
    }

    fn acquire_once(path: &Path) -> Result<Lock, OpenError> {
        let lock_path = lock_path(path);
        let io_err = |action| {
            let p = lock_path.clone();
            move |source| OpenError::Io { action, path: p, source }
        };
        if let Some(dir) = lock_path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::private::create_dir_all(dir).map_err(io_err("create the directory of"))?;
        }
        let existed = lock_path.exists();
        let mut file = crate::private::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(io_err("open the lock file"))?;
        match try_lock_patiently(&mut file) {
            Ok(()) => {
                let pid = std::process::id().to_string();
                let written = file
                    .set_len(0)
                    .and_then(|_| file.seek(SeekFrom::Start(0)))
                    .and_then(|_| file.write_all(pid.as_bytes()));
                if let Err(e) = written {
                    // A full disk: leave no empty lock file behind (one that holds a pid may
                    // stay; removing it would race the next opener).
                    if !existed {
                        let _ = std::fs::remove_file(&lock_path);
                    }
                    return Err(OpenError::Io {
                        action: "write the lock file",
                        path: lock_path.clone(),
                        source: io::Error::new(e.kind(), io_phrase(&e)),
                    });
                }
                Ok(Lock { file, path: lock_path })
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut pid = String::new();
                let _ = file.seek(SeekFrom::Start(0)).and_then(|_| file.read_to_string(&mut pid));
                let pid = pid.trim();
                let pid = if pid.is_empty() { "unknown".to_owned() } else { pid.to_owned() };
                Err(OpenError::Locked { path: path.to_owned(), pid })
            }
            Err(std::fs::TryLockError::Error(e)) => Err(io_err("lock")(e)),
        }
    }
}

/// How long to wait for a lock that this very process appears to hold.
const OWN_LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// `try_lock`, retried for a moment when the recorded holder is this process. A lock file
/// this process closed can stay locked for a few milliseconds: a child being started by
/// another thread shares the open file until its `exec` closes it. Another process's lock is
/// reported at once.
fn try_lock_patiently(file: &mut File) -> Result<(), std::fs::TryLockError> {
    let deadline = std::time::Instant::now() + OWN_LOCK_PATIENCE;
    loop {
        match file.try_lock() {
            Err(std::fs::TryLockError::WouldBlock)
                if std::time::Instant::now() < deadline && holder_is_this_process(file) =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

fn holder_is_this_process(file: &mut File) -> bool {
    let mut pid = String::new();
    let read = file.seek(SeekFrom::Start(0)).and_then(|_| file.read_to_string(&mut pid));
    read.is_ok() && pid.trim() == std::process::id().to_string()
}

/// The pid of another live process that holds the journal at `path` open, read without
/// taking the lock (so a probe never makes a concurrent opener fail): its lock file exists,
/// names a pid other than this process's, and that process is running. A lock file left by a
/// process that died is not a holder.
pub fn holder(path: &Path) -> Option<String> {
    let pid = std::fs::read_to_string(lock_path(path)).ok()?;
    let pid = pid.trim();
    if pid.is_empty()
        || pid == std::process::id().to_string()
        || !pid.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let alive =
        if cfg!(target_os = "linux") { Path::new("/proc").join(pid).exists() } else { true };
    alive.then(|| pid.to_owned())
}

/// The lock file of a journal: `<file>.lock`.
pub fn lock_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}
