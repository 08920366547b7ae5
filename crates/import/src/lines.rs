//! Reading a source file line by line with bounded memory, in two passes.
//!
//! Pass 1 ([`Lines::scan`]) streams every line once through a reused buffer, so memory is
//! bounded by the longest line, never by the file; the caller keeps only a small index per line
//! (its [`LineRef`] and a few ids). Pass 2 ([`Lines::read`]) reads back just the lines the
//! caller decided to convert, in the order it decided. Only the bytes present when the import
//! started are read: lines the other tool appends meanwhile are not part of this import. A final
//! line without its newline is used when it is complete JSON and reported as a torn tail
//! otherwise. The file is opened read-only and never modified.

use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};

/// Where a complete line sits in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LineRef {
    pub offset: u64,
    pub len: usize,
}

/// The longest line an import reads. No line of a real session comes near it; a longer one
/// (a hostile or broken file) is skipped without ever being held in memory, and counted.
pub(crate) const MAX_LINE_BYTES: usize = 64 << 20;

/// What pass 1 saw besides the lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ScanEnd {
    /// Bytes of a torn final line, if there was one.
    pub torn_bytes: Option<u64>,
    /// Lines longer than [`MAX_LINE_BYTES`], skipped unread.
    pub oversized: u64,
}

/// Reads the next line of `reader` into `buf` (cleared first), keeping at most `max` bytes of
/// it: returns how many bytes the whole line took (0 at the end) and whether it was longer than
/// `max` (then the rest of it was consumed, not kept). Memory stays bounded by `max` whatever
/// the line.
pub(crate) fn read_line_bounded(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<(usize, bool)> {
    buf.clear();
    let (mut total, mut cut) = (0, false);
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok((total, cut));
        }
        let (n, done) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        buf.extend_from_slice(&available[..n.min(room)]);
        cut |= n > room;
        total += n;
        reader.consume(n);
        if done {
            return Ok((total, cut));
        }
    }
}

/// A source being imported.
pub(crate) struct Lines<R> {
    reader: R,
    len: u64,
}

impl<R: Read + Seek> Lines<R> {
    /// Wraps `reader`, fixing the length to read at its current end.
    pub fn new(mut reader: R) -> io::Result<Lines<R>> {
        let len = reader.seek(SeekFrom::End(0))?;
        Ok(Lines { reader, len })
    }

    /// Pass 1: calls `each(line_ref, bytes)` for every non-blank complete line, in file order
    /// (`bytes` without the newline or a trailing `\r`).
    pub fn scan(&mut self, mut each: impl FnMut(LineRef, &[u8])) -> io::Result<ScanEnd> {
        self.reader.seek(SeekFrom::Start(0))?;
        let mut buffered = BufReader::with_capacity(1 << 20, (&mut self.reader).take(self.len));
        let mut buf = Vec::new();
        let mut offset = 0u64;
        let mut end = ScanEnd::default();
        loop {
            let (n, cut) = read_line_bounded(&mut buffered, &mut buf, MAX_LINE_BYTES)?;
            if n == 0 {
                break;
            }
            let start = offset;
            offset += n as u64;
            if cut {
                end.oversized += 1;
                continue;
            }
            let complete = buf.last() == Some(&b'\n');
            let line = trim_line(&buf);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if !complete && serde_json::from_slice::<serde::de::IgnoredAny>(line).is_err() {
                end.torn_bytes = Some(n as u64);
                break;
            }
            each(LineRef { offset: start, len: line.len() }, line);
        }
        Ok(end)
    }

    /// Pass 2: the bytes of one line found by [`Lines::scan`], into `buf`.
    pub fn read(&mut self, line: LineRef, buf: &mut Vec<u8>) -> io::Result<()> {
        buf.clear();
        buf.resize(line.len, 0);
        self.reader.seek(SeekFrom::Start(line.offset))?;
        self.reader.read_exact(buf)
    }
}

fn trim_line(buf: &[u8]) -> &[u8] {
    let mut line = buf;
    while let Some((&last, rest)) = line.split_last() {
        if last == b'\n' || last == b'\r' {
            line = rest;
        } else {
            break;
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn scan(text: &str) -> (Vec<String>, ScanEnd) {
        let mut lines = Lines::new(Cursor::new(text.as_bytes().to_vec())).unwrap();
        let mut refs = Vec::new();
        let end = lines.scan(|r, _| refs.push(r)).unwrap();
        let mut out = Vec::new();
        let mut buf = Vec::new();
        for r in refs {
            lines.read(r, &mut buf).unwrap();
            out.push(String::from_utf8(buf.clone()).unwrap());
        }
        (out, end)
    }

    #[test]
    fn a_line_past_the_bound_is_consumed_without_being_kept() {
        let long = format!("{}\nnext\n", "x".repeat(100));
        let mut reader = BufReader::with_capacity(8, Cursor::new(long.into_bytes()));
        let mut buf = Vec::new();
        assert_eq!(read_line_bounded(&mut reader, &mut buf, 16).unwrap(), (101, true));
        assert_eq!(buf.len(), 16, "only the bound is kept");
        assert_eq!(read_line_bounded(&mut reader, &mut buf, 16).unwrap(), (5, false));
        assert_eq!(buf, b"next\n");
        assert_eq!(read_line_bounded(&mut reader, &mut buf, 16).unwrap(), (0, false));
    }

    #[test]
    fn lines_are_read_back_by_reference_and_blank_lines_skipped() {
        let (lines, end) = scan("{\"a\":1}\r\n\n  \n{\"b\":2}\n");
        assert_eq!(lines, ["{\"a\":1}", "{\"b\":2}"]);
        assert_eq!(end.torn_bytes, None);
    }

    #[test]
    fn a_torn_tail_is_reported_and_a_complete_one_used() {
        let (lines, end) = scan("{\"a\":1}\n{\"b\":");
        assert_eq!(lines, ["{\"a\":1}"]);
        assert_eq!(end.torn_bytes, Some(5));
        let (lines, end) = scan("{\"a\":1}\n{\"b\":2}");
        assert_eq!(lines, ["{\"a\":1}", "{\"b\":2}"]);
        assert_eq!(end.torn_bytes, None);
    }
}
