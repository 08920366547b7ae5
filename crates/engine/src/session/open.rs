//! Opening a session: creating or resuming its journal, resolving its workspace, trust,
//! sandbox, redaction and MCP servers, and replaying the budget its journal implies. Each part
//! of the session is built by its owner's step: the journal and where it works
//! ([`open_journal`]), the model and window a resumed session goes on with ([`Choice`]), the
//! services ([`SessionServices::open`]), the system prompt and commands; the notices each step
//! finds are shown in that order.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codewhale_journal::{HeaderPayload, JournalFile};
use codewhale_provider::Client;

use super::counts::{self, Counts};
use super::locate::{find_by_id, find_last_free, sessions_dir};
use super::mcp_tools::{mcp_servers, McpTools};
use super::services::SessionServices;
use super::settings::SessionSettings;
use super::state::SessionState;
use super::{replay, workspace, Resume, Session, SessionParams};
use crate::approval::Policy;
use crate::budget::{Budget, Limits};
use crate::config::ResolvedProvider;
use crate::error::EngineError;
use crate::prompt::SystemPrompt;
use crate::redact::Redactor;
use crate::tools::BackgroundRegistry;
use codewhale_protocol::NoticeLevel;

/// Notices to show once the session opened, in the order they were found.
type Notices = Vec<(NoticeLevel, String)>;

impl Session {
    /// Creates or resumes the session `params` asks for.
    pub fn open(params: SessionParams) -> Result<Session, EngineError> {
        let current = std::fs::canonicalize(&params.workspace)
            .map_err(|source| EngineError::Workspace { path: params.workspace.clone(), source })?;
        let Opened { journal, mut notices, resumed, workspace } = open_journal(&params, &current)?;
        let client = client(&params)?;
        let namespaces = namespaces_here(&params);
        let choice = Choice::of(&params, &journal, resumed);
        if let Some(untrusted) = &params.config.untrusted {
            notices.push((NoticeLevel::Warning, untrusted_notice(untrusted, params.front_end)));
        }
        let services = SessionServices::open(
            &params,
            &workspace,
            &choice.provider,
            client,
            namespaces,
            &mut notices,
        )?;
        notices.extend(params.config.notices.iter().map(|n| (NoticeLevel::Warning, n.clone())));
        // Loaded again for the session's window once its budget is known (below).
        let system = system_prompt(&workspace, &mut notices);
        let trusted = crate::extensions::workspace_trusted(
            &params.home,
            &workspace,
            &params.config.trusted_workspaces,
        );
        let commands = crate::extensions::Catalog::discover(&params.home, &workspace, trusted);
        notices.extend(commands.problems.iter().map(|n| (NoticeLevel::Warning, n.clone())));
        let hints = crate::hints::Hints::new(params.front_end, journal.journal().session_id())
            .with_home(params.home_hint.as_deref());
        let known_counts = counts::load_sidecar(journal.path());
        let budget = Budget::new(choice.limits);
        let counts = Counts::with_known(known_counts);
        let state = SessionState::new(journal, budget, system, counts, notices);
        let settings = SessionSettings {
            workspace,
            home: params.home,
            policy: Policy::new(params.config.approval_mode()),
            config: params.config,
            provider: choice.provider,
            hints,
            commands,
            subagent: None,
            resumed,
            no_model: None,
        };
        let mut session = Session { state, services, settings };
        if choice.switched {
            let model = session.settings.provider.model.clone();
            session.journal_model_switch(&model, Some("--model"))?;
        }
        session.refresh_system_prompt();
        session.replay_budget();
        if let Some(notice) = session.crowded_prefix() {
            session.state.notices.push((NoticeLevel::Warning, notice));
        }
        let workspace = session.settings.workspace.clone();
        crate::checkpoint::snapshot::warm_up(session.file_store(), workspace);
        Ok(session)
    }
}

/// A journal just created or opened, and where its session works.
struct Opened {
    journal: JournalFile,
    /// What loading it found (a repaired tail, a session passed over, another workspace).
    notices: Notices,
    resumed: bool,
    /// A new session works in `current`; a resumed one in its header's `cwd` while that
    /// directory exists.
    workspace: PathBuf,
}

/// Creates the journal of a new session in `current`, or opens the one `params` resumes.
fn open_journal(params: &SessionParams, current: &Path) -> Result<Opened, EngineError> {
    let mut passed_over = None;
    let (journal, warnings, resumed) = match &params.resume {
        Resume::New => {
            let id = uuid::Uuid::now_v7().hyphenated().to_string();
            let mut header = HeaderPayload::new(id, current.display().to_string());
            header.app_version = env!("CARGO_PKG_VERSION").to_owned();
            header.provider = params.provider.kind.as_str().to_owned();
            header.model = params.provider.model.clone();
            let file = JournalFile::create_session(&sessions_dir(&params.home), header)?;
            (file, Vec::new(), false)
        }
        Resume::Id(id) => {
            let (file, w) = JournalFile::open(&find_by_id(&params.home, id)?)?;
            (file, w, true)
        }
        Resume::Last => {
            let (path, note) = find_last_free(&params.home, current)?;
            let (file, w) = JournalFile::open(&path)?;
            passed_over = note;
            (file, w, true)
        }
    };
    let mut notices: Notices =
        warnings.iter().map(|w| (NoticeLevel::Warning, w.to_string())).collect();
    notices.extend(passed_over.map(|n| (NoticeLevel::Warning, n)));
    let workspace = if resumed {
        let placement = workspace::resumed(&journal.journal().header().cwd, current);
        notices.extend(placement.notice);
        placement.workspace
    } else {
        current.to_path_buf()
    };
    Ok(Opened { journal, notices, resumed, workspace })
}

/// The provider client `params` configures.
fn client(params: &SessionParams) -> Result<Client, EngineError> {
    let mut provider_config = params.provider.provider_config();
    if let Some(idle) = params.config.idle_timeout {
        provider_config.idle_timeout = idle;
    }
    provider_config.reasoning_effort = params.config.reasoning_effort.clone();
    provider_config.hosted = params.config.hosted;
    if let Some(retry) = params.retry.clone() {
        provider_config = provider_config.with_retry(retry);
    }
    Ok(Client::new(provider_config)?)
}

/// The model and limits a session opens with.
struct Choice {
    provider: ResolvedProvider,
    limits: Limits,
    /// The command line names a model other than the one the session last used: a switch,
    /// journaled like `/model`.
    switched: bool,
}

impl Choice {
    /// A resumed session goes on with the model it last switched to, in the window it
    /// learned, unless the command line names a model.
    fn of(params: &SessionParams, journal: &JournalFile, resumed: bool) -> Choice {
        let recorded = replay::journal_limits(journal.journal());
        let mut provider = params.provider.clone();
        if let Some(model) = recorded.model.as_ref().filter(|_| !params.model_explicit) {
            provider.model = model.clone();
        }
        // The model the session last used: its last switch, else the one it started with.
        let last_used =
            recorded.model.clone().unwrap_or_else(|| journal.journal().header().model.clone());
        let switched = resumed && params.model_explicit && provider.model != last_used;
        let learned = if switched { None } else { recorded.learned_window };
        let limits = replay::limits_for(&params.config, &provider.model, learned);
        Choice { provider, limits, switched }
    }
}

/// The workspace's system prompt at its first load, with what it skipped and read as notices.
fn system_prompt(workspace: &Path, notices: &mut Notices) -> SystemPrompt {
    let system = SystemPrompt::load(workspace, false);
    notices.extend(system.skipped.iter().map(|n| (NoticeLevel::Warning, n.clone())));
    if !system.instructions.is_empty() {
        let names: Vec<&str> = system.instructions.iter().map(|i| i.name.as_str()).collect();
        let line = format!("project instructions read: {}", names.join(", "));
        notices.push((NoticeLevel::Info, line));
    }
    system
}

impl SessionServices {
    /// The services of a session opening in `workspace` for `provider`: the background
    /// registry, the sandbox (its notices joining `notices`), the redactor (which knows the
    /// provider's key), the MCP servers (confined like commands, not started yet), the process
    /// groups, the hidden key variables and the guard.
    fn open(
        params: &SessionParams,
        workspace: &Path,
        provider: &ResolvedProvider,
        client: Client,
        namespaces: Result<(), String>,
        notices: &mut Notices,
    ) -> Result<SessionServices, EngineError> {
        let config = &params.config;
        let keep = config.shell.keep_background.unwrap_or(false);
        let background =
            Arc::new(BackgroundRegistry::new(params.home.join("background")).keeping_on_exit(keep));
        let sandbox = crate::sandbox::resolve(
            &config.sandbox,
            crate::sandbox::Surroundings {
                workspace,
                home: &params.home,
                helper: params.sandbox_helper.as_deref(),
                abi: crate::sandbox::confine::abi(),
                namespaces,
                forced_fallback: crate::sandbox::fallback_forced(),
            },
        );
        notices.extend(sandbox.notices.iter().map(|n| (NoticeLevel::Warning, n.clone())));
        let literals: Vec<String> = provider.api_key.iter().cloned().collect();
        let redactor = Redactor::new(&config.redaction.patterns, &literals)
            .map_err(|e| EngineError::Config(crate::config::ConfigError::Redaction(e)))?;
        let mut mcp_config = config.clone();
        crate::sandbox::confine_servers(&mut mcp_config.mcp_servers, &sandbox);
        let mcp = mcp_servers(&mcp_config, workspace, &params.home);
        let max_processes =
            config.shell.max_processes.unwrap_or(crate::tools::cgroup::DEFAULT_MAX_PROCESSES);
        let guard = Arc::new(crate::tools::guard::GitGuard::new(
            workspace.to_path_buf(),
            crate::prompt::instruction_paths(workspace),
        ));
        Ok(SessionServices {
            client,
            background,
            groups: Arc::new(crate::tools::process::ProcessGroups::with_max_processes(
                max_processes,
            )),
            mcp: McpTools::new(mcp),
            sandbox,
            guard,
            redactor,
            hidden_env: Arc::new(config.key_variables()),
            plan_scratch: Default::default(),
        })
    }
}

/// Whether the sandbox helper can set up namespaces here: asked once per process, and only
/// when a helper would use them (the sandbox not turned off, the fallback not forced).
fn namespaces_here(params: &SessionParams) -> Result<(), String> {
    let config = &params.config.sandbox;
    let off = config.mode == Some(crate::sandbox::SandboxMode::Off)
        || config.namespaces == Some(false)
        || crate::sandbox::fallback_forced();
    match params.sandbox_helper.as_deref() {
        Some(helper) if !off => crate::sandbox::namespace::availability(helper),
        Some(_) => Err("not tried".to_owned()),
        None => Err("no sandbox helper in this front end".to_owned()),
    }
}

/// The notice shown once when a workspace's settings were left out for lack of trust.
fn untrusted_notice(
    untrusted: &crate::config::Untrusted,
    front_end: crate::hints::FrontEnd,
) -> String {
    let keys = untrusted.keys.join(", ");
    let file = untrusted.file.display();
    if let Some(refused) = &untrusted.refused {
        return format!(
            "ignoring {keys} from {file}: {refused}, so it is never trusted; shorten it, or set \
             it in your own config.toml in the Codewhale home"
        );
    }
    let how = match front_end {
        // After a "no" the question is not asked at start again until the file changes: say
        // how to change one's mind instead of promising a question.
        crate::hints::FrontEnd::Tui => {
            "type /trust to be asked again, or start Codewhale here with --trust (remembered \
             until the file changes; a changed file is asked about again)"
        }
        crate::hints::FrontEnd::Cli => {
            "run with --trust to trust it (remembered until the file changes)"
        }
    };
    format!(
        "ignoring {keys} from {file}: this workspace is not trusted, so its config may not decide \
         where your key goes, how much is allowed or what is redacted; to use them, {how}"
    )
}
