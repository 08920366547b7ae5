//! Reading a journal file: one sequential pass over its bytes (a newline index plus typed
//! parsing), then HEAD replay.
//!
//! [`scan`] is pure: it classifies every line and never touches the file. Two paths use it:
//! - [`load_read_only`] (and `journal check`) report what they find and change nothing;
//! - [`crate::JournalFile::open`] also repairs a torn tail (DESIGN §2) before appending.
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
use std::path::{Path, PathBuf};

use crate::entry::Entry;
use crate::journal::{DagProblem, Journal};
use crate::payload::Payload;

/// A line that could not be used, with its 1-based line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed {
    pub line: u32,
    pub error: String,
}

/// How the file ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tail {
    /// The last byte is the newline of a valid line.
    Clean,
    /// `len` bytes from `offset` (starting line `line`) are not a complete entry.
    Torn { offset: u64, len: u64, line: u32 },
    /// The final entry is complete but its newline is missing.
    MissingNewline { line: u32 },
}

/// Everything one pass over a journal's bytes found. Building it modifies nothing.
#[derive(Debug)]
pub struct Scan {
    /// Valid entries in file order, with their line numbers.
    pub entries: Vec<Entry>,
    pub lines: Vec<u32>,
    pub malformed: Vec<Malformed>,
    /// Lines that began with NUL bytes (a filesystem's zero fill after a crash), which were
    /// skipped before parsing the rest of the line.
    pub nul_prefixed: Vec<u32>,
    pub tail: Tail,
}

/// Why a file cannot be read as a journal. The file is never modified in these cases.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{} is empty, so it is not a codewhale journal; it was left untouched", path.display())]
    Empty { path: PathBuf },
    #[error("{} contains only zero bytes (a crash before anything was written?); it was left untouched", path.display())]
    ZeroFilled { path: PathBuf },
    #[error("{} is not a codewhale journal ({reason}); it was left untouched", path.display())]
    NotAJournal { path: PathBuf, reason: String },
}

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
    Dag {
        line: u32,
        problem: DagProblem,
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
            LoadWarning::Dag { line, problem } => {
                write!(f, "line {line}: {}", dag_message(problem))
            }
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

/// Classifies every line of `bytes`. `path` only names the file in errors.
pub fn scan(path: &Path, bytes: &[u8]) -> Result<Scan, LoadError> {
    if bytes.is_empty() {
        return Err(LoadError::Empty { path: path.to_owned() });
    }
    if bytes.iter().all(|&b| b == 0) {
        return Err(LoadError::ZeroFilled { path: path.to_owned() });
    }
    let mut s = Scan {
        entries: Vec::new(),
        lines: Vec::new(),
        malformed: Vec::new(),
        nul_prefixed: Vec::new(),
        tail: Tail::Clean,
    };
    let mut pos = 0usize;
    let mut line_no = 0u32;
    while pos < bytes.len() {
        line_no += 1;
        let rest = &bytes[pos..];
        let (raw, complete) = match memchr::memchr(b'\n', rest) {
            Some(i) => (&rest[..i], true),
            None => (rest, false),
        };
        let start = pos;
        pos += raw.len() + usize::from(complete);
        let body = strip_nul(raw);
        let parsed = parse(body);
        let is_last = pos >= bytes.len();
        match parsed {
            Ok(entry) => {
                if body.len() != raw.len() {
                    s.nul_prefixed.push(line_no);
                }
                if !complete {
                    s.tail = Tail::MissingNewline { line: line_no };
                }
                s.entries.push(entry);
                s.lines.push(line_no);
            }
            Err(_) if is_last && (!complete || !is_json(body)) => {
                s.tail = Tail::Torn {
                    offset: start as u64,
                    len: (bytes.len() - start) as u64,
                    line: line_no,
                };
            }
            Err(error) => s.malformed.push(Malformed { line: line_no, error }),
        }
    }
    check_header(path, &s)?;
    Ok(s)
}

fn strip_nul(raw: &[u8]) -> &[u8] {
    let n = raw.iter().take_while(|&&b| b == 0).count();
    &raw[n..]
}

fn parse(body: &[u8]) -> Result<Entry, String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err("empty line".to_owned());
    }
    serde_json::from_slice::<Entry>(body).map_err(|e| {
        if std::str::from_utf8(body).is_err() {
            "not valid UTF-8".to_owned()
        } else if e.is_syntax() || e.is_eof() {
            format!("not valid JSON ({e})")
        } else {
            format!("not a valid entry ({e})")
        }
    })
}

fn is_json(body: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok()
}

fn check_header(path: &Path, s: &Scan) -> Result<(), LoadError> {
    let not_journal = |reason: String| LoadError::NotAJournal { path: path.to_owned(), reason };
    match (s.entries.first(), s.lines.first()) {
        (Some(e), Some(1)) if matches!(e.payload, Payload::Header(_)) => Ok(()),
        (Some(e), Some(1)) => {
            Err(not_journal(format!("its first line is a `{}` entry, not a header", e.kind())))
        }
        _ => {
            let why = match (&s.tail, s.malformed.first()) {
                (Tail::Torn { line: 1, .. }, _) => "its first line is incomplete".to_owned(),
                (_, Some(m)) if m.line == 1 => format!("line 1 is {}", m.error),
                _ => "it has no header line".to_owned(),
            };
            Err(not_journal(why))
        }
    }
}

/// Builds the journal from a scan; the warnings say what was skipped (and, when `repaired`,
/// what the caller already fixed in the file).
pub(crate) fn assemble(
    path: &Path,
    scan: Scan,
    torn_saved_to: Option<PathBuf>,
    repaired: bool,
) -> Result<Loaded, LoadError> {
    let mut warnings = Vec::new();
    match &scan.tail {
        Tail::Clean => {}
        Tail::Torn { len, line, .. } => warnings.push(LoadWarning::TornTail {
            line: *line,
            bytes: *len,
            saved_to: torn_saved_to,
        }),
        Tail::MissingNewline { line } => {
            warnings.push(LoadWarning::MissingNewline { line: *line, repaired })
        }
    }
    warnings.extend(scan.nul_prefixed.iter().map(|&line| LoadWarning::NulPrefix { line }));
    warnings.extend(scan.malformed.iter().cloned().map(LoadWarning::Malformed));
    let journal = Journal::from_lines(scan.entries, scan.lines)
        .map_err(|e| LoadError::NotAJournal { path: path.to_owned(), reason: e.to_string() })?;
    warnings.extend(
        journal
            .problems()
            .iter()
            .map(|(line, problem)| LoadWarning::Dag { line: *line, problem: problem.clone() }),
    );
    Ok(Loaded { journal, warnings })
}

/// Reads a journal without modifying or locking it (a torn tail is reported, not removed).
pub fn load_read_only(path: &Path) -> Result<Loaded, LoadError> {
    let bytes =
        std::fs::read(path).map_err(|source| LoadError::Io { path: path.to_owned(), source })?;
    let scan = scan(path, &bytes)?;
    assemble(path, scan, None, false)
}

/// The path a torn tail is copied to: `<file>.torn`.
pub fn torn_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".torn");
    PathBuf::from(s)
}
