//! What a command may leave of a `.git` it created (docs/security.md, *What git and Codewhale execute is out of the model's reach*): a
//! repository directory that appeared keeps only the inert config keys
//! ([`super::gitconfig::scrub`]) and no hook; a `.git` pointer file or link that appeared and
//! leads outside the workspace is removed. Each removal is named.
//!
//! Invariants: a scrub only removes — keys from a config file, files from a `hooks/` folder
//! (`*.sample` files, which git never runs, stay, so a `git init` is quiet), a pointer — and
//! never touches a repository that was there before the command.

use std::path::{Path, PathBuf};

use super::places;

/// One removal, by path and what was removed there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    pub path: PathBuf,
    /// `core.fsmonitor, include.path`; `the hook`; `it pointed outside the workspace (…)`.
    pub what: String,
}

/// Scrubs the repository directory `dir` a command created (its `config`, `config.worktree`
/// and `hooks/`).
pub fn repository(dir: &Path) -> Vec<Removed> {
    let mut out = Vec::new();
    for name in ["config", "config.worktree"] {
        let path = dir.join(name);
        let Ok(crate::bounded::Bounded::Read { bytes, cut }) =
            crate::bounded::read(&path, 1024 * 1024)
        else {
            continue;
        };
        if cut {
            // Too big to be a config git wrote: none of it is kept.
            if std::fs::remove_file(&path).is_ok() {
                out.push(Removed { path, what: "the whole file (over 1 MiB)".into() });
            }
            continue;
        }
        let scrubbed = super::gitconfig::scrub(&String::from_utf8_lossy(&bytes));
        if scrubbed.removed.is_empty() {
            continue;
        }
        // Written in place of the file (a link there is replaced, not followed).
        let _ = std::fs::remove_file(&path);
        if std::fs::write(&path, scrubbed.text.as_bytes()).is_ok() {
            out.push(Removed { path, what: scrubbed.removed.join(", ") });
        }
    }
    let hooks = dir.join("hooks");
    if let Ok(list) = std::fs::read_dir(&hooks) {
        let mut planted: Vec<PathBuf> = list
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_none_or(|e| e != "sample"))
            .collect();
        planted.sort();
        for path in planted {
            let gone = match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path).is_ok(),
                Ok(_) => std::fs::remove_file(&path).is_ok(),
                Err(_) => false,
            };
            if gone {
                out.push(Removed { path, what: "the hook".into() });
            }
        }
    }
    out
}

/// Removes a `.git` pointer file or link that leads outside `workspace` (to `target`).
pub fn outside_pointer(entry: &Path, target: &Path) -> Option<Removed> {
    std::fs::remove_file(entry).ok().map(|()| Removed {
        path: entry.to_path_buf(),
        what: format!("it pointed outside the workspace ({})", target.display()),
    })
}

/// Removes a repository's `commondir` when it leads outside `workspace`.
pub fn outside_common_dir(dir: &Path, workspace: &Path) -> Option<Removed> {
    let common = places::common_dir(dir)?;
    if common.starts_with(workspace) {
        return None;
    }
    let path = dir.join("commondir");
    std::fs::remove_file(&path).ok().map(|()| Removed {
        path,
        what: format!("it pointed outside the workspace ({})", common.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_repository_keeps_its_inert_keys_and_loses_its_hooks() {
        let ws = tempfile::tempdir().unwrap();
        let git = ws.path().join("src/.git");
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::write(
            git.join("config"),
            "[core]\n\tbare = false\n\tfsmonitor = \"touch ~/canary; false\"\n",
        )
        .unwrap();
        std::fs::write(git.join("hooks/pre-commit"), "#!/bin/sh\ntouch ~/owned\n").unwrap();
        std::fs::write(git.join("hooks/pre-push.sample"), "#!/bin/sh\n").unwrap();
        let removed = repository(&git);
        assert_eq!(removed.len(), 2, "{removed:?}");
        assert_eq!(removed[0].what, "core.fsmonitor");
        assert_eq!(removed[1].path, git.join("hooks/pre-commit"));
        assert_eq!(
            std::fs::read_to_string(git.join("config")).unwrap(),
            "[core]\n\tbare = false\n"
        );
        assert!(git.join("hooks/pre-push.sample").exists());
        assert!(repository(&git).is_empty(), "nothing left to remove");
    }
}
