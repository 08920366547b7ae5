//! Reading a journal file: one sequential pass over its bytes (a newline index plus typed
//! parsing, each entry reduced to what the index keeps), or the index sidecar and a pass over
//! the bytes appended since; then HEAD replay.
//!
//! The scan classifies every line and never modifies the file. Two paths use it:
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
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::entry::Entry;
use crate::journal::{DagProblem, Journal, Line};
use crate::lazy::{lazy_tool_result, LazyFinders};
use crate::meta::Meta;
use crate::payload::Payload;
use crate::sidecar;
use crate::text::{read_at, Source, LAZY_MIN};

/// A line that could not be used, with its 1-based line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed {
    pub line: u32,
    pub error: String,
}

/// How the file ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tail {
    /// The last byte is the newline of a valid line.
    Clean,
    /// `len` bytes from `offset` (starting line `line`) are not a complete entry.
    Torn { offset: u64, len: u64, line: u32 },
    /// The final entry is complete but its newline is missing.
    MissingNewline { line: u32 },
}

/// Everything one pass over a journal's bytes found. Building it modifies nothing.
#[derive(Debug)]
pub(crate) struct Scan {
    /// Valid lines in file order (entries held only for the kinds the journal keeps).
    pub valid: Vec<Line>,
    pub malformed: Vec<Malformed>,
    /// Lines that began with NUL bytes (a filesystem's zero fill after a crash), which were
    /// skipped before parsing the rest of the line.
    pub nul_prefixed: Vec<u32>,
    /// Informational fields read as best they could be (see `lenient`), by line.
    pub coerced: Vec<(u32, Vec<String>)>,
    pub tail: Tail,
    /// Lines seen (valid or not).
    pub line_count: u32,
    /// Where the entries are read from.
    pub source: Option<Arc<Source>>,
    /// The journal of the lines an index sidecar described (they are not in `valid`).
    pub prefix: Option<Journal>,
    /// Where to write the index sidecar once the journal is built, when it is worth writing.
    pub index_to: Option<PathBuf>,
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

/// How much of a file is read at a time. The buffer is reused, so a large journal is streamed
/// through a cache-warm buffer instead of being faulted into memory whole.
const CHUNK: usize = 4 << 20;

/// Files at least this large are scanned in two halves on two threads.
const PARALLEL_MIN: u64 = 16 << 20;

/// Classifies every line of `file` (of `len` bytes), read with positional reads in chunks.
/// Entries are validated and reduced to what the index keeps (long tool outputs are not even
/// decoded, see `lazy_tool_result`). A large file is split at a newline near its middle and both
/// halves are scanned at once.
pub(crate) fn scan_file(path: &Path, file: &File, len: u64) -> Result<Scan, LoadError> {
    scan_file_split(path, file, len, PARALLEL_MIN)
}

/// The file entries of `path` are read back from (its own read-only handle).
pub(crate) fn open_source(path: &Path) -> Result<Arc<Source>, LoadError> {
    let file =
        File::open(path).map_err(|source| LoadError::Io { path: path.to_owned(), source })?;
    Ok(Arc::new(Source { file, path: path.to_owned() }))
}

fn scan_file_split(
    path: &Path,
    file: &File,
    len: u64,
    parallel_min: u64,
) -> Result<Scan, LoadError> {
    let source = open_source(path)?;
    let sc = scan_from(path, file, 0, len, Scanner::new(len, 0, source), parallel_min)?;
    sc.finish(path)
}

/// Scans `start..len` (which begins at a line start) into `first`, in two halves on two
/// threads when the range is long.
fn scan_from(
    path: &Path,
    file: &File,
    start: u64,
    len: u64,
    first: Scanner,
    parallel_min: u64,
) -> Result<Scanner, LoadError> {
    let io_err = |source| LoadError::Io { path: path.to_owned(), source };
    let split = if len - start >= parallel_min
        && std::thread::available_parallelism().map_or(1, |n| n.get()) > 1
    {
        split_point(file, start, len).map_err(io_err)?
    } else {
        None
    };
    match split {
        None => scan_range(file, start, len, first).map_err(io_err),
        Some(mid) => {
            let second_scanner = Scanner::new(len, 0, first.source.clone());
            let (first, second) = std::thread::scope(|scope| {
                let second = scope.spawn(move || scan_range(file, mid, len, second_scanner));
                let first = scan_range(file, start, mid, first);
                let second = second
                    .join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("the scanning thread failed")));
                (first, second)
            });
            Ok(first.map_err(io_err)?.merge(second.map_err(io_err)?))
        }
    }
}

/// The offset just after the first newline past the middle of `start..len`, if any is near.
fn split_point(file: &File, start: u64, len: u64) -> std::io::Result<Option<u64>> {
    let mid = start + (len - start) / 2;
    let mut buf = vec![0u8; 1 << 20];
    let n = read_at(file, &mut buf, mid)?;
    Ok(memchr::memchr(b'\n', &buf[..n]).map(|i| mid + i as u64 + 1).filter(|&p| p < len))
}

/// Feeds the lines of `start..end` (which begins at a line start) to `sc`.
fn scan_range(file: &File, start: u64, end: u64, mut sc: Scanner) -> std::io::Result<Scanner> {
    let mut buf = vec![0u8; CHUNK];
    let mut filled = 0usize; // bytes of buf holding data
    let mut base = start; // file offset of buf[0]
    let mut next = start; // file offset of the next read
    loop {
        if filled == buf.len() {
            // One line longer than the buffer: grow it.
            buf.resize(buf.len() * 2, 0);
        }
        let want = (buf.len() - filled).min(usize::try_from(end - next).unwrap_or(usize::MAX));
        let n = if want == 0 { 0 } else { read_at(file, &mut buf[filled..filled + want], next)? };
        next += n as u64;
        filled += n;
        let eof = n == 0 || next >= end;
        let mut pos = 0usize;
        while let Some(i) = memchr::memchr(b'\n', &buf[pos..filled]) {
            sc.line(&buf[pos..pos + i], base + pos as u64, true);
            pos += i + 1;
        }
        if eof {
            if pos < filled {
                sc.line(&buf[pos..filled], base + pos as u64, false);
            }
            return Ok(sc);
        }
        buf.copy_within(pos..filled, 0);
        filled -= pos;
        base += pos as u64;
    }
}

/// Parses one line's JSON (`body`, at `offset` of `source`'s file) as an entry. A long
/// `tool_result` line keeps its output in the file (see `lazy_tool_result`).
fn parse_body(
    body: &[u8],
    offset: u64,
    source: &Arc<Source>,
    scratch: &mut Vec<u8>,
    finders: &LazyFinders,
) -> Result<Entry, String> {
    let lazy = if body.len() >= LAZY_MIN {
        lazy_tool_result(body, offset, source, scratch, finders)
    } else {
        None
    };
    match lazy {
        Some(entry) => Ok(entry),
        None => parse(body),
    }
}

/// Reads back the entry whose line's JSON is `len` bytes at `offset` of `source`.
pub(crate) fn read_entry(source: &Arc<Source>, offset: u64, len: u32) -> Result<Entry, String> {
    let mut buf = vec![0u8; len as usize];
    crate::text::read_exact_at(&source.file, &mut buf, offset)
        .map_err(|e| format!("cannot read {}: {e}", source.path.display()))?;
    let entry = parse_body(&buf, offset, source, &mut Vec::new(), &LazyFinders::new());
    // What reading the line coerced was reported when the file was scanned.
    crate::lenient::take_coercions();
    entry
}

/// Scans `file` (of `len` bytes) through its index sidecar: the prefix the sidecar covers is
/// taken from it and only the bytes after it are read. The sidecar is (re)written when the
/// scan read much it did not cover.
pub(crate) fn scan_indexed(path: &Path, file: &File, len: u64) -> Result<Scan, LoadError> {
    scan_indexed_split(path, file, len, PARALLEL_MIN)
}

fn scan_indexed_split(
    path: &Path,
    file: &File,
    len: u64,
    parallel_min: u64,
) -> Result<Scan, LoadError> {
    let index = sidecar::index_path(path);
    let source = open_source(path)?;
    let (scanner, start) = match sidecar::read(&index, file, len, &source) {
        Some(p) => {
            let covered = p.covered;
            (Scanner::after(len, p, source), covered)
        }
        None => {
            // Entries go straight into the index as they are scanned (the first half's, when
            // the file is scanned in two): a scan holds no list of every line.
            let mut scanner = Scanner::new(len, 0, source.clone());
            let guess = usize::try_from(len / 4096).unwrap_or(0).min(1 << 20);
            scanner.s.prefix = Some(Journal::building(guess, Some(source)));
            (scanner, 0)
        }
    };
    let mut scan = scan_from(path, file, start, len, scanner, parallel_min)?.finish(path)?;
    if len - start >= sidecar::MIN_NEW_BYTES {
        scan.index_to = Some(index);
    }
    Ok(scan)
}

/// The per-line state of a scan.
struct Scanner {
    s: Scan,
    len: u64,
    line_no: u32,
    all_zero: bool,
    source: Arc<Source>,
    scratch: Vec<u8>,
    finders: LazyFinders,
}

impl Scanner {
    /// A scanner of a file of `len` bytes whose first line to scan follows `lines_before` lines.
    fn new(len: u64, lines_before: u32, source: Arc<Source>) -> Scanner {
        Scanner {
            s: Scan {
                valid: Vec::new(),
                malformed: Vec::new(),
                nul_prefixed: Vec::new(),
                coerced: Vec::new(),
                tail: Tail::Clean,
                line_count: lines_before,
                source: Some(source.clone()),
                prefix: None,
                index_to: None,
            },
            len,
            line_no: lines_before,
            all_zero: lines_before == 0,
            source,
            scratch: Vec::new(),
            finders: LazyFinders::new(),
        }
    }

    /// A scanner continuing `prefix` (the lines an index sidecar already describes).
    fn after(len: u64, prefix: sidecar::Prefix, source: Arc<Source>) -> Scanner {
        let mut sc = Scanner::new(len, prefix.line_count, source);
        sc.s.malformed = prefix.malformed;
        sc.s.nul_prefixed = prefix.nul_prefixed;
        sc.s.coerced = prefix.coerced;
        sc.s.prefix = Some(prefix.journal);
        sc
    }

    /// One line at `offset` (without its newline; `complete` when it had one).
    fn line(&mut self, raw: &[u8], offset: u64, complete: bool) {
        self.line_no += 1;
        let line_no = self.line_no;
        // A byte-order mark some editors add at the start of a file is not part of the line.
        let raw_start = if offset == 0 { raw.strip_prefix(UTF8_BOM).unwrap_or(raw) } else { raw };
        let body = strip_nul(raw_start);
        self.all_zero &= !complete && body.is_empty();
        let body_offset = offset + (raw.len() - body.len()) as u64;
        crate::lenient::take_coercions();
        let parsed = parse_body(body, body_offset, &self.source, &mut self.scratch, &self.finders);
        let coerced = crate::lenient::take_coercions();
        let end = offset + raw.len() as u64 + u64::from(complete);
        let is_last = end >= self.len;
        let s = &mut self.s;
        s.line_count = line_no;
        match parsed {
            // A line too long to index (4 GiB) is refused like any unusable line.
            Ok(_) if u32::try_from(body.len()).is_err() => {
                s.malformed.push(Malformed { line: line_no, error: "longer than 4 GiB".to_owned() })
            }
            Ok(entry) => {
                if body.len() != raw_start.len() {
                    s.nul_prefixed.push(line_no);
                }
                if !complete {
                    s.tail = Tail::MissingNewline { line: line_no };
                }
                if !coerced.is_empty() {
                    s.coerced.push((line_no, coerced));
                }
                let meta = Meta::of(&entry, body_offset, body.len() as u32);
                // The first line is held: it must be the header, and if it is not, the error
                // names what it is.
                let line = if offset == 0 {
                    Line::held(entry, line_no, meta)
                } else {
                    Line::scanned(entry, line_no, meta)
                };
                // Straight into the journal being built, when this scan builds one.
                match &mut s.prefix {
                    Some(journal) => journal.add_line(line),
                    None => s.valid.push(line),
                }
            }
            Err(_) if is_last && (!complete || !is_json(body)) => {
                s.tail = Tail::Torn { offset, len: self.len - offset, line: line_no };
            }
            Err(error) => s.malformed.push(Malformed { line: line_no, error }),
        }
    }

    /// Appends the scan of the range that follows this one.
    fn merge(mut self, next: Scanner) -> Scanner {
        let shift = self.line_no;
        let s = &mut self.s;
        s.valid.extend(next.s.valid.into_iter().map(|mut l| {
            l.line += shift;
            l
        }));
        s.malformed
            .extend(next.s.malformed.into_iter().map(|m| Malformed { line: m.line + shift, ..m }));
        s.nul_prefixed.extend(next.s.nul_prefixed.iter().map(|l| l + shift));
        s.coerced.extend(next.s.coerced.into_iter().map(|(l, notes)| (l + shift, notes)));
        s.tail = match next.s.tail {
            Tail::Clean => Tail::Clean,
            Tail::Torn { offset, len, line } => Tail::Torn { offset, len, line: line + shift },
            Tail::MissingNewline { line } => Tail::MissingNewline { line: line + shift },
        };
        self.line_no += next.line_no;
        s.line_count = self.line_no;
        self.all_zero &= next.all_zero;
        self
    }

    fn finish(self, path: &Path) -> Result<Scan, LoadError> {
        if self.len == 0 {
            return Err(LoadError::Empty { path: path.to_owned() });
        }
        if self.all_zero {
            return Err(LoadError::ZeroFilled { path: path.to_owned() });
        }
        check_header(path, &self.s)?;
        Ok(self.s)
    }
}

/// The UTF-8 byte-order mark.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

fn strip_nul(raw: &[u8]) -> &[u8] {
    let n = raw.iter().take_while(|&&b| b == 0).count();
    &raw[n..]
}

fn parse(body: &[u8]) -> Result<Entry, String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err("empty line".to_owned());
    }
    // Validating the line once up front lets serde_json skip validating each string in it.
    let text = std::str::from_utf8(body).map_err(|_| "not valid UTF-8".to_owned())?;
    serde_json::from_str::<Entry>(text).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
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
    let first = match &s.prefix {
        Some(journal) if !journal.is_empty() => Some((journal.line_at(0), journal.held_at(0))),
        _ => s.valid.first().map(|l| (l.line, l.entry.as_deref())),
    };
    match first.filter(|(line, _)| *line == 1).map(|(_, entry)| entry) {
        Some(Some(e)) if matches!(e.payload, Payload::Header(_)) => Ok(()),
        Some(Some(e)) => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The two-thread scan finds exactly what the one-thread scan finds, line numbers included.
    #[test]
    fn split_scans_match_serial_scans() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut f = File::create(&path).unwrap();
        let header = Entry::new(None, crate::HeaderPayload::new("s", "/w"));
        let mut parent = header.id.clone();
        writeln!(f, "{}", header.to_line().unwrap()).unwrap();
        for i in 0..200 {
            if i == 150 {
                writeln!(f, "{{not json").unwrap();
            }
            let e = Entry::new(
                Some(parent.clone()),
                crate::ToolResultPayload::new("t", "x\"y".repeat(i * 20), false),
            );
            parent = e.id.clone();
            writeln!(f, "{}", e.to_line().unwrap()).unwrap();
        }
        write!(f, "{{\"torn").unwrap();
        drop(f);
        let file = File::open(&path).unwrap();
        let len = file.metadata().unwrap().len();
        let serial = scan_file_split(&path, &file, len, u64::MAX).unwrap();
        let split = scan_file_split(&path, &file, len, 0).unwrap();
        assert_eq!(serial.valid, split.valid);
        assert_eq!(serial.line_count, split.line_count);
        assert_eq!(serial.malformed, split.malformed);
        assert_eq!(serial.malformed[0].line, 152);
        assert_eq!(serial.tail, split.tail);
        assert!(matches!(split.tail, Tail::Torn { line: 203, len: 6, .. }));

        // Streamed into the index (the first half) and through a sidecar: the same journal.
        let whole = assemble(&path, serial, None, false).unwrap();
        for _ in 0..2 {
            let streamed = scan_indexed_split(&path, &file, len, 0).unwrap();
            let streamed = assemble(&path, streamed, None, false).unwrap();
            assert_eq!(streamed.journal.entries(), whole.journal.entries());
            assert_eq!(streamed.journal.problems(), whole.journal.problems());
            assert_eq!(streamed.warnings, whole.warnings);
            write_index(&path).unwrap();
        }
    }
}
