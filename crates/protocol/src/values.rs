//! The small values ops and events carry: submission ids, approval offers, the sandbox report,
//! how a tool call ended, what a turn cost, branch-picker rows, anchors, background states.

use serde::{Deserialize, Serialize};

use super::op::ApprovalScope;

/// The id the engine gave a submitted [`Op`](super::Op); 0 is reserved for events nobody asked for
/// (start-up notices).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SubmissionId(pub u64);

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
    pub mode: crate::SandboxMode,
    /// What is writable and whether the network is open (`writable: /ws, /tmp; network on;
    /// Landlock ABI 6`), or why the sandbox is off.
    pub detail: String,
    /// How `.git`, `.codewhale/` and the instruction files are kept from commands: `sandbox:
    /// namespaces; …`, or `sandbox: Landlock only; .git guarded by put-back (WHY)`.
    #[serde(default)]
    pub structure: String,
    /// Whether a command could read the session's keys: `keys: hidden from commands (PID
    /// namespace…)`, `keys: readable by commands (no PID namespace)`, or `keys: not readable
    /// by commands (…)`.
    #[serde(default)]
    pub keys: String,
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
    /// Too many calls in one reply: it never ran (docs/security.md).
    NotRun,
    /// The user stopped the turn before or while it ran.
    Interrupted,
}

/// What a turn cost, shown when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TurnStats {
    pub elapsed_ms: u64,
    /// Prompt tokens of the turn's requests (summed), as the provider reported them.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Model requests made.
    pub requests: u32,
    /// Whether every request's figures were reported by the provider.
    pub reported: bool,
    /// What the turn's replies cost in US dollars at the model's published price; `null` when
    /// the model has no known price (never a guess).
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// What the summary requests sent during the turn cost, counted apart; `null` likewise.
    #[serde(default)]
    pub compaction_cost_usd: Option<f64>,
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

/// One pinned note, as `/anchor list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnchorInfo {
    /// 1-based, as [`Op::RemoveAnchor`](super::Op::RemoveAnchor) takes it.
    pub index: usize,
    /// The text, as pinned (redacted).
    pub text: String,
    /// Whether the next request carries it verbatim.
    pub in_view: bool,
}

/// Where the background note is (docs/compaction.md, *Background compaction*; `background.state` in
/// docs/cli.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackgroundState {
    /// The summary request is in flight.
    Writing,
    /// The note is written and waits for the threshold.
    Ready,
}

/// Where the summary of a branch HEAD left is (docs/journal-format.md, *`branch_summary`*).
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
    /// Nothing was being written (the answer to
    /// [`Op::AwaitBranchSummary`](super::Op::AwaitBranchSummary) when idle).
    None,
}

/// Severity of a notice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeLevel {
    #[default]
    Info,
    Warning,
    /// Only on notices read back from the journal (a live error is an
    /// [`Event::Error`](super::Event::Error)).
    Error,
}

/// How a front end calls the user back when a turn ends, an approval waits or a compaction
/// finishes while its terminal is not focused (`[tui] notify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Notify {
    /// A desktop notification where the terminal is known to show one (OSC 9, or OSC 777 for
    /// the terminals that speak that), the bell elsewhere.
    #[default]
    Auto,
    /// Always OSC 9.
    Osc9,
    /// Always the bell.
    Bell,
    /// Never.
    Off,
}

/// An image a user message carries, as the transcript shows it (`▣ shot.png 64×48 · 12 KB`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageInfo {
    /// The file name the user gave.
    pub name: String,
    pub width: u32,
    pub height: u32,
    /// The size of the stored image.
    pub bytes: u64,
    /// It was scaled down to fit 2048 px a side.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub scaled: bool,
}
