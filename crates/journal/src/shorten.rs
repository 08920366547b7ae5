//! How the view shortens what a compaction record names (docs/journal-format.md, *The view*): a
//! pruned tool result becomes a one-line stub; a bounded tool result keeps its head and tail around
//! a marker; a bounded user or assistant message keeps a prefix of its text followed by a marker
//! block. Every cut is [`crate::cut`]'s, its marker naming the entry that holds the text whole.
//!
//! Pure text work. Invariants: a cut never splits a UTF-8 character; a bounded message keeps a
//! non-empty prefix of every text block it had (so the survival contract's prefix rule holds)
//! and never edits bytes that must replay exactly (signed thinking and opaque provider blocks
//! are dropped whole, never cut); tool call ids and names are kept.

use serde_json::Value;

use crate::block::Block;
use crate::cut::{self, Whole};
use crate::entry::EntryId;

/// The one-line stub that replaces a pruned tool result: its size, and that `recall` reads the
/// original back from the journal entry that holds it.
pub fn pruned_stub(original_bytes: u64, entry: &EntryId) -> String {
    format!(
        "[output pruned by compaction: {original_bytes} bytes; journal entry {entry} holds it \
         whole: recall entry {entry} reads it, or rerun the tool if it may have changed]"
    )
}

/// What a pruned attachment reads as.
pub fn pruned_attachment_stub(path: &str, original_bytes: u64) -> String {
    format!(
        "[attached file {path} pruned by compaction: {original_bytes} bytes; read the file again \
         if you need it]"
    )
}

/// `text` cut to at most `max_bytes` of original text: head + marker + tail by the one rule
/// ([`crate::cut`]), the marker naming `entry`, the journal entry that holds it whole. Text
/// within the bound is returned unchanged (`None`).
pub fn cut_to_bound(text: &str, max_bytes: usize, entry: &EntryId) -> Option<String> {
    cut::head_tail(text, max_bytes, Whole::Entry(entry))
}

/// Every text block of a bounded message keeps at least this much of its start.
const MIN_TEXT_PREFIX: usize = 256;

/// String arguments of a bounded message's tool calls longer than this are cut to a prefix.
const MIN_INPUT_STRING: usize = 1024;

/// The size of a message's content as the bound measures it: text, thinking, opaque blocks and
/// tool call arguments.
pub fn blocks_bytes(blocks: &[Block]) -> u64 {
    blocks
        .iter()
        .map(|b| match b {
            Block::Text(t) => t.text.len(),
            Block::Thinking(t) => t.thinking.len() + t.signature.as_ref().map_or(0, String::len),
            Block::ToolUse(t) => t.name.len() + t.input.to_string().len(),
            Block::Opaque(raw) => raw.get().len(),
            Block::Image(i) => i.covered().len(),
        } as u64)
        .sum()
}

/// The blocks of a user or assistant message bounded to about `max_bytes`: each text block cut
/// to a prefix (sharing the budget in order, each keeping at least 256 bytes),
/// long string arguments of tool calls cut to a prefix, images replaced by their one line, thinking and opaque blocks dropped, and
/// a marker block naming the original size and `entry`. `None` when the message is within the
/// bound.
pub fn bound_blocks(blocks: &[Block], max_bytes: u64, entry: &EntryId) -> Option<Vec<Block>> {
    let original = blocks_bytes(blocks);
    if original <= max_bytes {
        return None;
    }
    let max = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let mut remaining = max;
    let input_max = (max / 4).max(MIN_INPUT_STRING);
    let mut out = Vec::with_capacity(blocks.len() + 1);
    for block in blocks {
        match block {
            Block::Text(t) => {
                let end = cut::prefix_end(&t.text, remaining.max(MIN_TEXT_PREFIX));
                remaining = remaining.saturating_sub(end);
                out.push(Block::text(&t.text[..end]));
            }
            Block::ToolUse(call) => {
                let mut call = call.clone();
                cut_strings(&mut call.input, input_max, entry);
                remaining = remaining.saturating_sub(call.input.to_string().len());
                out.push(Block::ToolUse(call));
            }
            Block::Image(image) => out.push(Block::text(image.covered())),
            Block::Thinking(_) | Block::Opaque(_) => {}
        }
    }
    let kept = blocks_bytes(&out);
    out.push(Block::text(cut::marker(
        original.saturating_sub(kept),
        original,
        Whole::Entry(entry),
    )));
    Some(out)
}

/// Cuts every string in `value` longer than `max` bytes to a head and the marker naming `entry`.
fn cut_strings(value: &mut Value, max: usize, entry: &EntryId) {
    match value {
        Value::String(s) => {
            if let Some(cut) = cut::head(s, max, Whole::Entry(entry)) {
                *s = cut;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| cut_strings(v, max, entry)),
        Value::Object(map) => map.values_mut().for_each(|v| cut_strings(v, max, entry)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_bounded_message_keeps_prefixes_ids_and_says_what_was_cut() {
        let id = EntryId::from("e1");
        let blocks = vec![
            Block::thinking("long thought ".repeat(100), Some("sig".into())),
            Block::text("é".repeat(3000)),
            Block::tool_use("t1", "write_file", json!({"path": "a", "content": "x".repeat(9000)})),
            Block::text("second"),
        ];
        let out = bound_blocks(&blocks, 2000, &id).unwrap();
        assert_eq!(out.len(), 4, "thinking dropped, marker added: {out:?}");
        let first = out[0].as_text().unwrap();
        assert!(first.len() <= 2000 && "é".repeat(3000).starts_with(first));
        let call = out[1].as_tool_use().unwrap();
        assert_eq!((call.id.as_str(), call.input["path"].as_str()), ("t1", Some("a")));
        let content = call.input["content"].as_str().unwrap();
        assert!(content.ends_with("[… 7976 of 9000 bytes cut; recall entry e1 …]"), "{content}");
        assert_eq!(out[2].as_text(), Some("second"), "a short later block keeps a prefix");
        let marker = out[3].as_text().unwrap();
        assert!(cut::is_marker(marker) && marker.ends_with("; recall entry e1 …]"), "{marker}");
        assert_eq!(bound_blocks(&[Block::text("short")], 2000, &id), None);
    }
}
