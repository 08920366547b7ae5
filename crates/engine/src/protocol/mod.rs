//! The Op/Event protocol between a front end (TUI, exec) and the engine.
//!
//! Owns only types: no I/O, no tokio. A front end submits [`Op`]s through
//! [`crate::EngineHandle::submit`], which returns the [`SubmissionId`] it assigned; every
//! [`Event`] the engine emits travels in an [`EventMsg`] naming the submission that caused it.
//! Both enums are serde-tagged with `type` (snake_case), so a JSON consumer (`codewhale exec
//! --json`) sees one stable object per line; [`Op`] is `#[non_exhaustive]`, [`Event`] is not, so
//! the TUI handles every event by name and a new one does not compile until it does. Kinds,
//! triggers and paths are enums here, serialized as the same short strings, so nobody compares
//! strings across the seam. See `docs/architecture.md` for the ops, events and sequence sketches.
//!
//! The UI learns everything from these events: history in pages ([`history_page`]), the context
//! report built from the live session ([`report`]), the anchors, the note of every compaction,
//! and a [`Event::Usage`] after every change of what the model reads.

mod event;
pub mod history_page;
mod kinds;
mod mcp;
mod op;
pub mod outcome;
pub mod plan;
pub mod report;
pub mod restore;
mod values;

pub use crate::approval::Grant;
pub use crate::budget::{Figure, Source};
pub use history_page::{HistoryItem, HistoryPage, ToolOutcome};
pub use outcome::{AnchorChange, HeadMove};
pub use plan::{Plan, PlanStep, StepStatus};
pub use report::{BranchInfo, ContextReport, ModelChoice, StatusReport, WorkspaceTrust};
pub use restore::{RestoreFile, RestoreOutcome, RestoreState, TakeBack};

pub use event::{Event, EventMsg, TurnStatus};
pub use kinds::{CompactionKind, CompactionTrigger, ErrorKind};
pub use mcp::{McpServerInfo, McpStatus, McpToolInfo};
pub use op::{ApprovalScope, Op};
pub use values::{
    AnchorInfo, ApprovalOffer, BackgroundState, BranchSummaryState, CallEnd, NoticeLevel,
    SandboxReport, SubmissionId, TurnStats, UserMessageInfo,
};

#[cfg(test)]
mod tests;
