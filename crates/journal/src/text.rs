//! [`Text`]: a large, immutable, cheaply cloned string (tool output).
//!
//! Tool results are most of a journal's bytes, and most of them are never read again: after a
//! compaction they are covered, and even in the view only the newest ones matter. So when a
//! journal is loaded from a file, the output of a `tool_result` line of [`LAZY_MIN`] bytes or
//! more is not decoded: a
//! `Text` then records where the JSON string lies in the file and decodes it (one positional
//! read) the first time it is asked for, caching the result. Opening a 200 MB session thus never
//! holds 200 MB of tool output in memory. (How the loader finds the output without parsing
//! it: `lazy::lazy_tool_result`.) The file is append-only, so the recorded position
//! stays valid for as long as the session exists.
//!
//! Clones share the decoded text, so the view, the engine and the UI all hand the same output
//! around by reference count.

use std::fmt;
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// Lines at least this long have their tool output left in the file until first read.
pub const LAZY_MIN: usize = 512;

/// An immutable string shared by reference count. Serializes as a plain JSON string.
#[derive(Clone)]
pub struct Text(Repr);

#[derive(Clone)]
enum Repr {
    Mem(Arc<str>),
    Disk(Arc<DiskText>),
}

/// A JSON string at `offset..offset + len` of `source`, decoded on first use.
struct DiskText {
    source: Arc<Source>,
    offset: u64,
    len: usize,
    /// The text, or (when the file could not be read back) a one-line notice in its place.
    decoded: OnceLock<Result<Box<str>, Box<str>>>,
    /// The decoded length, when it was needed without the text (pruning stubs).
    decoded_len: OnceLock<usize>,
}

/// The file lazily decoded texts are read from (its own read-only handle).
#[derive(Debug)]
pub(crate) struct Source {
    pub(crate) file: File,
    pub(crate) path: PathBuf,
}

impl Text {
    /// The text (decoded from the file on first use; a read failure yields a one-line notice
    /// in place of the output, and is logged).
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Mem(s) => s,
            Repr::Disk(d) => match d.decoded.get_or_init(|| d.load()) {
                Ok(text) | Err(text) => text,
            },
        }
    }

    /// The text, or why it cannot be read back from the file: what a request is built from,
    /// so that an unreadable output fails the request instead of silently changing the prompt.
    pub fn try_str(&self) -> Result<&str, &str> {
        match &self.0 {
            Repr::Mem(s) => Ok(s),
            Repr::Disk(d) => match d.decoded.get_or_init(|| d.load()) {
                Ok(text) => Ok(text),
                Err(notice) => Err(notice),
            },
        }
    }

    /// A JSON string (with its quotes) at `offset..offset + len` of `source`.
    pub(crate) fn on_disk(source: Arc<Source>, offset: u64, len: usize) -> Text {
        Text(Repr::Disk(Arc::new(DiskText {
            source,
            offset,
            len,
            decoded: OnceLock::new(),
            decoded_len: OnceLock::new(),
        })))
    }

    /// The length in bytes. For a text still in the file, it is decoded once to measure it but
    /// not kept (a pruned output is measured for its stub on every render and never shown).
    pub fn byte_len(&self) -> usize {
        match &self.0 {
            Repr::Mem(s) => s.len(),
            Repr::Disk(d) => match d.decoded.get() {
                Some(Ok(s) | Err(s)) => s.len(),
                None => *d.decoded_len.get_or_init(|| match d.load() {
                    Ok(s) | Err(s) => s.len(),
                }),
            },
        }
    }

    /// The length in bytes when it is known without reading the file, else the length of the
    /// JSON string in the file (escapes included): an upper bound, close for real output. What
    /// planning (sizes, bounds) uses, so that sizing a long session reads none of its outputs.
    pub fn len_hint(&self) -> usize {
        match &self.0 {
            Repr::Mem(s) => s.len(),
            Repr::Disk(d) => match (d.decoded.get(), d.decoded_len.get()) {
                (Some(Ok(s) | Err(s)), _) => s.len(),
                (None, Some(n)) => *n,
                (None, None) => d.len.saturating_sub(2),
            },
        }
    }

    /// Checks that a text still in the file decodes, without keeping the result (for
    /// `journal check`). Texts in memory are always valid.
    pub fn check_decodes(&self) -> Result<(), String> {
        match &self.0 {
            Repr::Disk(d) if d.decoded.get().is_none() => {
                d.read().map(drop).map_err(|e| e.to_string())
            }
            _ => Ok(()),
        }
    }

    /// True while the text is still only in the file.
    pub fn is_on_disk(&self) -> bool {
        matches!(&self.0, Repr::Disk(d) if d.decoded.get().is_none())
    }
}

impl DiskText {
    fn load(&self) -> Result<Box<str>, Box<str>> {
        match self.read() {
            Ok(s) => Ok(s.into_boxed_str()),
            Err(e) => {
                tracing::error!(path = %self.source.path.display(), offset = self.offset, error = %e, "cannot read tool output back from the journal");
                Err(format!(
                    "[codewhale: this output could not be read back from the session file: {e}]"
                )
                .into_boxed_str())
            }
        }
    }

    fn read(&self) -> std::io::Result<String> {
        let mut buf = vec![0u8; self.len];
        read_exact_at(&self.source.file, &mut buf, self.offset)?;
        serde_json::from_slice::<String>(&buf).map_err(std::io::Error::other)
    }
}

/// Reads at `offset` without moving the file position (so threads can share the handle).
#[cfg(unix)]
pub(crate) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    loop {
        match std::os::unix::fs::FileExt::read_at(file, buf, offset) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}

/// Reads at `offset` (Windows moves the file position; callers never rely on it).
#[cfg(windows)]
pub(crate) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

pub(crate) fn read_exact_at(
    file: &File,
    mut buf: &mut [u8],
    mut offset: u64,
) -> std::io::Result<()> {
    while !buf.is_empty() {
        match read_at(file, buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Default for Text {
    fn default() -> Self {
        Text::from("")
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Text(Repr::Mem(s.into()))
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Text(Repr::Mem(s.into()))
    }
}

impl From<Arc<str>> for Text {
    fn from(s: Arc<str>) -> Self {
        Text(Repr::Mem(s))
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let k = crate::json_object::Key::deserialize(d)?;
        Ok(Text(Repr::Mem(k.0.into())))
    }
}
