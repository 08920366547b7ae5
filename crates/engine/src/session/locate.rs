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

/// The shortest prefix of session `id`, at least [`SHORT_ID`] characters, that
/// [`find_by_id`] resolves to that session alone: no other session file in `home`, nor any id
/// of `others` (a session not written yet), starts with it. Ids of one moment share their
/// first characters (uuid v7 begins with the time), so a fixed-length prefix is not enough.
/// `None` when `id` is not a kept session.
pub fn unique_prefix(home: &Path, id: &str, others: &[&str]) -> Option<String> {
    let dir = sessions_dir(home);
    let stems: Vec<String> = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter_map(|p| p.file_stem().and_then(|s| s.to_str()).map(str::to_owned))
        .collect();
    if !stems.iter().any(|s| s == id) {
        return None;
    }
    let rivals: Vec<&str> = stems
        .iter()
        .map(String::as_str)
        .chain(others.iter().copied())
        .filter(|s| *s != id)
        .collect();
    let ends = id.char_indices().map(|(i, c)| i + c.len_utf8());
    for end in ends.skip(SHORT_ID.saturating_sub(1)) {
        let prefix = &id[..end];
        // A prefix ending on a dash reads like a typo: take the next character too.
        if prefix.ends_with('-') {
            continue;
        }
        if !rivals.iter().any(|r| r.starts_with(prefix)) {
            return Some(prefix.to_owned());
        }
    }
    Some(id.to_owned())
}

/// Characters of a session id shown where a short one will do.
pub const SHORT_ID: usize = 8;

/// The newest session started in `workspace`.
///
/// Headers store the canonical workspace path, so `workspace` is canonicalized here: callers
/// may pass what the user typed (`-C ../proj`, a symlink) and must still find the session. A
/// path that cannot be canonicalized (it no longer exists) is compared as given.
pub fn find_last(home: &Path, workspace: &Path) -> Result<PathBuf, EngineError> {
    let mine = sessions_of(home, workspace)?;
    mine.into_iter()
        .next()
        .map(|s| s.path)
        .ok_or_else(|| EngineError::NoSessionForWorkspace { workspace: workspace.to_owned() })
}

/// The sessions started in `workspace`, newest first (`workspace` canonicalized as the headers
/// store it; one that cannot be is compared as given). A `task` child is never one of them:
/// `--last` and `-c` continue the user's own conversation, not a subagent's.
fn sessions_of(
    home: &Path,
    workspace: &Path,
) -> Result<Vec<codewhale_journal::SessionInfo>, EngineError> {
    let dir = sessions_dir(home);
    let listing =
        list_sessions(&dir).map_err(|source| EngineError::List { dir: dir.clone(), source })?;
    let wanted = std::fs::canonicalize(workspace)
        .unwrap_or_else(|_| workspace.to_owned())
        .display()
        .to_string();
    Ok(listing.sessions.into_iter().filter(|s| s.cwd == wanted && s.parent.is_none()).collect())
}

/// The session `--last` opens: the newest of `workspace` that no other running codewhale holds
/// (many `exec --last` at once must not pick a session another one created a moment earlier
/// and fail on its lock), with the line that says so when a newer one was passed over. When
/// every session of the workspace is held, the newest (opening it then names its holder).
pub fn find_last_free(
    home: &Path,
    workspace: &Path,
) -> Result<(PathBuf, Option<String>), EngineError> {
    let mine = sessions_of(home, workspace)?;
    let Some(newest) = mine.first() else {
        return Err(EngineError::NoSessionForWorkspace { workspace: workspace.to_owned() });
    };
    let Some(pid) = codewhale_journal::holder(&newest.path) else {
        return Ok((newest.path.clone(), None));
    };
    match mine.iter().find(|s| codewhale_journal::holder(&s.path).is_none()) {
        Some(free) => {
            let note = format!(
                "the newest session of this workspace, {}, is open in another codewhale (pid \
                 {pid}); continuing {}, the newest one free",
                newest.id, free.id
            );
            Ok((free.path.clone(), Some(note)))
        }
        None => Ok((newest.path.clone(), None)),
    }
}

/// The file a resumed session will be read from, with its size (for a progress line before a
/// large one is opened); `None` for a new session or one that cannot be found (opening then
/// says why).
pub(crate) fn resumed_file(
    home: &Path,
    workspace: &Path,
    resume: &Resume,
) -> Option<(String, u64)> {
    let path = match resume {
        Resume::New => return None,
        Resume::Id(id) => find_by_id(home, id).ok()?,
        Resume::Last => {
            let here = std::fs::canonicalize(workspace).ok()?;
            find_last(home, &here).ok()?
        }
    };
    let bytes = std::fs::metadata(&path).ok()?.len();
    Some((path.display().to_string(), bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use codewhale_journal::{HeaderPayload, JournalFile};

    /// A home with one session whose header names `cwd`.
    fn home_with_session(cwd: &Path) -> (tempfile::TempDir, PathBuf) {
        let home = tempfile::tempdir().unwrap();
        let header = HeaderPayload::new("s-1", cwd.display().to_string());
        let file = JournalFile::create_session(&sessions_dir(home.path()), header).unwrap();
        let path = file.path().to_path_buf();
        file.close().unwrap();
        (home, path)
    }

    #[test]
    fn last_finds_the_session_through_a_symlink_or_a_relative_path() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let canonical = std::fs::canonicalize(&real).unwrap();
        let (home, session) = home_with_session(&canonical);

        let link = root.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(find_last(home.path(), &link).unwrap(), session);
        std::fs::create_dir(real.join("sub")).unwrap();
        assert_eq!(find_last(home.path(), &real.join("sub").join("..")).unwrap(), session);

        // The same directory relative to the process's current one (which tests never change).
        let here = std::fs::canonicalize(std::env::current_dir().unwrap()).unwrap();
        let mut relative = PathBuf::new();
        for _ in here.components().skip(1) {
            relative.push("..");
        }
        relative.push(canonical.strip_prefix("/").unwrap());
        assert!(relative.is_relative());
        assert_eq!(find_last(home.path(), &relative).unwrap(), session);

        let other = tempfile::tempdir().unwrap();
        assert!(matches!(
            find_last(home.path(), other.path()),
            Err(EngineError::NoSessionForWorkspace { .. })
        ));
    }

    #[test]
    fn last_compares_a_vanished_directory_as_given() {
        let gone = Path::new("/no/such/codewhale/workspace");
        let (home, session) = home_with_session(gone);
        assert_eq!(find_last(home.path(), gone).unwrap(), session);
    }

    /// Ids of one millisecond share their first 13 characters: the prefix offered for one of
    /// them must reach past them, and `/resume PREFIX` must find it alone.
    #[test]
    fn a_unique_prefix_resolves_to_its_session_alone() {
        let home = tempfile::tempdir().unwrap();
        let dir = sessions_dir(home.path());
        std::fs::create_dir_all(&dir).unwrap();
        let old = "01a244d9-5b1c-7e00-8a11-000000000001";
        let near = "01a244d9-5b1c-7e00-9f22-000000000002";
        for id in [old, near, "01a244d8-0000-7000-8000-000000000003"] {
            std::fs::write(dir.join(format!("{id}.jsonl")), "{}\n").unwrap();
        }
        let prefix = unique_prefix(home.path(), old, &[]).unwrap();
        assert_eq!(prefix, "01a244d9-5b1c-7e00-8");
        assert_eq!(find_by_id(home.path(), &prefix).unwrap(), dir.join(format!("{old}.jsonl")));
        // A session not on disk yet counts too.
        let third = "01a244d8-0000-7000-8000-000000000003";
        let fresh = "01a244d8-0000-7000-8000-000000000999";
        assert_eq!(
            unique_prefix(home.path(), third, &[fresh]).unwrap(),
            "01a244d8-0000-7000-8000-0000000000"
        );
        // A lone session keeps the short form; one that was not kept has none.
        std::fs::remove_file(dir.join(format!("{near}.jsonl"))).unwrap();
        assert_eq!(unique_prefix(home.path(), old, &[]).unwrap(), "01a244d9");
        assert_eq!(unique_prefix(home.path(), near, &[]), None);
    }
}
