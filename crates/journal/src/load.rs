//! Reading a journal file: one sequential pass over its bytes (a newline index plus typed
//! parsing, each entry reduced to what the index keeps), or the index sidecar and a pass over
//! the bytes appended since; then HEAD replay.
//!
//! The scan classifies every line and never modifies the file. Two paths use it:
//! - [`load_read_only`] (and `journal check`) report what they find and change nothing;
//! - [`crate::JournalFile::open`] also repairs a torn tail (docs/journal-format.md, *Crash safety:
//!   what is promised*) before appending.
//!
//! What counts as what:
//! - **torn tail**: the bytes after the last newline, or a final newline-terminated line that is
//!   not JSON at all. Never a complete entry: a final entry that is complete but lacks only its
//!   newline is kept (the repairing open adds the newline).
//! - **malformed line**: any other line that is not a valid entry (bad JSON, missing fields,
//!   invalid UTF-8, an empty line). Reported with its line number and skipped.
//! - **not a journal**: an empty file, a file of zero bytes, or one whose first line is not a
//!   `header` entry. An error; the file is never modified.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::journal::{DagProblem, Journal};
pub use crate::load_error::{LoadError, Malformed};
use crate::scan::{scan_file, Scan, Tail};
use crate::sidecar::{self, scan_indexed};

/// A problem loading found and worked around; every one is shown to the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadWarning {
    /// A torn final line. `saved_to` is where its bytes were copied before the file was
    /// truncated (None when the file was opened read-only and left as is).
    TornTail {
        line: u32,
        bytes: u64,
        saved_to: Option<PathBuf>,
    },
    /// The final entry lacked its newline; `repaired` when it was added.
    MissingNewline {
        line: u32,
        repaired: bool,
    },
    Malformed(Malformed),
    NulPrefix {
        line: u32,
    },
    /// Informational fields of an unexpected type, read as best they could be (the entry is
    /// used as read).
    Coerced {
        line: u32,
        notes: Vec<String>,
    },
    Dag {
        line: u32,
        problem: DagProblem,
    },
    /// The session could not be repaired now (a full disk) and was opened read-only.
    ReadOnly {
        reason: String,
    },
}

impl fmt::Display for LoadWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadWarning::TornTail { line, bytes, saved_to: Some(p) } => write!(
                f,
                "line {line}: torn final line ({bytes} bytes) removed; its bytes were saved to {}",
                p.display()
            ),
            LoadWarning::TornTail { line, bytes, saved_to: None } => {
                write!(f, "line {line}: torn final line ({bytes} bytes, not a complete entry)")
            }
            LoadWarning::MissingNewline { line, repaired: true } => {
                write!(f, "line {line}: the final entry had no newline; it was added")
            }
            LoadWarning::MissingNewline { line, repaired: false } => {
                write!(f, "line {line}: the final entry has no newline")
            }
            LoadWarning::Malformed(m) => write!(f, "line {}: {}; skipped", m.line, m.error),
            LoadWarning::NulPrefix { line } => {
                write!(f, "line {line}: starts with zero bytes (skipped before parsing)")
            }
            LoadWarning::Coerced { line, notes } => {
                write!(f, "line {line}: read as best it could be: {}", notes.join("; "))
            }
            LoadWarning::Dag { line, problem } => {
                write!(f, "line {line}: {}", dag_message(problem))
            }
            LoadWarning::ReadOnly { reason } => write!(
                f,
                "the session is open read-only because {reason}; free some space and open it \
                 again to continue it"
            ),
        }
    }
}

/// One sentence for a DAG problem.
pub fn dag_message(p: &DagProblem) -> String {
    match p {
        DagProblem::DuplicateId { id } => format!("duplicate entry id {id}; this copy is ignored"),
        DagProblem::DanglingParent { id, parent } => {
            format!("entry {id} has parent {parent}, which is not an earlier entry")
        }
        DagProblem::MissingParent { id } => format!("entry {id} has no parent"),
        DagProblem::HeadNowhere { id, to } => {
            format!("head record {id} moves HEAD to {to}, which is not a conversation entry")
        }
    }
}

/// A journal read from a file, with what loading worked around.
#[derive(Debug)]
pub struct Loaded {
    pub journal: Journal,
    pub warnings: Vec<LoadWarning>,
}

/// Builds the journal from a scan; the warnings say what was skipped (and, when `repaired`,
/// what the caller already fixed in the file).
pub(crate) fn assemble(
    path: &Path,
    scan: Scan,
    torn_saved_to: Option<PathBuf>,
    repaired: bool,
) -> Result<Loaded, LoadError> {
    let Scan { valid, malformed, nul_prefixed, coerced, tail, source, prefix, index_to, .. } = scan;
    let mut journal = match prefix {
        Some(journal) => journal,
        None => Journal::building(valid.len(), source),
    };
    for line in valid {
        journal.add_line(line);
    }
    let journal = journal
        .finish()
        .map_err(|e| LoadError::NotAJournal { path: path.to_owned(), reason: e.to_string() })?;
    if let Some(index) = index_to {
        let unterminated = match tail {
            Tail::MissingNewline { line } => Some(line),
            _ => None,
        };
        let reported = sidecar::Reported {
            malformed: &malformed,
            nul_prefixed: &nul_prefixed,
            coerced: &coerced,
            unterminated,
        };
        sidecar::write(&index, &journal, &reported);
    }
    let mut warnings = Vec::new();
    match tail {
        Tail::Clean => {}
        Tail::Torn { len, line, .. } => {
            warnings.push(LoadWarning::TornTail { line, bytes: len, saved_to: torn_saved_to })
        }
        Tail::MissingNewline { line } => {
            warnings.push(LoadWarning::MissingNewline { line, repaired })
        }
    }
    warnings.extend(nul_prefixed.iter().map(|&line| LoadWarning::NulPrefix { line }));
    warnings.extend(malformed.into_iter().map(LoadWarning::Malformed));
    warnings.extend(coerced.into_iter().map(|(line, notes)| LoadWarning::Coerced { line, notes }));
    warnings.extend(
        journal
            .problems()
            .iter()
            .map(|(line, problem)| LoadWarning::Dag { line: *line, problem: problem.clone() }),
    );
    Ok(Loaded { journal, warnings })
}

/// Refuses anything but a regular file before it is opened: opening a FIFO for reading
/// would wait for a writer forever, and a directory or device is no journal.
pub(crate) fn ensure_regular(path: &Path) -> Result<(), LoadError> {
    let meta = std::fs::metadata(path)
        .map_err(|source| LoadError::Io { path: path.to_owned(), source })?;
    let ft = meta.file_type();
    if ft.is_file() {
        return Ok(());
    }
    let what = if ft.is_dir() {
        "a directory"
    } else {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if ft.is_fifo() {
                "a named pipe (FIFO)"
            } else if ft.is_socket() {
                "a socket"
            } else if ft.is_char_device() || ft.is_block_device() {
                "a device"
            } else {
                "not a regular file"
            }
        }
        #[cfg(not(unix))]
        {
            "not a regular file"
        }
    };
    Err(LoadError::NotAJournal { path: path.to_owned(), reason: format!("it is {what}") })
}

/// Reads a journal without modifying or locking it (a torn tail is reported, not removed).
pub fn load_read_only(path: &Path) -> Result<Loaded, LoadError> {
    let io_err = |source| LoadError::Io { path: path.to_owned(), source };
    ensure_regular(path)?;
    let file = File::open(path).map_err(io_err)?;
    let len = file.metadata().map_err(io_err)?.len();
    let scan = scan_indexed(path, &file, len)?;
    assemble(path, scan, None, false)
}

/// Indexes the journal at `path` now, writing its index sidecar whatever its size (a load
/// writes one only when it read much the sidecar did not cover). Reads without locking or
/// modifying the journal. False when the sidecar could not be written.
pub fn write_index(path: &Path) -> Result<bool, LoadError> {
    let io_err = |source| LoadError::Io { path: path.to_owned(), source };
    ensure_regular(path)?;
    let file = File::open(path).map_err(io_err)?;
    let len = file.metadata().map_err(io_err)?.len();
    let mut scan = scan_file(path, &file, len)?;
    let index = sidecar::index_path(path);
    let _ = std::fs::remove_file(&index);
    scan.index_to = Some(index.clone());
    assemble(path, scan, None, false)?;
    Ok(index.exists())
}

/// The path a torn tail is copied to: `<file>.torn`.
pub fn torn_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".torn");
    PathBuf::from(s)
}
