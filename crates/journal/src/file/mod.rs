//! [`JournalFile`]: a session file open for appending, owned by one writer thread.
//!
//! Crash safety (docs/journal-format.md, *Crash safety: what is promised*):
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
//!   unlinked while still locked as the session closes, and an opener that locked a file
//!   unlinked meanwhile tries again, so removing it never lets two writers in.
//!
//! The writer thread is in `writer`, the lock in `lock`.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use crate::entry::{EncodeError, Entry};
use crate::journal::Journal;
use crate::load::{self, LoadError, LoadWarning, Loaded};
use crate::payload::{HeaderPayload, Payload};
use crate::scan::{self, Tail};
use crate::sidecar::{Reported, Tracker};

mod lock;
mod writer;

use lock::Lock;
pub use lock::{holder, lock_path};
use writer::{Msg, Reply, Writer};

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
            crate::private::create_dir_all(dir).map_err(io_err("create the directory of"))?;
        }
        // Serialized before anything touches the disk: a header that cannot be written leaves
        // no empty session file behind.
        let mut line = header.to_line()?;
        line.push('\n');
        let lock = Lock::acquire(path)?;
        let opened = crate::private::options().append(true).read(true).create_new(true).open(path);
        let mut file = match opened {
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
        let (offset, len, line_no) = self.write_line(&entry)?;
        self.journal.push_placed(entry, line_no, offset, len);
        Ok(())
    }

    /// Hands `entry`'s line to the writer thread: where it lands (offset, length, line number).
    fn write_line(&mut self, entry: &Entry) -> Result<(u64, u32, u32), WriteError> {
        let line = entry.to_line().map_err(|e| WriteError {
            path: self.path.display().to_string(),
            message: e.to_string(),
        })?;
        let mut line = line.into_bytes();
        line.push(b'\n');
        let placed = line.len();
        self.writer.send(Msg::Line(line))?;
        Ok(self.index.place(placed))
    }

    /// [`JournalFile::append`] for a long run of appends nobody reads back while they are
    /// written (an import): the entry is not kept in memory. Read the file again (after
    /// [`JournalFile::close`]) to see the entries; this journal's index, HEAD and header stay
    /// exact.
    pub fn append_unheld(&mut self, entry: Entry) -> Result<(), WriteError> {
        let (offset, len, line_no) = self.write_line(&entry)?;
        self.journal.push_placed_unheld(entry, line_no, offset, len);
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
    let mut f = crate::private::options().append(true).create(true).open(torn)?;
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
