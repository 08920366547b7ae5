//! The conversation at HEAD, as the UI shows it, in pages ([`super::Op::GetHistory`],
//! [`super::Event::History`]). Types only.
//!
//! A page holds the newest items before a cursor, oldest first, with tool calls and their
//! results joined in one item; a page never starts inside a tool exchange. Items the active
//! compaction covers are marked `covered` (the model reads them only through the note), and the
//! compaction itself is an item where its note sits. A huge session is never sent whole: the
//! UI asks for older pages as the user scrolls up.

use serde::{Deserialize, Serialize};

use super::kinds::{CompactionKind, CompactionTrigger};

/// How a tool call ended, as far as the journal knows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOutcome {
    pub is_error: bool,
    /// The output (redacted, as journaled; shortened for display when very long).
    pub output: String,
    /// How the call ended: journaled with the result (for files written before that was,
    /// worked out by the engine from its own wording of the result).
    #[serde(default)]
    pub end: super::values::CallEnd,
    /// A shell command's exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Whether `output` states the exit code itself (the shell tool's last line).
    #[serde(default)]
    pub exit_code_in_output: bool,
    /// For a call the user declined: what they said with the no, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One thing the conversation holds. Not `#[non_exhaustive]`, like [`Event`](super::Event):
/// the front end matches every item by name, so a new one does not compile until it is shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HistoryItem {
    User {
        id: String,
        text: String,
        /// Covered by the active compaction: the model reads it only through the note.
        covered: bool,
        /// The images the message carries.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<super::ImageInfo>,
    },
    Assistant {
        id: String,
        text: String,
        /// Reasoning the model showed (kept for display; folded by default).
        thinking: String,
        covered: bool,
    },
    Anchor {
        id: String,
        text: String,
        covered: bool,
    },
    /// A pin withdrawn by `/anchor rm`.
    AnchorWithdrawn {
        id: String,
        text: String,
        covered: bool,
    },
    Tool {
        /// The assistant entry that made the call.
        id: String,
        call_id: String,
        name: String,
        input: serde_json::Value,
        /// `None` while no result is journaled.
        result: Option<ToolOutcome>,
        covered: bool,
    },
    /// The active compaction, where its note sits in what the model reads.
    Compaction {
        id: String,
        trigger: CompactionTrigger,
        path: CompactionKind,
        covered_entries: u64,
        retained: u64,
        tokens_before: u64,
        tokens_after: u64,
        note: String,
        /// The note was written in the background (the record's `background: true`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        background: bool,
    },
    /// What was tried on a branch the user left (`branch_summary`): the model reads it.
    BranchSummary {
        id: String,
        summary: String,
        covered: bool,
    },
    /// A shell command the user ran themselves (`!CMD`), with its output and how it ended
    /// (the journal's `end`, the values a tool call's result has).
    UserShell {
        id: String,
        command: String,
        output: String,
        #[serde(default)]
        end: crate::CallEnd,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        #[serde(default)]
        covered: bool,
    },
    /// A side question (`/btw`) and its answer: never read by the model.
    Side {
        id: String,
        question: String,
        answer: String,
        model: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// A local notice kept in the journal (an error, a refusal), with the level it was
    /// journaled with.
    Notice {
        id: String,
        text: String,
        #[serde(default)]
        level: super::values::NoticeLevel,
    },
}

/// The whole conversation at HEAD as the user saw it, oldest first: what `/export` and
/// `codewhale export` write ([`super::Op::GetTranscript`], [`super::Event::Transcript`]). Every
/// item of HEAD's branch, those compactions cover included (marked `covered` as the active
/// compaction says), and every compaction whose covered part lies on the branch, where it was
/// written. Tool output is shortened for display as in a page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    /// The session's id.
    pub session: String,
    /// The model the session last used.
    pub model: String,
    pub items: Vec<HistoryItem>,
}

/// A page of the conversation at HEAD.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryPage {
    /// HEAD when the page was built.
    pub head: String,
    /// Oldest first.
    pub items: Vec<HistoryItem>,
    /// The cursor to ask for the page before this one; `None` when this page starts at the
    /// beginning of the conversation.
    pub older: Option<String>,
    /// The page replaces everything shown (a session opened, HEAD moved); otherwise it goes
    /// before what is shown.
    pub reset: bool,
}
