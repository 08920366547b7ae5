//! `codewhale` with no subcommand: the interactive session.
//!
//! The configuration is consulted first: with no provider configured, the setup help is
//! printed; a bad config file is reported with its file, line and key. The terminal UI itself
//! is not part of this build, so with a provider configured the command says so and points at
//! `codewhale exec`.

use std::path::Path;
use std::process::ExitCode;

use codewhale_engine::config::{self, Env};

use crate::cli::GlobalArgs;

/// How to configure a provider, shown when none is configured.
pub const PROVIDER_SETUP_HELP: &str = "\
No model provider is configured. Set one up in either of these ways:

  export ANTHROPIC_API_KEY=sk-ant-...          # Anthropic (Claude)
  export OPENAI_API_KEY=sk-...                 # OpenAI or any OpenAI-compatible server
  export OPENAI_BASE_URL=http://localhost:11434/v1   # e.g. Ollama, llama.cpp, vLLM, LM Studio

or write ~/.codewhale/config.toml (or .codewhale/config.toml in your workspace):

  provider = \"anthropic\"        # or \"openai\"
  model = \"claude-sonnet-4-5\"
  # base_url = \"http://localhost:8000/v1\"

Then run `codewhale` again.";

/// Starts an interactive session in `workspace`.
pub fn run(global: &GlobalArgs, workspace: Option<&Path>) -> anyhow::Result<ExitCode> {
    let home = crate::home::resolve(global.home.as_ref())?;
    let workspace = match workspace {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir()?,
    };
    let overrides = super::exec::overrides(global, None);
    let config = config::load(&home, &workspace, &overrides)?;
    match config.resolve_provider(&Env::from_process())? {
        None => eprintln!("{PROVIDER_SETUP_HELP}"),
        Some(provider) => eprintln!(
            "The interactive terminal UI is not available in this build; run `codewhale exec \
             PROMPT` for one turn with {} ({}).",
            provider.model,
            provider.kind.as_str()
        ),
    }
    Ok(ExitCode::from(1))
}
