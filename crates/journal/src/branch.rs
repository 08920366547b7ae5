//! Branch operations: each returns the `head` record to append (docs/journal-format.md,
//! *`branch_summary`*). Only explicit user moves write a `head` record; the engine appends it, and
//! [`Journal::push`] replays it.
//!
//! - **fork** from an entry: HEAD moves to that entry; the next append starts a new branch.
//! - **retry** an assistant response: HEAD moves to the entry it answered, so the request is
//!   sent again from the same point.
//! - **edit** a user message: HEAD moves to the entry before it; the edited message is then
//!   appended as a sibling of the original.
//! - **checkout** any conversation entry (usually a branch tip).
//! - **rewind** to an entry on the current spine.
//! - **set aside** an unanswered last user message: HEAD moves to the entry before it, as for
//!   an edit, with reason `unanswered`.

use crate::entry::{Entry, EntryId};
use crate::journal::{is_chain, Journal};
use crate::payload::{HeadPayload, HeadReason, Payload};

/// Why a branch operation was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BranchError {
    #[error("no entry {0} in this session")]
    NotFound(EntryId),
    #[error("entry {id} is a {kind} record, not part of a conversation")]
    NotConversation { id: EntryId, kind: String },
    #[error("entry {id} is a {kind} entry; {op} needs {expected}")]
    WrongKind { id: EntryId, kind: String, op: &'static str, expected: &'static str },
    #[error("entry {0} is not on the current branch; use checkout to switch branches")]
    NotOnSpine(EntryId),
    #[error("{count} entries have ids that start or end with {prefix}; give more of the id")]
    Ambiguous { prefix: String, count: usize },
}

impl Journal {
    /// Fork from `id`: the next entry appended continues from there on a new branch.
    pub fn fork(&self, id: &str) -> Result<Entry, BranchError> {
        let target = self.conversation_entry(id)?;
        Ok(self.head_record(target.id.clone(), HeadReason::Fork))
    }

    /// Retry assistant entry `id`: HEAD moves to the entry it answered.
    pub fn retry(&self, id: &str) -> Result<Entry, BranchError> {
        let target = self.conversation_entry(id)?;
        if !matches!(target.payload, Payload::Assistant(_)) {
            return Err(wrong_kind(target, "retry", "an assistant entry"));
        }
        let parent = self.parent_id(target)?;
        Ok(self.head_record(parent, HeadReason::Retry))
    }

    /// Edit user entry `id`: HEAD moves to the entry before it; append the edited message next.
    pub fn edit(&self, id: &str) -> Result<Entry, BranchError> {
        let target = self.conversation_entry(id)?;
        if !matches!(&target.payload, Payload::User(u) if u.is_plain()) {
            return Err(wrong_kind(target, "edit", "a plain user message"));
        }
        let parent = self.parent_id(target)?;
        Ok(self.head_record(parent, HeadReason::Edit))
    }

    /// Set aside user entry `id`, a last message that got no reply: HEAD moves to the entry
    /// before it.
    pub fn set_aside(&self, id: &str) -> Result<Entry, BranchError> {
        let target = self.conversation_entry(id)?;
        if !matches!(&target.payload, Payload::User(u) if u.is_plain()) {
            return Err(wrong_kind(target, "setting aside", "a plain user message"));
        }
        let parent = self.parent_id(target)?;
        Ok(self.head_record(parent, HeadReason::Unanswered))
    }

    /// Check out conversation entry `id` (any branch).
    pub fn checkout(&self, id: &str) -> Result<Entry, BranchError> {
        let target = self.conversation_entry(id)?;
        Ok(self.head_record(target.id.clone(), HeadReason::Checkout))
    }

    /// Rewind HEAD to `id`, an entry on the current spine.
    pub fn rewind(&self, id: &str) -> Result<Entry, BranchError> {
        let target = self.conversation_entry(id)?;
        if !self.is_ancestor(target.id.as_str(), self.head_id().as_str()) {
            return Err(BranchError::NotOnSpine(target.id.clone()));
        }
        Ok(self.head_record(target.id.clone(), HeadReason::Rewind))
    }

    /// The conversation entry `id` names: the entry with that id, or the one conversation
    /// entry whose id starts with it (ids are long; a unique prefix is enough), or — as the
    /// pickers show ids, `…` and their last characters — the one whose id ends with it.
    pub fn resolve_entry(&self, id: &str) -> Result<EntryId, BranchError> {
        let id = id.trim();
        if self.get(id).is_some() {
            return Ok(EntryId::from(id));
        }
        let (id, ending_only) = match id.strip_prefix('…').or_else(|| id.strip_prefix("...")) {
            Some(rest) => (rest, true),
            None => (id, false),
        };
        let chain_ids = || {
            (0..self.len() as u32)
                .filter(|&p| self.is_chain_at(p) && !id.is_empty())
                .map(|p| self.id_at(p))
        };
        // Without the `…`, an ending is tried when no id starts with what was typed.
        let by_start = !ending_only && chain_ids().any(|e| e.starts_with(id));
        let mut found =
            chain_ids().filter(|e| if by_start { e.starts_with(id) } else { e.ends_with(id) });
        match (found.next(), found.next()) {
            (Some(one), None) => Ok(EntryId::from(&*one)),
            (None, _) => Err(BranchError::NotFound(EntryId::from(id))),
            (Some(_), Some(_)) => {
                let count = 2 + found.count();
                Err(BranchError::Ambiguous { prefix: id.to_owned(), count })
            }
        }
    }

    fn conversation_entry(&self, id: &str) -> Result<&Entry, BranchError> {
        let id = self.resolve_entry(id)?;
        let e = self.get(id.as_str()).ok_or_else(|| BranchError::NotFound(id.clone()))?;
        if !is_chain(&e.payload) {
            return Err(BranchError::NotConversation {
                id: e.id.clone(),
                kind: e.kind().to_owned(),
            });
        }
        Ok(e)
    }

    fn parent_id(&self, e: &Entry) -> Result<EntryId, BranchError> {
        e.parent.clone().filter(|p| self.get(p.as_str()).is_some()).ok_or_else(|| {
            BranchError::NotFound(e.parent.clone().unwrap_or_else(|| EntryId::from("null")))
        })
    }

    fn head_record(&self, to: EntryId, reason: HeadReason) -> Entry {
        Entry::new(Some(self.head_id().clone()), HeadPayload::new(to, reason))
    }
}

fn wrong_kind(e: &Entry, op: &'static str, expected: &'static str) -> BranchError {
    BranchError::WrongKind { id: e.id.clone(), kind: e.kind().to_owned(), op, expected }
}
