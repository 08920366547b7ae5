//! A session: everything a turn (and a compaction pass) works with, held in three parts, each
//! in its own file with the invariants it keeps — `state.rs` (what the conversation is and
//! what changes as it goes: journal, budget, counts, spend, notices, hook state),
//! `services.rs` (the handles that act: client, background commands, process groups, MCP
//! tools, sandbox, guard, redactor) and `settings.rs` (what was decided at open or by the
//! user: workspace, home, config, provider, policy, hints, commands). The parts' fields are
//! private to this module: code outside it goes through the session's methods.
//!
//! Owns appending to the conversation: [`Session::append`] parents every entry on HEAD,
//! stores its token count in the line when the encoder is ready (else counts it later, in
//! memory) and keeps the budget's running sums current. Invariants: the journal is only
//! written through this type; the budget's view total always equals the sum of the current
//! view's counts (reset after any render that changes what the model reads, e.g. a
//! compaction); a tool call without a result is answered with an "interrupted" result before
//! anything else is appended after it ([`Session::heal_dangling_calls`]).

mod child;
pub mod counts;
pub(crate) mod job;
mod live;
pub mod locate;
pub(crate) mod mcp_tools;
mod open;
pub(crate) mod probed;
mod repair;
pub mod replay;
mod services;
mod settings;
mod state;
pub(crate) mod summary_slot;
mod unanswered;
pub mod workspace;

use std::path::{Path, PathBuf};

use codewhale_journal::{render, Entry, EntryId, ItemContent, Payload, View};
use codewhale_provider::{RetryPolicy, ToolSpec};

use crate::budget::Budget;
use crate::config::{Config, ResolvedProvider};
use crate::error::EngineError;
use crate::prompt::SystemPrompt;
use crate::tools;
pub use locate::{find_by_id, find_last, sessions_dir, unique_prefix, Resume};
pub(crate) use mcp_tools::{mcp_servers, mcp_specs};
use services::SessionServices;
use settings::SessionSettings;
use state::SessionState;

/// The result the model reads for a call that never finished.
pub const INTERRUPTED_RESULT: &str = "no result: the call was interrupted";

/// Everything needed to open a session.
#[derive(Debug, Clone)]
pub struct SessionParams {
    /// Codewhale's home (`sessions/`, `logs/`, `config.toml`).
    pub home: PathBuf,
    /// The current directory (made absolute and canonical here). A new session works here; a
    /// resumed one works in its header's `cwd` when that directory still exists
    /// ([`workspace::resumed`]).
    pub workspace: PathBuf,
    pub config: Config,
    pub provider: ResolvedProvider,
    pub resume: Resume,
    /// Overrides the provider client's retry policy (tests use fast retries).
    pub retry: Option<RetryPolicy>,
    /// Who drives the session (how suggestions are phrased).
    pub front_end: crate::hints::FrontEnd,
    /// The `--home` the user gave, if any: suggested commands repeat it.
    pub home_hint: Option<PathBuf>,
    /// The model was named on the command line: it wins over a switch recorded in a resumed
    /// session's journal.
    pub model_explicit: bool,
    /// The binary whose hidden `sandbox-exec` confines commands (the front end's own);
    /// `None` runs them unconfined.
    pub sandbox_helper: Option<PathBuf>,
}

/// An open session: its conversation (`SessionState`), the handles it acts through
/// (`SessionServices`) and what was decided for it (`SessionSettings`). Code outside
/// `session/` reaches each part through the session's methods only.
#[derive(Debug)]
pub struct Session {
    state: SessionState,
    services: SessionServices,
    settings: SessionSettings,
}

impl Session {
    /// The session id.
    pub fn id(&self) -> &str {
        self.state.journal.journal().session_id()
    }

    /// The journal file's path.
    pub fn path(&self) -> &Path {
        self.state.journal.path()
    }

    /// The journal (read-only).
    pub fn journal(&self) -> &codewhale_journal::Journal {
        self.state.journal.journal()
    }

    pub fn budget(&self) -> &Budget {
        &self.state.budget
    }

    pub(crate) fn budget_mut(&mut self) -> &mut Budget {
        &mut self.state.budget
    }

    pub fn system_prompt(&self) -> &SystemPrompt {
        &self.state.system
    }

    /// Keeps an instruction file a command created out of the system prompt until the user
    /// accepts it ([`Session::accept_instructions`]).
    pub(crate) fn withhold_instructions(&mut self, path: &Path) {
        let name = crate::paths::display(&self.settings.workspace, path);
        if !self.state.withheld_instructions.contains(&name) {
            self.state.withheld_instructions.push(name);
        }
    }

    /// The user accepted an instruction file a command created: it is read from now on.
    pub(crate) fn accept_instructions(&mut self, path: &Path) {
        let name = crate::paths::display(&self.settings.workspace, path);
        self.state.withheld_instructions.retain(|n| *n != name);
        self.refresh_system_prompt();
    }

    /// The session's content-addressed file store (checkpoints of what tools changed).
    pub fn file_store(&self) -> crate::checkpoint::FileStore {
        // A child's changes are checkpointed in its parent's store, under the `task` call.
        let journal =
            self.settings.subagent.as_ref().map_or(self.path(), |link| link.parent_journal());
        let store = crate::checkpoint::FileStore::beside(journal);
        match self.settings.config.max_checkpoint_bytes {
            Some(bytes) => store.with_max_file_bytes(bytes),
            None => store,
        }
    }

    /// The project instruction files the system prompt carries now, as named to the model.
    pub fn instruction_names(&self) -> Vec<String> {
        self.state.system.instructions.iter().map(|i| i.name.clone()).collect()
    }

    /// Re-reads the project instruction files (`AGENTS.md` or `CLAUDE.md` of each folder down
    /// to the workspace, `.codewhale/instructions.md`) and recounts the system prompt
    /// and tool schemas. Compaction calls this after every pass.
    pub fn refresh_system_prompt(&mut self) {
        self.state.system = SystemPrompt::load_except(
            &self.settings.workspace,
            self.compact_prefix(),
            &self.state.withheld_instructions,
        );
        self.state.system.skills =
            self.settings.commands.skill_listing(self.state.budget.limits().usable_input).block;
        self.recount_system(false);
    }

    /// Whether requests carry the compact system prompt and terse tool descriptions: a window
    /// of at most [`crate::budget::SMALL_WINDOW`] tokens (configured, probed or
    /// learned), where Codewhale's own prefix must leave room for the conversation.
    pub fn compact_prefix(&self) -> bool {
        self.state.budget.limits().window <= crate::budget::SMALL_WINDOW
    }

    /// Counts the system prompt and tool schemas as sent (the one rule of
    /// [`counts::system_counts`]); `wait` waits for the encoder.
    fn recount_system(&mut self, wait: bool) {
        let (system, exact) =
            counts::system_counts(&self.state.system.text(), &self.tool_specs(), wait);
        self.state.budget.set_system(system);
        self.state.system_exact = exact;
    }

    /// The tools offered in a request: the built-in ones, then the MCP servers' tools.
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        let mut specs =
            tools::specs(self.compact_prefix(), self.settings.config.tools.web_fetch_enabled());
        match &self.settings.subagent {
            // A child is offered what its `task` call allowed, never `task` itself.
            Some(link) => {
                specs.extend(self.services.mcp.specs().iter().cloned());
                specs.retain(|s| link.offers(&s.name));
            }
            None => {
                specs.push(crate::tools::task::spec(self.compact_prefix()));
                specs.extend(self.services.mcp.specs().iter().cloned());
            }
        }
        specs
    }

    /// The view at HEAD.
    pub fn render(&self) -> View {
        let journal = self.state.journal.journal();
        render(journal, journal.head_id().as_str())
    }

    /// The token total of `view`'s items, from stored counts. An item without one (written
    /// before the encoder was ready) is counted now when the encoder is ready, else it joins
    /// with its bytes/3 upper bound and is counted exactly when a decision needs it
    /// ([`Session::settle_counts`]) — opening a session never waits for the encoder.
    pub fn view_tokens(&mut self, view: &View) -> u64 {
        let mut total = 0u64;
        for item in &view.items {
            let n = match self.known_tokens(item) {
                Some(n) => u64::from(n),
                // A pruned or bounded item is counted as shown, and not remembered for its
                // entry (whose count measures the whole entry).
                None if item.shortened.is_some() => {
                    let counted = counts::Counted::of_item(&item.content);
                    counted.exact_if_ready().map_or_else(|| counted.upper(), u64::from)
                }
                None => match self.state.counts.pending_upper(&item.source) {
                    Some(upper) => upper,
                    None => {
                        let counted = counts::Counted::of_item(&item.content);
                        match counted.exact_if_ready() {
                            Some(n) => {
                                self.state.counts.remember(item.source.clone(), n);
                                u64::from(n)
                            }
                            None => {
                                let upper = counted.upper();
                                self.state.counts.defer(item.source.clone(), counted);
                                upper
                            }
                        }
                    }
                },
            };
            total += n;
        }
        total
    }

    /// The count of a view item when it is known without counting: the one stored in its line,
    /// else the one counted in memory for its entry — but only when the view shows the entry
    /// whole (a pruned or bounded item is not what its entry's count measured).
    pub fn known_tokens(&self, item: &codewhale_journal::ViewItem) -> Option<u32> {
        item.tokens.or_else(|| {
            item.shortened.is_none().then(|| self.state.counts.get(&item.source)).flatten()
        })
    }

    /// Appends a model-visible (or any chain) entry on HEAD, counting it. Secrets are redacted
    /// first: nothing that reaches the journal (and so any request) holds one.
    pub fn append(&mut self, payload: impl Into<Payload>) -> Result<EntryId, EngineError> {
        let mut payload = payload.into();
        self.services.redactor.redact_payload(&mut payload);
        let parent = self.state.journal.journal().head_id().clone();
        let mut entry = Entry::new(Some(parent), payload);
        let id = entry.id.clone();
        if let Some(counted) = counts::Counted::of_payload(&entry.payload) {
            match counted.exact_if_ready() {
                Some(n) => {
                    entry = entry.with_tokens(n);
                    self.state.budget.add(u64::from(n));
                }
                None => {
                    self.state.budget.add(counted.upper());
                    self.state.counts.defer(id.clone(), counted);
                }
            }
        }
        self.state.journal.append(entry)?;
        Ok(id)
    }

    /// Appends an entry built by the caller, parent included (a compaction record, a `system`
    /// notice, a `head` record). HEAD follows the journal's rules: a notice parented on HEAD
    /// extends it; compaction and `head` records never do.
    pub fn append_entry(&mut self, mut entry: Entry) -> Result<(), EngineError> {
        self.services.redactor.redact_payload(&mut entry.payload);
        self.state.journal.append(entry)?;
        Ok(())
    }

    /// Replaces provisional counts with exact ones (waits for the encoder if needed).
    pub fn settle_counts(&mut self) {
        for (upper, exact) in self.state.counts.settle() {
            self.state.budget.adjust(upper, exact);
        }
        if !self.state.system_exact && crate::tokens::is_ready() {
            self.recount_system(false);
        }
    }

    /// Makes the budget's figures exact before they are shown, once the encoder is ready
    /// (never waiting for it): the gauge, `/context` and `codewhale context` then agree to the
    /// token. Until then the figures are provisional upper bounds, and the engine shows them
    /// again as soon as the encoder is ready.
    pub fn settle_figures(&mut self) {
        if crate::tokens::is_ready() {
            self.settle_counts();
        }
    }

    /// Whether provisional counts exist.
    pub fn has_provisional_counts(&self) -> bool {
        self.state.counts.has_pending()
    }

    /// Whether any figure of the budget is provisional: an entry's count or the system
    /// prompt's.
    pub fn has_provisional_figures(&self) -> bool {
        self.state.counts.has_pending() || !self.state.system_exact
    }

    /// Stops background commands, syncs the journal and releases its lock. After this returns,
    /// another process can open the session.
    pub async fn close(self) -> Result<(), EngineError> {
        self.services.mcp.servers().shutdown().await;
        if let Some(counts) = self.state.counts.new_since_load() {
            counts::store_sidecar(self.state.journal.path(), counts);
        }
        let (groups, background) = (self.services.groups.clone(), self.services.background.clone());
        // Ending groups waits out their grace period: off the async workers.
        let _ = tokio::task::spawn_blocking(move || {
            groups.end_all();
            background.shutdown();
        })
        .await;
        let journal = self.state.journal;
        // A session nothing was ever written to is not kept: it would only be an empty
        // "(untitled)" row in every session list.
        let empty = journal.journal().len() <= 1;
        let path = journal.path().to_path_buf();
        let closed = tokio::task::spawn_blocking(move || {
            let result = journal.close();
            if result.is_ok() && empty {
                if let Err(e) = std::fs::remove_file(&path) {
                    tracing::warn!(path = %path.display(), "cannot remove the empty session: {e}");
                }
            }
            result
        })
        .await;
        match closed {
            Ok(result) => result.map_err(EngineError::from),
            Err(join) => Err(EngineError::Write(codewhale_journal::WriteError {
                path: String::new(),
                message: format!("the journal writer stopped unexpectedly: {join}"),
            })),
        }
    }

    /// Starts syncing what was appended without waiting; a failure fails the next append or
    /// [`Session::sync`] (the end of the turn at the latest).
    pub(crate) fn sync_detached(&self) -> Result<(), EngineError> {
        self.state.journal.sync_detached()?;
        Ok(())
    }

    /// Waits until everything appended is on disk.
    pub async fn sync(&self) -> Result<(), EngineError> {
        self.state.journal.sync().await?;
        Ok(())
    }

    /// [`Session::sync`] outside the async runtime (while the session opens).
    pub fn sync_blocking(&self) -> Result<(), EngineError> {
        self.state.journal.sync_blocking()?;
        Ok(())
    }
}

/// The text of a view item as counted.
pub(crate) fn item_text(content: &ItemContent) -> String {
    match content {
        ItemContent::ToolResult(r) => r.content.to_string(),
        ItemContent::Blocks(blocks) => {
            let payload = Payload::User(codewhale_journal::UserPayload {
                content: blocks.clone(),
                ..Default::default()
            });
            counts::payload_text(&payload).unwrap_or_default()
        }
    }
}
