//! Typed payloads, one per entry kind (docs/journal-format.md). Field names are part of the format:
//! fields are added, never renamed. Every payload keeps unknown fields in `extra`.
//!
//! Every field the contract lists is written on every line, as `null` when it has no value
//! (`always`): other tools read these files against docs/journal-format.md, and a key that is
//! sometimes missing reads to them like a different format. Only what the contract itself marks
//! optional (`anchor`, `synthetic`, `interrupted`, `trimmed_before`, `content_blocks`, `bytes`, and
//! our own `title`) is left out when unset. Reading accepts every one of them absent.
//!
//! The conversation's payloads (`header`, `user`, `assistant`, `tool_result`) and the
//! [`Payload`] of every kind are here; the compaction record and the branch summary are in
//! `compaction`, the kinds the model never reads (`system`, `side`, `head`) in `local`, the
//! payloads' constructors and accessors in `constructors`.

use serde_json::Value;

use crate::block::Block;
use crate::entry_id::EntryId;
use crate::json_object::{record, string_enum};
use crate::text::Text;
use crate::timestamp::Timestamp;

mod compaction;
mod constructors;
mod local;

pub use compaction::{
    Bounded, BranchSummaryPayload, CompactionPath, CompactionPayload, Covers, Receipt, Trigger,
    BRANCH_SUMMARY_PREFIX,
};
pub use local::{HeadPayload, HeadReason, HookRun, Level, SidePayload, SystemPayload};

record! {
    /// `header`: the first line of every session file (parent null).
    pub struct HeaderPayload {
        session_id: String = "session_id" req,
        created_at: Timestamp = "created_at" info,
        /// The workspace directory the session was started in.
        cwd: String = "cwd" req,
        app_version: String = "app_version" info,
        provider: String = "provider" info,
        model: String = "model" info,
        /// Optional: a short title (the first line of the first prompt) when the engine knows
        /// it at creation. See docs/journal-format.md, "Listing".
        title: Option<String> = "title" info_opt,
        /// Optional: the session whose `task` call started this one (a subagent).
        parent_session: Option<String> = "parent_session" info_opt,
        /// Optional: the parent's entry holding that `task` call.
        parent_entry: Option<String> = "parent_entry" info_opt,
        /// Optional: the id of that `task` call (one reply may hold several).
        parent_call: Option<String> = "parent_call" info_opt,
    }
}

record! {
    /// `user`: a user message, an anchor (pinned note) or a synthetic engine notice to the model.
    #[derive(Default)]
    pub struct UserPayload {
        content: Vec<Block> = "content" always,
        /// A pinned note (`/anchor`); not a plain user message.
        anchor: bool = "anchor" info_flag,
        /// Text the engine wrote in the user role; not a plain user message.
        synthetic: bool = "synthetic" info_flag,
        /// A synthetic note that withdraws the pinned note (anchor entry) with this id: later
        /// views leave that anchor out (docs/journal-format.md, *The view*).
        withdraws: Option<EntryId> = "withdraws" opt,
        /// A synthetic entry holding a file the user attached (`@path`): the model reads it
        /// with the turn; compaction may prune it like a tool result.
        attachment: Option<Attachment> = "attachment" opt,
        /// A synthetic entry holding a shell command the user ran themselves (`!CMD`) and its
        /// output: the model reads it with the next message.
        user_shell: Option<UserShell> = "user_shell" opt,
        /// A synthetic note telling the model that plan mode began (`true`: it may read and
        /// plan, not change files) or ended (`false`). The newest on a branch says which the
        /// model was last told.
        plan_mode: Option<bool> = "plan_mode" info_opt,
        /// A synthetic entry holding what a user's hook printed (`SessionStart`,
        /// `UserPromptSubmit`, `PostCompact`): the hook's event. The newest `PostCompact` one
        /// is restated in every later compaction note.
        hook: Option<String> = "hook" info_opt,
    }
}

record! {
    /// The user's own shell command a `user_shell` entry holds.
    #[derive(Default)]
    pub struct UserShell {
        /// The command, as typed after `!`.
        command: String = "command" req,
        /// Its exit code, when it exited by itself.
        exit_code: Option<i64> = "exit_code" info_opt,
        /// How it ended, with the values of a `tool_result`'s `end` (absent in older files,
        /// which are read by their exit code).
        end: Option<CallEnd> = "end" info_opt,
    }
}

record! {
    /// What an attachment entry holds.
    #[derive(Default)]
    pub struct Attachment {
        /// The file, relative to the workspace, as the user mentioned it.
        path: String = "path" req,
        /// The file's size in bytes when it was attached.
        bytes: Option<u64> = "bytes" info_opt,
    }
}

record! {
    /// Token usage the provider reported for one response.
    #[derive(Default)]
    pub struct Usage {
        input_tokens: u64 = "input_tokens" info,
        output_tokens: u64 = "output_tokens" info,
        cache_read_tokens: u64 = "cache_read_tokens" info,
        cache_write_tokens: u64 = "cache_write_tokens" info,
        /// What the reply cost in US dollars at the model's price (absent: no known price).
        cost_usd: Option<f64> = "cost_usd" info_opt,
    }
}

record! {
    /// What the prompt of an assistant response was made of: enough to reproduce it.
    pub struct Reads {
        /// HEAD when the request was built (the view was rendered at this entry).
        head: EntryId = "head" req,
        /// The active compaction record of that view, if any.
        summary: Option<EntryId> = "summary" info,
        /// Set when the request was trimmed (§5.1 fail-open): the first view entry still sent.
        trimmed_before: Option<EntryId> = "trimmed_before" info_opt,
        /// Codewhale's o200k estimate of the prompt (system prompt included): with the
        /// provider's reported count, the calibration ratio a reopened session replays.
        estimate: Option<u64> = "estimate" info_opt,
        /// Set when the fail-open step had to shorten items of this request itself (no
        /// compaction pass was left in the turn): each named entry was cut to `max_bytes` as a
        /// record's `bounded` would cut it.
        bounded: Option<Vec<Bounded>> = "bounded" info_opt,
    }
}

record! {
    /// `assistant`: one complete model response, however many blocks it has.
    #[derive(Default)]
    pub struct AssistantPayload {
        content: Vec<Block> = "content" always,
        model: Option<String> = "model" info,
        stop_reason: Option<String> = "stop_reason" info,
        usage: Option<Usage> = "usage" info,
        reads: Option<Reads> = "reads" info,
        /// The stream failed mid-way; `content` is what arrived.
        interrupted: bool = "interrupted" info_flag,
    }
}

record! {
    /// `tool_result`: the output of one call, on the chain right after its assistant entry (and
    /// the results of the calls before it in the same response).
    #[derive(Default)]
    pub struct ToolResultPayload {
        tool_use_id: String = "tool_use_id" req,
        /// The output as the model reads it.
        content: Text = "content" always,
        is_error: bool = "is_error" info,
        /// Structured output (images, ...), when the tool produced any.
        content_blocks: Option<Vec<Block>> = "content_blocks" opt,
        /// Size of the original output in bytes, when `content` was already shortened.
        bytes: Option<u64> = "bytes" info_opt,
        /// Appended later, at HEAD, for a call that had no result (a crash, an interrupt): the view
        /// places it right after its call's assistant entry (docs/journal-format.md, *The view*).
        repairs: bool = "repairs" info_flag,
        /// The files the call changed, each with the content hashes before and after
        /// (docs/journal-format.md, *The file store*): what `/rewind`, `/undo` and `codewhale
        /// rewind` take back.
        files: Option<Vec<FileChange>> = "files" info_opt,
        /// How the call ended, as the engine knew it when it journaled the result (absent in
        /// older files): what front ends show, never read back from `content`.
        end: Option<CallEnd> = "end" info_opt,
        /// A shell command's exit code, when it exited.
        exit_code: Option<i64> = "exit_code" info_opt,
        /// For a call the user declined: what they said with the no (redacted like `content`).
        reason: Option<String> = "reason" info_opt,
    }
}

string_enum! {
    /// How a tool call ended: ran and succeeded, ran and failed, ran past its timeout, declined
    /// by the user, refused for want of anyone to approve it, not run (too many calls in one
    /// reply), or stopped by an interrupt.
    pub enum CallEnd {
        Completed = "completed",
        Failed = "failed",
        TimedOut = "timed_out",
        Denied = "denied",
        NotApproved = "not_approved",
        NotRun = "not_run",
        Interrupted = "interrupted",
    }
    default Completed
}

record! {
    /// One file a tool call changed: its workspace-relative path and the content hashes (in
    /// the session's file store) before and after the call; `None` for an absent file.
    #[derive(Default)]
    pub struct FileChange {
        path: String = "path" req,
        before: Option<String> = "before" info,
        after: Option<String> = "after" info,
    }
}

/// The payload of an entry, by kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Payload {
    Header(HeaderPayload),
    User(UserPayload),
    Assistant(AssistantPayload),
    ToolResult(ToolResultPayload),
    Compaction(Box<CompactionPayload>),
    BranchSummary(BranchSummaryPayload),
    System(SystemPayload),
    Side(SidePayload),
    Head(HeadPayload),
    /// A kind written by a newer version: kept, passed over by HEAD replay and the view.
    Unknown {
        kind: String,
        payload: Value,
    },
}

/// The `kind` strings of the format.
pub mod kind {
    pub const HEADER: &str = "header";
    pub const USER: &str = "user";
    pub const ASSISTANT: &str = "assistant";
    pub const TOOL_RESULT: &str = "tool_result";
    pub const COMPACTION: &str = "compaction";
    pub const BRANCH_SUMMARY: &str = "branch_summary";
    pub const SYSTEM: &str = "system";
    pub const SIDE: &str = "side";
    pub const HEAD: &str = "head";
}

impl Payload {
    /// The entry's `kind`.
    pub fn kind(&self) -> &str {
        match self {
            Payload::Header(_) => kind::HEADER,
            Payload::User(_) => kind::USER,
            Payload::Assistant(_) => kind::ASSISTANT,
            Payload::ToolResult(_) => kind::TOOL_RESULT,
            Payload::Compaction(_) => kind::COMPACTION,
            Payload::BranchSummary(_) => kind::BRANCH_SUMMARY,
            Payload::System(_) => kind::SYSTEM,
            Payload::Side(_) => kind::SIDE,
            Payload::Head(_) => kind::HEAD,
            Payload::Unknown { kind, .. } => kind,
        }
    }

    /// True for the kinds the model reads (`user`, `assistant`, `tool_result`); compaction
    /// records reach the model only through the view's checkpoint.
    pub fn is_model_visible(&self) -> bool {
        matches!(
            self,
            Payload::User(_)
                | Payload::Assistant(_)
                | Payload::ToolResult(_)
                | Payload::BranchSummary(_)
        )
    }

    /// Parses a payload of the given kind; unknown kinds are kept as JSON.
    pub fn parse(kind: &str, json: &str) -> Result<Payload, serde_json::Error> {
        Ok(match kind {
            kind::HEADER => Payload::Header(serde_json::from_str(json)?),
            kind::USER => Payload::User(serde_json::from_str(json)?),
            kind::ASSISTANT => Payload::Assistant(serde_json::from_str(json)?),
            kind::TOOL_RESULT => Payload::ToolResult(serde_json::from_str(json)?),
            kind::COMPACTION => Payload::Compaction(Box::new(serde_json::from_str(json)?)),
            kind::BRANCH_SUMMARY => Payload::BranchSummary(serde_json::from_str(json)?),
            kind::SYSTEM => Payload::System(serde_json::from_str(json)?),
            kind::SIDE => Payload::Side(serde_json::from_str(json)?),
            kind::HEAD => Payload::Head(serde_json::from_str(json)?),
            other => {
                Payload::Unknown { kind: other.to_owned(), payload: serde_json::from_str(json)? }
            }
        })
    }

    pub(crate) fn serialize_body<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::Serialize;
        match self {
            Payload::Header(p) => p.serialize(s),
            Payload::User(p) => p.serialize(s),
            Payload::Assistant(p) => p.serialize(s),
            Payload::ToolResult(p) => p.serialize(s),
            Payload::Compaction(p) => p.serialize(s),
            Payload::BranchSummary(p) => p.serialize(s),
            Payload::System(p) => p.serialize(s),
            Payload::Side(p) => p.serialize(s),
            Payload::Head(p) => p.serialize(s),
            Payload::Unknown { payload, .. } => payload.serialize(s),
        }
    }
}

macro_rules! payload_from {
    ($($ty:ty => $variant:ident),* $(,)?) => {
        $( impl From<$ty> for Payload {
            fn from(p: $ty) -> Payload { Payload::$variant(p) }
        } )*
    };
}

payload_from! {
    HeaderPayload => Header,
    UserPayload => User,
    AssistantPayload => Assistant,
    ToolResultPayload => ToolResult,
    BranchSummaryPayload => BranchSummary,
    SystemPayload => System,
    SidePayload => Side,
    HeadPayload => Head,
}

impl From<CompactionPayload> for Payload {
    fn from(p: CompactionPayload) -> Payload {
        Payload::Compaction(Box::new(p))
    }
}
