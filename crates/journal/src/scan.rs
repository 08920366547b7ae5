//! The scan: one sequential pass over a journal's bytes — a newline index plus typed parsing,
//! each entry reduced to what the index keeps — or the index sidecar and a pass over the bytes
//! appended since.
//!
//! The scan classifies every line and never modifies the file (what counts as a torn tail, a
//! malformed line or not a journal at all: `load.rs`). A large file is scanned in two halves on
//! two threads; the first half's entries go straight into the journal being built, the second
//! half's are kept as [`Line`]s and added after them.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::entry::Entry;
use crate::journal::Journal;
use crate::lazy::{lazy_tool_result, LazyFinders};
use crate::line::Line;
use crate::load_error::{LoadError, Malformed};
use crate::meta::Meta;
use crate::payload::Payload;
use crate::text::{read_at, Source, LAZY_MIN};

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
    /// How far the index sidecar read reaches (0 without one).
    pub covered: u64,
}

/// How much of a file is read at a time. The buffer is reused, so a large journal is streamed
/// through a cache-warm buffer instead of being faulted into memory whole.
const CHUNK: usize = 4 << 20;

/// Files at least this large are scanned in two halves on two threads.
pub(crate) const PARALLEL_MIN: u64 = 16 << 20;

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
pub(crate) fn parse_body(
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

/// What a scan continues from: the journal of `..covered` (an index sidecar's), with the lines
/// it reports.
pub(crate) struct Prefix {
    pub(crate) journal: Journal,
    pub(crate) malformed: Vec<Malformed>,
    pub(crate) nul_prefixed: Vec<u32>,
    pub(crate) coerced: Vec<(u32, Vec<String>)>,
    pub(crate) covered: u64,
    pub(crate) line_count: u32,
}

/// Scans `file` (of `len` bytes) after `prefix`, the part of it already known (the whole file
/// when there is none): only the bytes after `prefix.covered` are read.
pub(crate) fn scan_after(
    path: &Path,
    file: &File,
    len: u64,
    prefix: Option<Prefix>,
    source: Arc<Source>,
    parallel_min: u64,
) -> Result<Scan, LoadError> {
    let (scanner, start) = match prefix {
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
    scan.covered = start;
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
                covered: 0,
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
    fn after(len: u64, prefix: Prefix, source: Arc<Source>) -> Scanner {
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

/// Parses one line's JSON as an entry, tool output included (no part left in the file).
pub(crate) fn parse(body: &[u8]) -> Result<Entry, String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{assemble, write_index};
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
            let streamed = crate::sidecar::scan_indexed_split(&path, &file, len, 0).unwrap();
            let streamed = assemble(&path, streamed, None, false).unwrap();
            assert_eq!(streamed.journal.entries(), whole.journal.entries());
            assert_eq!(streamed.journal.problems(), whole.journal.problems());
            assert_eq!(streamed.warnings, whole.warnings);
            write_index(&path).unwrap();
        }
    }
}
