//! What the engine last said about the session: which one is open, its model and workspace,
//! the context gauge, the plan and the work the engine does beside the turn.
//!
//! Invariant: every field here is a copy of an engine event's value (or the model the app was
//! started with, until the engine confirms one); the UI never derives one from another.

use codewhale_protocol::{ApprovalMode, BackgroundState, Figure, Plan};

/// The context gauge's figures, from the engine's last `Usage` event (the same figures and
/// labels as `/context`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gauge {
    pub pressure: Figure,
    pub usable_input: u64,
    pub window_unverified: bool,
}

/// The session as the engine describes it.
#[derive(Debug, Clone, Default)]
pub struct SessionFacts {
    pub model: String,
    pub session_id: String,
    /// The directory the engine's session works in; `None` until the engine says.
    pub workspace: Option<std::path::PathBuf>,
    pub gauge: Option<Gauge>,
    /// HEAD's live plan, as the engine last said (the status line's "plan 2/5").
    pub plan: Option<Plan>,
    /// The note the engine writes in the background, if any (docs/compaction.md, *Background
    /// compaction*).
    pub background_note: Option<BackgroundState>,
    /// The running pass's summary request (1-based), how many it sends, the tokens it carries
    /// and when it was sent: "summary 1 of 2 · 172k tokens" on the status line.
    pub compaction_progress: Option<(u32, u32, u64, std::time::Instant)>,
    /// A summary of the branch the user left is being written (docs/journal-format.md,
    /// *`branch_summary`*).
    pub branch_summary_writing: bool,
    /// Another session is being opened: its file's size, for the status line.
    pub opening: Option<u64>,
    /// The approval mode tool calls are decided by (Shift+Tab cycles it).
    pub approval: ApprovalMode,
    /// The model presented a plan (`update_plan`) in the turn that runs: in plan mode, its end
    /// offers where to start ("Plan ready — start in: …").
    pub plan_presented: bool,
    /// The last Shift+Tab's op, until the engine answers it: answers to earlier presses do not
    /// set the mode back meanwhile.
    pub approval_asked: Option<codewhale_protocol::SubmissionId>,
    /// `/clear` left this conversation (its id) for a new one: said once the new one is open.
    pub kept: Option<String>,
    /// The project instruction files the engine read, relative to the workspace (`/init`
    /// writes to the workspace's own: `CLAUDE.md` when that is the one read).
    pub instructions: Vec<String>,
    /// The custom slash commands found for the workspace (docs/extending.md).
    pub commands: Vec<codewhale_protocol::CustomCommandInfo>,
}

impl SessionFacts {
    /// Nothing known yet but the model the app was started with.
    pub fn new(model: String) -> SessionFacts {
        SessionFacts { model, ..SessionFacts::default() }
    }
}
