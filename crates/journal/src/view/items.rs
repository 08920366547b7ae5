//! What a view is made of: its items, what each holds and how it was shortened, and the
//! active compaction it was rendered under.
//!
//! Invariant: every item names the entry it comes from ([`ViewItem::source`]; the compaction
//! record for the checkpoint), so a request message always maps back to the file.

use crate::block::Block;
use crate::entry::EntryId;
use crate::payload::CompactionPayload;
use crate::text::Text;

/// Who says a view item in the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    User,
    Assistant,
}

/// What a view item is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ItemKind {
    /// A plain user message.
    User,
    /// A pinned note (`anchor: true`).
    Anchor,
    /// Engine-written text in the user role (`synthetic: true`).
    Synthetic,
    /// A file the user attached with `@` (synthetic, with `attachment`).
    Attachment,
    Assistant,
    ToolResult,
    /// The compaction checkpoint note.
    Checkpoint,
    /// What was tried on a branch HEAD left (`branch_summary`): never shortened.
    BranchSummary,
}

impl ItemKind {
    /// The name used in `context --json` and `/context`.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::User => "user",
            ItemKind::Anchor => "anchor",
            ItemKind::Synthetic => "synthetic",
            ItemKind::Attachment => "attachment",
            ItemKind::Assistant => "assistant",
            ItemKind::ToolResult => "tool_result",
            ItemKind::Checkpoint => "checkpoint",
            ItemKind::BranchSummary => "branch_summary",
        }
    }
}

/// A tool result as the model reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResultView {
    pub tool_use_id: String,
    /// The output: the stored text, a pruning stub, or a bounded cut.
    pub content: Text,
    pub is_error: bool,
    /// Structured output; dropped when the result is pruned.
    pub content_blocks: Option<Vec<Block>>,
}

/// The content of a view item.
#[derive(Clone, Debug, PartialEq)]
pub enum ItemContent {
    /// The blocks of a user, assistant or checkpoint message.
    Blocks(Vec<Block>),
    ToolResult(ToolResultView),
}

/// How a message was changed by the active compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shortened {
    /// Replaced by a one-line stub (`pruned_ids`).
    Pruned { original_bytes: u64 },
    /// Cut to `max_bytes` (`bounded`).
    Bounded { original_bytes: u64, max_bytes: u64 },
    /// A retained message whose images read as one-line placeholders (the message's bytes as
    /// the bound measures them).
    ImagesCovered { original_bytes: u64 },
}

/// One message-sized part of a request, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewItem {
    /// The entry it comes from; for the checkpoint, the compaction record.
    pub source: EntryId,
    pub role: Role,
    pub kind: ItemKind,
    pub content: ItemContent,
    /// The stored token count; `None` when absent or when the view changed the content.
    pub tokens: Option<u32>,
    /// Set when the active compaction shortened this tool result.
    pub shortened: Option<Shortened>,
}

impl ViewItem {
    /// The blocks of a user/assistant/checkpoint item.
    pub fn blocks(&self) -> &[Block] {
        match &self.content {
            ItemContent::Blocks(b) => b,
            ItemContent::ToolResult(_) => &[],
        }
    }

    /// The tool result of a tool_result item.
    pub fn tool_result(&self) -> Option<&ToolResultView> {
        match &self.content {
            ItemContent::ToolResult(r) => Some(r),
            ItemContent::Blocks(_) => None,
        }
    }
}

/// The active compaction of a view.
#[derive(Clone, Debug, PartialEq)]
pub struct ActiveCompaction {
    pub id: EntryId,
    pub record: CompactionPayload,
    /// The record's stored token count (of its note), if any.
    pub tokens: Option<u32>,
}

/// What the model reads at `head`.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    pub head: EntryId,
    pub items: Vec<ViewItem>,
    pub compaction: Option<ActiveCompaction>,
}

impl View {
    /// The checkpoint item, if the view has one.
    pub fn checkpoint(&self) -> Option<&ViewItem> {
        self.items.iter().find(|i| i.kind == ItemKind::Checkpoint)
    }
}
