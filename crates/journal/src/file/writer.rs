//! The writer thread that owns a session file's handle: appends in order, group-commits
//! `sync_data`, and syncs on its own after a quiet spell.
//!
//! Invariant: the first write or sync error is kept and returned for every later request, so
//! an append that could not reach the disk is never reported as saved.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::{io_phrase, Lock, WriteError};

/// How long the writer waits for more appends before syncing unasked.
const IDLE_SYNC: Duration = Duration::from_millis(200);

pub(super) type SyncResult = Result<(), WriteError>;

pub(super) enum Reply {
    Async(tokio::sync::oneshot::Sender<SyncResult>),
    Blocking(mpsc::Sender<SyncResult>),
}

impl Reply {
    pub(super) fn send(self, r: SyncResult) {
        // The waiter may have given up; nothing to do then.
        let _ = match self {
            Reply::Async(tx) => tx.send(r).map_err(|_| ()),
            Reply::Blocking(tx) => tx.send(r).map_err(|_| ()),
        };
    }
}

pub(super) enum Msg {
    Line(Vec<u8>),
    Sync(Reply),
}

pub(super) struct Writer {
    tx: Option<mpsc::Sender<Msg>>,
    failed: Arc<Mutex<Option<WriteError>>>,
    thread: Option<JoinHandle<()>>,
    path: String,
}

impl Writer {
    /// A writer that refuses every write with `reason` (a session opened read-only).
    pub(super) fn read_only(path: &Path, reason: String) -> Writer {
        let path = path.display().to_string();
        let error =
            WriteError { path: path.clone(), message: format!("it is open read-only: {reason}") };
        Writer { tx: None, failed: Arc::new(Mutex::new(Some(error))), thread: None, path }
    }

    pub(super) fn spawn(path: &Path, file: File, lock: Lock) -> Writer {
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

    pub(super) fn send(&self, msg: Msg) -> Result<(), WriteError> {
        if let Some(e) = self.failed.lock().ok().and_then(|f| f.clone()) {
            return Err(e);
        }
        match &self.tx {
            Some(tx) if self.thread.is_some() => tx.send(msg).map_err(|_| self.gone()),
            _ => Err(self.gone()),
        }
    }

    pub(super) fn gone(&self) -> WriteError {
        self.failed.lock().ok().and_then(|f| f.clone()).unwrap_or_else(|| WriteError {
            path: self.path.clone(),
            message: "the journal writer stopped".into(),
        })
    }

    pub(super) fn shutdown(&mut self) {
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
