//! [`JournalFile`]: a session file open for appending, owned by one writer thread.
//!
//! Crash safety (DESIGN §2):
//! - every entry is serialized completely, then written with one `write` on an `O_APPEND`
//!   handle, so a crash leaves at most one torn final line, never a hole;
//! - the writer thread group-commits `sync_data`: [`JournalFile::sync`] (the engine calls it at
//!   the end of every turn and after every compaction record) waits for one `sync_data` covering
//!   everything appended before it, shared by all syncs queued meanwhile; after 200 ms without
//!   new appends the thread also syncs on its own. Nothing here blocks the caller's thread on
//!   disk I/O except `open`, `create`, [`JournalFile::sync_blocking`] and
//!   [`JournalFile::close`].
//! - one writer per file: an advisory lock (`File::try_lock`) on the sidecar `<file>.lock`,
//!   which also records the holder's pid for the error a second process gets. The lock file is
//!   left in place when the session closes (removing it would race with the next opener).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::entry::{EncodeError, Entry};
use crate::journal::Journal;
use crate::load::{self, LoadError, LoadWarning, Loaded};
use crate::payload::{HeaderPayload, Payload};
use crate::scan::{self, Tail};
use crate::sidecar::{Reported, Tracker};

/// How long the writer waits for more appends before syncing unasked.
const IDLE_SYNC: Duration = Duration::from_millis(200);

/// Why a journal could not be opened or created.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("session is open in another codewhale (pid {pid}): {}", path.display())]
    Locked { path: PathBuf, pid: String },
    #[error("{} already exists", path.display())]
    Exists { path: PathBuf },
    #[error("cannot {action} {}: {source}", path.display())]
    Io { action: &'static str, path: PathBuf, source: io::Error },
    #[error("the first entry of a new journal must be a header, not `{0}`")]
    NotAHeader(String),
    #[error(transparent)]
    Encode(#[from] EncodeError),
}

/// An append or sync failed; the journal stopped accepting writes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot save the session to {path}: {message}")]
pub struct WriteError {
    pub path: String,
    pub message: String,
}

/// One phrase for an I/O failure, naming a full disk as such.
fn io_phrase(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::StorageFull => "the disk is full".to_owned(),
        io::ErrorKind::QuotaExceeded => "the disk quota is exhausted".to_owned(),
        io::ErrorKind::ReadOnlyFilesystem => "the file system is read-only".to_owned(),
        _ => e.to_string(),
    }
}

/// A session journal open for appending: the in-memory [`Journal`] plus its writer thread.
pub struct JournalFile {
    path: PathBuf,
    journal: Journal,
    writer: Writer,
    /// Where appended lines go, for the index sidecar written on close.
    index: Tracker,
}

impl std::fmt::Debug for JournalFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalFile").field("path", &self.path).finish_non_exhaustive()
    }
}

impl JournalFile {
    /// Creates `path` holding only `header` (a `header` entry) and opens it.
    pub fn create(path: &Path, header: Entry) -> Result<JournalFile, OpenError> {
        if !matches!(header.payload, Payload::Header(_)) {
            return Err(OpenError::NotAHeader(header.kind().to_owned()));
        }
        let io_err = |action| move |source| OpenError::Io { action, path: path.to_owned(), source };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io_err("create the directory of"))?;
        }
        // Serialized before anything touches the disk: a header that cannot be written leaves
        // no empty session file behind.
        let mut line = header.to_line()?;
        line.push('\n');
        let lock = Lock::acquire(path)?;
        let mut file = match OpenOptions::new().append(true).read(true).create_new(true).open(path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(OpenError::Exists { path: path.to_owned() })
            }
            Err(e) => return Err(io_err("create")(e)),
        };
        file.write_all(line.as_bytes()).map_err(io_err("write"))?;
        file.sync_data().map_err(io_err("sync"))?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // Make the new directory entry durable too; best effort (not all systems allow it).
            let _ = File::open(dir).and_then(|d| d.sync_all());
        }
        let mut index = Tracker::opened(0, 0, 0, &Reported::none());
        let (offset, len, line_no) = index.place(line.len());
        let mut journal = Journal::building(1, Some(scan::open_source(path)?));
        journal.push_placed(header, line_no, offset, len);
        let journal = journal.finish().map_err(|e| {
            OpenError::Load(LoadError::NotAJournal { path: path.to_owned(), reason: e.to_string() })
        })?;
        let writer = Writer::spawn(path, file, lock);
        Ok(JournalFile { path: path.to_owned(), journal, writer, index })
    }

    /// Creates `<dir>/<session_id>.jsonl` for a new session with this header.
    pub fn create_session(dir: &Path, header: HeaderPayload) -> Result<JournalFile, OpenError> {
        let path = dir.join(format!("{}.jsonl", header.session_id));
        JournalFile::create(&path, Entry::new(None, header))
    }

    /// Opens an existing journal for appending: takes the lock, loads it, and repairs a torn
    /// tail (its bytes are copied to `<file>.torn` first; a final entry missing only its
    /// newline gets it). An empty, zero-filled or non-journal file is an error and untouched.
    pub fn open(path: &Path) -> Result<(JournalFile, Vec<LoadWarning>), OpenError> {
        let io_err = |action| move |source| OpenError::Io { action, path: path.to_owned(), source };
        load::ensure_regular(path)?;
        let lock = Lock::acquire(path)?;
        let mut file =
            OpenOptions::new().append(true).read(true).open(path).map_err(io_err("open"))?;
        let len = file.metadata().map_err(io_err("read"))?.len();
        let scan = crate::sidecar::scan_indexed(path, &file, len)?;
        let mut torn_saved_to = None;
        let repaired = match &scan.tail {
            Tail::Clean => Ok(()),
            Tail::Torn { offset, .. } => {
                let torn = load::torn_path(path);
                let offset = *offset;
                let moved = (|| {
                    let mut bytes = Vec::new();
                    file.seek(SeekFrom::Start(offset))?;
                    file.read_to_end(&mut bytes)?;
                    save_torn(&torn, &bytes)?;
                    file.set_len(offset)?;
                    file.sync_data()
                })();
                if moved.is_ok() {
                    tracing::warn!(path = %path.display(), saved_to = %torn.display(), "removed a torn final line");
                    torn_saved_to = Some(torn);
                }
                moved.map_err(|e| {
                    format!("its torn final line cannot be moved aside ({})", io_phrase(&e))
                })
            }
            Tail::MissingNewline { .. } => file
                .write_all(b"\n")
                .and_then(|()| file.sync_data())
                .map_err(|e| format!("its final line cannot be completed ({})", io_phrase(&e))),
        };
        // Where appended lines will go: after the repair, the file ends with a complete line.
        let (end, lines) = match &scan.tail {
            Tail::Clean => (len, scan.line_count),
            Tail::Torn { offset, line, .. } => (*offset, line.saturating_sub(1)),
            Tail::MissingNewline { .. } => (len + 1, scan.line_count),
        };
        let reported = Reported {
            malformed: &scan.malformed,
            nul_prefixed: &scan.nul_prefixed,
            coerced: &scan.coerced,
            unterminated: None,
        };
        let mut index = Tracker::opened(end, lines, scan.covered, &reported);
        let Loaded { journal, mut warnings } = load::assemble(path, scan, torn_saved_to, true)?;
        let writer = match repaired {
            Ok(()) => Writer::spawn(path, file, lock),
            // Opening must not refuse a session it cannot repair now (a full disk): it is read
            // as it is, and appends are refused with the reason until it can be repaired.
            Err(reason) => {
                tracing::warn!(path = %path.display(), %reason, "session opened read-only");
                warnings.push(LoadWarning::ReadOnly { reason: reason.clone() });
                drop(lock);
                index = Tracker::disabled();
                Writer::read_only(path, reason)
            }
        };
        Ok((JournalFile { path: path.to_owned(), journal, writer, index }, warnings))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The journal as appended so far (HEAD included).
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Appends `entry`: hands its line to the writer thread (no disk I/O on this thread) and
    /// applies it to the in-memory journal. Durable after the next [`JournalFile::sync`].
    /// An entry that cannot be serialized is refused: nothing is written or applied, and the
    /// journal keeps accepting appends (the file was never touched).
    pub fn append(&mut self, entry: Entry) -> Result<(), WriteError> {
        let line = entry.to_line().map_err(|e| WriteError {
            path: self.path.display().to_string(),
            message: e.to_string(),
        })?;
        let mut line = line.into_bytes();
        line.push(b'\n');
        let placed = line.len();
        self.writer.send(Msg::Line(line))?;
        let (offset, len, line_no) = self.index.place(placed);
        self.journal.push_placed(entry, line_no, offset, len);
        Ok(())
    }

    /// Waits until everything appended so far is on disk (`sync_data`).
    pub async fn sync(&self) -> Result<(), WriteError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.writer.send(Msg::Sync(Reply::Async(tx)))?;
        rx.await.unwrap_or_else(|_| Err(self.writer.gone()))
    }

    /// Asks the writer to sync now without waiting for it. A failure is kept and reported by
    /// the next append or [`JournalFile::sync`], so nothing is shown as durable that is not.
    pub fn sync_detached(&self) -> Result<(), WriteError> {
        let (tx, _unawaited) = tokio::sync::oneshot::channel();
        self.writer.send(Msg::Sync(Reply::Async(tx)))
    }

    /// [`JournalFile::sync`] for threads outside an async runtime.
    pub fn sync_blocking(&self) -> Result<(), WriteError> {
        let (tx, rx) = mpsc::channel();
        self.writer.send(Msg::Sync(Reply::Blocking(tx)))?;
        rx.recv().unwrap_or_else(|_| Err(self.writer.gone()))
    }

    /// Syncs, stops the writer thread and releases the lock.
    /// Writes the index sidecar when the session appended much since it was last written.
    pub fn close(mut self) -> Result<(), WriteError> {
        let result = self.sync_blocking();
        self.writer.shutdown();
        if result.is_ok() {
            self.index.close(&self.path, &self.journal);
        }
        result
    }
}

/// Appends the torn bytes to `torn`. On failure the file is put back as it was (removed when
/// it did not exist), so a full disk never leaves an empty or half-written sidecar.
fn save_torn(torn: &Path, bytes: &[u8]) -> io::Result<()> {
    let before = std::fs::metadata(torn).ok().map(|m| m.len());
    let mut f = OpenOptions::new().append(true).create(true).open(torn)?;
    let written = (|| {
        f.write_all(bytes)?;
        if !bytes.ends_with(b"\n") {
            f.write_all(b"\n")?;
        }
        f.sync_data()
    })();
    if written.is_err() {
        match before {
            None => drop(std::fs::remove_file(torn)),
            Some(len) => drop(f.set_len(len)),
        }
    }
    written
}

type SyncResult = Result<(), WriteError>;

enum Reply {
    Async(tokio::sync::oneshot::Sender<SyncResult>),
    Blocking(mpsc::Sender<SyncResult>),
}

impl Reply {
    fn send(self, r: SyncResult) {
        // The waiter may have given up; nothing to do then.
        let _ = match self {
            Reply::Async(tx) => tx.send(r).map_err(|_| ()),
            Reply::Blocking(tx) => tx.send(r).map_err(|_| ()),
        };
    }
}

enum Msg {
    Line(Vec<u8>),
    Sync(Reply),
}

struct Writer {
    tx: Option<mpsc::Sender<Msg>>,
    failed: Arc<Mutex<Option<WriteError>>>,
    thread: Option<JoinHandle<()>>,
    path: String,
}

impl Writer {
    /// A writer that refuses every write with `reason` (a session opened read-only).
    fn read_only(path: &Path, reason: String) -> Writer {
        let path = path.display().to_string();
        let error =
            WriteError { path: path.clone(), message: format!("it is open read-only: {reason}") };
        Writer { tx: None, failed: Arc::new(Mutex::new(Some(error))), thread: None, path }
    }

    fn spawn(path: &Path, file: File, lock: Lock) -> Writer {
        let (tx, rx) = mpsc::channel();
        let failed = Arc::new(Mutex::new(None));
        let state = WriterThread {
            file,
            _lock: lock,
            failed: failed.clone(),
            path: path.display().to_string(),
        };
        let thread = std::thread::Builder::new()
            .name("journal-writer".into())
            .spawn(move || state.run(rx))
            .ok();
        Writer { tx: Some(tx), failed, thread, path: path.display().to_string() }
    }

    fn send(&self, msg: Msg) -> Result<(), WriteError> {
        if let Some(e) = self.failed.lock().ok().and_then(|f| f.clone()) {
            return Err(e);
        }
        match &self.tx {
            Some(tx) if self.thread.is_some() => tx.send(msg).map_err(|_| self.gone()),
            _ => Err(self.gone()),
        }
    }

    fn gone(&self) -> WriteError {
        self.failed.lock().ok().and_then(|f| f.clone()).unwrap_or_else(|| WriteError {
            path: self.path.clone(),
            message: "the journal writer stopped".into(),
        })
    }

    fn shutdown(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Writer {
    /// Closing the channel lets the thread sync and exit; not joined here so that dropping a
    /// session never blocks its caller on disk I/O.
    fn drop(&mut self) {
        self.tx = None;
    }
}

struct WriterThread {
    file: File,
    _lock: Lock,
    failed: Arc<Mutex<Option<WriteError>>>,
    path: String,
}

impl WriterThread {
    fn run(mut self, rx: mpsc::Receiver<Msg>) {
        let mut dirty = false;
        loop {
            let first = if dirty {
                match rx.recv_timeout(IDLE_SYNC) {
                    Ok(m) => m,
                    Err(RecvTimeoutError::Timeout) => {
                        let _ = self.sync();
                        dirty = false;
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            } else {
                match rx.recv() {
                    Ok(m) => m,
                    Err(_) => break,
                }
            };
            let mut replies = Vec::new();
            for msg in std::iter::once(first).chain(std::iter::from_fn(|| rx.try_recv().ok())) {
                match msg {
                    Msg::Line(bytes) => {
                        self.write(&bytes);
                        dirty = true;
                    }
                    Msg::Sync(reply) => replies.push(reply),
                }
            }
            if !replies.is_empty() {
                let result = if dirty { self.sync() } else { self.status() };
                dirty = false;
                for r in replies {
                    r.send(result.clone());
                }
            }
        }
        if dirty {
            let _ = self.sync();
        }
    }

    fn status(&self) -> SyncResult {
        match self.failed.lock().ok().and_then(|f| f.clone()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn fail(&self, e: &io::Error) {
        tracing::error!(path = %self.path, error = %e, "journal write failed");
        if let Ok(mut f) = self.failed.lock() {
            if f.is_none() {
                *f = Some(WriteError { path: self.path.clone(), message: io_phrase(e) });
            }
        }
    }

    /// One `write` of one complete line. After any failure nothing more is written, and what
    /// part of the line reached the file is cut off again (shrinking a file needs no free
    /// space, so this works on a full disk): the file ends with the last whole line instead
    /// of a torn tail. Should the cut fail too, the torn tail is left for the next open to
    /// move aside.
    fn write(&mut self, line: &[u8]) {
        if self.status().is_err() {
            return;
        }
        let before = self.file.metadata().map(|m| m.len());
        if let Err(e) = self.file.write_all(line) {
            self.fail(&e);
            if let Ok(len) = before {
                if let Err(cut) = self.file.set_len(len).and_then(|()| self.file.sync_data()) {
                    tracing::warn!(path = %self.path, "cannot cut off a partly written line: {cut}");
                }
            }
        }
    }

    fn sync(&mut self) -> SyncResult {
        self.status()?;
        if let Err(e) = self.file.sync_data() {
            self.fail(&e);
        }
        self.status()
    }
}

/// The advisory lock on `<file>.lock`, recording the holder's pid. The lock file is removed
/// when the lock is released, so a session closed cleanly leaves no `.lock` behind; an opener
/// that locked a lock file removed meanwhile sees that its file is no longer the one at the
/// path and tries again, so removal never lets two holders in.
struct Lock {
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
    fn acquire(path: &Path) -> Result<Lock, OpenError> {
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
            std::fs::create_dir_all(dir).map_err(io_err("create the directory of"))?;
        }
        let existed = lock_path.exists();
        let mut file = OpenOptions::new()
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

/// The lock file of a journal: `<file>.lock`.
pub fn lock_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}
