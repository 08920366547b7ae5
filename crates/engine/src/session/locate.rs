//! Finding the journal of a session to resume: by id, or the newest for this workspace.
//!
//! Invariant: only header lines are read (through the journal's listing), so resuming in a
//! home with many large sessions stays fast.

use std::path::{Path, PathBuf};

use codewhale_journal::list_sessions;

use crate::error::EngineError;

/// Which session to open.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Resume {
    /// A new session.
    #[default]
    New,
    /// The session with this id (a unique prefix of it is accepted).
    Id(String),
    /// The newest session whose `cwd` is the workspace.
    Last,
}

/// The directory holding session journals.
pub fn sessions_dir(home: &Path) -> PathBuf {
    home.join("sessions")
}

/// The journal file of session `id` (or of the one session whose id starts with `id`).
pub fn find_by_id(home: &Path, id: &str) -> Result<PathBuf, EngineError> {
    let dir = sessions_dir(home);
    let id = id.trim().trim_end_matches(".jsonl");
    let not_found = || EngineError::SessionNotFound { id: id.to_owned(), dir: dir.clone() };
    if id.is_empty() || id.contains(['/', '\\']) {
        return Err(not_found());
    }
    let exact = dir.join(format!("{id}.jsonl"));
    if exact.is_file() {
        return Ok(exact);
    }
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(_) => return Err(not_found()),
    };
    let matches: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "jsonl")
                && p.file_stem().and_then(|s| s.to_str()).is_some_and(|s| s.starts_with(id))
        })
        .collect();
    match matches.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(not_found()),
    }
}

/// The newest session started in `workspace`.
pub fn find_last(home: &Path, workspace: &Path) -> Result<PathBuf, EngineError> {
    let dir = sessions_dir(home);
    let listing =
        list_sessions(&dir).map_err(|source| EngineError::List { dir: dir.clone(), source })?;
    let wanted = workspace.display().to_string();
    listing
        .sessions
        .into_iter()
        .find(|s| s.cwd == wanted)
        .map(|s| s.path)
        .ok_or_else(|| EngineError::NoSessionForWorkspace { workspace: workspace.to_owned() })
}
