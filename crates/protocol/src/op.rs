//! [`Op`]: what a front end asks the engine to do, and how far an approval it gives reaches.

use serde::{Deserialize, Serialize};

use super::restore::TakeBack;

/// What the user (or a script) asks the engine to do. `#[non_exhaustive]`: an engine answers an
/// op it does not know with `error{kind: "unsupported"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Op {
    /// A user message; starts a turn. `attachments` are files the user mentioned (`@path`):
    /// a text file is read now and journaled after the message; an image (by its extension)
    /// goes with the message, like `images`, the image files the user named (`--image`, a
    /// pasted path, the clipboard's image). An image is stored in the session's blob store
    /// and the message's entry names it.
    UserInput {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<String>,
    },
    /// Run the custom slash command `name` (docs/extending.md) with `args` as typed: its body
    /// with the arguments filled in is sent as the user's message, on its `model` when it
    /// names one; starts a turn like [`Op::UserInput`]. A command that is not found, or
    /// belongs to a workspace that is not trusted, fails the turn with a sentence saying why.
    RunCommand { name: String, args: String },
    /// Stop the running turn or compaction; pending tool calls get "interrupted" results, a
    /// compaction writes nothing.
    Interrupt,
    /// Let a tool call that is awaiting approval run; `scope` may also grant one of the
    /// [`ApprovalOffer`](super::ApprovalOffer)s of its
    /// [`Event::ApprovalNeeded`](super::Event::ApprovalNeeded) for the rest of the session.
    Approve { call_id: String, scope: ApprovalScope },
    /// Refuse a tool call that is awaiting approval; the model reads the refusal, with the
    /// user's `reason` when one was given.
    Deny {
        call_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Ask for the approval mode and the session's grants
    /// ([`Event::Grants`](super::Event::Grants)).
    ListGrants,
    /// Ask for the MCP servers, their status and tools
    /// ([`Event::McpServers`](super::Event::McpServers)); answered at once, even while a turn runs.
    ListMcpServers,
    /// Take back grant `index` (1-based, as [`Event::Grants`](super::Event::Grants) numbers them).
    RevokeGrant { index: usize },
    /// Ask for the plain user messages of the current branch
    /// ([`Event::UserMessages`](super::Event::UserMessages)), for a `/rewind` or `/fork` picker.
    ListUserMessages,
    /// Ask for the branch tips of the session ([`Event::Branches`](super::Event::Branches)), for
    /// `/checkout`'s picker.
    ListBranches,
    /// Ask for the session at a glance ([`Event::Status`](super::Event::Status)).
    GetStatus,
    /// Ask for the catalog's models ([`Event::Models`](super::Event::Models)), for `/model`'s
    /// picker.
    ListModels,
    /// Compact now (`/compact [focus]`); runs like a turn and can be interrupted.
    Compact { focus: Option<String> },
    /// Pin a note (`/anchor TEXT`).
    AddAnchor { text: String },
    /// Unpin the n-th note (1-based, as [`Event::Anchors`](super::Event::Anchors) numbers them).
    RemoveAnchor { index: usize },
    /// Ask for the workspace's anchors ([`Event::Anchors`](super::Event::Anchors)).
    ListAnchors,
    /// Ask for the context report of the live session
    /// ([`Event::ContextReport`](super::Event::ContextReport)).
    GetContext,
    /// Ask for a page of the conversation at HEAD ([`Event::History`](super::Event::History)): the
    /// newest `limit` items before `before` (an item's cursor from an earlier page), or the newest
    /// ones.
    GetHistory { before: Option<String>, limit: usize },
    /// Ask for the whole conversation at HEAD as the user saw it
    /// ([`Event::Transcript`](super::Event::Transcript)), for `/export`.
    GetTranscript,
    /// Ask for the whole conversation of a `task` child of this session
    /// ([`Event::Transcript`](super::Event::Transcript)), for Ctrl+T on a subagent's cell;
    /// answered at once, also while a turn runs.
    GetSubagentTranscript { session_id: String },
    /// Start a new branch at an entry (the edit/retry of a message).
    Fork { at: String },
    /// Move HEAD to an entry of another branch.
    Checkout { to: String },
    /// Move HEAD back to an earlier entry of this branch.
    Rewind { to: String },
    /// What taking back to entry `to` would change
    /// ([`Event::RestorePreview`](super::Event::RestorePreview)); `None`: the last turn's file
    /// changes (`/undo`).
    PreviewRestore { to: Option<String> },
    /// `/rewind` or `/fork` to `to` taking back the conversation, the code or both; HEAD moves to
    /// before `to` when it is a user message (its text comes back in
    /// [`Event::ComposerText`](super::Event::ComposerText)), or, with `before`, whatever it is
    /// (`codewhale rewind`). Files changed by someone else are overwritten only with `force`.
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
    /// Wait for the summary of a branch HEAD left (docs/journal-format.md, *`branch_summary`*) that
    /// is still being written: it is appended or dropped within its timeout
    /// (`compaction.branch_summary_timeout_sec`). Answered by
    /// [`Event::BranchSummary`](super::Event::BranchSummary): `written`, `dropped`, or `none` when
    /// no summary was being written. `codewhale rewind` sends it before it exits.
    AwaitBranchSummary,
    /// After a checkout ([`Event::BranchFiles`](super::Event::BranchFiles)): bring the files the
    /// tools of HEAD's branch changed after entry `from` to the content the branch last gave
    /// them. Files changed by someone else since, and protected paths, only with `force`.
    /// Answered by the history page, a notice and
    /// [`Event::FilesRestored`](super::Event::FilesRestored).
    RestoreBranchFiles {
        from: String,
        #[serde(default)]
        force: bool,
    },
    /// `/undo`: take back the file changes of the last turn (the conversation stays).
    Undo {
        #[serde(default)]
        force: bool,
    },
    /// Run the user's own shell command (`!CMD` in the composer): no approval, the session's
    /// sandbox; its output is journaled for the model to read with the next message. Runs like
    /// a turn (`interrupt` stops it).
    UserShell { command: String },
    /// `/btw QUESTION`: a side question answered from the conversation as the model has it
    /// now, with the session's model; neither the question nor the answer joins what the model
    /// reads later (a `side` entry). Runs like a turn (`interrupt` stops it); answered by
    /// [`Event::SideAnswer`](super::Event::SideAnswer).
    SideQuestion { question: String },
    /// "Plan ready — start in …": switch to `mode` and start a turn whose message is the
    /// engine's "Carry out the plan." (a synthetic user text, not the user's words).
    CarryOutPlan { mode: crate::ApprovalMode },
    /// Ask what changed in the workspace since the session started
    /// ([`Event::WorkspaceDiff`](super::Event::WorkspaceDiff)).
    GetDiff,
    /// The user is typing (sent at most every few seconds while the composer changes): idle
    /// compaction (docs/compaction.md, *Idle compaction*) does not start meanwhile. No answer.
    Typing,
    /// The terminal gained (`true`) or lost (`false`) the focus (focus events): the user's
    /// `Notification` hooks run when the engine would call the user back while it is not
    /// focused, as the terminal's own notification does. No answer.
    Focus { focused: bool },
    /// Use another model from the next request on.
    SwitchModel { model: String },
    /// Use another approval mode from the next tool call on, also while a turn runs (the
    /// user's Shift+Tab, `/approval MODE`); answered by
    /// [`Event::ApprovalChanged`](super::Event::ApprovalChanged).
    SetApproval { mode: crate::ApprovalMode },
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
    /// `web_fetch` of this host, for the rest of the session.
    Host,
    /// Run this call once more without the sandbox (offered only after the sandbox refused
    /// one of its writes; never a default and never a grant).
    Unconfined,
    /// Run this shell call once more with every `.git` writable, under the guard (offered only
    /// after a write under a read-only `.git` was refused; never a default and never a grant).
    GitWritable,
}
