//! From the journal's [`View`] to plain messages: the bridge between the engine and the pure
//! compaction core.
//!
//! One view item becomes one [`Message`] (no merging), so index `i` of the plain list, of the
//! token list and of `view.items` always name the same thing; the pass maps plan indices back
//! to entry ids through [`PlainView::sources`]. Thinking signatures and other block bytes are
//! not copied here on purpose: the plain data is only looked at, never sent — requests are
//! always built from the journal itself.

use codewhale_journal::{Block, ItemContent, ItemKind, Role as JRole, Shortened, View, ViewItem};

use super::message::{Message, Part, Role};

/// The token counts a plain view is given: the tokenizer and the image cost rule belong to the
/// engine, so this crate never counts a token itself.
pub trait Counts {
    /// The item's estimate as one message (stored, already known or counted now).
    fn tokens(&self, item: &ViewItem) -> u32;
    /// What the images among `blocks` cost.
    fn image_tokens(&self, blocks: &[Block]) -> u32;
}

/// A view as plain messages, with each item's entry id and token estimate.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlainView {
    pub messages: Vec<Message>,
    pub tokens: Vec<u64>,
    /// The entry each item comes from (the compaction record for the checkpoint).
    pub sources: Vec<codewhale_journal::EntryId>,
    /// Indices of tool results the active compaction already pruned.
    pub pruned: Vec<usize>,
}

impl PlainView {
    /// Converts `view`, each item counted by `counts`.
    pub fn new(view: &View, counts: &impl Counts) -> PlainView {
        let mut out = PlainView::default();
        for (i, item) in view.items.iter().enumerate() {
            out.messages.push(message(item, counts));
            let tokens = counts.tokens(item);
            out.tokens.push(u64::from(tokens));
            out.sources.push(item.source.clone());
            if matches!(item.shortened, Some(Shortened::Pruned { .. })) {
                out.pruned.push(i);
            }
        }
        out
    }

    /// Like [`PlainView::new`], but the tool calls' inputs are moved out of `view`, which is
    /// left with `null` in their place: a pass over a long view that was never compacted would
    /// otherwise hold every call's input twice. A request built from those items must first
    /// take them back ([`PlainView::restore_inputs`]).
    pub fn taking_inputs(view: &mut View, counts: &impl Counts) -> PlainView {
        let mut out = PlainView::default();
        for (i, item) in view.items.iter_mut().enumerate() {
            // Counted before the inputs leave: a call's input is part of its message's count.
            let tokens = counts.tokens(item);
            let mut taken = Vec::new();
            if let ItemContent::Blocks(blocks) = &mut item.content {
                for block in blocks.iter_mut() {
                    if let Block::ToolUse(t) = block {
                        taken.push(std::mem::take(&mut t.input));
                    }
                }
            }
            let mut message = message(item, counts);
            let mut taken = taken.into_iter();
            for part in &mut message.content {
                if let Part::ToolUse { input, .. } = part {
                    if let Some(value) = taken.next() {
                        *input = value;
                    }
                }
            }
            out.messages.push(message);
            out.tokens.push(u64::from(tokens));
            out.sources.push(item.source.clone());
            if matches!(item.shortened, Some(Shortened::Pruned { .. })) {
                out.pruned.push(i);
            }
        }
        out
    }

    /// Gives the items `items`, which are `view.items[first..]` of a view whose inputs
    /// [`PlainView::taking_inputs`] took, their tool calls' inputs back.
    pub fn restore_inputs(&self, items: &mut [ViewItem], first: usize) {
        for (item, message) in items.iter_mut().zip(self.messages.iter().skip(first)) {
            let ItemContent::Blocks(blocks) = &mut item.content else { continue };
            let mut inputs = message.content.iter().filter_map(|p| match p {
                Part::ToolUse { input, .. } => Some(input),
                _ => None,
            });
            for block in blocks.iter_mut() {
                let Block::ToolUse(t) = block else { continue };
                match inputs.next() {
                    Some(input) if t.input.is_null() => t.input = input.clone(),
                    _ => {}
                }
            }
        }
    }

    /// Sum of the estimates.
    pub fn total(&self) -> u64 {
        self.tokens.iter().sum()
    }
}

/// The plain message of one view item, its images costed by `counts`.
pub fn message(item: &ViewItem, counts: &impl Counts) -> Message {
    let role = match item.role {
        JRole::User => Role::User,
        JRole::Assistant => Role::Assistant,
    };
    let content = match &item.content {
        ItemContent::ToolResult(r) => {
            let (id, content) = (r.tool_use_id.clone(), r.content.clone());
            vec![if r.is_error {
                Part::failed_result(id, content)
            } else {
                Part::tool_result(id, content)
            }]
        }
        ItemContent::Blocks(blocks) => blocks.iter().filter_map(part).collect(),
    };
    let mut message = Message::new(role, content);
    message.anchor = item.kind == ItemKind::Anchor;
    message.synthetic =
        matches!(item.kind, ItemKind::Synthetic | ItemKind::Attachment | ItemKind::BranchSummary);
    message.attachment = item.kind == ItemKind::Attachment;
    message.branch_summary = item.kind == ItemKind::BranchSummary;
    message.image_tokens = u64::from(counts.image_tokens(item.blocks()));
    message
}

fn part(block: &Block) -> Option<Part> {
    match block {
        Block::Text(t) => Some(Part::text(t.text.clone())),
        Block::ToolUse(t) => Some(Part::tool_use(t.id.clone(), t.name.clone(), t.input.clone())),
        Block::Thinking(t) => {
            Some(Part::Thinking { thinking: t.thinking.clone(), signature: t.signature.clone() })
        }
        Block::Image(image) => Some(Part::text(image.describe())),
        Block::Opaque(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use codewhale_journal::{EntryId, ItemKind, Role as JRole};
    use serde_json::json;

    use super::*;

    /// The counts the items carry; images cost nothing here.
    struct Stored;

    impl Counts for Stored {
        fn tokens(&self, item: &ViewItem) -> u32 {
            item.tokens.unwrap_or(0)
        }

        fn image_tokens(&self, _: &[Block]) -> u32 {
            0
        }
    }

    fn assistant(id: &str, calls: &[(&str, serde_json::Value)]) -> ViewItem {
        let mut blocks = vec![Block::text("Reading both.")];
        blocks.extend(
            calls.iter().map(|(call, input)| Block::tool_use(*call, "read_file", input.clone())),
        );
        ViewItem {
            source: EntryId::from(id),
            role: JRole::Assistant,
            kind: ItemKind::Assistant,
            content: ItemContent::Blocks(blocks),
            tokens: Some(30),
            shortened: None,
        }
    }

    /// The pass keeps each call's input once, in its plain view; the items a summary request
    /// carries get them back, call by call, text blocks before them notwithstanding.
    #[test]
    fn inputs_taken_for_the_plain_view_come_back_to_the_items_a_request_carries() {
        let items = vec![
            assistant("a", &[("c1", json!({"path": "one.rs"}))]),
            assistant(
                "b",
                &[("c2", json!({"path": "two.rs"})), ("c3", json!({"path": "three.rs"}))],
            ),
        ];
        let mut view = View { head: EntryId::from("b"), items, compaction: None };
        let whole = view.clone();
        let plain = PlainView::taking_inputs(&mut view, &Stored);
        assert_eq!(plain, PlainView::new(&whole, &Stored));
        let left = |item: &ViewItem| match &item.content {
            ItemContent::Blocks(b) => {
                b.iter().filter_map(Block::as_tool_use).filter(|t| !t.input.is_null()).count()
            }
            ItemContent::ToolResult(_) => 0,
        };
        assert_eq!(view.items.iter().map(left).sum::<usize>(), 0, "no input held twice");
        let mut carried = view.items[1..].to_vec();
        plain.restore_inputs(&mut carried, 1);
        assert_eq!(carried, whole.items[1..]);
    }
}
