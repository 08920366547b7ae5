//! Which directory a session works in.
//!
//! A new session works in the directory it was started from. A resumed session goes back to
//! the directory its header names (`cwd`): its conversation is about that tree — the paths the
//! model has seen, the project instructions, the anchors, the git state the compaction note
//! stamps — so running its tools in whatever directory the user happens to resume from would
//! act on the wrong files. Only when that directory is gone does a resumed session fall back
//! to the current one, with a warning.

use std::path::{Path, PathBuf};

use codewhale_journal::list_sessions;

use super::locate::{find_by_id, sessions_dir, Resume};
use codewhale_protocol::NoticeLevel;

/// Where a resumed session works, and what to tell the user about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The workspace, canonical.
    pub workspace: PathBuf,
    /// Set when the workspace is not the current directory, or the header's is gone.
    pub notice: Option<(NoticeLevel, String)>,
}

/// The workspace of a resumed session whose header says it started in `header_cwd`, resumed
/// from the canonical directory `current`.
pub fn resumed(header_cwd: &str, current: &Path) -> Placement {
    let stay = |notice| Placement { workspace: current.to_owned(), notice };
    if header_cwd.is_empty() {
        // An imported or hand-made journal without a cwd: nothing better than here.
        return stay(None);
    }
    match std::fs::canonicalize(header_cwd) {
        Ok(dir) if dir.is_dir() => {
            let notice = (dir != current).then(|| {
                (
                    NoticeLevel::Info,
                    format!(
                        "this session was started in {}; its tools work there, not in the \
                         current directory {}",
                        dir.display(),
                        current.display()
                    ),
                )
            });
            Placement { workspace: dir, notice }
        }
        _ => stay(Some((
            NoticeLevel::Warning,
            format!(
                "this session was started in {header_cwd}, which no longer exists; its tools now \
                 work in {}",
                current.display()
            ),
        ))),
    }
}

/// The workspace the session `resume` names will work in, from its header alone — so the
/// configuration can be read from that workspace before the session is opened. Any failure
/// to find the session yields `current`: opening it then reports the real error.
pub fn for_resume(home: &Path, resume: &Resume, current: &Path) -> PathBuf {
    let current = std::fs::canonicalize(current).unwrap_or_else(|_| current.to_owned());
    // `--last` finds a session by the current directory, so it already works there.
    let Resume::Id(id) = resume else { return current };
    let Ok(path) = find_by_id(home, id) else { return current };
    let Ok(listing) = list_sessions(&sessions_dir(home)) else { return current };
    match listing.sessions.into_iter().find(|s| s.path == path) {
        Some(info) => resumed(&info.cwd, &current).workspace,
        None => current,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resumed_session_goes_back_to_its_directory() {
        let started = tempfile::tempdir().unwrap();
        let started = std::fs::canonicalize(started.path()).unwrap();
        let here = tempfile::tempdir().unwrap();
        let here = std::fs::canonicalize(here.path()).unwrap();

        let same = resumed(&started.display().to_string(), &started);
        assert_eq!(same, Placement { workspace: started.clone(), notice: None });

        let moved = resumed(&started.display().to_string(), &here);
        assert_eq!(moved.workspace, started);
        let (level, message) = moved.notice.unwrap();
        assert_eq!(level, NoticeLevel::Info);
        assert!(message.contains(&started.display().to_string()), "{message}");
        assert!(message.contains(&here.display().to_string()), "{message}");
    }

    #[test]
    fn a_vanished_directory_falls_back_to_the_current_one_with_a_warning() {
        let here = tempfile::tempdir().unwrap();
        let here = std::fs::canonicalize(here.path()).unwrap();
        let gone = resumed("/no/such/codewhale/dir", &here);
        assert_eq!(gone.workspace, here);
        let (level, message) = gone.notice.unwrap();
        assert_eq!(level, NoticeLevel::Warning);
        assert!(message.contains("no longer exists"), "{message}");
        // A file is not a workspace either.
        let file = here.join("f");
        std::fs::write(&file, "x").unwrap();
        assert_eq!(resumed(&file.display().to_string(), &here).workspace, here);
    }
}
