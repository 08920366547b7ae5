//! [`Journal`]: a session's entries, indexed, with HEAD replayed.
//!
//! HEAD is never stored; it is the result of replaying the appends in file order (DESIGN §2):
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

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use crate::entry::{Entry, EntryId};
use crate::meta::{KindCode, Meta};
use crate::payload::{CompactionPayload, HeaderPayload, Payload};
use crate::text::Source;

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

/// One valid line as the journal is built from it: what HEAD replay needs, and the entry itself
/// when it is at hand and worth holding.
#[derive(Debug, PartialEq)]
pub(crate) struct Line {
    /// 1-based line number in the file.
    pub(crate) line: u32,
    pub(crate) id: EntryId,
    pub(crate) parent: Option<EntryId>,
    pub(crate) meta: Meta,
    /// A `head` record's target.
    pub(crate) head_to: Option<EntryId>,
    /// The parsed entry, when held from the start.
    pub(crate) entry: Option<Box<Entry>>,
}

impl Line {
    /// The line of `entry`, held.
    pub(crate) fn held(entry: Entry, line: u32, meta: Meta) -> Line {
        Line {
            line,
            id: entry.id.clone(),
            parent: entry.parent.clone(),
            meta,
            head_to: head_to(&entry),
            entry: Some(Box::new(entry)),
        }
    }

    /// The line of `entry`, whose text is at `meta`'s place in the file: the entry is held only
    /// when its kind is one the journal consults as a whole.
    pub(crate) fn scanned(entry: Entry, line: u32, meta: Meta) -> Line {
        if meta.kind.is_kept() {
            return Line::held(entry, line, meta);
        }
        let Entry { id, parent, .. } = entry;
        Line { line, id, parent, meta, head_to: None, entry: None }
    }
}

fn head_to(entry: &Entry) -> Option<EntryId> {
    match &entry.payload {
        Payload::Head(h) => Some(h.to.clone()),
        _ => None,
    }
}

/// A session's entries in file order, with an id index and the replayed HEAD.
#[derive(Clone, Debug)]
pub struct Journal {
    header: HeaderPayload,
    ids: Vec<EntryId>,
    metas: Vec<Meta>,
    /// Entries parsed so far (all of them for a journal built in memory).
    held: Vec<OnceLock<Box<Entry>>>,
    /// The file entries are read from.
    source: Option<Arc<Source>>,
    /// 1-based line number of each entry in its file (equal to position + 1 for a journal
    /// built in memory; larger when malformed lines were skipped).
    lines: Vec<u32>,
    /// Position of each entry's parent, when it resolves to an earlier entry.
    parents: Vec<Option<u32>>,
    /// Positions of indexed entries, looked up by their id in `ids`.
    index: hashbrown::HashTable<u32>,
    compactions: Vec<u32>,
    head: u32,
    problems: Vec<(u32, DagProblem)>,
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
        let lines = entries
            .into_iter()
            .enumerate()
            .map(|(i, e)| {
                let meta = Meta::in_memory(&e);
                Line::held(e, i as u32 + 1, meta)
            })
            .collect();
        Journal::from_lines(lines, None)
    }

    /// Builds a journal from its valid lines in file order, reading entries that are not held
    /// from `source`. The first line must be a held header.
    pub(crate) fn from_lines(
        lines: Vec<Line>,
        source: Option<Arc<Source>>,
    ) -> Result<Journal, JournalError> {
        let header = match lines.first().map(|l| l.entry.as_deref().map(|e| &e.payload)) {
            None => return Err(JournalError::Empty),
            Some(Some(Payload::Header(h))) => h.clone(),
            Some(Some(p)) => return Err(JournalError::NoHeader { found: p.kind().to_owned() }),
            Some(None) => return Err(JournalError::NoHeader { found: "unknown".to_owned() }),
        };
        let n = lines.len();
        let mut j = Journal {
            header,
            ids: Vec::with_capacity(n),
            metas: Vec::with_capacity(n),
            held: Vec::with_capacity(n),
            source,
            lines: Vec::with_capacity(n),
            parents: Vec::with_capacity(n),
            index: hashbrown::HashTable::with_capacity(n),
            compactions: Vec::new(),
            head: 0,
            problems: Vec::new(),
        };
        for line in lines {
            j.add(line);
        }
        Ok(j)
    }

    /// A new journal holding only `header` (a `header` entry).
    pub fn new(header: Entry) -> Result<Journal, JournalError> {
        Journal::from_entries(vec![header])
    }

    /// Applies one appended entry: indexes it, replays its effect on HEAD, and holds it.
    pub fn push(&mut self, entry: Entry) {
        let line = self.lines.last().copied().unwrap_or(0) + 1;
        let meta = Meta::in_memory(&entry);
        self.add(Line::held(entry, line, meta));
    }

    /// Indexes `line` as the next entry and replays its effect on HEAD. A duplicate id is
    /// reported and not stored.
    fn add(&mut self, line: Line) {
        let pos = self.ids.len() as u32;
        let Line { line, id, parent, meta, head_to, entry } = line;
        if self.position(id.as_str()).is_some() {
            self.problems.push((line, DagProblem::DuplicateId { id }));
            return;
        }
        let parent = match parent {
            Some(p) => match self.position(p.as_str()) {
                Some(i) => Some(i),
                None => {
                    let problem = DagProblem::DanglingParent { id: id.clone(), parent: p };
                    self.problems.push((line, problem));
                    None
                }
            },
            None => {
                // A `head` record is not a DAG node: its parent is informational only.
                if !matches!(meta.kind, KindCode::Header | KindCode::Head) {
                    self.problems.push((line, DagProblem::MissingParent { id: id.clone() }));
                }
                None
            }
        };
        match meta.kind {
            KindCode::Head => {
                let to = head_to.unwrap_or_else(|| EntryId::from(""));
                match self.position(to.as_str()) {
                    Some(t) if self.metas[t as usize].kind.is_chain() => self.head = t,
                    _ => {
                        let problem = DagProblem::HeadNowhere { id: id.clone(), to };
                        self.problems.push((line, problem));
                    }
                }
            }
            KindCode::Compaction => self.compactions.push(pos),
            k if k.is_chain() && parent == Some(self.head) => self.head = pos,
            _ => {}
        }
        self.ids.push(id);
        // `head` records are not DAG nodes: never indexed, so nothing can be parented on one.
        if meta.kind != KindCode::Head {
            let ids = &self.ids;
            let hash = id_hash(ids[pos as usize].as_str());
            self.index.insert_unique(hash, pos, |&p| id_hash(ids[p as usize].as_str()));
        }
        self.metas.push(meta);
        self.held.push(entry.map_or_else(OnceLock::new, OnceLock::from));
        self.lines.push(line);
        self.parents.push(parent);
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

    /// Never true: a journal always has its header.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Every entry in file order. Reads and holds each one: for tests, tools and small
    /// journals; opening and rendering a session never calls it.
    pub fn entries(&self) -> Vec<&Entry> {
        (0..self.len() as u32).map(|p| self.entry_at(p)).collect()
    }

    /// The entry at `pos` (file order), read from its line and held from then on.
    pub fn entry_at(&self, pos: u32) -> &Entry {
        self.held[pos as usize].get_or_init(|| Box::new(self.read_line(pos)))
    }

    /// The entry at `pos`: the held one, or one read from its line just for the caller (not
    /// held). For walks over many entries that must not keep them.
    pub fn read_entry(&self, pos: u32) -> Cow<'_, Entry> {
        match self.held[pos as usize].get() {
            Some(e) => Cow::Borrowed(e),
            None => Cow::Owned(self.read_line(pos)),
        }
    }

    /// Parses the line of the entry at `pos`. The line was a valid entry when the file was
    /// indexed and the file is append-only; should it have been changed since, the entry reads
    /// as one of an unknown kind (passed over by the view) and the failure is logged.
    fn read_line(&self, pos: u32) -> Entry {
        let meta = &self.metas[pos as usize];
        let read = match &self.source {
            Some(source) if meta.on_disk() => {
                crate::load::read_entry(source, meta.offset, meta.len)
            }
            _ => Err("the entry is not in a file".to_owned()),
        };
        match read {
            Ok(entry) if entry.id == self.ids[pos as usize] => entry,
            other => {
                let why = match other {
                    Ok(e) => format!("the line now holds entry {}", e.id),
                    Err(e) => e,
                };
                tracing::error!(line = self.lines[pos as usize], %why, "a journal line cannot be read back");
                let mut e = Entry::new(
                    self.parents[pos as usize].map(|p| self.ids[p as usize].clone()),
                    Payload::Unknown {
                        kind: "unreadable".to_owned(),
                        payload: serde_json::Value::Null,
                    },
                );
                e.id = self.ids[pos as usize].clone();
                e
            }
        }
    }

    /// The id of the entry at `pos`.
    pub fn id_at(&self, pos: u32) -> &EntryId {
        &self.ids[pos as usize]
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
        &self.ids[self.head as usize]
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
        while let Some(p) = self.parents[cur as usize] {
            out.push(p);
            cur = p;
        }
        out.reverse();
        out
    }

    /// The position of the entry with this id.
    pub fn position(&self, id: &str) -> Option<u32> {
        let ids = &self.ids;
        self.index.find(id_hash(id), |&p| ids[p as usize].as_str() == id).copied()
    }

    /// The position of HEAD.
    pub fn head_position(&self) -> u32 {
        self.head
    }

    /// Positions of entries of `kind` (a `kind::*` name), newest first, without reading any
    /// entry that is not of that kind.
    pub fn positions_of_kind<'a>(&'a self, kind: &str) -> impl Iterator<Item = u32> + 'a {
        let code = KindCode::of_name(kind);
        (0..self.len() as u32).rev().filter(move |&p| self.metas[p as usize].kind == code)
    }

    pub(crate) fn compaction_positions(&self) -> &[u32] {
        &self.compactions
    }

    /// True when the entry at `pos` has every flag of `flags` (see [`crate::flags`]), without
    /// reading it.
    pub fn has_flags(&self, pos: u32, flags: u8) -> bool {
        self.metas[pos as usize].flags & flags == flags
    }

    /// The `kind` of the entry at `pos` (a `kind::*` name; `unknown` for kinds this version does
    /// not know), without reading it.
    pub fn kind_at(&self, pos: u32) -> &'static str {
        self.metas[pos as usize].kind.name()
    }

    /// True when the model reads the entry at `pos` (`Payload::is_model_visible`), without
    /// reading it.
    pub fn is_model_visible_at(&self, pos: u32) -> bool {
        self.metas[pos as usize].kind.is_model_visible()
    }

    /// True when the user entry at `pos` is plain (neither an anchor nor synthetic), without
    /// reading it.
    pub fn is_plain_user_at(&self, pos: u32) -> bool {
        let m = &self.metas[pos as usize];
        m.kind == KindCode::User && m.has(crate::meta::PLAIN)
    }

    /// True when the entry at `pos` is a user entry pinned with `/anchor`, without reading it.
    pub fn is_anchor_at(&self, pos: u32) -> bool {
        let m = &self.metas[pos as usize];
        m.kind == KindCode::User && m.has(crate::meta::ANCHOR)
    }

    /// Branch tips: conversation entries that no other conversation entry continues. The tip
    /// of a single linear session is its last entry; every fork adds one.
    pub fn tips(&self) -> Vec<&Entry> {
        let n = self.len();
        let mut has_child = vec![false; n];
        for i in 0..n {
            if self.metas[i].kind.is_chain() {
                if let Some(p) = self.parents[i] {
                    has_child[p as usize] = true;
                }
            }
        }
        (0..n)
            .filter(|&i| {
                let k = self.metas[i].kind;
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
            match self.parents[cur as usize] {
                Some(p) => cur = p,
                None => return false,
            }
        }
    }

    /// True when the entry at `pos` is a conversation entry.
    pub(crate) fn is_chain_at(&self, pos: u32) -> bool {
        self.metas[pos as usize].kind.is_chain()
    }
}

/// Entries that form conversations: everything except compaction, branch summary and head
/// records. Unknown kinds count as conversation entries (passed over by the view), so a newer
/// version's notices on the chain do not strand HEAD.
pub(crate) fn is_chain(p: &Payload) -> bool {
    KindCode::of(p).is_chain()
}
/// The hash of an entry id in the index.
fn id_hash(id: &str) -> u64 {
    use std::hash::Hasher;
    let mut h = IdHasher::default();
    h.write(id.as_bytes());
    h.finish()
}

/// A fast hash for entry ids (the index is built for every entry of every loaded session).
/// Ids come from the session's own file, so resistance to crafted collisions is not needed.
/// FxHash-style: multiply-rotate over 8-byte words.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
