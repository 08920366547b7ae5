//! The Op/Event protocol between a front end (TUI, exec) and the engine.
//!
//! Owns only types: no I/O, no tokio, no other workspace crate — so a front end that depends on
//! this crate and the engine's handle can reach nothing else of the engine. A front end submits
//! [`Op`]s through the engine handle's `submit`, which returns the [`SubmissionId`] it assigned; every
//! [`Event`] the engine emits travels in an [`EventMsg`] naming the submission that caused it.
//! Both enums are serde-tagged with `type` (snake_case), so a JSON consumer (`codewhale exec
//! --json`) sees one stable object per line. Neither is `#[non_exhaustive]`: the engine handles every
//! op and the TUI every event by name, so a new one does not compile until its side does. Kinds,
//! triggers and paths are enums here, serialized as the same short strings, so nobody compares
//! strings across the seam. See `docs/architecture.md` for the ops, events and sequence sketches.
//!
//! The UI learns everything from these events: history in pages ([`history_page`]), the context
//! report built from the live session ([`report`]), the anchors, the note of every compaction,
//! and a [`Event::Usage`] after every change of what the model reads.

mod approval;
mod event;
pub mod extensions;
mod figure;
pub mod history_page;
mod kinds;
mod mcp;
mod op;
pub mod outcome;
pub mod plan;
pub mod report;
pub mod restore;
mod sandbox;
mod values;

pub use approval::{ApprovalMode, Grant};
pub use figure::{Figure, Source};
pub use history_page::{HistoryItem, HistoryPage, ToolOutcome, Transcript};
pub use outcome::{AnchorChange, HeadMove};
pub use plan::{Plan, PlanStep, StepStatus};
pub use report::{
    BranchInfo, ContextReport, ModelChoice, SpendReport, StatusReport, WorkspaceTrust,
};
pub use restore::{RestoreFile, RestoreOutcome, RestoreState, TakeBack};
pub use sandbox::SandboxMode;

pub use event::{Event, EventMsg, TurnStatus};
pub use extensions::{CustomCommandInfo, ExtensionSource};
pub use kinds::{CompactionKind, CompactionTrigger, ErrorKind};
pub use mcp::{McpServerInfo, McpStatus, McpToolInfo};
pub use op::{ApprovalScope, Op};
pub use values::{
    AnchorInfo, ApprovalOffer, BackgroundState, BranchSummaryState, CallEnd, ImageInfo,
    NoticeLevel, Notify, SandboxReport, SubmissionId, TurnStats, UserMessageInfo,
};

#[cfg(test)]
mod tests;
