//! `codewhale` with no subcommand (and `codewhale resume`): the interactive terminal UI.
//!
//! The configuration is consulted first: with no provider configured, the setup help is
//! printed — with, when one of the usual local servers answers, the command that uses it —
//! and the exit code is 1; a bad config file is reported with its file, line and key.
//! Otherwise the terminal UI runs until the user quits; afterwards one line on stderr says
//! how to come back to the session.

use std::path::Path;
use std::process::ExitCode;

use codewhale_engine::Resume;
use codewhale_engine::{Engine, EngineError, EngineParams, Env};

use crate::cli::GlobalArgs;
use crate::tui::{self, TuiParams};

/// ` --home DIR` when the user gave one: suggested commands repeat it.
pub fn home_flag(global: &GlobalArgs) -> String {
    global.home.as_ref().map(|h| format!(" --home {}", h.display())).unwrap_or_default()
}

/// How to configure a provider, shown when none is configured; `config` is the user's
/// config file (under `--home` when one is given).
pub fn provider_setup_help(config: &Path) -> String {
    PROVIDER_SETUP_HELP.replace("~/.codewhale/config.toml", &config.display().to_string())
}

/// How to configure a provider, shown when none is configured.
const PROVIDER_SETUP_HELP: &str = "\
No model provider is configured. Set one up in either of these ways:

  export ANTHROPIC_API_KEY=sk-ant-...          # Anthropic (Claude)
  export OPENAI_API_KEY=sk-...                 # OpenAI or any OpenAI-compatible server
  export OPENAI_BASE_URL=http://localhost:11434/v1   # e.g. Ollama, llama.cpp, vLLM, LM Studio

or write ~/.codewhale/config.toml (or .codewhale/config.toml in your workspace):

  provider = \"anthropic\"        # or \"openai\", or \"openai-responses\" (codex models)
  model = \"claude-sonnet-4-5\"
  # base_url = \"http://localhost:8000/v1\"

Then run `codewhale` again.";

/// Starts an interactive session in `workspace`: a new one.
pub fn run(global: &GlobalArgs, workspace: Option<&Path>) -> anyhow::Result<ExitCode> {
    run_with(global, workspace, Some(Resume::New))
}

/// Runs the terminal UI on the session `resume` names; `None` opens the session picker.
pub fn run_with(
    global: &GlobalArgs,
    workspace: Option<&Path>,
    resume: Option<Resume>,
) -> anyhow::Result<ExitCode> {
    let home = crate::home::resolve(global.home.as_ref())?;
    let workspace = super::workspace_dir(workspace)?;
    let overrides = super::exec::overrides(global);
    // What would stop the session from opening (no provider, a bad config, no such session)
    // is said here, before the terminal is taken over; the session itself loads in the UI.
    let probe = EngineParams {
        home: home.clone(),
        workspace: workspace.clone(),
        overrides: overrides.clone(),
        env: Env::from_process(),
        resume: resume.clone().unwrap_or_default(),
        ..EngineParams::default()
    };
    let settings = match Engine::preflight(&probe) {
        Ok(settings) => settings,
        Err(EngineError::NoProvider) => {
            // A local server may already be running: say how to use it, besides the help.
            let ports = codewhale_engine::offline::LOCAL_SERVER_PORTS;
            let found = super::runtime()?.block_on(codewhale_engine::offline::local_servers(ports));
            let help = match &global.home {
                Some(_) => provider_setup_help(&home.join("config.toml")),
                None => PROVIDER_SETUP_HELP.to_owned(),
            };
            errln!("{help}");
            if !found.is_empty() {
                errln!("\n{}", super::local_servers::offer(&found).trim_end());
            }
            return Ok(ExitCode::from(1));
        }
        Err(err) => return Err(err.into()),
    };
    // The tokenizer takes a while to build; start it before the first frame.
    codewhale_engine::warm_up();
    codewhale_engine::warm_up_redaction();
    let _log = crate::logging::init(&home);
    // Asked in the UI, before the session opens, when the workspace's config sets anything
    // that needs trust and the user has not answered for this content yet.
    let trust = match resume {
        Some(_) => codewhale_engine::trust::question(&home, &workspace)?,
        None => None,
    };
    let home_hint = global.home.clone();
    let notify = settings.notify;
    let params =
        TuiParams { home: home.clone(), workspace, overrides, resume, trust, home_hint, notify };
    let runtime = super::runtime()?;
    let outcome = runtime.block_on(tui::run(params))?;
    // A session with no message is not kept: no hint for something that does not exist.
    if let Some(id) =
        outcome.session_id.filter(|id| codewhale_engine::offline::session_exists(&home, id))
    {
        errln!("session {id} saved; continue it with `codewhale resume {id}{}`", home_flag(global));
    }
    Ok(ExitCode::SUCCESS)
}
