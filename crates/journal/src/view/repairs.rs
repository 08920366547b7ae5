//! Repair results in the view: a `tool_result` appended later for a call that had none is
//! placed right after its call (docs/journal-format.md, *The view*).
//!
//! Invariant: a repair can never orphan or duplicate a result: one whose call is covered, not
//! on this branch, or already answered is left out.

use std::collections::{HashMap, HashSet};

use super::convert::{convert_result, Shorten};
use super::{ItemContent, ItemKind, Role, ViewItem};
use crate::block::Block;
use crate::journal::Journal;
use crate::meta as flags;
use crate::payload::Payload;

/// Puts each repair result of the spine right after its call's assistant entry and the results that
/// follow it (docs/journal-format.md, *The view*). A repair inside the covered segment is covered
/// with it; one whose call is not in the view (covered, or never on this branch) or already
/// answered is left out, so a repair can never orphan or duplicate a result.
pub(super) fn place_repairs(
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
