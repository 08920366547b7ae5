//! The view function (docs/journal-format.md, *The view*): what the model reads at a given HEAD.
//!
//! [`render`] is the single place that decides what a request contains. It is a function of
//! the journal's entries and the head alone: no clock, no configuration, no network, so the same
//! file renders byte-identically after a restart (the provider's prompt-cache prefix stays
//! stable). Its one I/O is reading entries a journal opened from a file does not hold yet:
//! positional reads of their lines ([`Journal::entry_at`]), batched for the spine. A line that
//! cannot be read back (the file changed under the session, a disk error) becomes an
//! `unreadable` entry, which the view leaves out; the journal logs it and counts it
//! ([`Journal::take_unreadable`]) so the session can tell the user.
//!
//! 1. Walk the head's spine to the root, keeping `user`, `assistant` and `tool_result` entries.
//! 2. The active compaction is the newest valid `compaction` record whose covered segment
//!    (`covers.last` back to `covers.first`) and every `pruned_ids` entry lie on this spine.
//! 3. The covered segment is replaced, at its position, by the record's `retained_ids` (those in
//!    the segment, in spine order) and then the checkpoint. Results in `pruned_ids` become a
//!    one-line stub; results in `bounded` are cut to head + marker + tail. The checkpoint's
//!    first block is the record's `note`, or one rebuilt from its summary when the record has
//!    none (see [`crate::fallback_note`]). An image in a message before the checkpoint (one a
//!    compaction retained) becomes its one-line placeholder; the last round keeps its images.
//!
//! [`check_view`] verifies a view before it is sent: tool pairs complete, no orphans, legal
//! role order.
//!
//! The walk and the assembly are here; finding the active record is in `active`, converting
//! entries into items (pruned, bounded, the checkpoint) in `convert`, placing repair results in
//! `repairs`, covering old images in `images`.

use std::collections::{HashMap, HashSet};

use crate::entry::{Entry, EntryId};
use crate::journal::Journal;
use crate::meta as flags;
use crate::payload::Payload;

mod active;
mod convert;
mod images;
mod items;
mod repairs;

use active::{active_compaction, SpineIndex};
use convert::{checkpoint_item, convert_into, item, Shorten};
use repairs::place_repairs;

pub use active::active_compaction_of;
pub use convert::bound_item;

pub use items::{
    ActiveCompaction, ItemContent, ItemKind, Role, Shortened, ToolResultView, View, ViewItem,
};

/// The second text block of every checkpoint message (docs/compaction.md, *The checkpoint note*).
pub const CHECKPOINT_MARKER: &str = "<!-- codewhale.compaction-checkpoint.v1 -->";

/// The view of `head` (an entry id). An unknown head renders an empty view.
pub fn render(journal: &Journal, head: &str) -> View {
    render_inner(journal, head, None)
}

/// The view `head` would have if `record` (a `compaction` entry not yet appended) were the
/// newest record of the journal: what a compaction pass validates before it writes anything,
/// without copying the journal. A record that does not apply to this spine changes nothing.
pub fn render_with_record(journal: &Journal, head: &str, record: &Entry) -> View {
    render_inner(journal, head, Some(record))
}

/// The token total of `head`'s view, from the index alone (no entry read or parsed), when
/// that is the whole of it: no compaction record in the journal, no repaired result on the
/// spine, and a stored count for every entry the view holds. `None` otherwise: render the view
/// and count it. What opening a long session that was never compacted uses instead of
/// rendering all of it to add up its counts.
pub fn view_total_from_index(journal: &Journal, head: &str) -> Option<u64> {
    if !journal.compaction_positions().is_empty() {
        return None;
    }
    let start = journal.position(head)?;
    let spine: Vec<u32> = journal
        .spine_positions(start)
        .into_iter()
        .filter(|&p| journal.is_model_visible_at(p))
        .collect();
    if spine.iter().any(|&p| journal.has_flags(p, flags::REPAIRS)) {
        return None;
    }
    let skip = withdrawn_anchors(journal, &spine);
    spine.iter().filter(|p| !skip.contains(p)).map(|&p| journal.tokens_at(p).map(u64::from)).sum()
}

fn render_inner(journal: &Journal, head: &str, extra: Option<&Entry>) -> View {
    let head_id = EntryId::from(head);
    let Some(start) = journal.position(head) else {
        return View { head: head_id, items: Vec::new(), compaction: None };
    };
    let spine: Vec<u32> = journal
        .spine_positions(start)
        .into_iter()
        .filter(|&p| journal.is_model_visible_at(p))
        .collect();
    let has_repairs = spine.iter().any(|&p| journal.has_flags(p, flags::REPAIRS));
    let skip = withdrawn_anchors(journal, &spine);
    let active = if journal.compaction_positions().is_empty() && extra.is_none() {
        None
    } else {
        active_compaction(journal, &SpineIndex::new(journal, &spine), extra)
    };
    let Some((record_entry, record, range)) = active else {
        let mut items = Vec::with_capacity(spine.len());
        convert_into(&mut items, journal, &spine, None, &skip);
        if has_repairs {
            place_repairs(&mut items, journal, &spine, None, None);
        }
        return View { head: head_id, items, compaction: None };
    };

    let pruned: HashSet<&str> = record.pruned_ids.iter().map(EntryId::as_str).collect();
    let bounded: HashMap<&str, u64> =
        record.bounded.iter().map(|b| (b.id.as_str(), b.max_bytes)).collect();
    let shorten = Shorten { pruned: &pruned, bounded: &bounded };
    let mut items = Vec::with_capacity(spine.len());
    let convert = |p: &u32| item(journal.entry_at(*p), Some(&shorten));
    match range {
        Some((first, last)) => {
            let retained: HashSet<&str> = record.retained_ids.iter().map(EntryId::as_str).collect();
            convert_into(&mut items, journal, &spine[..first], Some(&shorten), &skip);
            items.extend(
                spine[first..=last]
                    .iter()
                    .filter(|&&p| retained.contains(&*journal.id_at(p)))
                    .filter(|p| !skip.contains(p))
                    .filter_map(convert),
            );
            items.push(checkpoint_item(record_entry, record));
            convert_into(&mut items, journal, &spine[last + 1..], Some(&shorten), &skip);
        }
        None => convert_into(&mut items, journal, &spine, Some(&shorten), &skip),
    }
    if has_repairs {
        place_repairs(&mut items, journal, &spine, range, Some(&shorten));
    }
    if range.is_some() {
        images::cover(&mut items);
    }
    let compaction = Some(ActiveCompaction {
        id: record_entry.id.clone(),
        record: record.clone(),
        tokens: record_entry.tokens,
    });
    View { head: head_id, items, compaction }
}

/// Spine positions of anchor entries a later synthetic note on the spine withdraws
/// (`withdraws: <id>`): left out of the view.
fn withdrawn_anchors(journal: &Journal, spine: &[u32]) -> HashSet<u32> {
    spine
        .iter()
        .filter(|&&p| journal.has_flags(p, flags::WITHDRAWS))
        .filter_map(|&p| match &journal.entry_at(p).payload {
            Payload::User(u) => u.withdraws.as_ref(),
            _ => None,
        })
        .filter_map(|id| journal.position(id.as_str()))
        .filter(|&p| journal.has_flags(p, flags::ANCHOR))
        .collect()
}
