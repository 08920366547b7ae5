//! [`Line`]: one valid journal line as a scan hands it to the journal (its id, parent, `head`
//! target and index record, and the entry when it is held), and [`Added`], the same borrowed.

use crate::entry::{Entry, EntryId};
use crate::meta::Meta;
use crate::payload::Payload;

/// One line as `Journal::add` takes it, borrowed from wherever it was decoded.
pub(crate) struct Added<'a> {
    pub(crate) line: u32,
    pub(crate) id: &'a str,
    pub(crate) parent: Option<&'a str>,
    pub(crate) meta: Meta,
    pub(crate) head_to: Option<&'a str>,
}

/// One valid line as the journal is built from it: what HEAD replay needs, and the entry itself
/// when it is at hand and worth holding.
#[derive(Debug, PartialEq)]
pub(crate) struct Line {
    /// 1-based line number in the file.
    pub(crate) line: u32,
    pub(crate) meta: Meta,
    /// The id, the parent and a `head` record's target, one after another in one allocation
    /// (a scan holds one `Line` per entry until the journal takes them).
    text: Box<str>,
    id_len: u32,
    /// `u32::MAX`: no parent.
    parent_len: u32,
    has_head_to: bool,
    /// The parsed entry, when held from the start.
    pub(crate) entry: Option<Box<Entry>>,
}

/// An id, a parent and a `head` target.
type LineIds<'a> = (&'a str, Option<&'a str>, Option<&'a str>);

impl Line {
    fn new(line: u32, meta: Meta, ids: LineIds<'_>) -> Line {
        let (id, parent, head_to) = ids;
        let mut text = String::with_capacity(
            id.len() + parent.map_or(0, str::len) + head_to.map_or(0, str::len),
        );
        text.push_str(id);
        text.push_str(parent.unwrap_or_default());
        text.push_str(head_to.unwrap_or_default());
        let len = |s: &str| u32::try_from(s.len()).unwrap_or(u32::MAX - 1);
        Line {
            line,
            meta,
            text: text.into_boxed_str(),
            id_len: len(id),
            parent_len: parent.map_or(u32::MAX, len),
            has_head_to: head_to.is_some(),
            entry: None,
        }
    }

    /// The line of `entry`, held.
    pub(crate) fn held(entry: Entry, line: u32, meta: Meta) -> Line {
        let to = match &entry.payload {
            Payload::Head(h) => Some(h.to.as_str()),
            _ => None,
        };
        let mut l = Line::new(
            line,
            meta,
            (entry.id.as_str(), entry.parent.as_ref().map(EntryId::as_str), to),
        );
        l.entry = Some(Box::new(entry));
        l
    }

    /// The line of `entry`, whose text is at `meta`'s place in the file: the entry is held only
    /// when its kind is one the journal consults as a whole.
    pub(crate) fn scanned(entry: Entry, line: u32, meta: Meta) -> Line {
        if meta.kind().is_kept() {
            return Line::held(entry, line, meta);
        }
        Line::new(line, meta, (entry.id.as_str(), entry.parent.as_ref().map(EntryId::as_str), None))
    }

    pub(crate) fn id(&self) -> &str {
        self.text.get(..self.id_len as usize).unwrap_or_default()
    }

    pub(crate) fn parent(&self) -> Option<&str> {
        let start = self.id_len as usize;
        let end = start + self.parent_len as usize;
        (self.parent_len != u32::MAX).then(|| self.text.get(start..end).unwrap_or_default())
    }

    pub(crate) fn head_to(&self) -> Option<&str> {
        let parent = if self.parent_len == u32::MAX { 0 } else { self.parent_len as usize };
        let start = self.id_len as usize + parent;
        self.has_head_to.then(|| self.text.get(start..).unwrap_or_default())
    }
}
