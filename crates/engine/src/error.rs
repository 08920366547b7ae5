//! [`EngineError`]: everything that can stop the engine from opening a session or running a
//! turn, phrased as one sentence for the user (what failed, why, what to do).
//!
//! Tool failures are not here: they are results the model reads. Provider failures inside a
//! turn become [`crate::protocol::Event::Error`] with the provider's kind name.

use std::path::PathBuf;

use codewhale_journal::{BranchError, OpenError, ViewError, WriteError};
use codewhale_provider::ProviderError;

use crate::config::ConfigError;

/// Why the engine could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(
        "no model provider is configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY (or \
         OPENAI_BASE_URL for a local server), or write `provider = \"...\"` in config.toml"
    )]
    NoProvider,
    #[error("cannot open the session journal: {0}")]
    Open(#[from] OpenError),
    #[error("{0}; nothing from this point on was saved — free some space (or fix the problem) and run it again")]
    Write(#[from] WriteError),
    #[error("no session {id} in {}; list them with `codewhale sessions`", dir.display())]
    SessionNotFound { id: String, dir: PathBuf },
    #[error(
        "no earlier session for {}; start one with `codewhale exec PROMPT` (without --last)",
        workspace.display()
    )]
    NoSessionForWorkspace { workspace: PathBuf },
    #[error("cannot list the sessions in {}: {source}", dir.display())]
    List { dir: PathBuf, source: std::io::Error },
    #[error("the workspace {} is not usable: {source}", path.display())]
    Workspace { path: PathBuf, source: std::io::Error },
    #[error("the conversation cannot be sent as it is: {source}; use {hint}")]
    View {
        source: ViewError,
        /// What to do, phrased for the front end.
        hint: String,
    },
    #[error("{0}")]
    Branch(#[from] BranchError),
    #[error("cannot start the provider client: {0}")]
    Provider(#[from] ProviderError),
}

impl EngineError {
    /// A short stable name for [`crate::protocol::Event::Error`].
    pub fn kind_name(&self) -> &'static str {
        match self {
            EngineError::Config(_) | EngineError::NoProvider => "config",
            EngineError::Open(_) | EngineError::Write(_) => "journal",
            EngineError::SessionNotFound { .. } | EngineError::NoSessionForWorkspace { .. } => {
                "session_not_found"
            }
            EngineError::List { .. } | EngineError::Workspace { .. } => "io",
            EngineError::View { .. } => "invalid_view",
            EngineError::Branch(_) => "branch",
            EngineError::Provider(e) => e.kind.name(),
        }
    }
}
