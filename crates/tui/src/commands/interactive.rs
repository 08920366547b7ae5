//! `codewhale` with no subcommand: the interactive session.

use std::path::Path;
use std::process::ExitCode;

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
pub fn run(_global: &GlobalArgs, _workspace: Option<&Path>) -> anyhow::Result<ExitCode> {
    eprintln!("{PROVIDER_SETUP_HELP}");
    Ok(ExitCode::from(1))
}
