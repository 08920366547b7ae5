//! [`Event`]: what the engine did or saw, each in an [`EventMsg`] naming the submission that
//! caused it; how a turn ended; the level of a notice.

use serde::{Deserialize, Serialize};

use super::history_page::{HistoryPage, Transcript};
use super::kinds::{CompactionKind, CompactionTrigger, ErrorKind};
use super::mcp::McpServerInfo;
use super::outcome::{AnchorChange, HeadMove};
use super::plan::Plan;
use super::report::{BranchInfo, ContextReport, ModelChoice, StatusReport};
use super::restore::{RestoreFile, RestoreOutcome};
use super::values::{
    AnchorInfo, ApprovalOffer, BackgroundState, BranchSummaryState, CallEnd, NoticeLevel,
    SandboxReport, SubmissionId, TurnStats, UserMessageInfo,
};
use crate::approval::{ApprovalMode, Grant};
use crate::figure::Figure;

/// One event with the submission that caused it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventMsg {
    pub id: SubmissionId,
    #[serde(flatten)]
    pub event: Event,
}

/// Something the engine did or saw. `#[non_exhaustive]`: a front end keeps compiling when an
/// event is added, and handles one it does not know in a fallback arm (the TUI logs and skips it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A session is being opened (sent before a large one is read, so a front end can show
    /// progress instead of waiting silently).
    SessionOpening {
        path: String,
        bytes: u64,
    },
    /// The session is open; sent once after spawn.
    SessionConfigured {
        session_id: String,
        model: String,
        path: String,
        resumed: bool,
        /// The directory the session works in (a resumed session's own: its header's
        /// `cwd`): tools, anchors and project instructions are read there.
        workspace: String,
        /// The approval mode the session starts in.
        #[serde(default)]
        approval: ApprovalMode,
        /// The project instruction files read into the system prompt, relative to the
        /// workspace, in the order they are sent (`../AGENTS.md`, `CLAUDE.md`, ...).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        instructions: Vec<String>,
        /// The custom slash commands found for the workspace (docs/extending.md), a
        /// workspace's that shadow the user's own in their place; an untrusted workspace's
        /// are listed with why they cannot run.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        commands: Vec<super::CustomCommandInfo>,
    },
    TurnStarted,
    /// The turn ended (failed or interrupted) before any reply, or — sent at open — the last
    /// run journaled a message and ended before any reply: the user's message was taken back
    /// (HEAD is where it was before the message, which stays in the journal on its own
    /// branch). `text` is the message, for the front end to offer for editing or sending again.
    MessageTakenBack {
        text: String,
    },
    /// The images the turn's user message carries, stored and journaled with it.
    ImagesAttached {
        images: Vec<super::ImageInfo>,
    },
    /// The turn is over; `text` is the final assistant text (empty if none).
    TurnFinished {
        status: TurnStatus,
        text: String,
        /// Time and tokens of the turn.
        #[serde(default)]
        stats: TurnStats,
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
    /// A `task` call started a subagent: a child session of its own (docs/subagents.md).
    SubagentStarted {
        /// The `task` call.
        call_id: String,
        description: String,
        /// The child's session id (its journal is `<id>.jsonl` beside the parent's).
        session_id: String,
    },
    /// What a running subagent does now: its current step (a tool call, "thinking",
    /// "compacting"), the tokens its view holds and the compactions it made.
    SubagentProgress {
        call_id: String,
        step: String,
        tokens: u64,
        compactions: u32,
    },
    /// A subagent ended; `status` says how, `calls` how many tool calls it made.
    SubagentFinished {
        call_id: String,
        session_id: String,
        status: TurnStatus,
        calls: u32,
        compactions: u32,
    },
    /// Output of a running shell command, as it arrives (for a live view; the result holds
    /// all of it).
    ToolOutputDelta {
        call_id: String,
        text: String,
    },
    /// The user's own command (`!CMD`) started; its output arrives as
    /// [`Event::ToolOutputDelta`]s with the same `call_id`.
    UserShellStarted {
        call_id: String,
        command: String,
    },
    /// The answer to a side question ([`Op::SideQuestion`](super::Op::SideQuestion), `/btw`),
    /// read from the conversation as the model has it now and journaled as a `side` entry
    /// that no later request carries. `cost_usd` is `None` when the model's price is unknown.
    SideAnswer {
        question: String,
        answer: String,
        model: String,
        input_tokens: u64,
        output_tokens: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// The user's own command ended; `output` is what the model will read of it.
    UserShellFinished {
        call_id: String,
        command: String,
        output: String,
        end: CallEnd,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
    },
    ToolCallFinished {
        call_id: String,
        name: String,
        is_error: bool,
        output: String,
        /// How it ended, for the user (a denial is not a failure of the tool).
        #[serde(default)]
        end: CallEnd,
        /// A shell command's exit code, when it exited.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// Whether `output` states the exit code itself (the shell tool's last line), so a
        /// front end that shows the code does not repeat it.
        #[serde(default)]
        exit_code_in_output: bool,
        /// For a call the user declined: what they said with the no, if anything.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// For a write or an edit that was made: the change as a unified diff (shown folded;
        /// an edit approved without asking shows it too).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<String>,
    },
    /// A call waits for [`Op::Approve`](super::Op::Approve) or [`Op::Deny`](super::Op::Deny).
    ApprovalNeeded {
        call_id: String,
        name: String,
        input: serde_json::Value,
        reason: String,
        /// The "always" choices that apply to this call (none for a call outside the
        /// workspace or on Codewhale's own settings).
        #[serde(default)]
        offers: Vec<ApprovalOffer>,
        /// For a write or an edit: the change as a unified diff.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<String>,
    },
    /// A transient provider failure before the reply began: the request is sent again after
    /// `wait_ms` (attempt `attempt` of `max_attempts`).
    Retrying {
        attempt: u32,
        max_attempts: u32,
        wait_ms: u64,
        reason: String,
    },
    /// The budget's figures, after every change of what the model reads: a session opened, a
    /// message appended, a reply, a compaction, a HEAD move, a model switch, an anchor change.
    /// The same figures, with the same labels, as [`Event::ContextReport`].
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
        /// The model requests go to.
        model: String,
    },
    /// Something the user should know that is not an error.
    Notice {
        level: NoticeLevel,
        message: String,
    },
    /// A failure.
    Error {
        kind: ErrorKind,
        message: String,
    },
    /// An anchor was pinned or unpinned; [`Event::Anchors`] follows with the list.
    AnchorChanged {
        change: AnchorChange,
        message: String,
    },
    /// The model requests go to changed ([`Op::SwitchModel`](super::Op::SwitchModel)).
    ModelSwitched {
        model: String,
        message: String,
    },
    /// The answer to [`Op::GetDiff`](super::Op::GetDiff): the workspace's changes since the
    /// session started, as one unified diff (`files` files differ; `since` says what it
    /// compares with).
    WorkspaceDiff {
        diff: String,
        files: u64,
        since: String,
    },
    /// The approval mode changed ([`Op::SetApproval`](super::Op::SetApproval)); it applies
    /// from the next tool call on.
    ApprovalChanged {
        mode: ApprovalMode,
        message: String,
    },
    /// HEAD moved: a page of the new HEAD's conversation follows, and `message` (what moved,
    /// and what a take-back restored) belongs under it.
    HeadMoved {
        how: HeadMove,
        head: String,
        level: NoticeLevel,
        message: String,
    },
    /// A grant was taken back ([`Op::RevokeGrant`](super::Op::RevokeGrant)); [`Event::Grants`]
    /// follows.
    GrantRevoked {
        grant: Grant,
    },
    CompactionStarted {
        trigger: CompactionTrigger,
    },
    CompactionFinished {
        id: String,
        trigger: CompactionTrigger,
        path: CompactionKind,
        tokens_before: u64,
        tokens_after: u64,
        covered: u64,
        retained: u64,
        /// The checkpoint note the model now reads (what a compaction capsule unfolds to).
        note: String,
        /// The note was written in the background before the threshold (docs/compaction.md,
        /// *Background compaction*).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        background: bool,
    },
    /// A pass is about to send summary request `request` of `of`, carrying about `tokens`
    /// tokens (docs/compaction.md, *The summary request*): progress for the status line, and
    /// for stderr in `compact` and `exec`.
    CompactionProgress {
        request: u32,
        of: u32,
        tokens: u64,
    },
    CompactionFailed {
        reason: String,
    },
    /// Nothing could or needed to shrink (information, not a failure).
    CompactionRefused {
        reason: String,
    },
    /// The user interrupted the pass; nothing was written.
    CompactionCancelled,
    /// The background note (docs/compaction.md, *Background compaction*) changed state: `writing`,
    /// `ready`, or `null` when there is none any more (committed, unused, cancelled or failed).
    /// Quiet: for the status line only.
    BackgroundNote {
        state: Option<BackgroundState>,
    },
    /// The summary of a branch HEAD left changed state (docs/journal-format.md,
    /// *`branch_summary`*). Quiet: the status line shows `writing`; `written` carries the summary
    /// (the model reads it from now on) and `dropped` the reason nothing was written.
    BranchSummary {
        state: BranchSummaryState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The answer to [`Op::GetContext`](super::Op::GetContext).
    ContextReport {
        report: Box<ContextReport>,
    },
    /// HEAD's live plan (the newest valid `update_plan` call on its spine): after a call set
    /// it (`updated`, the front end shows it), after the session opened and after every HEAD
    /// move.
    Plan {
        plan: Option<Plan>,
        updated: bool,
    },
    /// The answer to [`Op::ListAnchors`](super::Op::ListAnchors), and after every anchor change.
    Anchors {
        anchors: Vec<AnchorInfo>,
    },
    /// The answer to [`Op::ListGrants`](super::Op::ListGrants) and
    /// [`Op::RevokeGrant`](super::Op::RevokeGrant): the approval mode and the session's grants,
    /// numbered from 1 as [`Op::RevokeGrant`](super::Op::RevokeGrant) takes them.
    Grants {
        mode: ApprovalMode,
        grants: Vec<Grant>,
        /// How shell commands are confined.
        sandbox: SandboxReport,
    },
    /// The answer to [`Op::ListMcpServers`](super::Op::ListMcpServers): every configured server, in
    /// name order.
    McpServers {
        servers: Vec<McpServerInfo>,
    },
    /// The answer to [`Op::ListUserMessages`](super::Op::ListUserMessages), oldest first.
    UserMessages {
        messages: Vec<UserMessageInfo>,
    },
    /// The answer to [`Op::ListBranches`](super::Op::ListBranches): every branch tip, newest first.
    Branches {
        branches: Vec<BranchInfo>,
    },
    /// The answer to [`Op::GetStatus`](super::Op::GetStatus).
    Status {
        status: Box<StatusReport>,
    },
    /// The answer to [`Op::ListModels`](super::Op::ListModels): the catalog's models, in catalog
    /// order.
    Models {
        models: Vec<ModelChoice>,
    },
    /// The answer to [`Op::PreviewRestore`](super::Op::PreviewRestore): the files a code restore to
    /// `to` (`None`: the last turn) would touch, and how.
    RestorePreview {
        to: Option<String>,
        files: Vec<RestoreFile>,
    },
    /// After a checkout: the files the checked-out branch's tools changed after the branch
    /// point `from` that do not hold what the branch last gave them (a code rewind took them
    /// back, say), and how restoring them would treat each;
    /// [`Op::RestoreBranchFiles`](super::Op::RestoreBranchFiles) restores them.
    BranchFiles {
        from: String,
        files: Vec<RestoreFile>,
    },
    /// Files were taken back (after [`Op::TakeBack`](super::Op::TakeBack),
    /// [`Op::Undo`](super::Op::Undo) or [`Op::RestoreBranchFiles`](super::Op::RestoreBranchFiles)).
    FilesRestored {
        outcome: RestoreOutcome,
    },
    /// Put this text back in the composer for editing: the user message a `/rewind` or `/fork`
    /// went back to before. It is never sent again unless the user sends it.
    ComposerText {
        text: String,
    },
    /// A page of the conversation at HEAD: the answer to [`Op::GetHistory`](super::Op::GetHistory),
    /// and unasked (with `reset`) after the session opened and after every HEAD move.
    History {
        page: HistoryPage,
    },
    /// The answer to [`Op::GetTranscript`](super::Op::GetTranscript): the whole conversation
    /// at HEAD, for `/export`.
    Transcript {
        transcript: Box<Transcript>,
    },
    /// The engine stopped (after [`Op::Shutdown`](super::Op::Shutdown)).
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
