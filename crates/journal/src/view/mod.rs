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

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::block::Block;
use crate::entry::{Entry, EntryId};
use crate::fallback_note::checkpoint_note;
use crate::journal::Journal;
use crate::meta as flags;
use crate::payload::{CompactionPayload, Payload};
use crate::shorten::{
    blocks_bytes, bound_blocks, cut_to_bound, pruned_attachment_stub, pruned_stub,
};
use crate::text::Text;

mod images;
mod items;

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

/// Puts each repair result of the spine right after its call's assistant entry and the results that
/// follow it (docs/journal-format.md, *The view*). A repair inside the covered segment is covered
/// with it; one whose call is not in the view (covered, or never on this branch) or already
/// answered is left out, so a repair can never orphan or duplicate a result.
fn place_repairs(
    items: &mut Vec<ViewItem>,
    journal: &Journal,
    spine: &[u32],
    covered: Option<(usize, usize)>,
    shorten: Option<&Shorten<'_>>,
) {
    let mut calls: HashMap<&str, usize> = HashMap::new();
    let mut answered: HashSet<String> = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        match &item.content {
            ItemContent::Blocks(blocks) if item.role == Role::Assistant => {
                for call in blocks.iter().filter_map(Block::as_tool_use) {
                    calls.insert(call.id.as_str(), i);
                }
            }
            ItemContent::ToolResult(r) => {
                answered.insert(r.tool_use_id.clone());
            }
            ItemContent::Blocks(_) => {}
        }
    }
    let mut after: HashMap<usize, Vec<ViewItem>> = HashMap::new();
    for (index, &pos) in spine.iter().enumerate() {
        if !journal.has_flags(pos, flags::REPAIRS) {
            continue;
        }
        let entry = journal.entry_at(pos);
        let Payload::ToolResult(r) = &entry.payload else { continue };
        if !r.repairs || covered.is_some_and(|(first, last)| (first..=last).contains(&index)) {
            continue;
        }
        let Some(&call_at) = calls.get(r.tool_use_id.as_str()) else { continue };
        if !answered.insert(r.tool_use_id.clone()) {
            continue;
        }
        let mut end = call_at;
        while items.get(end + 1).is_some_and(|i| i.kind == ItemKind::ToolResult) {
            end += 1;
        }
        if let Some(view) = convert_result(entry, shorten) {
            after.entry(end).or_default().push(view);
        }
    }
    if after.is_empty() {
        return;
    }
    let old = std::mem::take(items);
    for (i, item) in old.into_iter().enumerate() {
        items.push(item);
        if let Some(repairs) = after.remove(&i) {
            items.extend(repairs);
        }
    }
}

type Active<'a> = (&'a Entry, &'a CompactionPayload, Option<(usize, usize)>);

/// Where each entry sits in the (model-visible) spine, by entry position. A flat table rather
/// than a map of ids: ids are resolved through the journal's own index, so rendering a long
/// session hashes only the ids the records name, not every entry of the spine.
struct SpineIndex<'a> {
    journal: &'a Journal,
    at: Vec<u32>,
}

impl<'a> SpineIndex<'a> {
    const OFF: u32 = u32::MAX;

    fn new(journal: &'a Journal, spine: &[u32]) -> SpineIndex<'a> {
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
fn active_compaction<'a>(
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

/// Views at least this long are converted on two threads.
const PARALLEL_ITEMS: usize = 16_384;
/// Runs of at least this many entries are converted without holding the entries parsed (a
/// view this long is a session that was never compacted, about to be).
const HOLD_MAX: usize = 4_096;

/// Appends the view items of the entries at `positions`, in order (repairs are placed
/// afterwards). Converting an item copies its blocks (the view owns its content), which
/// dominates rendering a long uncompacted session; a long run is split in two halves converted
/// at once. The result is the same either way.
fn convert_into(
    items: &mut Vec<ViewItem>,
    journal: &Journal,
    positions: &[u32],
    shorten: Option<&Shorten<'_>>,
    skip: &HashSet<u32>,
) {
    // A long run is converted from entries parsed for the moment: the view owns its content,
    // and holding every entry parsed besides would keep the session twice.
    let keep = positions.len() < HOLD_MAX;
    let convert_run = |run: &[u32], out: &mut Vec<ViewItem>| {
        if keep {
            journal.hold_all(run);
            let convert =
                |p: &u32| if skip.contains(p) { None } else { item(journal.entry_at(*p), shorten) };
            out.extend(run.iter().filter_map(convert));
        } else {
            journal.visit_entries(run, |p, entry| {
                if !skip.contains(&p) {
                    out.extend(item(entry, shorten));
                }
            });
        }
    };
    let parallel = positions.len() >= PARALLEL_ITEMS
        && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    if !parallel {
        convert_run(positions, items);
        return;
    }
    let (first, second) = positions.split_at(positions.len() / 2);
    let second_items = std::thread::scope(|scope| {
        let handle = scope.spawn(|| {
            let mut out = Vec::with_capacity(second.len());
            convert_run(second, &mut out);
            out
        });
        convert_run(first, items);
        handle.join()
    });
    match second_items {
        Ok(rest) => items.extend(rest),
        // The conversion cannot panic; should it anyway, convert the half here rather than
        // return a view with a hole in it.
        Err(_) => convert_run(second, items),
    }
}

struct Shorten<'a> {
    pruned: &'a HashSet<&'a str>,
    bounded: &'a HashMap<&'a str, u64>,
}

fn checkpoint_item(entry: &Entry, record: &CompactionPayload) -> ViewItem {
    let (note, tokens) = match checkpoint_note(record) {
        Cow::Borrowed(note) => (note.to_owned(), entry.tokens),
        // The stored count (if any) was not of this text: leave it to be estimated.
        Cow::Owned(rebuilt) => (rebuilt, None),
    };
    ViewItem {
        source: entry.id.clone(),
        role: Role::User,
        kind: ItemKind::Checkpoint,
        content: ItemContent::Blocks(vec![Block::text(note), Block::text(CHECKPOINT_MARKER)]),
        tokens,
        shortened: None,
    }
}

/// The view item of a spine entry; `None` for kinds the model does not read and for repair
/// results, which [`place_repairs`] places.
fn item(entry: &Entry, shorten: Option<&Shorten<'_>>) -> Option<ViewItem> {
    let (role, kind, blocks) = match &entry.payload {
        Payload::User(u) => {
            let kind = if u.anchor {
                ItemKind::Anchor
            } else if u.attachment.is_some() {
                ItemKind::Attachment
            } else if u.synthetic {
                ItemKind::Synthetic
            } else {
                ItemKind::User
            };
            (Role::User, kind, &u.content)
        }
        Payload::Assistant(a) => (Role::Assistant, ItemKind::Assistant, &a.content),
        Payload::ToolResult(r) if !r.repairs => return convert_result(entry, shorten),
        Payload::BranchSummary(b) => {
            return Some(ViewItem {
                source: entry.id.clone(),
                role: Role::User,
                kind: ItemKind::BranchSummary,
                content: ItemContent::Blocks(vec![Block::text(b.model_text())]),
                tokens: entry.tokens,
                shortened: None,
            })
        }
        _ => return None,
    };
    // An attachment listed in `pruned_ids` reads as a one-line stub, like a tool result.
    if let (Payload::User(u), Some(s)) = (&entry.payload, shorten) {
        if let Some(a) = u.attachment.as_ref().filter(|_| s.pruned.contains(entry.id.as_str())) {
            let original_bytes = a.bytes.unwrap_or_else(|| blocks_bytes(&u.content));
            let stub = pruned_attachment_stub(&a.path, original_bytes);
            return Some(ViewItem {
                source: entry.id.clone(),
                role,
                kind,
                content: ItemContent::Blocks(vec![Block::text(stub)]),
                tokens: None,
                shortened: Some(Shortened::Pruned { original_bytes }),
            });
        }
    }
    let bound = shorten.and_then(|s| s.bounded.get(entry.id.as_str()).copied());
    // A pinned note is restated verbatim everywhere; it is never cut.
    let cut = bound.filter(|_| kind != ItemKind::Anchor).and_then(|max_bytes| {
        let blocks = bound_blocks(blocks, max_bytes, &entry.id)?;
        Some((blocks, max_bytes))
    });
    let (content, tokens, shortened) = match cut {
        Some((cut, max_bytes)) => {
            let original_bytes = blocks_bytes(blocks);
            (cut, None, Some(Shortened::Bounded { original_bytes, max_bytes }))
        }
        None => (blocks.clone(), entry.tokens, None),
    };
    Some(ViewItem {
        source: entry.id.clone(),
        role,
        kind,
        content: ItemContent::Blocks(content),
        tokens,
        shortened,
    })
}

/// `item` cut to `max_bytes` the way a record's `bounded` cuts it (a tool result to its head, a
/// marker and its tail; a message to a prefix of its text and a marker block); `None` when it is
/// within the bound or may not be cut (an anchor, the checkpoint). For requests that must be
/// shortened without a record: a summary request's input, a fail-open request.
pub fn bound_item(item: &ViewItem, max_bytes: u64) -> Option<ViewItem> {
    if matches!(item.kind, ItemKind::Anchor | ItemKind::Checkpoint | ItemKind::BranchSummary) {
        return None;
    }
    let (content, original_bytes) = match &item.content {
        ItemContent::ToolResult(r) => {
            let text = r.content.try_str().ok()?;
            let max = usize::try_from(max_bytes).unwrap_or(usize::MAX);
            let cut = cut_to_bound(text, max, &item.source)?;
            let view = ToolResultView {
                tool_use_id: r.tool_use_id.clone(),
                content: Text::from(cut),
                is_error: r.is_error,
                content_blocks: None,
            };
            (ItemContent::ToolResult(view), text.len() as u64)
        }
        ItemContent::Blocks(blocks) => {
            let cut = bound_blocks(blocks, max_bytes, &item.source)?;
            (ItemContent::Blocks(cut), blocks_bytes(blocks))
        }
    };
    Some(ViewItem {
        source: item.source.clone(),
        role: item.role,
        kind: item.kind,
        content,
        tokens: None,
        shortened: Some(Shortened::Bounded { original_bytes, max_bytes }),
    })
}

/// The view item of a tool result, pruned or bounded as the active record says.
fn convert_result(entry: &Entry, shorten: Option<&Shorten<'_>>) -> Option<ViewItem> {
    let Payload::ToolResult(r) = &entry.payload else { return None };
    let mut view = ToolResultView {
        tool_use_id: r.tool_use_id.clone(),
        content: r.content.clone(),
        is_error: r.is_error,
        content_blocks: r.content_blocks.clone(),
    };
    let mut tokens = entry.tokens;
    let mut shortened = None;
    if let Some(s) = shorten {
        let original_bytes = || r.bytes.unwrap_or(r.content.byte_len() as u64);
        if s.pruned.contains(entry.id.as_str()) {
            let original_bytes = original_bytes();
            view.content = Text::from(pruned_stub(original_bytes, &entry.id));
            view.content_blocks = None;
            tokens = None;
            shortened = Some(Shortened::Pruned { original_bytes });
        } else if let Some(&max_bytes) = s.bounded.get(entry.id.as_str()) {
            let bound = usize::try_from(max_bytes).unwrap_or(usize::MAX);
            if let Some(cut) = cut_to_bound(&r.content, bound, &entry.id) {
                view.content = Text::from(cut);
                view.content_blocks = None;
                tokens = None;
                shortened =
                    Some(Shortened::Bounded { original_bytes: original_bytes(), max_bytes });
            }
        }
    }
    Some(ViewItem {
        source: entry.id.clone(),
        role: Role::User,
        kind: ItemKind::ToolResult,
        content: ItemContent::ToolResult(view),
        tokens,
        shortened,
    })
}
