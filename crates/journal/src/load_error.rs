//! Why a file cannot be read as a journal, and the lines of one that could not be used: the
//! errors of loading, below the scan and the sidecar that report them.

use std::path::PathBuf;

/// A line that could not be used, with its 1-based line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed {
    pub line: u32,
    pub error: String,
}

/// Why a file cannot be read as a journal. The file is never modified in these cases.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{} is empty, so it is not a codewhale journal; it was left untouched", path.display())]
    Empty { path: PathBuf },
    #[error("{} contains only zero bytes (a crash before anything was written?); it was left untouched", path.display())]
    ZeroFilled { path: PathBuf },
    #[error("{} is not a codewhale journal ({reason}); it was left untouched", path.display())]
    NotAJournal { path: PathBuf, reason: String },
}
