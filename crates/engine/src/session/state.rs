//! What a session's conversation is, and what changes while the session runs: the journal,
//! the budget and the counts behind it, the system prompt as last loaded, the notices still to
//! show, the plan cache, the branch summary being written, what this run spent, the window
//! probe, which model refused images, and what the hooks remember.
//!
//! Owned by [`super::Session`] and reached only through its methods; no code outside
//! `session/` names a field. Invariants: the journal is only written through
//! [`super::Session::append`] and [`super::Session::append_entry`]; the budget's view total
//! equals the sum of the current view's counts (reset after any render that changes what the
//! model reads); `system_exact` is true only while `budget`'s system figures were counted by
//! the encoder for the current `system` and tool schemas.
//!
//! Borderline members, and why they are here: the system prompt is loaded once at open but
//! re-read after every compaction, window change and accepted instruction file, so it is
//! state, not a setting; the hook state holds the event sink the engine sets when it starts
//! driving the session, but what it is for is what hooks printed and warned in this run.

use codewhale_journal::JournalFile;
use codewhale_protocol::NoticeLevel;

use super::counts::Counts;
use super::probed::Probing;
use super::summary_slot::Pending;
use crate::budget::Budget;
use crate::prompt::SystemPrompt;

/// The conversation and what changes as it goes.
#[derive(Debug)]
pub(crate) struct SessionState {
    /// The journal; written only through [`super::Session::append`] and
    /// [`super::Session::append_entry`].
    pub(super) journal: JournalFile,
    pub(super) budget: Budget,
    /// The system prompt as last loaded ([`super::Session::refresh_system_prompt`]).
    pub(super) system: SystemPrompt,
    /// Token counts of entries whose line does not store one.
    pub(super) counts: Counts,
    /// Notices to show once: load warnings (torn tail repaired, malformed lines), a workspace
    /// other than the current directory.
    pub(super) notices: Vec<(NoticeLevel, String)>,
    /// Instruction files a command created that the user has not accepted: left out of the
    /// system prompt (workspace-relative names).
    pub(super) withheld_instructions: Vec<String>,
    /// The budget's system counts are exact, not provisional upper bounds.
    pub(super) system_exact: bool,
    /// The live plan as last found ([`super::Session::live_plan`]): a later search stops at
    /// its head.
    pub(super) plan: std::sync::Mutex<Option<crate::plan::Found>>,
    /// The summary of a branch HEAD left, while it is written (docs/journal-format.md,
    /// *`branch_summary`*).
    pub(super) branch_summary: Pending,
    /// What this run's replies and summary requests cost ([`crate::spend`]).
    pub(super) spend: Spend,
    /// The local server's answer about its window: on its way, or taken but not yet
    /// journaled ([`super::probed`]).
    pub(super) probe: Probing,
    /// The model that refused a request's images in this run: while it is the model, images
    /// are sent as their one line ([`crate::convert::Images::Refused`]).
    pub(super) images_refused: Option<String>,
    /// What the session remembers of its hooks' runs ([`crate::config::hooks::HookState`]).
    pub(super) hook_state: crate::config::hooks::HookState,
}

impl SessionState {
    /// The state of a session just opened on `journal`: nothing spent, probed or shown yet
    /// but `notices`.
    pub(super) fn new(
        journal: JournalFile,
        budget: Budget,
        system: SystemPrompt,
        counts: Counts,
        notices: Vec<(NoticeLevel, String)>,
    ) -> SessionState {
        SessionState {
            journal,
            budget,
            system,
            counts,
            notices,
            withheld_instructions: Vec::new(),
            system_exact: false,
            plan: std::sync::Mutex::new(None),
            branch_summary: Pending::default(),
            spend: Spend::default(),
            probe: Probing::default(),
            images_refused: None,
            hook_state: Default::default(),
        }
    }
}

/// The meters of one run of a session: its replies, and its summary requests apart.
#[derive(Debug, Clone, Default)]
pub struct Spend {
    pub replies: crate::spend::Meter,
    pub summaries: crate::spend::Meter,
}

impl super::Session {
    /// What this run's replies and summary requests cost so far (the meters add through a
    /// shared reference).
    pub(crate) fn spend(&self) -> &Spend {
        &self.state.spend
    }

    /// Shows `message` once, when the front end next takes the session's notices.
    pub(crate) fn push_notice(&mut self, level: NoticeLevel, message: String) {
        self.state.notices.push((level, message));
    }

    /// The notices not shown yet, in the order they arose; none are left.
    pub(crate) fn take_notices(&mut self) -> Vec<(NoticeLevel, String)> {
        std::mem::take(&mut self.state.notices)
    }

    /// `model` refused a request's images: while it is the model, images are sent as their
    /// one line.
    pub(crate) fn refuse_images(&mut self, model: String) {
        self.state.images_refused = Some(model);
    }

    /// The branch summary being written, if any.
    pub(crate) fn branch_summary(&self) -> &Pending {
        &self.state.branch_summary
    }

    /// The branch summary's slot, for the code that starts, takes and ends it
    /// ([`crate::branch_summary`]).
    pub(crate) fn branch_summary_mut(&mut self) -> &mut Pending {
        &mut self.state.branch_summary
    }

    /// What the session remembers of its hooks' runs.
    pub(crate) fn hook_state(&self) -> &crate::config::hooks::HookState {
        &self.state.hook_state
    }

    /// The hooks' memory, for the code that runs them ([`crate::hooks`]).
    pub(crate) fn hook_state_mut(&mut self) -> &mut crate::config::hooks::HookState {
        &mut self.state.hook_state
    }
}
