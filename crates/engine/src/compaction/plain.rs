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
use crate::session::counts;

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
    /// Converts `view`; `known` supplies counts the session already has for items without a
    /// stored one (the rest are counted here).
    pub fn new(view: &View, known: impl Fn(&ViewItem) -> Option<u32>) -> PlainView {
        let mut out = PlainView::default();
        for (i, item) in view.items.iter().enumerate() {
            out.messages.push(message(item));
            let tokens =
                known(item).unwrap_or_else(|| counts::Counted::of_item(&item.content).exact());
            out.tokens.push(u64::from(tokens));
            out.sources.push(item.source.clone());
            if matches!(item.shortened, Some(Shortened::Pruned { .. })) {
                out.pruned.push(i);
            }
        }
        out
    }

    /// Sum of the estimates.
    pub fn total(&self) -> u64 {
        self.tokens.iter().sum()
    }
}

/// The plain message of one view item.
pub fn message(item: &ViewItem) -> Message {
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
    message.image_tokens = u64::from(counts::image_tokens(item.blocks()));
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
