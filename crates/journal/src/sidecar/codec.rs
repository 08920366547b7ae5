//! The sidecar's byte encoding: a writer that feeds the checksum ([`crate::hash`]), and a
//! reader of little-endian fields and length-prefixed strings that refuses anything short.

use std::io::{BufReader, Read, Write};

use crate::hash::Checksum;

/// The sidecar being written: to its (buffered) file, every byte added to the checksum.
pub(super) struct Out<'a> {
    pub(super) file: &'a mut dyn Write,
    pub(super) sum: Checksum,
}

impl Out<'_> {
    pub(super) fn bytes(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.sum.update(b);
        self.file.write_all(b)
    }
}

pub(super) fn put_u32(w: &mut Out<'_>, n: usize) -> std::io::Result<()> {
    w.bytes(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes())
}

pub(super) fn put_str(w: &mut Out<'_>, s: &str) -> std::io::Result<()> {
    put_u32(w, s.len())?;
    w.bytes(s.as_bytes())
}

pub(super) fn put_opt_str(w: &mut Out<'_>, s: Option<&str>) -> std::io::Result<()> {
    match s {
        Some(s) => put_str(w, s),
        None => w.bytes(&u32::MAX.to_le_bytes()),
    }
}

/// Reads through to `inner`, adding every byte to the checksum.
pub(super) struct Hashing<R> {
    pub(super) inner: R,
    pub(super) sum: Checksum,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.sum.update(&buf[..n]);
        Ok(n)
    }
}

/// Decodes the sidecar's fields from a buffered stream; `None` on anything short or invalid.
pub(super) struct Reader<R> {
    pub(super) inner: BufReader<R>,
    /// Reused buffers for the strings of one record.
    pub(super) scratch: [Vec<u8>; 3],
}

impl<R: Read> Reader<R> {
    pub(super) fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let mut b = [0u8; N];
        self.inner.read_exact(&mut b).ok()?;
        Some(b)
    }

    pub(super) fn u8(&mut self) -> Option<u8> {
        Some(self.array::<1>()?[0])
    }

    pub(super) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.array()?))
    }

    pub(super) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.array()?))
    }

    /// Reads an optional string into scratch buffer `slot`; `Some(false)` when absent.
    fn fill(&mut self, slot: usize) -> Option<bool> {
        let n = self.u32()?;
        if n == u32::MAX {
            return Some(false);
        }
        let buf = &mut self.scratch[slot];
        buf.clear();
        // Read in steps, so that a corrupt length cannot ask for a huge allocation up front.
        (&mut self.inner).take(u64::from(n)).read_to_end(buf).ok()?;
        (buf.len() == n as usize && std::str::from_utf8(buf).is_ok()).then_some(true)
    }

    fn text(&self, slot: usize) -> &str {
        std::str::from_utf8(&self.scratch[slot]).unwrap_or_default()
    }

    pub(super) fn str(&mut self, slot: usize) -> Option<&str> {
        self.fill(slot)?.then_some(())?;
        Some(self.text(slot))
    }

    /// A record's id, parent and `head` target.
    pub(super) fn three_strs(&mut self) -> Option<(&str, Option<&str>, Option<&str>)> {
        self.fill(0)?.then_some(())?;
        let parent = self.fill(1)?;
        let head_to = self.fill(2)?;
        Some((self.text(0), parent.then(|| self.text(1)), head_to.then(|| self.text(2))))
    }
}
