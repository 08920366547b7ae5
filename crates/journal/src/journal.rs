//! [`Journal`]: a session's entries in memory, indexed, with HEAD replayed.
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

use std::collections::HashMap;

use crate::entry::{Entry, EntryId};
use crate::payload::{CompactionPayload, HeaderPayload, Payload};

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

/// A session's entries in file order, with an id index and the replayed HEAD.
#[derive(Clone, Debug)]
pub struct Journal {
    header: HeaderPayload,
    entries: Vec<Entry>,
    /// 1-based line number of each entry in its file (equal to position + 1 for a journal
    /// built in memory; larger when malformed lines were skipped).
    lines: Vec<u32>,
    /// Position of each entry's parent, when it resolves to an earlier entry.
    parents: Vec<Option<u32>>,
    /// Whether each entry is a conversation entry (see [`is_chain`]).
    chain: Vec<bool>,
    index: HashMap<EntryId, u32, IdHash>,
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
    /// Builds a journal from entries in file order (line numbers 1, 2, ...).
    pub fn from_entries(entries: Vec<Entry>) -> Result<Journal, JournalError> {
        let lines = (1..=entries.len() as u32).collect();
        Journal::from_lines(entries, lines)
    }

    /// Builds a journal from entries and their line numbers in the file. Indexes the entries
    /// where they are (a large session's entries are never moved).
    pub(crate) fn from_lines(
        mut entries: Vec<Entry>,
        mut lines: Vec<u32>,
    ) -> Result<Journal, JournalError> {
        let header = match entries.first().map(|e| &e.payload) {
            None => return Err(JournalError::Empty),
            Some(Payload::Header(h)) => h.clone(),
            Some(_) => return Err(JournalError::NoHeader { found: entries[0].kind().to_owned() }),
        };
        let mut j = Journal {
            header,
            entries: Vec::new(),
            lines: Vec::new(),
            parents: Vec::with_capacity(entries.len()),
            chain: Vec::with_capacity(entries.len()),
            index: HashMap::with_capacity_and_hasher(entries.len(), IdHash),
            compactions: Vec::new(),
            head: 0,
            problems: Vec::new(),
        };
        let mut duplicate = Vec::new();
        for (i, (entry, &line)) in entries.iter().zip(&lines).enumerate() {
            if !j.index_entry(entry, line) {
                duplicate.push(i);
            }
        }
        if !duplicate.is_empty() {
            let mut keep = vec![true; entries.len()];
            for d in duplicate {
                keep[d] = false;
            }
            let mut k = keep.iter();
            entries.retain(|_| k.next().copied().unwrap_or(true));
            let mut k = keep.iter();
            lines.retain(|_| k.next().copied().unwrap_or(true));
        }
        j.entries = entries;
        j.lines = lines;
        Ok(j)
    }

    /// A new journal holding only `header` (a `header` entry).
    pub fn new(header: Entry) -> Result<Journal, JournalError> {
        Journal::from_entries(vec![header])
    }

    /// Applies one appended entry: indexes it and replays its effect on HEAD.
    pub fn push(&mut self, entry: Entry) {
        let line = self.lines.last().copied().unwrap_or(0) + 1;
        if self.index_entry(&entry, line) {
            self.entries.push(entry);
            self.lines.push(line);
        }
    }

    /// Indexes `entry` as the next entry (position `self.parents.len()`) and replays its effect
    /// on HEAD. False for a duplicate id, which is reported and must not be stored.
    fn index_entry(&mut self, entry: &Entry, line: u32) -> bool {
        let pos = self.parents.len() as u32;
        if self.index.contains_key(&entry.id) {
            self.problems.push((line, DagProblem::DuplicateId { id: entry.id.clone() }));
            return false;
        }
        let parent = match &entry.parent {
            Some(p) => match self.index.get(p) {
                Some(&i) => Some(i),
                None => {
                    let problem =
                        DagProblem::DanglingParent { id: entry.id.clone(), parent: p.clone() };
                    self.problems.push((line, problem));
                    None
                }
            },
            None => {
                // A `head` record is not a DAG node: its parent is informational only.
                if !matches!(entry.payload, Payload::Header(_) | Payload::Head(_)) {
                    self.problems.push((line, DagProblem::MissingParent { id: entry.id.clone() }));
                }
                None
            }
        };
        match &entry.payload {
            Payload::Head(h) => match self.index.get(&h.to) {
                Some(&to) if self.chain[to as usize] => self.head = to,
                _ => {
                    let problem =
                        DagProblem::HeadNowhere { id: entry.id.clone(), to: h.to.clone() };
                    self.problems.push((line, problem));
                }
            },
            Payload::Compaction(_) => self.compactions.push(pos),
            p if is_chain(p) && parent == Some(self.head) => self.head = pos,
            _ => {}
        }
        // `head` records are not DAG nodes: never indexed, so nothing can be parented on one.
        if !matches!(entry.payload, Payload::Head(_)) {
            self.index.insert(entry.id.clone(), pos);
        }
        self.parents.push(parent);
        self.chain.push(is_chain(&entry.payload));
        true
    }

    /// The header entry's payload.
    pub fn header(&self) -> &HeaderPayload {
        &self.header
    }

    /// The header entry.
    pub fn header_entry(&self) -> &Entry {
        &self.entries[0]
    }

    /// The session id from the header.
    pub fn session_id(&self) -> &str {
        &self.header().session_id
    }

    /// All entries in file order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry with this id (`head` records are not looked up by id).
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.index.get(id).map(|&i| &self.entries[i as usize])
    }

    /// The 1-based line of the entry with this id in its file.
    pub fn line_of(&self, id: &str) -> Option<u32> {
        self.index.get(id).map(|&i| self.lines[i as usize])
    }

    /// The current HEAD entry.
    pub fn head(&self) -> &Entry {
        &self.entries[self.head as usize]
    }

    /// The current HEAD id.
    pub fn head_id(&self) -> &EntryId {
        &self.head().id
    }

    /// Compaction records in file order (oldest first).
    pub fn compactions(&self) -> impl DoubleEndedIterator<Item = (&Entry, &CompactionPayload)> {
        self.compactions.iter().filter_map(|&i| {
            let e = &self.entries[i as usize];
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
    /// `head` is unknown. Stops at a dangling parent.
    pub fn spine(&self, head: &str) -> Vec<&Entry> {
        let Some(&start) = self.index.get(head) else { return Vec::new() };
        self.spine_positions(start).into_iter().map(|i| &self.entries[i as usize]).collect()
    }

    /// Positions root..=start. Parents always precede children (a parent must already be
    /// indexed when its child is pushed), so the walk strictly decreases and always ends.
    pub(crate) fn spine_positions(&self, start: u32) -> Vec<u32> {
        let mut out = vec![start];
        let mut cur = start;
        while let Some(p) = self.parents[cur as usize] {
            out.push(p);
            cur = p;
        }
        out.reverse();
        out
    }

    pub(crate) fn position(&self, id: &str) -> Option<u32> {
        self.index.get(id).copied()
    }

    pub(crate) fn entry_at(&self, pos: u32) -> &Entry {
        &self.entries[pos as usize]
    }

    pub(crate) fn compaction_positions(&self) -> &[u32] {
        &self.compactions
    }

    /// Branch tips: conversation entries that no other conversation entry continues. The tip
    /// of a single linear session is its last entry; every fork adds one.
    pub fn tips(&self) -> Vec<&Entry> {
        let mut has_child = vec![false; self.entries.len()];
        for (i, e) in self.entries.iter().enumerate() {
            if is_chain(&e.payload) {
                if let Some(p) = self.parents[i] {
                    has_child[p as usize] = true;
                }
            }
        }
        self.entries
            .iter()
            .enumerate()
            .filter(|(i, e)| {
                !has_child[*i] && is_chain(&e.payload) && !matches!(e.payload, Payload::Header(_))
            })
            .map(|(_, e)| e)
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
}

/// Entries that form conversations: everything except compaction, branch summary and head
/// records. Unknown kinds count as conversation entries (passed over by the view), so a newer
/// version's notices on the chain do not strand HEAD.
pub(crate) fn is_chain(p: &Payload) -> bool {
    !matches!(p, Payload::Compaction(_) | Payload::BranchSummary(_) | Payload::Head(_))
}

/// A fast hash for entry ids (the index is built for every entry of every loaded session).
/// Ids come from the session's own file, so resistance to crafted collisions is not needed.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct IdHash;

impl std::hash::BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

/// FxHash-style: multiply-rotate over 8-byte words.
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
