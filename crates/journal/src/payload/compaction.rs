//! The payloads that sum up conversation: the `compaction` record (what the model reads
//! instead of a covered segment) and the `branch_summary` (what was tried on a branch HEAD
//! left). Field names are part of the format (docs/journal-format.md), as everywhere in
//! `payload`.

use crate::entry_id::EntryId;
use crate::json_object::{record, string_enum};

string_enum! {
    /// What started a compaction pass.
    pub enum Trigger { Auto = "auto", Manual = "manual", Reactive = "reactive", Idle = "idle" }
    default Auto
}

string_enum! {
    /// Whether a compaction pass summarized (`summary`) or only pruned tool output.
    pub enum CompactionPath { Summary = "summary", PruneOnly = "prune-only" }
    default Summary
}

record! {
    /// The covered segment: `last` and its ancestors back to `first`.
    pub struct Covers {
        first: EntryId = "first" req,
        last: EntryId = "last" req,
        /// How many model-visible entries the segment holds.
        count: u64 = "count" info,
    }
}

record! {
    /// A tool result the view cuts to `max_bytes` (head + marker + tail).
    pub struct Bounded {
        id: EntryId = "id" req,
        max_bytes: u64 = "max_bytes" req,
    }
}

record! {
    /// What a compaction pass kept of the last round (docs/survival-contract.md).
    #[derive(Default)]
    pub struct Receipt {
        last_round_messages: u64 = "last_round_messages" info,
        last_round_tool_results: u64 = "last_round_tool_results" info,
        assistant_kept: u64 = "assistant_kept" info,
        anchors_chars: u64 = "anchors_chars" info,
        retained_user_tokens: u64 = "retained_user_tokens" info,
    }
}

record! {
    /// `compaction`: a change of what the model reads (docs/journal-format.md, *`compaction`*).
    /// Never moves HEAD.
    pub struct CompactionPayload {
        /// The model's summary after caps; `None` for a prune-only pass.
        summary: Option<String> = "summary" info,
        /// The complete first text block of the checkpoint message, exactly as the model reads
        /// it (header, summary, files touched, running now, live-state stamp, anchors,
        /// closing). Prune-only records carry the previous record's note forward.
        note: String = "note" info,
        covers: Option<Covers> = "covers" always,
        retained_ids: Vec<EntryId> = "retained_ids" always,
        pruned_ids: Vec<EntryId> = "pruned_ids" always,
        bounded: Vec<Bounded> = "bounded" always,
        files_touched: Vec<String> = "files_touched" info,
        anchors: Option<String> = "anchors" info,
        trigger: Trigger = "trigger" info,
        focus: Option<String> = "focus" info,
        path: CompactionPath = "path" info,
        previous_id: Option<EntryId> = "previous_id" info,
        model: Option<String> = "model" info,
        tokens_before: Option<u64> = "tokens_before" info,
        tokens_after: Option<u64> = "tokens_after" info,
        receipt: Option<Receipt> = "receipt" info,
        /// Optional: the o200k tokens the pass removed from the view, so a reopened session
        /// replays the budget the live one had.
        savings: Option<u64> = "savings" info_opt,
        /// Optional `true`: the note was written in the background, on a snapshot taken before
        /// the threshold (docs/compaction.md, *Background compaction*). Absent otherwise.
        background: bool = "background" info_flag,
    }
}

/// How the model reads a `branch_summary` (docs/journal-format.md, *`branch_summary`*), before the
/// summary itself.
pub const BRANCH_SUMMARY_PREFIX: &str = "What was tried on a branch you left: ";

record! {
    /// `branch_summary`: what was tried on a branch HEAD left, appended on the new branch as a
    /// chain extension (its parent is HEAD, so it moves HEAD). The model reads it as a
    /// user-role text ([`BRANCH_SUMMARY_PREFIX`] and the summary); it is not a plain user
    /// message, and compaction keeps it verbatim.
    pub struct BranchSummaryPayload {
        /// The first entry of the branch the summary describes.
        branch_id: EntryId = "branch_id" req,
        summary: String = "summary" info,
        parent_branch_id: Option<EntryId> = "parent_branch_id" info,
        /// The branch point: the entry both branches share.
        from: Option<EntryId> = "from" info,
        /// The left branch's last entry.
        tip: Option<EntryId> = "tip" info,
    }
}
