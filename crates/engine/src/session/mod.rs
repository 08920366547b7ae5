//! A session: its journal file, workspace, configuration, provider client, budget, system
//! prompt, approval policy and background commands — everything a turn (and a compaction
//! pass) works with.
//!
//! Owns appending to the conversation: [`Session::append`] parents every entry on HEAD,
//! stores its token count in the line when the encoder is ready (else counts it later, in
//! memory) and keeps the budget's running sums current. Invariants: the journal is only
//! written through this type; the budget's view total always equals the sum of the current
//! view's counts (reset after any render that changes what the model reads, e.g. a
//! compaction); a tool call without a result is answered with an "interrupted" result before
//! anything else is appended after it ([`Session::heal_dangling_calls`]).

pub mod counts;
pub(crate) mod job;
mod live;
pub mod locate;
pub(crate) mod mcp_tools;
mod open;
pub(crate) mod probed;
mod repair;
pub mod replay;
pub(crate) mod summary_slot;
mod unanswered;
pub mod workspace;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codewhale_journal::{render, Entry, EntryId, ItemContent, JournalFile, Payload, View};
use codewhale_provider::{Client, RetryPolicy, ToolSpec};

use crate::approval::Policy;
use crate::budget::Budget;
use crate::config::{Config, ResolvedProvider};
use crate::error::EngineError;
use crate::prompt::SystemPrompt;
use crate::redact::Redactor;
use crate::tools::process::ProcessGroups;
use crate::tools::{self, BackgroundRegistry};
use codewhale_protocol::NoticeLevel;
use counts::Counts;
pub use locate::{find_by_id, find_last, sessions_dir, unique_prefix, Resume};
use mcp_tools::McpTools;
pub(crate) use mcp_tools::{mcp_servers, mcp_specs};

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

/// An open session.
#[derive(Debug)]
pub struct Session {
    /// The journal; written only through [`Session::append`] and [`Session::append_entry`].
    pub(crate) journal: JournalFile,
    pub(crate) workspace: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) config: Config,
    pub(crate) provider: ResolvedProvider,
    pub(crate) client: Client,
    pub(crate) budget: Budget,
    pub(crate) system: SystemPrompt,
    pub(crate) policy: Policy,
    pub(crate) background: Arc<BackgroundRegistry>,
    pub(crate) counts: Counts,
    /// The session was resumed rather than created.
    pub(crate) resumed: bool,
    /// Notices to show once: load warnings (torn tail repaired, malformed lines), a workspace
    /// other than the current directory.
    pub(crate) notices: Vec<(NoticeLevel, String)>,
    /// Suggestions in messages, phrased for the front end.
    pub(crate) hints: crate::hints::Hints,
    /// Replaces secrets before anything is journaled or logged.
    pub(crate) redactor: Redactor,
    /// Process groups of shell calls still running; ended when the session closes.
    pub(crate) groups: Arc<ProcessGroups>,
    /// The configured MCP servers (started by the engine task, stopped on close) and the
    /// tools of theirs requests offer ([`Session::refresh_mcp_tools`]).
    pub(crate) mcp: McpTools,
    /// How shell commands are confined ([`crate::sandbox`]).
    pub(crate) sandbox: crate::sandbox::SandboxState,
    /// What git and Codewhale execute, guarded around every command ([`tools::guard`]).
    pub(crate) guard: Arc<tools::guard::GitGuard>,
    /// The key variables no command may see: the built-in ones and `api_key_env`.
    pub(crate) hidden_env: Arc<Vec<String>>,
    /// Instruction files a command created that the user has not accepted: left out of the
    /// system prompt (workspace-relative names).
    pub(crate) withheld_instructions: Vec<String>,
    /// The budget's system counts are exact, not provisional upper bounds.
    pub(crate) system_exact: bool,
    /// The live plan as last found ([`Session::live_plan`]): a later search stops at its head.
    pub(crate) plan: std::sync::Mutex<Option<crate::plan::Found>>,
    /// The summary of a branch HEAD left, while it is written (docs/journal-format.md,
    /// *`branch_summary`*).
    pub(crate) branch_summary: crate::session::summary_slot::Pending,
    /// What this run's replies and summary requests cost ([`crate::spend`]).
    pub(crate) spend: Spend,
    /// The local server's answer about its window: on its way, or taken but not yet
    /// journaled ([`probed`]).
    pub(crate) probe: probed::Probing,
    /// The model that refused a request's images in this run: while it is the model, images
    /// are sent as their one line ([`crate::convert::Images::Refused`]).
    pub(crate) images_refused: Option<String>,
    /// Opened without a model provider (a rewind from the command line): why, as a request
    /// would fail.
    no_model: Option<String>,
    /// The custom slash commands found for the workspace when the session opened
    /// (docs/extending.md).
    pub(crate) commands: crate::extensions::Catalog,
    /// Plan mode's private temp dir, the only place its commands may write
    /// ([`crate::plan_mode`]); made when a command first needs it, removed with the session.
    pub(crate) plan_scratch: crate::plan_mode::Scratch,
    /// Set when this session is a `task` child ([`crate::subagent`]): the tools it is offered
    /// and the parent's file store its changes are checkpointed in. `None` for a session of
    /// its own, which is offered `task`.
    pub(crate) subagent: Option<crate::tools::task::Link>,
    /// What the session remembers of its hooks' runs ([`crate::config::hooks::HookState`]).
    pub(crate) hook_state: crate::config::hooks::HookState,
}

/// The meters of one run of a session: its replies, and its summary requests apart.
#[derive(Debug, Clone, Default)]
pub struct Spend {
    pub replies: crate::spend::Meter,
    pub summaries: crate::spend::Meter,
}

impl Session {
    /// The session id.
    pub fn id(&self) -> &str {
        self.journal.journal().session_id()
    }

    /// The price of the session's model, when one is known.
    pub fn price(&self) -> Option<codewhale_provider::Price> {
        self.config.price_of(self.model())
    }

    /// The journal file's path.
    pub fn path(&self) -> &Path {
        self.journal.path()
    }

    /// The journal (read-only).
    pub fn journal(&self) -> &codewhale_journal::Journal {
        self.journal.journal()
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The model requests go to.
    pub fn model(&self) -> &str {
        &self.provider.model
    }

    /// The model that writes notes and branch summaries: `compaction_model`, else the
    /// session's own.
    pub fn summarizer_model(&self) -> String {
        self.config().compaction.compaction_model.clone().unwrap_or_else(|| self.model().to_owned())
    }

    /// The provider client (shared connections; cheap to clone).
    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    pub(crate) fn budget_mut(&mut self) -> &mut Budget {
        &mut self.budget
    }

    pub fn system_prompt(&self) -> &SystemPrompt {
        &self.system
    }

    /// Background commands started by the shell tool.
    pub fn background(&self) -> &Arc<BackgroundRegistry> {
        &self.background
    }

    /// What the tools of a call in this session need.
    pub fn tool_context(&self, cancel: tokio_util::sync::CancellationToken) -> tools::ToolContext {
        tools::ToolContext {
            workspace: self.workspace.clone(),
            background: self.background.clone(),
            groups: self.groups.clone(),
            shell_env: Arc::new(self.config.shell.env.clone()),
            sandbox: self.sandbox.sandbox.clone(),
            cancel,
            files: Some(Arc::new(self.file_store())),
            guard: Some(self.guard.clone()),
            hidden_env: self.hidden_env.clone(),
            git_writable: self.config.sandbox.git_writable.unwrap_or(false),
            allow_protected: false,
        }
    }

    /// The guard of the workspace's protected places.
    pub fn guard(&self) -> &Arc<tools::guard::GitGuard> {
        &self.guard
    }

    /// Keeps an instruction file a command created out of the system prompt until the user
    /// accepts it ([`Session::accept_instructions`]).
    pub(crate) fn withhold_instructions(&mut self, path: &Path) {
        let name = crate::paths::display(&self.workspace, path);
        if !self.withheld_instructions.contains(&name) {
            self.withheld_instructions.push(name);
        }
    }

    /// The user accepted an instruction file a command created: it is read from now on.
    pub(crate) fn accept_instructions(&mut self, path: &Path) {
        let name = crate::paths::display(&self.workspace, path);
        self.withheld_instructions.retain(|n| *n != name);
        self.refresh_system_prompt();
    }

    /// The session's content-addressed file store (checkpoints of what tools changed).
    pub fn file_store(&self) -> crate::checkpoint::FileStore {
        // A child's changes are checkpointed in its parent's store, under the `task` call.
        let journal = self.subagent.as_ref().map_or(self.path(), |link| link.parent_journal());
        let store = crate::checkpoint::FileStore::beside(journal);
        match self.config.max_checkpoint_bytes {
            Some(bytes) => store.with_max_file_bytes(bytes),
            None => store,
        }
    }

    /// How shell commands are confined, for `/approval`.
    pub fn sandbox_report(&self) -> codewhale_protocol::SandboxReport {
        codewhale_protocol::SandboxReport {
            mode: self.sandbox.mode,
            detail: self.sandbox.detail.clone(),
            structure: self.sandbox.structure.clone(),
            keys: self.keys_report(),
        }
    }

    /// Whether a command could read the session's keys, in words (`/status`).
    fn keys_report(&self) -> String {
        if self.sandbox.namespaces() {
            "keys: hidden from commands (PID namespace: no ancestor is visible)".to_owned()
        } else if crate::sandbox::keys::readable_without_pid_namespace(&self.hidden_env) {
            "keys: readable by commands (no PID namespace)".to_owned()
        } else {
            "keys: not readable by commands (Codewhale runs without them in its environment \
             and is not dumpable)"
                .to_owned()
        }
    }

    /// The files the model may never change without asking.
    pub fn protected(&self) -> tools::Protected {
        tools::Protected { home: Some(self.home.clone()) }
    }

    /// Whether the process lives for one turn (`exec`, `compact`): what it never uses, it
    /// should not start.
    pub fn one_turn(&self) -> bool {
        self.hints.front_end() == crate::hints::FrontEnd::Cli
    }

    /// The session's redactor (built-in rules, the configured patterns, its own API key).
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// The project instruction files the system prompt carries now, as named to the model.
    pub fn instruction_names(&self) -> Vec<String> {
        self.system.instructions.iter().map(|i| i.name.clone()).collect()
    }

    /// Re-reads the project instruction files (`AGENTS.md` or `CLAUDE.md` of each folder down
    /// to the workspace, `.codewhale/instructions.md`) and recounts the system prompt
    /// and tool schemas. Compaction calls this after every pass.
    pub fn refresh_system_prompt(&mut self) {
        self.system = SystemPrompt::load_except(
            &self.workspace,
            self.compact_prefix(),
            &self.withheld_instructions,
        );
        self.system.skills = self.commands.skill_listing(self.budget.limits().usable_input).block;
        self.recount_system(false);
    }

    /// Whether requests carry the compact system prompt and terse tool descriptions: a window
    /// of at most [`crate::budget::SMALL_WINDOW`] tokens (configured, probed or
    /// learned), where Codewhale's own prefix must leave room for the conversation.
    pub fn compact_prefix(&self) -> bool {
        self.budget.limits().window <= crate::budget::SMALL_WINDOW
    }

    /// Counts the system prompt and tool schemas as sent (the one rule of
    /// [`counts::system_counts`]); `wait` waits for the encoder.
    fn recount_system(&mut self, wait: bool) {
        let (system, exact) = counts::system_counts(&self.system.text(), &self.tool_specs(), wait);
        self.budget.set_system(system);
        self.system_exact = exact;
    }

    /// The tools offered in a request: the built-in ones, then the MCP servers' tools.
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        let mut specs = tools::specs(self.compact_prefix(), self.config.tools.web_fetch_enabled());
        match &self.subagent {
            // A child is offered what its `task` call allowed, never `task` itself.
            Some(link) => {
                specs.extend(self.mcp.specs().iter().cloned());
                specs.retain(|s| link.offers(&s.name));
            }
            None => {
                specs.push(crate::tools::task::spec(self.compact_prefix()));
                specs.extend(self.mcp.specs().iter().cloned());
            }
        }
        specs
    }

    /// The session's MCP servers.
    pub fn mcp(&self) -> &codewhale_mcp::Servers {
        self.mcp.servers()
    }

    /// Fixes (on the first call, possibly waiting for a server without a cached list) or
    /// refreshes (after a server announced a change) the MCP tools the next request offers,
    /// and recounts the schemas when they changed. `cancel` ends a wait.
    pub async fn refresh_mcp_tools(&mut self, cancel: &tokio_util::sync::CancellationToken) {
        if self.mcp.refresh(cancel).await {
            self.refresh_system_prompt();
        }
    }

    /// The view at HEAD.
    pub fn render(&self) -> View {
        let journal = self.journal.journal();
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
                None => match self.counts.pending_upper(&item.source) {
                    Some(upper) => upper,
                    None => {
                        let counted = counts::Counted::of_item(&item.content);
                        match counted.exact_if_ready() {
                            Some(n) => {
                                self.counts.remember(item.source.clone(), n);
                                u64::from(n)
                            }
                            None => {
                                let upper = counted.upper();
                                self.counts.defer(item.source.clone(), counted);
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
        item.tokens
            .or_else(|| item.shortened.is_none().then(|| self.counts.get(&item.source)).flatten())
    }

    /// Appends a model-visible (or any chain) entry on HEAD, counting it. Secrets are redacted
    /// first: nothing that reaches the journal (and so any request) holds one.
    pub fn append(&mut self, payload: impl Into<Payload>) -> Result<EntryId, EngineError> {
        let mut payload = payload.into();
        self.redactor.redact_payload(&mut payload);
        let parent = self.journal.journal().head_id().clone();
        let mut entry = Entry::new(Some(parent), payload);
        let id = entry.id.clone();
        if let Some(counted) = counts::Counted::of_payload(&entry.payload) {
            match counted.exact_if_ready() {
                Some(n) => {
                    entry = entry.with_tokens(n);
                    self.budget.add(u64::from(n));
                }
                None => {
                    self.budget.add(counted.upper());
                    self.counts.defer(id.clone(), counted);
                }
            }
        }
        self.journal.append(entry)?;
        Ok(id)
    }

    /// Appends an entry built by the caller, parent included (a compaction record, a `system`
    /// notice, a `head` record). HEAD follows the journal's rules: a notice parented on HEAD
    /// extends it; compaction and `head` records never do.
    pub fn append_entry(&mut self, mut entry: Entry) -> Result<(), EngineError> {
        self.redactor.redact_payload(&mut entry.payload);
        self.journal.append(entry)?;
        Ok(())
    }

    /// Replaces provisional counts with exact ones (waits for the encoder if needed).
    pub fn settle_counts(&mut self) {
        for (upper, exact) in self.counts.settle() {
            self.budget.adjust(upper, exact);
        }
        if !self.system_exact && crate::tokens::is_ready() {
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
        self.counts.has_pending()
    }

    /// Whether any figure of the budget is provisional: an entry's count or the system
    /// prompt's.
    pub fn has_provisional_figures(&self) -> bool {
        self.counts.has_pending() || !self.system_exact
    }

    /// Stops background commands, syncs the journal and releases its lock. After this returns,
    /// another process can open the session.
    pub async fn close(self) -> Result<(), EngineError> {
        self.mcp.servers().shutdown().await;
        if let Some(counts) = self.counts.new_since_load() {
            counts::store_sidecar(self.journal.path(), counts);
        }
        let (groups, background) = (self.groups.clone(), self.background.clone());
        // Ending groups waits out their grace period: off the async workers.
        let _ = tokio::task::spawn_blocking(move || {
            groups.end_all();
            background.shutdown();
        })
        .await;
        let journal = self.journal;
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
        self.journal.sync_detached()?;
        Ok(())
    }

    /// Waits until everything appended is on disk.
    pub async fn sync(&self) -> Result<(), EngineError> {
        self.journal.sync().await?;
        Ok(())
    }

    /// Marks a session opened without a model provider (`why`: the error a request would
    /// meet); `None` leaves it as it is.
    pub(crate) fn set_no_model(&mut self, why: Option<String>) {
        if why.is_some() {
            self.no_model = why;
        }
    }

    /// Why this session has no model to ask, when it was opened without one.
    pub(crate) fn no_model(&self) -> Option<&str> {
        self.no_model.as_deref()
    }

    /// [`Session::sync`] outside the async runtime (while the session opens).
    pub fn sync_blocking(&self) -> Result<(), EngineError> {
        self.journal.sync_blocking()?;
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
