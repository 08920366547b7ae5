//! The active compaction of a spine: the newest valid record whose covered segment and named
//! entries all lie on it (docs/journal-format.md, *The view*, step 2).
//!
//! Invariants: a record that names an entry off the spine, or whose segment runs backwards,
//! never applies; a record not yet appended (what a pass validates) counts as the newest.

use super::ActiveCompaction;
use crate::entry::Entry;
use crate::journal::Journal;
use crate::payload::{CompactionPayload, Payload};

/// The active compaction of `head` without building the view: what the UI's history pages
/// and the budget need to know (which entries are covered, what the note is).
pub fn active_compaction_of(journal: &Journal, head: &str) -> Option<ActiveCompaction> {
    let start = journal.position(head)?;
    if journal.compaction_positions().is_empty() {
        return None;
    }
    let spine: Vec<u32> = journal
        .spine_positions(start)
        .into_iter()
        .filter(|&p| journal.is_model_visible_at(p))
        .collect();
    let (entry, record, _) = active_compaction(journal, &SpineIndex::new(journal, &spine), None)?;
    Some(ActiveCompaction { id: entry.id.clone(), record: record.clone(), tokens: entry.tokens })
}

type Active<'a> = (&'a Entry, &'a CompactionPayload, Option<(usize, usize)>);

/// Where each entry sits in the (model-visible) spine, by entry position. A flat table rather
/// than a map of ids: ids are resolved through the journal's own index, so rendering a long
/// session hashes only the ids the records name, not every entry of the spine.
pub(super) struct SpineIndex<'a> {
    journal: &'a Journal,
    at: Vec<u32>,
}

impl<'a> SpineIndex<'a> {
    const OFF: u32 = u32::MAX;

    pub(super) fn new(journal: &'a Journal, spine: &[u32]) -> SpineIndex<'a> {
        let mut at = vec![Self::OFF; journal.len()];
        for (i, &p) in spine.iter().enumerate() {
            at[p as usize] = i as u32;
        }
        SpineIndex { journal, at }
    }

    /// The spine index of the entry with this id, when it is on the spine.
    fn get(&self, id: &str) -> Option<usize> {
        let pos = self.journal.position(id)?;
        let i = *self.at.get(pos as usize)?;
        (i != Self::OFF).then_some(i as usize)
    }
}

/// The newest valid record that applies to this spine, with its covered index range. `extra`,
/// a record not yet appended, counts as the newest of all.
pub(super) fn active_compaction<'a>(
    journal: &'a Journal,
    on_spine: &SpineIndex<'_>,
    extra: Option<&'a Entry>,
) -> Option<Active<'a>> {
    let appended = journal.compaction_positions().iter().rev().map(|&pos| journal.entry_at(pos));
    extra.into_iter().chain(appended).find_map(|entry| {
        let Payload::Compaction(record) = &entry.payload else { return None };
        if !record.is_valid() {
            return None;
        }
        let named = record.pruned_ids.iter().chain(record.bounded.iter().map(|b| &b.id));
        if !named.into_iter().all(|id| on_spine.get(id.as_str()).is_some()) {
            return None;
        }
        let range = match &record.covers {
            Some(c) => {
                let first = on_spine.get(c.first.as_str())?;
                let last = on_spine.get(c.last.as_str())?;
                if first > last {
                    return None;
                }
                Some((first, last))
            }
            None => None,
        };
        Some((entry, &**record, range))
    })
}
