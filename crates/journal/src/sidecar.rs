//! The index sidecar: `<session>.index` beside a journal, so that reopening a session reads only
//! the bytes appended since it was last indexed.
//!
//! It holds what a scan of a prefix of the file found, exactly as the scan found it: for every
//! valid line its number, id, parent, `head` target and [`Meta`] (kind, flags, stored count,
//! where the line is), and the malformed, zero-prefixed and coerced lines with their messages.
//! The journal is rebuilt from it by the same HEAD replay as from a scan, so a journal opened
//! through its sidecar equals one opened by reading every line (a property test checks this).
//!
//! Invariants:
//! - the sidecar is a cache: it is never required, never trusted without checking, and the
//!   journal is never changed because of it. It is used only when the file still starts with
//!   the same header line, is at least as long as the covered prefix, and holds the same last
//!   covered line at the same place (append-only files pass; a replaced or rewritten file does
//!   not), and when its own checksum matches. Anything else reads the file in full.
//! - it covers whole lines only, up to the last valid line that ends with a newline: what
//!   follows (a torn or unterminated tail) is scanned again on every open, since its meaning
//!   depends on what is appended after it.
//! - it is written whole to a temporary file and renamed into place, so a reader sees an old
//!   sidecar or a new one, never a mix.
//!
//! Format (little-endian): the magic `CWINDEX1`; the covered byte length (u64); the lines it
//! covers (u32); hashes of the header line and the last covered line (u64 each); the valid lines;
//! the malformed, zero-prefixed and coerced lines; a checksum of everything before it (u64).

use std::fs::File;
use std::hash::Hasher;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::entry::EntryId;
use crate::journal::{IdHasher, Line};
use crate::load::{Malformed, Scan, Tail};
use crate::meta::{KindCode, Meta};
use crate::text::read_exact_at;

const MAGIC: &[u8; 8] = b"CWINDEX1";

/// A sidecar is (re)written when a load scanned at least this many bytes the sidecar did not
/// cover: smaller files and tails are scanned faster than the sidecar is written.
pub(crate) const MIN_NEW_BYTES: u64 = 1 << 20;

/// `<journal stem>.index` beside the journal.
pub fn index_path(journal: &Path) -> PathBuf {
    journal.with_extension("index")
}

fn hash(bytes: &[u8]) -> u64 {
    let mut h = IdHasher::default();
    h.write(bytes);
    h.write_u64(bytes.len() as u64);
    h.finish()
}

/// What a sidecar describes: the scan of `..covered` (without a tail or a source).
pub(crate) struct Prefix {
    pub(crate) scan: Scan,
    pub(crate) covered: u64,
}

/// The prefix of `file` (of `len` bytes) the sidecar at `path` describes, when the sidecar
/// exists, is intact and still matches the file. `None` in every other case.
pub(crate) fn read(path: &Path, file: &File, len: u64) -> Option<Prefix> {
    let bytes = std::fs::read(path).ok()?;
    let (body, sum) = bytes.split_at(bytes.len().checked_sub(8)?);
    if hash(body).to_le_bytes() != sum {
        return None;
    }
    let mut r = Reader { b: body };
    if r.take(8)? != MAGIC {
        return None;
    }
    let covered = r.u64()?;
    let line_count = r.u32()?;
    let header_hash = r.u64()?;
    let last_hash = r.u64()?;
    if covered > len || covered == 0 {
        return None;
    }
    let n = r.u32()? as usize;
    let mut valid = Vec::with_capacity(n.min(body.len() / 32));
    for _ in 0..n {
        let line = r.u32()?;
        let offset = r.u64()?;
        let len = r.u32()?;
        let tokens = r.u32()?;
        let kind = KindCode::from_byte(r.u8()?)?;
        let flags = r.u8()?;
        let id = EntryId::from_string(r.str()?);
        let parent = r.opt_str()?.map(EntryId::from_string);
        let head_to = r.opt_str()?.map(EntryId::from_string);
        let meta = Meta::from_parts(offset, len, tokens, kind, flags);
        valid.push(Line { line, id, parent, meta, head_to, entry: None });
    }
    let malformed = (0..r.u32()?)
        .map(|_| Some(Malformed { line: r.u32()?, error: r.str()? }))
        .collect::<Option<Vec<_>>>()?;
    let nul_prefixed = (0..r.u32()?).map(|_| r.u32()).collect::<Option<Vec<_>>>()?;
    let coerced = (0..r.u32()?)
        .map(|_| {
            let line = r.u32()?;
            let notes = (0..r.u32()?).map(|_| r.str()).collect::<Option<Vec<_>>>()?;
            Some((line, notes))
        })
        .collect::<Option<Vec<_>>>()?;
    if !r.b.is_empty() {
        return None;
    }
    // The file must still hold the same header and last covered line where they were.
    let first = valid.first()?;
    let last = valid.last()?;
    if first.line != 1 || last.meta.offset + u64::from(last.meta.len) + 1 != covered {
        return None;
    }
    let mut head = vec![0u8; first.meta.len as usize];
    read_exact_at(file, &mut head, first.meta.offset).ok()?;
    let mut tail = vec![0u8; last.meta.len as usize + 1];
    read_exact_at(file, &mut tail, last.meta.offset).ok()?;
    if hash(&head) != header_hash || tail.pop() != Some(b'\n') || hash(&tail) != last_hash {
        return None;
    }
    let scan = Scan {
        valid,
        malformed,
        nul_prefixed,
        coerced,
        tail: Tail::Clean,
        line_count,
        source: None,
    };
    Some(Prefix { scan, covered })
}

/// Writes the sidecar at `path` for `scan` of `file`: everything up to its last valid line that
/// ends with a newline. Best effort: a sidecar that cannot be written is simply not there.
pub(crate) fn write(path: &Path, file: &File, scan: &Scan) {
    if let Err(e) = try_write(path, file, scan) {
        tracing::debug!(path = %path.display(), error = %e, "the index sidecar was not written");
    }
}

fn try_write(path: &Path, file: &File, scan: &Scan) -> std::io::Result<()> {
    let unterminated = match scan.tail {
        Tail::MissingNewline { line } => Some(line),
        _ => None,
    };
    let Some(last) = scan.valid.iter().rposition(|l| Some(l.line) != unterminated) else {
        return Ok(());
    };
    let lines = &scan.valid[..=last];
    let (first, last) = (&lines[0], &lines[last]);
    if first.line != 1 || !first.meta.on_disk() || !last.meta.on_disk() {
        return Ok(());
    }
    let covered = last.meta.offset + u64::from(last.meta.len) + 1;
    let line_count = last.line;
    let mut head = vec![0u8; first.meta.len as usize];
    read_exact_at(file, &mut head, first.meta.offset)?;
    let mut tail = vec![0u8; last.meta.len as usize];
    read_exact_at(file, &mut tail, last.meta.offset)?;

    let mut w = Vec::with_capacity(lines.len() * 96 + 64);
    w.extend_from_slice(MAGIC);
    w.extend_from_slice(&covered.to_le_bytes());
    w.extend_from_slice(&line_count.to_le_bytes());
    w.extend_from_slice(&hash(&head).to_le_bytes());
    w.extend_from_slice(&hash(&tail).to_le_bytes());
    put_u32(&mut w, lines.len());
    for l in lines {
        w.extend_from_slice(&l.line.to_le_bytes());
        w.extend_from_slice(&l.meta.offset.to_le_bytes());
        w.extend_from_slice(&l.meta.len.to_le_bytes());
        w.extend_from_slice(&l.meta.raw_tokens().to_le_bytes());
        w.push(l.meta.kind as u8);
        w.push(l.meta.flags);
        put_str(&mut w, l.id.as_str());
        put_opt_str(&mut w, l.parent.as_ref().map(EntryId::as_str));
        put_opt_str(&mut w, l.head_to.as_ref().map(EntryId::as_str));
    }
    let within = |line: u32| line <= line_count;
    let malformed: Vec<_> = scan.malformed.iter().filter(|m| within(m.line)).collect();
    put_u32(&mut w, malformed.len());
    for m in malformed {
        w.extend_from_slice(&m.line.to_le_bytes());
        put_str(&mut w, &m.error);
    }
    let nul: Vec<_> = scan.nul_prefixed.iter().filter(|&&l| within(l)).collect();
    put_u32(&mut w, nul.len());
    for l in nul {
        w.extend_from_slice(&l.to_le_bytes());
    }
    let coerced: Vec<_> = scan.coerced.iter().filter(|(l, _)| within(*l)).collect();
    put_u32(&mut w, coerced.len());
    for (l, notes) in coerced {
        w.extend_from_slice(&l.to_le_bytes());
        put_u32(&mut w, notes.len());
        for n in notes {
            put_str(&mut w, n);
        }
    }
    let sum = hash(&w);
    w.extend_from_slice(&sum.to_le_bytes());

    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let written = File::create(&tmp).and_then(|mut f| f.write_all(&w));
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

fn put_u32(w: &mut Vec<u8>, n: usize) {
    w.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
}

fn put_str(w: &mut Vec<u8>, s: &str) {
    put_u32(w, s.len());
    w.extend_from_slice(s.as_bytes());
}

fn put_opt_str(w: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => put_str(w, s),
        None => w.extend_from_slice(&u32::MAX.to_le_bytes()),
    }
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.b.len() < n {
            return None;
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn str(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        Some(std::str::from_utf8(self.take(n)?).ok()?.to_owned())
    }

    fn opt_str(&mut self) -> Option<Option<String>> {
        let n = self.u32()?;
        if n == u32::MAX {
            return Some(None);
        }
        Some(Some(std::str::from_utf8(self.take(n as usize)?).ok()?.to_owned()))
    }
}
