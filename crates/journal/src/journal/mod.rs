//! [`Journal`]: a session's entries, indexed, with HEAD replayed.
//!
//! HEAD is never stored; it is the result of replaying the appends in file order
//! (docs/journal-format.md):
//! - the header is the root and the first HEAD;
//! - an entry whose `parent` is the current HEAD moves HEAD to it (the conversation grew),
//!   except `compaction` and `branch_summary` records, which describe the DAG without being part
//!   of a conversation, and `head` records, which are not DAG nodes at all;
//! - a `head` record moves HEAD to its `to` (when `to` names a conversation entry);
//! - every other append (a write on a side branch, a record) leaves HEAD alone.
//!
//! The same rules run on load and on every [`Journal::push`], so the in-memory HEAD of a live
//! session always equals what a reload would compute.
//!
//! A journal loaded from a file does not hold its entries: it holds the id, parent and
//! [`Meta`] of each (kind, flags, stored count, where the line is), replays HEAD on those, and
//! parses an entry from its line the first time it is asked for ([`Journal::entry_at`], which
//! keeps it) or only for a moment ([`Journal::read_entry`]). The file is append-only, so a
//! line's position stays valid for as long as the session exists. Opening a long session thus
//! costs what its view reads, not what the file holds.

use std::sync::{Arc, OnceLock};

use once_cell::race::OnceBox;

use crate::entry::{Entry, EntryId};
use crate::ids::{id_hash, parse_uuid, IdStr, Ids};
use crate::kind_code::KindCode;
use crate::line::{Added, Line};
use crate::meta::Meta;
use crate::payload::{CompactionPayload, HeaderPayload, Payload};
use crate::text::Source;

mod read;

pub use read::LineRef;

/// Why an entry could not join the DAG or move HEAD. Kept on the journal, reported by
/// `journal check`; never fatal to loading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DagProblem {
    /// Two entries share an id; the later one is ignored.
    DuplicateId { id: EntryId },
    /// `parent` names no earlier entry.
    DanglingParent { id: EntryId, parent: EntryId },
    /// A non-header entry without a parent.
    MissingParent { id: EntryId },
    /// A `head` record's `to` names no conversation entry; HEAD stays where it was.
    HeadNowhere { id: EntryId, to: EntryId },
}

/// No parent (the header, a `head` record, or a parent that did not resolve).
const NO_PARENT: u32 = u32::MAX;

/// A session's entries in file order, with an id index and the replayed HEAD.
#[derive(Clone, Debug)]
pub struct Journal {
    header: HeaderPayload,
    ids: Ids,
    metas: Vec<Meta>,
    /// Entries parsed so far (all of them for a journal built in memory).
    held: Vec<OnceBox<Entry>>,
    /// The file entries are read from.
    source: Option<Arc<Source>>,
    /// 1-based line number of each entry in its file (equal to position + 1 for a journal
    /// built in memory; larger when malformed lines were skipped).
    lines: Vec<u32>,
    /// Position of each entry's parent, when it resolves to an earlier entry ([`NO_PARENT`]).
    parents: Vec<u32>,
    /// Positions of indexed entries, looked up by their id in `ids`.
    index: hashbrown::HashTable<u32>,
    compactions: Vec<u32>,
    head: u32,
    /// HEAD's id, made when first asked for after HEAD moved.
    head_id: OnceLock<EntryId>,
    problems: Vec<(u32, DagProblem)>,
    /// Lines met since last asked that could not be read back ([`Journal::take_unreadable`]).
    unreadable: UnreadableCount,
}

/// A count shared by the readers of one journal; a clone starts from the same value.
#[derive(Debug, Default)]
struct UnreadableCount(std::sync::atomic::AtomicU32);

impl Clone for UnreadableCount {
    fn clone(&self) -> Self {
        UnreadableCount(std::sync::atomic::AtomicU32::new(
            self.0.load(std::sync::atomic::Ordering::Relaxed),
        ))
    }
}

/// Errors that make a sequence of entries unusable as a journal.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JournalError {
    #[error("a journal must start with a header entry, found kind `{found}`")]
    NoHeader { found: String },
    #[error("the journal has no entries")]
    Empty,
}

impl Journal {
    /// Builds a journal from entries in file order (line numbers 1, 2, ...), all held.
    pub fn from_entries(entries: Vec<Entry>) -> Result<Journal, JournalError> {
        let mut j = Journal::building(entries.len(), None);
        for (i, e) in entries.into_iter().enumerate() {
            let meta = Meta::in_memory(&e);
            j.add_line(Line::held(e, i as u32 + 1, meta));
        }
        j.finish()
    }

    /// An empty journal to [`Journal::add`] lines to, then [`Journal::finish`]; entries that
    /// are not held are read from `source`.
    pub(crate) fn building(capacity: usize, source: Option<Arc<Source>>) -> Journal {
        let n = capacity;
        Journal {
            header: HeaderPayload::new("", ""),
            ids: Ids::with_capacity(n),
            metas: Vec::with_capacity(n),
            held: Vec::with_capacity(n),
            source,
            lines: Vec::with_capacity(n),
            parents: Vec::with_capacity(n),
            index: hashbrown::HashTable::with_capacity(n),
            compactions: Vec::new(),
            head: 0,
            head_id: OnceLock::new(),
            problems: Vec::new(),
            unreadable: UnreadableCount::default(),
        }
    }

    /// Checks that the first line is a header (held) and takes its payload.
    pub(crate) fn finish(mut self) -> Result<Journal, JournalError> {
        let Some(first) = self.held.first() else { return Err(JournalError::Empty) };
        match first.get().map(|e| &e.payload) {
            Some(Payload::Header(h)) => self.header = h.clone(),
            Some(p) => return Err(JournalError::NoHeader { found: p.kind().to_owned() }),
            None => return Err(JournalError::NoHeader { found: "unknown".to_owned() }),
        }
        Ok(self)
    }

    /// A new journal holding only `header` (a `header` entry).
    pub fn new(header: Entry) -> Result<Journal, JournalError> {
        Journal::from_entries(vec![header])
    }

    /// Applies one appended entry: indexes it, replays its effect on HEAD, and holds it.
    pub fn push(&mut self, entry: Entry) {
        let line = self.lines.last().copied().unwrap_or(0) + 1;
        let meta = Meta::in_memory(&entry);
        self.add_line(Line::held(entry, line, meta));
    }

    /// [`Journal::push`] for an entry whose line is known: `len` bytes at `offset` of the file,
    /// line number `line`.
    pub(crate) fn push_placed(&mut self, entry: Entry, line: u32, offset: u64, len: u32) {
        let meta = Meta::of(&entry, offset, len);
        self.add_line(Line::held(entry, line, meta));
    }

    /// [`Journal::push_placed`] without holding the entry: only its index is kept, and the
    /// entry is read back from its line when asked for (a long append, like an import, then
    /// costs what its index costs, not what its entries hold).
    pub(crate) fn push_placed_unheld(&mut self, entry: Entry, line: u32, offset: u64, len: u32) {
        let meta = Meta::of(&entry, offset, len);
        let mut l = Line::held(entry, line, meta);
        l.entry = None;
        self.add_line(l);
    }

    pub(crate) fn add_line(&mut self, mut l: Line) {
        let entry = l.entry.take();
        let added = Added {
            line: l.line,
            id: l.id(),
            parent: l.parent(),
            meta: l.meta,
            head_to: l.head_to(),
        };
        self.add(added, entry);
    }

    /// Indexes one line as the next entry and replays its effect on HEAD. A duplicate id is
    /// reported and not stored.
    pub(crate) fn add(&mut self, l: Added<'_>, entry: Option<Box<Entry>>) {
        let pos = self.ids.len() as u32;
        let Added { line, id, parent, meta, head_to } = l;
        if self.position(id).is_some() {
            self.problems.push((line, DagProblem::DuplicateId { id: EntryId::from(id) }));
            return;
        }
        let parent = match parent {
            Some(p) => match self.position(p) {
                Some(i) => i,
                None => {
                    let problem = DagProblem::DanglingParent {
                        id: EntryId::from(id),
                        parent: EntryId::from(p),
                    };
                    self.problems.push((line, problem));
                    NO_PARENT
                }
            },
            None => {
                // A `head` record is not a DAG node: its parent is informational only.
                if !matches!(meta.kind(), KindCode::Header | KindCode::Head) {
                    self.problems.push((line, DagProblem::MissingParent { id: EntryId::from(id) }));
                }
                NO_PARENT
            }
        };
        let old_head = self.head;
        match meta.kind() {
            KindCode::Head => {
                let to = head_to.unwrap_or_default();
                match self.position(to) {
                    Some(t) if self.metas[t as usize].kind().is_chain() => self.head = t,
                    _ => {
                        let problem = DagProblem::HeadNowhere {
                            id: EntryId::from(id),
                            to: EntryId::from(to),
                        };
                        self.problems.push((line, problem));
                    }
                }
            }
            KindCode::Compaction => self.compactions.push(pos),
            k if k.is_chain() && parent == self.head && parent != NO_PARENT => self.head = pos,
            _ => {}
        }
        if self.head != old_head {
            self.head_id = OnceLock::new();
        }
        self.ids.push(id);
        // `head` records are not DAG nodes: never indexed, so nothing can be parented on one.
        if meta.kind() != KindCode::Head {
            let ids = &self.ids;
            self.index.insert_unique(id_hash(id), pos, |&p| id_hash(&ids.get(p)));
        }
        self.metas.push(meta);
        self.held.push(entry.map_or_else(OnceBox::new, OnceBox::with_value));
        self.lines.push(line);
        self.parents.push(parent);
    }

    /// Reports a line whose id an earlier entry already has (what [`Journal::add`] reports for
    /// it), when the line itself is not at hand: the index sidecar keeps only its id.
    pub(crate) fn note_duplicate(&mut self, line: u32, id: &str) {
        self.problems.push((line, DagProblem::DuplicateId { id: EntryId::from(id) }));
    }

    /// The file entries are read from.
    pub(crate) fn source(&self) -> Option<&Arc<Source>> {
        self.source.as_ref()
    }

    /// The header entry's payload.
    pub fn header(&self) -> &HeaderPayload {
        &self.header
    }

    /// The header entry.
    pub fn header_entry(&self) -> &Entry {
        self.entry_at(0)
    }

    /// The session id from the header.
    pub fn session_id(&self) -> &str {
        &self.header().session_id
    }

    /// The number of entries (the header included).
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True only while a journal is being built: a loaded or created one has its header.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every entry in file order. Reads and holds each one: for tests, tools and small
    /// journals; opening and rendering a session never calls it.
    pub fn entries(&self) -> Vec<&Entry> {
        (0..self.len() as u32).map(|p| self.entry_at(p)).collect()
    }

    /// The id of the entry at `pos`.
    pub fn id_at(&self, pos: u32) -> IdStr<'_> {
        self.ids.get(pos)
    }

    /// The position of the parent of the entry at `pos`, when it resolved to an earlier entry.
    pub fn parent_at(&self, pos: u32) -> Option<u32> {
        Some(self.parents[pos as usize]).filter(|&p| p != NO_PARENT)
    }

    /// The stored token count of the entry at `pos`, without reading it.
    pub fn tokens_at(&self, pos: u32) -> Option<u32> {
        self.metas[pos as usize].tokens()
    }

    pub(crate) fn meta_at(&self, pos: u32) -> &Meta {
        &self.metas[pos as usize]
    }

    /// The entry with this id (`head` records are not looked up by id).
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.position(id).map(|i| self.entry_at(i))
    }

    /// The 1-based line of the entry with this id in its file.
    pub fn line_of(&self, id: &str) -> Option<u32> {
        self.position(id).map(|i| self.lines[i as usize])
    }

    /// The 1-based line of the entry at `pos`.
    pub fn line_at(&self, pos: u32) -> u32 {
        self.lines[pos as usize]
    }

    /// The current HEAD entry.
    pub fn head(&self) -> &Entry {
        self.entry_at(self.head)
    }

    /// The current HEAD id.
    pub fn head_id(&self) -> &EntryId {
        self.head_id.get_or_init(|| EntryId::from(&*self.ids.get(self.head)))
    }

    /// Compaction records in file order (oldest first).
    pub fn compactions(&self) -> impl DoubleEndedIterator<Item = (&Entry, &CompactionPayload)> {
        self.compactions.iter().filter_map(|&i| {
            let e = self.entry_at(i);
            match &e.payload {
                Payload::Compaction(c) => Some((e, &**c)),
                _ => None,
            }
        })
    }

    /// Problems found while indexing (duplicate ids, dangling parents, bad HEAD moves), with the
    /// line they were found on.
    pub fn problems(&self) -> &[(u32, DagProblem)] {
        &self.problems
    }

    /// The entries from the root to `head` (inclusive), following parent links. Empty when
    /// `head` is unknown. Stops at a dangling parent. Reads and holds every one: walks over a
    /// long branch use [`Journal::spine_positions`] instead.
    pub fn spine(&self, head: &str) -> Vec<&Entry> {
        let Some(start) = self.position(head) else { return Vec::new() };
        self.spine_positions(start).into_iter().map(|i| self.entry_at(i)).collect()
    }

    /// Positions root..=start. Parents always precede children (a parent must already be
    /// indexed when its child is pushed), so the walk strictly decreases and always ends.
    pub fn spine_positions(&self, start: u32) -> Vec<u32> {
        let mut out = vec![start];
        let mut cur = start;
        while let Some(p) = self.parent_at(cur) {
            out.push(p);
            cur = p;
        }
        out.reverse();
        out
    }

    /// The position of the entry with this id.
    pub fn position(&self, id: &str) -> Option<u32> {
        let (ids, uuid) = (&self.ids, parse_uuid(id));
        self.index.find(id_hash(id), |&p| ids.is(p, id, uuid)).copied()
    }

    /// The position of HEAD.
    pub fn head_position(&self) -> u32 {
        self.head
    }

    /// Positions of entries of `kind` (a `kind::*` name), newest first, without reading any
    /// entry that is not of that kind.
    pub fn positions_of_kind<'a>(&'a self, kind: &str) -> impl Iterator<Item = u32> + 'a {
        let code = KindCode::of_name(kind);
        (0..self.len() as u32).rev().filter(move |&p| self.metas[p as usize].kind() == code)
    }

    pub(crate) fn compaction_positions(&self) -> &[u32] {
        &self.compactions
    }

    /// True when the entry at `pos` has every flag of `flags` (see [`crate::flags`]), without
    /// reading it.
    pub fn has_flags(&self, pos: u32, flags: u8) -> bool {
        self.metas[pos as usize].flags() & flags == flags
    }

    /// The `kind` of the entry at `pos` (a `kind::*` name; `unknown` for kinds this version does
    /// not know), without reading it.
    pub fn kind_at(&self, pos: u32) -> &'static str {
        self.metas[pos as usize].kind().name()
    }

    /// True when the model reads the entry at `pos` (`Payload::is_model_visible`), without
    /// reading it.
    pub fn is_model_visible_at(&self, pos: u32) -> bool {
        self.metas[pos as usize].kind().is_model_visible()
    }

    /// Branch tips: conversation entries that no other conversation entry continues. The tip
    /// of a single linear session is its last entry; every fork adds one.
    pub fn tips(&self) -> Vec<&Entry> {
        let n = self.len();
        let mut has_child = vec![false; n];
        for i in 0..n {
            if self.metas[i].kind().is_chain() {
                if let Some(p) = self.parent_at(i as u32) {
                    has_child[p as usize] = true;
                }
            }
        }
        (0..n)
            .filter(|&i| {
                let k = self.metas[i].kind();
                !has_child[i] && k.is_chain() && k != KindCode::Header
            })
            .map(|i| self.entry_at(i as u32))
            .collect()
    }

    /// True when `ancestor` is on the spine of `descendant` (an entry is its own ancestor).
    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> bool {
        let (Some(a), Some(mut cur)) = (self.position(ancestor), self.position(descendant)) else {
            return false;
        };
        loop {
            if cur == a {
                return true;
            }
            if cur < a {
                return false;
            }
            match self.parent_at(cur) {
                Some(p) => cur = p,
                None => return false,
            }
        }
    }

    /// True when the entry at `pos` is a conversation entry.
    pub(crate) fn is_chain_at(&self, pos: u32) -> bool {
        self.metas[pos as usize].kind().is_chain()
    }
}

/// Entries that form conversations: everything except compaction and head records (a branch summary
/// is a chain extension of the branch it was written on). Unknown kinds count as conversation
/// entries (passed over by the view), so a newer version's notices on the chain do not strand HEAD.
pub(crate) fn is_chain(p: &Payload) -> bool {
    KindCode::of(p).is_chain()
}
#[cfg(test)]
mod tests {
    use super::*;

    /// Lookups by id work across the 64-position words of the bitset, for both forms.
    #[test]
    fn a_journal_finds_every_entry_by_its_id() {
        let header = Entry::new(None, HeaderPayload::new("s", "/w"));
        let mut j = Journal::new(header).unwrap();
        let mut made = Vec::new();
        for i in 0..200 {
            let mut e = Entry::new(Some(j.head_id().clone()), crate::UserPayload::text("x"));
            if i % 3 == 0 {
                e.id = EntryId::from(format!("custom-{i}").as_str());
            }
            made.push(e.id.clone());
            j.push(e);
        }
        for (i, id) in made.iter().enumerate() {
            assert_eq!(j.position(id.as_str()), Some(i as u32 + 1));
            assert_eq!(&*j.id_at(i as u32 + 1), id.as_str());
        }
        assert_eq!(j.head_id(), made.last().unwrap());
        assert_eq!(j.position("custom-1"), None);
    }
}
