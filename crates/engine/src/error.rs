//! [`EngineError`]: everything that can stop the engine from opening a session or running a
//! turn, phrased as one sentence for the user (what failed, why, what to do).
//!
//! Tool failures are not here: they are results the model reads. Provider failures inside a
//! turn become [`codewhale_protocol::Event::Error`] with the provider's kind name.

use std::path::PathBuf;

use codewhale_journal::{BranchError, OpenError, ViewError, WriteError};
use codewhale_provider::ProviderError;

use crate::config::ConfigError;
use codewhale_protocol::ErrorKind;

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
    #[error(
        "part of the conversation cannot be read back from the session file ({reason}); the \
         request was not sent — check the file with `codewhale journal check`"
    )]
    Unreadable { reason: String },
    #[error(
        "cannot write down the restore before starting it ({source}); nothing was changed — \
         free some space in the Codewhale home and run it again"
    )]
    Intent { source: std::io::Error },
    #[error("cannot start the provider client: {0}")]
    Provider(#[from] ProviderError),
}

impl EngineError {
    /// The [`codewhale_protocol::Event::Error`] that tells the front end about this error.
    pub fn event(&self) -> codewhale_protocol::Event {
        codewhale_protocol::Event::Error { kind: self.kind(), message: self.to_string() }
    }

    /// The protocol's kind of this error, for [`codewhale_protocol::Event::Error`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            EngineError::Config(_) | EngineError::NoProvider => ErrorKind::Config,
            EngineError::Open(_) | EngineError::Write(_) => ErrorKind::Journal,
            EngineError::SessionNotFound { .. } | EngineError::NoSessionForWorkspace { .. } => {
                ErrorKind::SessionNotFound
            }
            EngineError::List { .. }
            | EngineError::Workspace { .. }
            | EngineError::Intent { .. } => ErrorKind::Io,
            EngineError::View { .. } => ErrorKind::InvalidView,
            EngineError::Unreadable { .. } => ErrorKind::Journal,
            EngineError::Branch(_) => ErrorKind::Branch,
            EngineError::Provider(e) => provider_kind(&e.kind),
        }
    }
}

/// The protocol's kind of a provider failure: one to one, so a front end can tell a cancelled
/// request from every other failure (a new provider kind does not compile until it is mapped).
pub fn provider_kind(kind: &codewhale_provider::ErrorKind) -> ErrorKind {
    use codewhale_provider::ErrorKind as P;
    match kind {
        P::ContextOverflow { .. } => ErrorKind::ContextOverflow,
        P::RateLimited { .. } => ErrorKind::RateLimited,
        P::Overloaded => ErrorKind::Overloaded,
        P::Auth => ErrorKind::Auth,
        P::BadRequest => ErrorKind::BadRequest,
        P::Network => ErrorKind::Network,
        P::Unreachable => ErrorKind::Unreachable,
        P::Protocol => ErrorKind::Protocol,
        P::Cancelled => ErrorKind::Cancelled,
    }
}
