//! Converting entries into view items: what each kind reads as, pruned or bounded as the
//! active record says, and the checkpoint built from the record.
//!
//! Invariants: a pinned note (anchor) and the checkpoint are never cut; an item shortened here
//! drops its stored token count (it was not of this text); a long run converts the same on two
//! threads as on one.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use super::{ItemContent, ItemKind, Role, Shortened, ToolResultView, ViewItem, CHECKPOINT_MARKER};
use crate::block::Block;
use crate::entry::Entry;
use crate::fallback_note::checkpoint_note;
use crate::journal::Journal;
use crate::payload::{CompactionPayload, Payload};
use crate::shorten::{
    blocks_bytes, bound_blocks, cut_to_bound, pruned_attachment_stub, pruned_stub,
};
use crate::text::Text;

/// Views at least this long are converted on two threads.
const PARALLEL_ITEMS: usize = 16_384;
/// Runs of at least this many entries are converted without holding the entries parsed (a
/// view this long is a session that was never compacted, about to be).
const HOLD_MAX: usize = 4_096;

/// Appends the view items of the entries at `positions`, in order (repairs are placed
/// afterwards). Converting an item copies its blocks (the view owns its content), which
/// dominates rendering a long uncompacted session; a long run is split in two halves converted
/// at once. The result is the same either way.
pub(super) fn convert_into(
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

pub(super) struct Shorten<'a> {
    pub(super) pruned: &'a HashSet<&'a str>,
    pub(super) bounded: &'a HashMap<&'a str, u64>,
}

pub(super) fn checkpoint_item(entry: &Entry, record: &CompactionPayload) -> ViewItem {
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
/// results, which [`place_repairs`](super::repairs::place_repairs) places.
pub(super) fn item(entry: &Entry, shorten: Option<&Shorten<'_>>) -> Option<ViewItem> {
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
pub(super) fn convert_result(entry: &Entry, shorten: Option<&Shorten<'_>>) -> Option<ViewItem> {
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
