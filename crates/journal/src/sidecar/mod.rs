//! The index sidecar: `<session>.index` beside a journal, so that reopening a session reads only
//! the bytes appended since it was last indexed.
//!
//! It holds, for a prefix of the file, what HEAD replay needs of every line the journal kept —
//! line number, id, parent id, `head` target and [`Meta`] (kind, flags, stored count, where the
//! line is) — the lines it dropped as duplicates, and the malformed, zero-prefixed and coerced
//! lines with their messages. The journal is rebuilt from it by the same replay as from a scan,
//! streamed straight into the index (nothing else is held while it is read), so a journal opened
//! through its sidecar equals one opened by reading every line (a property test checks this).
//!
//! Invariants:
//! - the sidecar is a cache: it is never required, never trusted without checking, and the
//!   journal is never changed because of it. It is used only when the file still holds the same
//!   header line and the same last covered line at the same places (append-only files pass; a
//!   replaced or rewritten file does not), and its own checksum matches. Anything else reads
//!   the file in full.
//! - it covers whole lines only, up to the last kept line that ends with a newline: what follows
//!   (a torn or unterminated tail) is scanned again on every open, since its meaning depends on
//!   what is appended after it.
//! - it is written whole to a temporary file and renamed into place, so a reader sees an old
//!   sidecar or a new one, never a mix.
//!
//! Format (little-endian): the magic `CWINDEX4`; the covered byte length (u64) and line count
//! (u32); offset, length and hash of the header line and of the last covered line; the records
//! (line, offset, length, count, kind, flags, id, parent, `head` target); the duplicates (line,
//! id); the malformed, zero-prefixed and coerced lines; a checksum of everything before it.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod codec;

use codec::{put_opt_str, put_str, put_u32, Hashing, Out, Reader};

use crate::hash::{hash, Checksum};

use crate::journal::{DagProblem, Journal};
use crate::kind_code::KindCode;
use crate::line::Added;
use crate::load_error::{LoadError, Malformed};
use crate::meta::Meta;
use crate::payload::Payload;
use crate::scan::{read_entry, Prefix, Scan};
use crate::text::{read_exact_at, Source};

/// Version 4: the flags hold [`crate::flags::PLAN_MODE`] and the kinds `side`; an older sidecar
/// lacks them (version 3 also [`crate::flags::PLAN`]), so it is not used (the file is read in
/// full once and the sidecar written again).
const MAGIC: &[u8; 8] = b"CWINDEX4";

/// A sidecar is (re)written when a load scanned at least this many bytes the sidecar did not
/// cover: smaller files and tails are scanned faster than the sidecar is written.
pub(crate) const MIN_NEW_BYTES: u64 = 1 << 20;

/// `<journal stem>.index` beside the journal.
pub fn index_path(journal: &Path) -> PathBuf {
    journal.with_extension("index")
}

/// Scans `file` (of `len` bytes) through its index sidecar: the prefix the sidecar covers is
/// taken from it and only the bytes after it are read. The sidecar is (re)written when the
/// scan read much it did not cover.
pub(crate) fn scan_indexed(path: &Path, file: &File, len: u64) -> Result<Scan, LoadError> {
    scan_indexed_split(path, file, len, crate::scan::PARALLEL_MIN)
}

/// [`scan_indexed`], the file scanned on two threads from `parallel_min` bytes on.
pub(crate) fn scan_indexed_split(
    path: &Path,
    file: &File,
    len: u64,
    parallel_min: u64,
) -> Result<Scan, LoadError> {
    let index = index_path(path);
    let source = crate::scan::open_source(path)?;
    let prefix = read(&index, file, len, &source);
    let start = prefix.as_ref().map_or(0, |p| p.covered);
    let mut scan = crate::scan::scan_after(path, file, len, prefix, source, parallel_min)?;
    if len - start >= MIN_NEW_BYTES {
        scan.index_to = Some(index);
        scan.covered = len;
    }
    Ok(scan)
}

/// The prefix of `file` (of `len` bytes) the sidecar at `path` describes, its entries to be
/// read from `source`, when the sidecar exists, is intact and still matches the file. `None` in
/// every other case.
pub(crate) fn read(path: &Path, file: &File, len: u64, source: &Arc<Source>) -> Option<Prefix> {
    // Only a regular file: opening a FIFO put in its place would wait for a writer forever.
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let index = File::open(path).ok()?;
    let meta = index.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let size = meta.len();
    let body_len = size.checked_sub(8)?;
    let mut r = Reader {
        inner: BufReader::with_capacity(
            1 << 16,
            Hashing { inner: (&index).take(body_len), sum: Checksum::new() },
        ),
        scratch: [Vec::new(), Vec::new(), Vec::new()],
    };
    if &r.array::<8>()? != MAGIC {
        return None;
    }
    let (covered, line_count) = read_covered(&mut r, file, len)?;
    let journal = read_records(&mut r, body_len, source)?;
    let malformed = (0..r.u32()?)
        .map(|_| Some(Malformed { line: r.u32()?, error: r.str(0)?.to_owned() }))
        .collect::<Option<Vec<_>>>()?;
    let nul_prefixed = (0..r.u32()?).map(|_| r.u32()).collect::<Option<Vec<_>>>()?;
    let coerced = (0..r.u32()?)
        .map(|_| {
            let line = r.u32()?;
            let notes = (0..r.u32()?).map(|_| Some(r.str(0)?.to_owned())).collect::<Option<_>>()?;
            Some((line, notes))
        })
        .collect::<Option<Vec<_>>>()?;
    checksum_matches(r, &index, body_len)?;
    let journal = journal.finish().ok()?;
    Some(Prefix { journal, malformed, nul_prefixed, coerced, covered, line_count })
}

/// The sidecar being read: its body, every byte added to the checksum.
type BodyReader<'a> = Reader<Hashing<std::io::Take<&'a File>>>;

/// The covered byte length and line count, when `file` (of `len` bytes) still holds the same
/// header and last covered line where the sidecar says.
fn read_covered(r: &mut BodyReader<'_>, file: &File, len: u64) -> Option<(u64, u32)> {
    let covered = r.u64()?;
    let line_count = r.u32()?;
    let (first_offset, first_len, header_hash) = (r.u64()?, r.u32()?, r.u64()?);
    let (last_offset, last_len, last_hash) = (r.u64()?, r.u32()?, r.u64()?);
    // The file must still hold the same header and last covered line where they were (checked
    // before anything is allocated by the sidecar's word: it is not trusted yet).
    if covered > len
        || last_offset.checked_add(u64::from(last_len) + 1) != Some(covered)
        || first_offset.checked_add(u64::from(first_len)).is_none_or(|end| end > covered)
    {
        return None;
    }
    let mut head = vec![0u8; first_len as usize];
    read_exact_at(file, &mut head, first_offset).ok()?;
    let mut tail = vec![0u8; last_len as usize + 1];
    read_exact_at(file, &mut tail, last_offset).ok()?;
    if hash(&head) != header_hash || tail.pop() != Some(b'\n') || hash(&tail) != last_hash {
        return None;
    }
    Some((covered, line_count))
}

/// The journal of the covered lines (not finished yet), streamed from the records and the
/// duplicates into its index; the header entry read from `source`.
fn read_records(r: &mut BodyReader<'_>, body_len: u64, source: &Arc<Source>) -> Option<Journal> {
    let records = r.u32()? as usize;
    let duplicates = r.u32()? as usize;
    // A record takes at least 30 bytes: a damaged count cannot reserve more than the file holds.
    let room = usize::try_from(body_len / 30).unwrap_or(usize::MAX);
    let mut journal = Journal::building(records.min(room), Some(source.clone()));
    let mut dups: Vec<(u32, String)> = Vec::with_capacity(duplicates.min(1 << 16));
    for _ in 0..duplicates {
        let line = r.u32()?;
        dups.push((line, r.str(0)?.to_owned()));
    }
    let mut dups = dups.into_iter().peekable();
    for i in 0..records {
        let line = r.u32()?;
        let (offset, len, tokens) = (r.u64()?, r.u32()?, r.u32()?);
        let kind = KindCode::from_byte(r.u8()?)?;
        let flags = r.u8()?;
        let meta = Meta::from_parts(offset, len, tokens, kind, flags);
        // The header is held: it is the journal's first entry and names the session.
        let entry = if i == 0 {
            let header = read_entry(source, offset, len).ok()?;
            matches!(header.payload, Payload::Header(_)).then(|| Box::new(header))
        } else {
            None
        };
        while let Some((dup_line, id)) = dups.next_if(|(l, _)| *l < line) {
            journal.note_duplicate(dup_line, &id);
        }
        let (id, parent, head_to) = r.three_strs()?;
        journal.add(Added { line, id, parent, meta, head_to }, entry);
    }
    for (dup_line, id) in dups {
        journal.note_duplicate(dup_line, &id);
    }
    Some(journal)
}

/// `Some` when every byte of the body was read and the checksum after it (in `index`, at
/// `body_len`) matches.
fn checksum_matches(mut r: BodyReader<'_>, index: &File, body_len: u64) -> Option<()> {
    // Every byte of the body read, and the checksum after it matches.
    let mut rest = [0u8; 1];
    if r.inner.read(&mut rest).ok()? != 0 {
        return None;
    }
    let sum = r.inner.into_inner().sum.finish();
    let mut stored = [0u8; 8];
    read_exact_at(index, &mut stored, body_len).ok()?;
    (u64::from_le_bytes(stored) == sum).then_some(())
}

/// Where a session open for appending puts its next line, and how far its sidecar reaches: so
/// that the session can write the sidecar when it closes, and reopening it reads nothing but the
/// sidecar and the lines it needs.
#[derive(Debug)]
pub(crate) struct Tracker {
    /// The file's length: where the next line goes.
    end: u64,
    /// The next line's number.
    next_line: u32,
    /// How far the sidecar on disk reaches.
    covered: u64,
    malformed: Vec<Malformed>,
    nul_prefixed: Vec<u32>,
    coerced: Vec<(u32, Vec<String>)>,
    /// False when the file may not be what the journal says (opened read-only).
    enabled: bool,
}

impl Tracker {
    /// A session file of `end` bytes and `lines` lines whose sidecar reaches `covered`, with what
    /// loading it reported.
    pub(crate) fn opened(end: u64, lines: u32, covered: u64, reported: &Reported<'_>) -> Tracker {
        Tracker {
            end,
            next_line: lines + 1,
            covered,
            malformed: reported.malformed.to_vec(),
            nul_prefixed: reported.nul_prefixed.to_vec(),
            coerced: reported.coerced.to_vec(),
            enabled: true,
        }
    }

    /// A session file that appends nothing (opened read-only).
    pub(crate) fn disabled() -> Tracker {
        Tracker {
            end: 0,
            next_line: 1,
            covered: 0,
            malformed: Vec::new(),
            nul_prefixed: Vec::new(),
            coerced: Vec::new(),
            enabled: false,
        }
    }

    /// Places a line of `bytes` bytes (its newline included): its offset, JSON length and line
    /// number.
    pub(crate) fn place(&mut self, bytes: usize) -> (u64, u32, u32) {
        let at =
            (self.end, u32::try_from(bytes.saturating_sub(1)).unwrap_or(u32::MAX), self.next_line);
        self.end += bytes as u64;
        self.next_line += 1;
        at
    }

    /// Writes the sidecar of `journal` (the session at `path`, just closed) when the session
    /// appended much it does not cover and the file is exactly what the journal says.
    pub(crate) fn close(&self, path: &Path, journal: &Journal) {
        let same = std::fs::metadata(path).is_ok_and(|m| m.len() == self.end);
        if !self.enabled || !same || self.end.saturating_sub(self.covered) < MIN_NEW_BYTES {
            return;
        }
        let reported = Reported {
            malformed: &self.malformed,
            nul_prefixed: &self.nul_prefixed,
            coerced: &self.coerced,
            unterminated: None,
        };
        write(&index_path(path), journal, &reported);
    }
}

/// What a load reported besides the journal: written to the sidecar with it.
pub(crate) struct Reported<'a> {
    pub(crate) malformed: &'a [Malformed],
    pub(crate) nul_prefixed: &'a [u32],
    pub(crate) coerced: &'a [(u32, Vec<String>)],
    /// The final line when it has no newline (never covered).
    pub(crate) unterminated: Option<u32>,
}

impl Reported<'_> {
    /// Nothing reported (a new file).
    pub(crate) fn none() -> Reported<'static> {
        Reported { malformed: &[], nul_prefixed: &[], coerced: &[], unterminated: None }
    }
}

/// Writes the sidecar at `path` for `journal` (just loaded, nothing appended yet): everything up
/// to its last entry whose line ends with a newline. Best effort: a sidecar that cannot be
/// written is simply not there.
pub(crate) fn write(path: &Path, journal: &Journal, reported: &Reported<'_>) {
    if let Err(e) = try_write(path, journal, reported) {
        tracing::debug!(path = %path.display(), error = %e, "the index sidecar was not written");
    }
}

fn try_write(path: &Path, journal: &Journal, reported: &Reported<'_>) -> std::io::Result<()> {
    let Some(source) = journal.source() else { return Ok(()) };
    // The entries read from the file (a live session's appends follow them).
    let on_disk = (0..journal.len() as u32).take_while(|&p| journal.meta_at(p).on_disk()).count();
    let Some(last) =
        (0..on_disk as u32).rev().find(|&p| Some(journal.line_at(p)) != reported.unterminated)
    else {
        return Ok(());
    };
    let (first, last_meta) = (journal.meta_at(0), journal.meta_at(last));
    let covered = last_meta.offset() + u64::from(last_meta.len()) + 1;
    let line_count = journal.line_at(last);
    let mut head = vec![0u8; first.len() as usize];
    read_exact_at(&source.file, &mut head, first.offset())?;
    let mut tail = vec![0u8; last_meta.len() as usize];
    read_exact_at(&source.file, &mut tail, last_meta.offset())?;

    crate::replace::replace_with(path, crate::replace::PRIVATE, |file| {
        let mut w = Out { file, sum: Checksum::new() };
        write_body(
            &mut w,
            journal,
            reported,
            Covered { last, covered, line_count, head: &head, tail: &tail },
        )?;
        let sum = w.sum.finish();
        w.file.write_all(&sum.to_le_bytes())
    })
}

/// What the sidecar covers.
struct Covered<'a> {
    last: u32,
    covered: u64,
    line_count: u32,
    head: &'a [u8],
    tail: &'a [u8],
}

/// The sidecar's body, streamed to `w`.
fn write_body(
    w: &mut Out<'_>,
    journal: &Journal,
    reported: &Reported<'_>,
    c: Covered<'_>,
) -> std::io::Result<()> {
    let Covered { last, covered, line_count, head, tail } = c;
    let (first, last_meta) = (journal.meta_at(0), journal.meta_at(last));
    w.bytes(MAGIC)?;
    w.bytes(&covered.to_le_bytes())?;
    w.bytes(&line_count.to_le_bytes())?;
    w.bytes(&first.offset().to_le_bytes())?;
    w.bytes(&first.len().to_le_bytes())?;
    w.bytes(&hash(head).to_le_bytes())?;
    w.bytes(&last_meta.offset().to_le_bytes())?;
    w.bytes(&last_meta.len().to_le_bytes())?;
    w.bytes(&hash(tail).to_le_bytes())?;
    write_records(w, journal, last, line_count)?;
    write_reported(w, reported, line_count)
}

/// The duplicates and the records of the entries up to `last` (lines up to `line_count`).
fn write_records(
    w: &mut Out<'_>,
    journal: &Journal,
    last: u32,
    line_count: u32,
) -> std::io::Result<()> {
    let within = |line: u32| line <= line_count;
    // Parents that did not resolve are kept as written, so the replay reports them again.
    let mut dangling: HashMap<u32, &str> = HashMap::new();
    let mut duplicates = Vec::new();
    for (line, problem) in journal.problems() {
        match problem {
            DagProblem::DanglingParent { parent, .. } => {
                dangling.insert(*line, parent.as_str());
            }
            DagProblem::DuplicateId { id } if within(*line) => duplicates.push((*line, id)),
            _ => {}
        }
    }
    put_u32(w, last as usize + 1)?;
    put_u32(w, duplicates.len())?;
    for (line, id) in duplicates {
        w.bytes(&line.to_le_bytes())?;
        put_str(w, id.as_str())?;
    }
    for pos in 0..=last {
        let m = journal.meta_at(pos);
        let line = journal.line_at(pos);
        w.bytes(&line.to_le_bytes())?;
        w.bytes(&m.offset().to_le_bytes())?;
        w.bytes(&m.len().to_le_bytes())?;
        w.bytes(&m.raw_tokens().to_le_bytes())?;
        w.bytes(&[m.kind() as u8])?;
        w.bytes(&[m.flags()])?;
        put_str(w, &journal.id_at(pos))?;
        match journal.parent_at(pos) {
            Some(p) => put_str(w, &journal.id_at(p))?,
            None => put_opt_str(w, dangling.get(&line).copied())?,
        }
        let head_to = match m.kind() {
            KindCode::Head => match &journal.read_entry(pos).payload {
                Payload::Head(h) => Some(h.to.as_str().to_owned()),
                _ => None,
            },
            _ => None,
        };
        put_opt_str(w, head_to.as_deref())?;
    }
    Ok(())
}

/// The malformed, zero-prefixed and coerced lines among the first `line_count`.
fn write_reported(
    w: &mut Out<'_>,
    reported: &Reported<'_>,
    line_count: u32,
) -> std::io::Result<()> {
    let within = |line: u32| line <= line_count;
    let malformed: Vec<_> = reported.malformed.iter().filter(|m| within(m.line)).collect();
    put_u32(w, malformed.len())?;
    for m in malformed {
        w.bytes(&m.line.to_le_bytes())?;
        put_str(w, &m.error)?;
    }
    let nul: Vec<_> = reported.nul_prefixed.iter().filter(|&&l| within(l)).collect();
    put_u32(w, nul.len())?;
    for l in nul {
        w.bytes(&l.to_le_bytes())?;
    }
    let coerced: Vec<_> = reported.coerced.iter().filter(|(l, _)| within(*l)).collect();
    put_u32(w, coerced.len())?;
    for (l, notes) in coerced {
        w.bytes(&l.to_le_bytes())?;
        put_u32(w, notes.len())?;
        for n in notes {
            put_str(w, n)?;
        }
    }
    Ok(())
}
