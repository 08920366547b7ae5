//! The Op/Event protocol between a front end (TUI, exec) and the engine.
//!
//! Owns only types: no I/O, no tokio. A front end submits [`Op`]s through
//! [`crate::EngineHandle::submit`], which returns the [`SubmissionId`] it assigned; every
//! [`Event`] the engine emits travels in an [`EventMsg`] naming the submission that caused it.
//! Both enums are `#[non_exhaustive]` and serde-tagged with `type` (snake_case), so a JSON
//! consumer (`codewhale exec --json`) sees one stable object per line and new variants never
//! break old matches. See `docs/architecture.md` for sequence sketches.

use serde::{Deserialize, Serialize};

use crate::budget::Figure;

/// The id the engine gave a submitted [`Op`]; 0 is reserved for events nobody asked for
/// (start-up notices).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SubmissionId(pub u64);

/// What the user (or a script) asks the engine to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Op {
    /// A user message; starts a turn.
    UserInput { text: String },
    /// Stop the running turn; pending tool calls get "interrupted" results.
    Interrupt,
    /// Let a tool call that is awaiting approval run.
    Approve { call_id: String, scope: ApprovalScope },
    /// Refuse a tool call that is awaiting approval; the model reads the refusal.
    Deny { call_id: String },
    /// Compact now (`/compact [focus]`).
    Compact { focus: Option<String> },
    /// Pin a note (`/anchor TEXT`).
    AddAnchor { text: String },
    /// Unpin the n-th note (1-based, as `/anchor list` shows them).
    RemoveAnchor { index: usize },
    /// Start a new branch at an entry (the edit/retry of a message).
    Fork { at: String },
    /// Move HEAD to an entry of another branch.
    Checkout { to: String },
    /// Move HEAD back to an earlier entry of this branch.
    Rewind { to: String },
    /// Use another model from the next request on.
    SwitchModel { model: String },
    /// Finish: sync the journal and stop the engine.
    Shutdown,
}

/// How far an approval reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalScope {
    /// This call only.
    Once,
    /// This tool, for the rest of the session (inside the workspace).
    Always,
}

/// One event with the submission that caused it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventMsg {
    pub id: SubmissionId,
    #[serde(flatten)]
    pub event: Event,
}

/// Something the engine did or saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// The session is open; sent once after spawn.
    SessionConfigured {
        session_id: String,
        model: String,
        path: String,
        resumed: bool,
        /// The directory the session works in (a resumed session's own, DESIGN-wise its
        /// header's `cwd`): tools, anchors and project instructions are read there.
        workspace: String,
    },
    TurnStarted,
    /// The turn is over; `text` is the final assistant text (empty if none).
    TurnFinished {
        status: TurnStatus,
        text: String,
    },
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        text: String,
    },
    /// The model asked for a call (before approval).
    ToolCallRequested {
        call_id: String,
        name: String,
        input: serde_json::Value,
    },
    ToolCallStarted {
        call_id: String,
        name: String,
    },
    ToolCallFinished {
        call_id: String,
        name: String,
        is_error: bool,
        output: String,
    },
    /// A call waits for [`Op::Approve`] or [`Op::Deny`].
    ApprovalNeeded {
        call_id: String,
        name: String,
        input: serde_json::Value,
        reason: String,
    },
    /// Token figures after a response, or after anything that changed the view.
    Usage {
        /// Prompt tokens of the last request as the provider reported them (if it did).
        reported_input: Option<u64>,
        output: Option<u64>,
        /// Pressure against the window, labelled.
        pressure: Figure,
        usable_input: u64,
        threshold: u64,
        window: u64,
        /// The window is a guess (the catalog did not know the model).
        window_unverified: bool,
    },
    /// Something the user should know that is not an error.
    Notice {
        level: NoticeLevel,
        message: String,
    },
    /// A failure; `kind` is a short stable name (`context_overflow`, `auth`, `config` ...).
    Error {
        kind: String,
        message: String,
    },
    CompactionStarted {
        trigger: String,
    },
    CompactionFinished {
        id: String,
        path: String,
        tokens_before: u64,
        tokens_after: u64,
        covered: u64,
        retained: u64,
    },
    CompactionFailed {
        reason: String,
    },
    CompactionRefused {
        reason: String,
    },
    /// The engine stopped (after [`Op::Shutdown`]).
    ShutdownComplete,
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// The model finished.
    Completed,
    /// The user interrupted.
    Interrupted,
    /// An error stopped the turn (an [`Event::Error`] precedes this).
    Failed,
}

/// Severity of a notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeLevel {
    Info,
    Warning,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialize_flat_with_their_submission() {
        let msg = EventMsg { id: SubmissionId(3), event: Event::TextDelta { text: "hi".into() } };
        let json = serde_json::to_string(&msg).unwrap();
        assert_eq!(json, r#"{"id":3,"type":"text_delta","text":"hi"}"#);
        let back: EventMsg = serde_json::from_str(&json).unwrap();
        assert_eq!(back, msg);
    }

    #[test]
    fn ops_are_tagged() {
        let op = Op::Approve { call_id: "c".into(), scope: ApprovalScope::Always };
        let json = serde_json::to_string(&op).unwrap();
        assert_eq!(json, r#"{"type":"approve","call_id":"c","scope":"always"}"#);
        assert_eq!(serde_json::from_str::<Op>(r#"{"type":"interrupt"}"#).unwrap(), Op::Interrupt);
    }
}
