//! Why an import could not be done at all. Problems with single lines are never errors: they
//! are counted in the [`crate::Report`].

use std::path::PathBuf;

/// An import failed before or while writing; nothing of the source was modified.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error(
        "{} is compressed (zstd); decompress it first with `zstd -d {}` and import the .jsonl",
        path.display(),
        path.display()
    )]
    Compressed { path: PathBuf },
    #[error(
        "{} is neither a Claude Code session nor a Codex rollout: {reason}; pass a \
         `<uuid>.jsonl` file from ~/.claude/projects or a `rollout-*.jsonl` file from \
         ~/.codex/sessions",
        path.display()
    )]
    Unrecognized { path: PathBuf, reason: String },
    #[error(
        "{} holds no conversation to import ({reason}); check that it is the session you meant",
        path.display()
    )]
    Empty { path: PathBuf, reason: String },
    /// The sink (the journal being written) refused an entry.
    #[error("{0}")]
    Sink(Box<dyn std::error::Error + Send + Sync>),
}
