//! The Op/Event protocol between a front end (TUI, exec) and the engine.
//!
//! Owns only types: no I/O, no tokio. A front end submits [`Op`]s through
//! [`crate::EngineHandle::submit`], which returns the [`SubmissionId`] it assigned; every
//! [`Event`] the engine emits travels in an [`EventMsg`] naming the submission that caused it.
//! Both enums are serde-tagged with `type` (snake_case), so a JSON consumer (`codewhale exec
//! --json`) sees one stable object per line; [`Op`] is `#[non_exhaustive]`, [`Event`] is not,
//! so the TUI handles every event by name and a new one does not compile until it does. Kinds, triggers and paths are enums here, serialized as the same short
//! strings, so nobody compares strings across the seam. See `docs/architecture.md` for the
//! ops, events and sequence sketches.
//!
//! The UI learns everything from these events: history in pages ([`history`]), the context
//! report built from the live session ([`report`]), the anchors, the note of every compaction,
//! and a [`Event::Usage`] after every change of what the model reads.

pub mod history_page;
pub mod outcome;
pub mod plan;
pub mod report;
pub mod restore;

use serde::{Deserialize, Serialize};

pub use crate::approval::Grant;
pub use crate::budget::{Figure, Source};
pub use history_page::{HistoryItem, HistoryPage, ToolOutcome};
pub use outcome::{AnchorChange, HeadMove};
pub use plan::{Plan, PlanStep, StepStatus};
pub use report::{BranchInfo, ContextReport, ModelChoice, StatusReport, WorkspaceTrust};
pub use restore::{RestoreFile, RestoreOutcome, RestoreState, TakeBack};

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
    /// A user message; starts a turn. `attachments` are workspace files the user mentioned
    /// (`@path`): each is read now and journaled after the message, for the model to read.
    UserInput {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<String>,
    },
    /// Stop the running turn or compaction; pending tool calls get "interrupted" results, a
    /// compaction writes nothing.
    Interrupt,
    /// Let a tool call that is awaiting approval run; `scope` may also grant one of the
    /// [`ApprovalOffer`]s of its [`Event::ApprovalNeeded`] for the rest of the session.
    Approve { call_id: String, scope: ApprovalScope },
    /// Refuse a tool call that is awaiting approval; the model reads the refusal, with the
    /// user's `reason` when one was given.
    Deny {
        call_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Ask for the approval mode and the session's grants ([`Event::Grants`]).
    ListGrants,
    /// Ask for the MCP servers, their status and tools ([`Event::McpServers`]); answered at
    /// once, even while a turn runs.
    ListMcpServers,
    /// Take back grant `index` (1-based, as [`Event::Grants`] numbers them).
    RevokeGrant { index: usize },
    /// Ask for the plain user messages of the current branch ([`Event::UserMessages`]), for a
    /// `/rewind` or `/fork` picker.
    ListUserMessages,
    /// Ask for the branch tips of the session ([`Event::Branches`]), for `/checkout`'s picker.
    ListBranches,
    /// Ask for the session at a glance ([`Event::Status`]).
    GetStatus,
    /// Ask for the catalog's models ([`Event::Models`]), for `/model`'s picker.
    ListModels,
    /// Compact now (`/compact [focus]`); runs like a turn and can be interrupted.
    Compact { focus: Option<String> },
    /// Pin a note (`/anchor TEXT`).
    AddAnchor { text: String },
    /// Unpin the n-th note (1-based, as [`Event::Anchors`] numbers them).
    RemoveAnchor { index: usize },
    /// Ask for the workspace's anchors ([`Event::Anchors`]).
    ListAnchors,
    /// Ask for the context report of the live session ([`Event::ContextReport`]).
    GetContext,
    /// Ask for a page of the conversation at HEAD ([`Event::History`]): the newest `limit`
    /// items before `before` (an item's cursor from an earlier page), or the newest ones.
    GetHistory { before: Option<String>, limit: usize },
    /// Start a new branch at an entry (the edit/retry of a message).
    Fork { at: String },
    /// Move HEAD to an entry of another branch.
    Checkout { to: String },
    /// Move HEAD back to an earlier entry of this branch.
    Rewind { to: String },
    /// What taking back to entry `to` would change ([`Event::RestorePreview`]); `None`: the
    /// last turn's file changes (`/undo`).
    PreviewRestore { to: Option<String> },
    /// `/rewind` or `/fork` to `to` taking back the conversation, the code or both; HEAD moves
    /// to before `to` when it is a user message (its text comes back in
    /// [`Event::ComposerText`]), or, with `before`, whatever it is (`codewhale rewind`). Files
    /// changed by someone else are overwritten only with `force`.
    TakeBack {
        to: String,
        take: TakeBack,
        #[serde(default)]
        fork: bool,
        #[serde(default)]
        before: bool,
        #[serde(default)]
        force: bool,
    },
    /// Wait for the summary of a branch HEAD left (DESIGN §2) that is still being written: it
    /// is appended or dropped within its timeout (`compaction.branch_summary_timeout_sec`).
    /// Answered by [`Event::BranchSummary`]: `written`, `dropped`, or `none` when no summary was
    /// being written. `codewhale rewind` sends it before it exits.
    AwaitBranchSummary,
    /// `/undo`: take back the file changes of the last turn (the conversation stays).
    Undo {
        #[serde(default)]
        force: bool,
    },
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
    /// This exact shell command, for the rest of the session.
    Command,
    /// Shell commands starting with the same program and subcommand (the offer names them).
    Prefix,
    /// Writes and edits inside the workspace, for the rest of the session.
    Edits,
    /// This MCP server's tool, for the rest of the session.
    Tool,
    /// Run this call once more without the sandbox (offered only after the sandbox refused
    /// one of its writes; never a default and never a grant).
    Unconfined,
}

/// One MCP server in [`Event::McpServers`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerInfo {
    pub name: String,
    /// The command line or URL.
    pub target: String,
    pub status: McpStatus,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its tools (from the running server, else from its last listing when `cached`).
    pub tools: Vec<McpToolInfo>,
    #[serde(default)]
    pub cached: bool,
}

/// Where an MCP server is (serialized as one word: `starting`, `ready`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpStatus {
    /// `enabled = false`.
    Disabled,
    /// Configured, but not started (a command that needs no servers, or one whose tool list
    /// is cached and none of its tools was called).
    Idle,
    Starting,
    Ready,
    /// It failed; [`McpServerInfo::reason`] says why.
    Failed,
}

impl McpStatus {
    /// The word lists show.
    pub fn word(self) -> &'static str {
        match self {
            McpStatus::Disabled => "disabled",
            McpStatus::Idle => "idle",
            McpStatus::Starting => "starting",
            McpStatus::Ready => "ready",
            McpStatus::Failed => "failed",
        }
    }
}

/// One tool in [`McpServerInfo`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpToolInfo {
    /// The name the model calls it by (`mcp__<server>__<tool>`).
    pub name: String,
    pub description: String,
    /// In the server's `read_only_tools`: runs without asking.
    pub read_only: bool,
}

impl McpServerInfo {
    /// The protocol's form of a server report.
    pub fn from_report(r: codewhale_mcp::ServerReport) -> McpServerInfo {
        let (status, reason) = match &r.status {
            codewhale_mcp::Status::Disabled => (McpStatus::Disabled, None),
            codewhale_mcp::Status::Idle => (McpStatus::Idle, None),
            codewhale_mcp::Status::Starting => (McpStatus::Starting, None),
            codewhale_mcp::Status::Ready => (McpStatus::Ready, None),
            codewhale_mcp::Status::Failed(reason) => (McpStatus::Failed, Some(reason.clone())),
        };
        McpServerInfo {
            name: r.name,
            target: r.target,
            status,
            reason,
            tools: r
                .tools
                .into_iter()
                .map(|t| McpToolInfo {
                    name: t.name,
                    description: t.description,
                    read_only: t.read_only,
                })
                .collect(),
            cached: r.cached,
        }
    }
}

/// An "always" the user may choose for a call waiting for approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalOffer {
    pub scope: ApprovalScope,
    /// What it allows, in words: "the command `cargo test`", "commands starting with
    /// `cargo test …`", "writes and edits inside the workspace".
    pub label: String,
}

/// The sandbox of a session as `/approval` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxReport {
    /// The mode in effect (`off` when the kernel or the front end cannot confine).
    pub mode: crate::sandbox::SandboxMode,
    /// What is writable and whether the network is open (`writable: /ws, /tmp; network on;
    /// Landlock ABI 6`), or why the sandbox is off.
    pub detail: String,
}

/// How a tool call ended, for the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallEnd {
    /// The tool ran and succeeded.
    #[default]
    Completed,
    /// The tool ran and failed (an error, a non-zero exit code).
    Failed,
    /// A shell command ran past its timeout and was killed.
    TimedOut,
    /// The user said no; it never ran.
    Denied,
    /// It needs an approval no one could give here (no terminal to ask); it never ran.
    NotApproved,
    /// The user stopped the turn before or while it ran.
    Interrupted,
}

/// What a turn cost, shown when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TurnStats {
    pub elapsed_ms: u64,
    /// Prompt tokens of the turn's requests (summed), as the provider reported them.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Model requests made.
    pub requests: u32,
    /// Whether every request's figures were reported by the provider.
    pub reported: bool,
}

/// A plain user message of the current branch, for the branch pickers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMessageInfo {
    /// The entry id (`/rewind` and `/fork` take it, or a unique prefix).
    pub id: String,
    /// The message's first line, shortened.
    pub preview: String,
    /// When it was sent (RFC 3339).
    pub when: String,
}

/// One event with the submission that caused it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventMsg {
    pub id: SubmissionId,
    #[serde(flatten)]
    pub event: Event,
}

/// What kind of failure an [`Event::Error`] reports; serialized as a short stable name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// A configuration problem (a bad file, no provider).
    Config,
    /// The session file could not be opened, read or written.
    Journal,
    SessionNotFound,
    Io,
    /// The conversation cannot be sent as it is.
    InvalidView,
    /// A fork, checkout or rewind was refused.
    Branch,
    /// Another op is running; interrupt it or wait.
    Busy,
    /// An approval for a call that is not waiting.
    NoSuchCall,
    /// Pinning or unpinning an anchor failed.
    Anchor,
    /// Even the bounded minimum of the conversation does not fit the window.
    ContextFull,
    // The provider's kinds.
    ContextOverflow,
    RateLimited,
    Overloaded,
    Auth,
    BadRequest,
    Network,
    Protocol,
    Cancelled,
}

impl ErrorKind {
    /// The provider's kind, for a failed request.
    pub fn from_provider(kind: &codewhale_provider::ErrorKind) -> ErrorKind {
        use codewhale_provider::ErrorKind as P;
        match kind {
            P::ContextOverflow { .. } => ErrorKind::ContextOverflow,
            P::RateLimited { .. } => ErrorKind::RateLimited,
            P::Overloaded => ErrorKind::Overloaded,
            P::Auth => ErrorKind::Auth,
            P::BadRequest => ErrorKind::BadRequest,
            P::Network => ErrorKind::Network,
            P::Protocol => ErrorKind::Protocol,
            _ => ErrorKind::Cancelled,
        }
    }
}

/// What started a compaction pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionTrigger {
    Auto,
    Manual,
    Reactive,
}

impl CompactionTrigger {
    /// The short name (`auto`, `manual`, `reactive`), as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionTrigger::Auto => "auto",
            CompactionTrigger::Manual => "manual",
            CompactionTrigger::Reactive => "reactive",
        }
    }
}

/// What a compaction pass wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CompactionKind {
    /// A summary replaced the older part of the conversation.
    #[serde(rename = "summary")]
    Summary,
    /// Long outputs were stubbed or shortened; nothing was summarized.
    #[serde(rename = "prune-only")]
    PruneOnly,
}

impl CompactionKind {
    /// The short name (`summary`, `prune-only`), as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionKind::Summary => "summary",
            CompactionKind::PruneOnly => "prune-only",
        }
    }
}

impl ErrorKind {
    /// The short name, as serialized (`context_overflow`, `busy`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Config => "config",
            ErrorKind::Journal => "journal",
            ErrorKind::SessionNotFound => "session_not_found",
            ErrorKind::Io => "io",
            ErrorKind::InvalidView => "invalid_view",
            ErrorKind::Branch => "branch",
            ErrorKind::Busy => "busy",
            ErrorKind::NoSuchCall => "no_such_call",
            ErrorKind::Anchor => "anchor",
            ErrorKind::ContextFull => "context_full",
            ErrorKind::ContextOverflow => "context_overflow",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::Auth => "auth",
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::Network => "network",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Cancelled => "cancelled",
        }
    }
}

macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}

display_as_str!(ErrorKind, CompactionTrigger, CompactionKind);

/// One pinned note, as `/anchor list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnchorInfo {
    /// 1-based, as [`Op::RemoveAnchor`] takes it.
    pub index: usize,
    /// The text, as pinned (redacted).
    pub text: String,
    /// Whether the next request carries it verbatim.
    pub in_view: bool,
}

/// Where the background note is (DESIGN §5.8, §8 `background.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackgroundState {
    /// The summary request is in flight.
    Writing,
    /// The note is written and waits for the threshold.
    Ready,
}

/// Where the summary of a branch HEAD left is (DESIGN §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BranchSummaryState {
    /// The summary request is in flight; the session goes on meanwhile.
    Writing,
    /// The summary was appended on HEAD as a `branch_summary` entry.
    Written,
    /// No summary was written (the provider failed, the reply was empty or too long, it took
    /// longer than its timeout, or HEAD moved again first); nothing was journaled.
    Dropped,
    /// Nothing was being written (the answer to [`Op::AwaitBranchSummary`] when idle).
    None,
}

/// Something the engine did or saw. Not `#[non_exhaustive]`: the front end of this workspace
/// matches every event by name, so a new one fails to compile until it is handled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
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
        /// The directory the session works in (a resumed session's own, DESIGN-wise its
        /// header's `cwd`): tools, anchors and project instructions are read there.
        workspace: String,
    },
    TurnStarted,
    /// The turn ended (failed or interrupted) before any reply, or — sent at open — the last
    /// run journaled a message and ended before any reply: the user's message was taken back
    /// (HEAD is where it was before the message, which stays in the journal on its own
    /// branch). `text` is the message, for the front end to offer for editing or sending again.
    MessageTakenBack {
        text: String,
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
    /// Output of a running shell command, as it arrives (for a live view; the result holds
    /// all of it).
    ToolOutputDelta {
        call_id: String,
        text: String,
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
    /// A call waits for [`Op::Approve`] or [`Op::Deny`].
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
    /// The model requests go to changed ([`Op::SwitchModel`]).
    ModelSwitched {
        model: String,
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
    /// A grant was taken back ([`Op::RevokeGrant`]); [`Event::Grants`] follows.
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
        /// The note was written in the background before the threshold (DESIGN §5.8).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        background: bool,
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
    /// The background note (DESIGN §5.8) changed state: `writing`, `ready`, or `null` when
    /// there is none any more (committed, unused, cancelled or failed). Quiet: for the status
    /// line only.
    BackgroundNote {
        state: Option<BackgroundState>,
    },
    /// The summary of a branch HEAD left changed state (DESIGN §2). Quiet: the status line
    /// shows `writing`; `written` carries the summary (the model reads it from now on) and
    /// `dropped` the reason nothing was written.
    BranchSummary {
        state: BranchSummaryState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The answer to [`Op::GetContext`].
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
    /// The answer to [`Op::ListAnchors`], and after every anchor change.
    Anchors {
        anchors: Vec<AnchorInfo>,
    },
    /// The answer to [`Op::ListGrants`] and [`Op::RevokeGrant`]: the approval mode and the
    /// session's grants, numbered from 1 as [`Op::RevokeGrant`] takes them.
    Grants {
        mode: crate::approval::ApprovalMode,
        grants: Vec<Grant>,
        /// How shell commands are confined.
        sandbox: SandboxReport,
    },
    /// The answer to [`Op::ListMcpServers`]: every configured server, in name order.
    McpServers {
        servers: Vec<McpServerInfo>,
    },
    /// The answer to [`Op::ListUserMessages`], oldest first.
    UserMessages {
        messages: Vec<UserMessageInfo>,
    },
    /// The answer to [`Op::ListBranches`]: every branch tip, newest first.
    Branches {
        branches: Vec<BranchInfo>,
    },
    /// The answer to [`Op::GetStatus`].
    Status {
        status: Box<StatusReport>,
    },
    /// The answer to [`Op::ListModels`]: the catalog's models, in catalog order.
    Models {
        models: Vec<ModelChoice>,
    },
    /// The answer to [`Op::PreviewRestore`]: the files a code restore to `to` (`None`: the
    /// last turn) would touch, and how.
    RestorePreview {
        to: Option<String>,
        files: Vec<RestoreFile>,
    },
    /// Files were taken back (after [`Op::TakeBack`] or [`Op::Undo`]).
    FilesRestored {
        outcome: RestoreOutcome,
    },
    /// Put this text back in the composer for editing: the user message a `/rewind` or `/fork`
    /// went back to before. It is never sent again unless the user sends it.
    ComposerText {
        text: String,
    },
    /// A page of the conversation at HEAD: the answer to [`Op::GetHistory`], and unasked (with
    /// `reset`) after the session opened and after every HEAD move.
    History {
        page: HistoryPage,
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeLevel {
    #[default]
    Info,
    Warning,
    /// Only on notices read back from the journal (a live error is an [`Event::Error`]).
    Error,
}

#[cfg(test)]
mod tests;
