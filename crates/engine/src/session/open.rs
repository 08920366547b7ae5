//! Opening a session: creating or resuming its journal, resolving its workspace, trust,
//! sandbox, redaction and MCP servers, and replaying the budget its journal implies.

use std::sync::Arc;

use codewhale_journal::{HeaderPayload, JournalFile};
use codewhale_provider::Client;

use super::counts::{self, Counts};
use super::locate::{find_by_id, find_last_free, sessions_dir};
use super::mcp_tools::{mcp_servers, McpTools};
use super::{replay, workspace, Resume, Session, SessionParams};
use crate::approval::Policy;
use crate::budget::Budget;
use crate::error::EngineError;
use crate::prompt::SystemPrompt;
use crate::redact::Redactor;
use crate::tools::BackgroundRegistry;
use codewhale_protocol::NoticeLevel;

impl Session {
    /// Creates or resumes the session `params` asks for.
    pub fn open(params: SessionParams) -> Result<Session, EngineError> {
        let current = std::fs::canonicalize(&params.workspace)
            .map_err(|source| EngineError::Workspace { path: params.workspace.clone(), source })?;
        let workspace = current.clone();
        let mut passed_over = None;
        let (journal, warnings, resumed) = match &params.resume {
            Resume::New => {
                let id = uuid::Uuid::now_v7().hyphenated().to_string();
                let mut header = HeaderPayload::new(id, workspace.display().to_string());
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
                let (path, note) = find_last_free(&params.home, &current)?;
                let (file, w) = JournalFile::open(&path)?;
                passed_over = note;
                (file, w, true)
            }
        };
        let mut notices: Vec<(NoticeLevel, String)> =
            warnings.iter().map(|w| (NoticeLevel::Warning, w.to_string())).collect();
        notices.extend(passed_over.map(|n| (NoticeLevel::Warning, n)));
        let workspace = if resumed {
            let placement = workspace::resumed(&journal.journal().header().cwd, &current);
            notices.extend(placement.notice);
            placement.workspace
        } else {
            workspace
        };
        let mut provider_config = params.provider.provider_config();
        if let Some(idle) = params.config.idle_timeout {
            provider_config.idle_timeout = idle;
        }
        provider_config.reasoning_effort = params.config.reasoning_effort.clone();
        provider_config.hosted = params.config.hosted;
        if let Some(retry) = params.retry.clone() {
            provider_config = provider_config.with_retry(retry);
        }
        let client = Client::new(provider_config)?;
        // A resumed session goes on with the model it last switched to, in the window it
        // learned, unless the command line names a model.
        let recorded = replay::journal_limits(journal.journal());
        let namespaces = namespaces_here(&params);
        let mut provider = params.provider;
        if let Some(model) = recorded.model.as_ref().filter(|_| !params.model_explicit) {
            provider.model = model.clone();
        }
        // The model the session last used: its last switch, else the one it started with. A
        // command line naming another one is a switch, journaled like `/model` (below).
        let last_used =
            recorded.model.clone().unwrap_or_else(|| journal.journal().header().model.clone());
        let switched = resumed && params.model_explicit && provider.model != last_used;
        let learned = if switched { None } else { recorded.learned_window };
        let limits = replay::limits_for(&params.config, &provider.model, learned);
        let keep = params.config.shell.keep_background.unwrap_or(false);
        let background =
            Arc::new(BackgroundRegistry::new(params.home.join("background")).keeping_on_exit(keep));
        if let Some(untrusted) = &params.config.untrusted {
            notices.push((NoticeLevel::Warning, untrusted_notice(untrusted, params.front_end)));
        }
        let sandbox = crate::sandbox::resolve(
            &params.config.sandbox,
            crate::sandbox::Surroundings {
                workspace: &workspace,
                home: &params.home,
                helper: params.sandbox_helper.as_deref(),
                abi: crate::sandbox::confine::abi(),
                namespaces,
                forced_fallback: crate::sandbox::fallback_forced(),
            },
        );
        notices.extend(sandbox.notices.iter().map(|n| (NoticeLevel::Warning, n.clone())));
        notices.extend(params.config.notices.iter().map(|n| (NoticeLevel::Warning, n.clone())));
        // Loaded again for the session's window once its budget is known (below).
        let system = SystemPrompt::load(&workspace, false);
        notices.extend(system.skipped.iter().map(|n| (NoticeLevel::Warning, n.clone())));
        if !system.instructions.is_empty() {
            let names: Vec<&str> = system.instructions.iter().map(|i| i.name.as_str()).collect();
            let line = format!("project instructions read: {}", names.join(", "));
            notices.push((NoticeLevel::Info, line));
        }
        let trusted = crate::extensions::workspace_trusted(
            &params.home,
            &workspace,
            &params.config.trusted_workspaces,
        );
        let commands = crate::extensions::Catalog::discover(&params.home, &workspace, trusted);
        notices.extend(commands.problems.iter().map(|n| (NoticeLevel::Warning, n.clone())));
        let literals: Vec<String> = provider.api_key.iter().cloned().collect();
        let redactor = Redactor::new(&params.config.redaction.patterns, &literals)
            .map_err(|e| EngineError::Config(crate::config::ConfigError::Redaction(e)))?;
        let hints = crate::hints::Hints::new(params.front_end, journal.journal().session_id())
            .with_home(params.home_hint.as_deref());
        let mut mcp_config = params.config.clone();
        crate::sandbox::confine_servers(&mut mcp_config.mcp_servers, &sandbox);
        let mcp = mcp_servers(&mcp_config, &workspace, &params.home);
        let known_counts = counts::load_sidecar(journal.path());
        let max_processes = params
            .config
            .shell
            .max_processes
            .unwrap_or(crate::tools::cgroup::DEFAULT_MAX_PROCESSES);
        let hidden_env = Arc::new(params.config.key_variables());
        let guard = Arc::new(crate::tools::guard::GitGuard::new(
            workspace.clone(),
            crate::prompt::instruction_paths(&workspace),
        ));
        let state = super::state::SessionState::new(
            journal,
            Budget::new(limits),
            system,
            Counts::with_known(known_counts),
            notices,
        );
        let services = super::services::SessionServices {
            client,
            background,
            groups: Arc::new(crate::tools::process::ProcessGroups::with_max_processes(
                max_processes,
            )),
            mcp: McpTools::new(mcp),
            sandbox,
            guard,
            redactor,
            hidden_env,
            plan_scratch: Default::default(),
        };
        let settings = super::settings::SessionSettings {
            workspace: workspace.clone(),
            home: params.home.clone(),
            policy: Policy::new(params.config.approval_mode()),
            config: params.config,
            provider,
            hints,
            commands,
            subagent: None,
            resumed,
            no_model: None,
        };
        let mut session = Session { state, services, settings };
        if switched {
            let model = session.settings.provider.model.clone();
            session.journal_model_switch(&model, Some("--model"))?;
        }
        session.refresh_system_prompt();
        session.replay_budget();
        if let Some(notice) = session.crowded_prefix() {
            session.state.notices.push((NoticeLevel::Warning, notice));
        }
        crate::checkpoint::snapshot::warm_up(
            session.file_store(),
            session.settings.workspace.clone(),
        );
        Ok(session)
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
