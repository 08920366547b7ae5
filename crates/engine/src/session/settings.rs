//! What was decided for a session when it opened, or by the user since: where it works
//! (workspace, home), its configuration and provider, the approval policy, how suggestions
//! are phrased, the custom commands found, its place as a `task` child, whether it was
//! resumed, and why it has no model when opened without one.
//!
//! Owned by [`super::Session`] and reached only through its methods. Invariants: nothing here
//! changes by itself while a turn runs; what changes it is a decision — the user's (`/model`,
//! `/approval`, an "always" grant) or a window the provider states, which changes the model's
//! limits in the budget, not the provider here.
//!
//! Borderline members, and why they are here: the provider's model changes on `/model`, and
//! the policy's mode and grants on `/approval` and on an approval's "always" — both are the
//! user's decisions, journaled where they matter, not the conversation's own course; the
//! commands catalog is found once at open and only read afterwards.

use std::path::{Path, PathBuf};

use crate::approval::Policy;
use crate::config::{Config, ResolvedProvider};
use crate::tools;

/// What the session was opened with, and what the user decided since.
#[derive(Debug)]
pub(crate) struct SessionSettings {
    /// The directory the session works in (absolute, canonical).
    pub(super) workspace: PathBuf,
    /// Codewhale's home (`sessions/`, `logs/`, `config.toml`).
    pub(super) home: PathBuf,
    pub(super) config: Config,
    /// The provider and the model requests go to.
    pub(super) provider: ResolvedProvider,
    /// The approval mode and the "always" grants.
    pub(super) policy: Policy,
    /// Suggestions in messages, phrased for the front end.
    pub(super) hints: crate::hints::Hints,
    /// The custom slash commands found for the workspace when the session opened
    /// (docs/extending.md).
    pub(super) commands: crate::extensions::Catalog,
    /// Set when this session is a `task` child ([`crate::subagent`]): the tools it is offered
    /// and the parent's file store its changes are checkpointed in. `None` for a session of
    /// its own, which is offered `task`.
    pub(super) subagent: Option<crate::tools::task::Link>,
    /// The session was resumed rather than created.
    pub(super) resumed: bool,
    /// Opened without a model provider (a rewind from the command line): why, as a request
    /// would fail.
    pub(super) no_model: Option<String>,
}

impl super::Session {
    /// Codewhale's home.
    pub fn home(&self) -> &Path {
        &self.settings.home
    }

    /// The provider requests go to, with the session's model.
    pub(crate) fn provider(&self) -> &ResolvedProvider {
        &self.settings.provider
    }

    /// The approval mode and grants.
    pub(crate) fn policy(&self) -> &Policy {
        &self.settings.policy
    }

    /// The user (or the mode a plan's approval asked for) chose another approval mode.
    pub(crate) fn set_approval_mode(&mut self, mode: codewhale_protocol::ApprovalMode) {
        self.settings.policy.set_mode(mode);
    }

    /// The user answered "always": calls the grant covers run without asking from now on.
    pub(crate) fn grant(&mut self, grant: crate::approval::Grant) {
        self.settings.policy.grant(grant);
    }

    /// Takes back grant `index` (0-based), returning it; `None` when there is no such grant.
    pub(crate) fn revoke_grant(&mut self, index: usize) -> Option<crate::approval::Grant> {
        self.settings.policy.revoke(index)
    }

    /// Suggestions phrased for the front end.
    pub(crate) fn hints(&self) -> &crate::hints::Hints {
        &self.settings.hints
    }

    /// The custom slash commands and skills found when the session opened.
    pub(crate) fn commands(&self) -> &crate::extensions::Catalog {
        &self.settings.commands
    }

    /// This session's link to its parent when it is a `task` child.
    pub(crate) fn subagent(&self) -> Option<&crate::tools::task::Link> {
        self.settings.subagent.as_ref()
    }

    /// Whether the session was resumed rather than created.
    pub(crate) fn resumed(&self) -> bool {
        self.settings.resumed
    }

    pub fn workspace(&self) -> &Path {
        &self.settings.workspace
    }

    pub fn config(&self) -> &Config {
        &self.settings.config
    }

    /// The model requests go to.
    pub fn model(&self) -> &str {
        &self.settings.provider.model
    }

    /// The model that writes notes and branch summaries: `compaction_model`, else the
    /// session's own.
    pub fn summarizer_model(&self) -> String {
        self.config().compaction.compaction_model.clone().unwrap_or_else(|| self.model().to_owned())
    }

    /// The price of the session's model, when one is known.
    pub fn price(&self) -> Option<codewhale_provider::Price> {
        self.settings.config.price_of(self.model())
    }

    /// The files the model may never change without asking.
    pub fn protected(&self) -> tools::Protected {
        tools::Protected { home: Some(self.settings.home.clone()) }
    }

    /// Whether the process lives for one turn (`exec`, `compact`): what it never uses, it
    /// should not start.
    pub fn one_turn(&self) -> bool {
        self.settings.hints.front_end() == crate::hints::FrontEnd::Cli
    }

    /// Marks a session opened without a model provider (`why`: the error a request would
    /// meet); `None` leaves it as it is.
    pub(crate) fn set_no_model(&mut self, why: Option<String>) {
        if why.is_some() {
            self.settings.no_model = why;
        }
    }

    /// Why this session has no model to ask, when it was opened without one.
    pub(crate) fn no_model(&self) -> Option<&str> {
        self.settings.no_model.as_deref()
    }
}
