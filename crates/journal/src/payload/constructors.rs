//! Constructors and accessors of the payloads: a new payload has every field the contract
//! lists, set to its empty value, so a caller names only what it knows.

use super::{
    AssistantPayload, Bounded, BranchSummaryPayload, CompactionPath, CompactionPayload, Covers,
    FileChange, HeadPayload, HeadReason, HeaderPayload, Level, Reads, Receipt, SystemPayload,
    ToolResultPayload, Trigger, Usage, UserPayload, BRANCH_SUMMARY_PREFIX,
};
use crate::block::Block;
use crate::entry_id::EntryId;
use crate::text::Text;
use crate::timestamp::Timestamp;

impl HeaderPayload {
    /// A header for a new session in `cwd`.
    pub fn new(session_id: impl Into<String>, cwd: impl Into<String>) -> HeaderPayload {
        HeaderPayload {
            session_id: session_id.into(),
            created_at: Timestamp::now(),
            cwd: cwd.into(),
            app_version: String::new(),
            provider: String::new(),
            model: String::new(),
            title: None,
            parent_session: None,
            parent_entry: None,
            parent_call: None,
            extra: Default::default(),
        }
    }
}

impl UserPayload {
    /// A plain user message with one text block.
    pub fn text(text: impl Into<String>) -> UserPayload {
        UserPayload { content: vec![Block::text(text)], ..Default::default() }
    }

    /// A pinned note (`anchor: true`).
    pub fn anchor(text: impl Into<String>) -> UserPayload {
        UserPayload { anchor: true, ..UserPayload::text(text) }
    }

    /// A notice the engine writes to the model in the user role (`synthetic: true`).
    pub fn synthetic(text: impl Into<String>) -> UserPayload {
        UserPayload { synthetic: true, ..UserPayload::text(text) }
    }

    /// A plain user message: neither an anchor nor synthetic.
    pub fn is_plain(&self) -> bool {
        !self.anchor && !self.synthetic
    }
}

impl AssistantPayload {
    /// A response with these blocks.
    pub fn new(content: Vec<Block>) -> AssistantPayload {
        AssistantPayload { content, ..Default::default() }
    }

    /// The `tool_use` blocks, in call order.
    pub fn tool_uses(&self) -> impl Iterator<Item = &crate::block::ToolUseBlock> {
        self.content.iter().filter_map(Block::as_tool_use)
    }
}

impl ToolResultPayload {
    /// The result of call `tool_use_id`.
    pub fn new(
        tool_use_id: impl Into<String>,
        content: impl Into<Text>,
        is_error: bool,
    ) -> ToolResultPayload {
        ToolResultPayload {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error,
            ..Default::default()
        }
    }
}

impl Reads {
    /// The prompt was the view of `head` with the given active compaction.
    pub fn new(head: EntryId, summary: Option<EntryId>) -> Reads {
        Reads {
            head,
            summary,
            trimmed_before: None,
            estimate: None,
            bounded: None,
            extra: Default::default(),
        }
    }
}

impl Covers {
    /// The segment from `first` to `last` holding `count` model-visible entries.
    pub fn new(first: EntryId, last: EntryId, count: u64) -> Covers {
        Covers { first, last, count, extra: Default::default() }
    }
}

impl Bounded {
    /// Cut tool result `id` to `max_bytes` in the view.
    pub fn new(id: EntryId, max_bytes: u64) -> Bounded {
        Bounded { id, max_bytes, extra: Default::default() }
    }
}

impl CompactionPayload {
    /// An empty record of the given path and trigger; the engine fills in the rest.
    pub fn new(path: CompactionPath, trigger: Trigger) -> CompactionPayload {
        CompactionPayload {
            summary: None,
            note: String::new(),
            covers: None,
            retained_ids: Vec::new(),
            pruned_ids: Vec::new(),
            bounded: Vec::new(),
            files_touched: Vec::new(),
            anchors: None,
            trigger,
            focus: None,
            path,
            previous_id: None,
            model: None,
            tokens_before: None,
            tokens_after: None,
            receipt: None,
            savings: None,
            background: false,
            extra: Default::default(),
        }
    }

    /// A record with none of `covers`, `pruned_ids` and `bounded` describes nothing and is
    /// ignored. One with only `bounded` is a valid prune-only record.
    pub fn is_valid(&self) -> bool {
        self.covers.is_some() || !self.pruned_ids.is_empty() || !self.bounded.is_empty()
    }
}

impl SystemPayload {
    /// A local notice.
    pub fn new(level: Level, text: impl Into<String>) -> SystemPayload {
        SystemPayload {
            text: text.into(),
            level,
            model: None,
            context_window: None,
            window_source: None,
            window_before: None,
            summary_failed: false,
            restore_id: None,
            left: None,
            hook: None,
            extra: Default::default(),
        }
    }
}

impl HeadPayload {
    /// Move HEAD to `to`.
    pub fn new(to: EntryId, reason: HeadReason) -> HeadPayload {
        HeadPayload { to, reason, extra: Default::default() }
    }
}

impl BranchSummaryPayload {
    /// A summary of the branch starting at `branch_id`.
    pub fn new(branch_id: EntryId, summary: impl Into<String>) -> BranchSummaryPayload {
        BranchSummaryPayload {
            branch_id,
            summary: summary.into(),
            parent_branch_id: None,
            from: None,
            tip: None,
            extra: Default::default(),
        }
    }

    /// The text the model reads.
    pub fn model_text(&self) -> String {
        format!("{BRANCH_SUMMARY_PREFIX}{}", self.summary)
    }
}
impl crate::lenient::ViaValue for Option<Usage> {
    const EXPECTED: &'static str = "a usage object";
}

impl crate::lenient::ViaValue for Option<Reads> {
    const EXPECTED: &'static str = "a reads object with a head";
}

impl crate::lenient::ViaValue for Option<Receipt> {
    const EXPECTED: &'static str = "a receipt object";
}

impl crate::lenient::ViaValue for Option<Vec<Bounded>> {
    const EXPECTED: &'static str = "a list of {id, max_bytes}";
}

impl crate::lenient::ViaValue for Option<Vec<FileChange>> {
    const EXPECTED: &'static str = "a list of {path, before, after}";
}

impl crate::lenient::ViaValue for Option<super::HookRun> {
    const EXPECTED: &'static str = "a hook object {event, command, exit, duration_ms}";
}
