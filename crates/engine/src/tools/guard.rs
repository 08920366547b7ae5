//! Protected paths inside the workspace (docs/security.md, *Protected paths inside the workspace*):
//! `.git/hooks/`, `.git/config` and Codewhale's own `.codewhale/config.toml`. What they hold runs
//! unconfined on the user's next git command (hooks, `core.fsmonitor`, `core.hooksPath`, aliases,
//! filters) or changes how Codewhale itself behaves, so a model's command never changes them
//! without the user's yes — however the command is phrased (`cd .codewhale && …`, a symlink, `git
//! config`).
//!
//! The check is on what changed on disk, not on the command's text: [`Snapshot::take`] reads the
//! protected files before a shell command runs, [`Snapshot::undo`] compares after it and puts
//! back whatever it changed (a file rewritten, created or removed, a hook added as a file or a
//! link), naming each. The file tools are refused before they write ([`covers`]).
//!
//! Invariant: every protected file is small (a hook is a script, a config a page): a file over
//! [`MAX_BYTES`] is treated as changed-and-unrestorable only by name, never read whole.

use std::path::{Path, PathBuf};

/// Largest protected file kept for restoring.
const MAX_BYTES: u64 = 1024 * 1024;

/// Whether `path` (absolute, symlinks of its existing part followed by the caller's resolution)
/// is one of the workspace's protected paths.
pub fn covers(workspace: &Path, path: &Path) -> bool {
    let real = crate::paths::real_location(path);
    let ws = crate::paths::real_location(workspace);
    let git = ws.join(".git");
    real == git.join("config")
        || real.starts_with(git.join("hooks"))
        || real == ws.join(".codewhale").join("config.toml")
}

/// One protected file as it was: its bytes, or that it was absent.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Was {
    Absent,
    File(Vec<u8>),
    Link(PathBuf),
    /// Too big to keep, or unreadable: only noticed by name.
    Unkept,
}

/// The protected files of a workspace, before a command.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    files: Vec<(PathBuf, Was)>,
    hooks: Option<PathBuf>,
}

impl Snapshot {
    /// Reads the protected files of `workspace` (a few small files; nothing when it has none).
    pub fn take(workspace: &Path) -> Snapshot {
        let git = workspace.join(".git");
        let hooks = git.join("hooks");
        let mut files: Vec<PathBuf> = vec![workspace.join(".codewhale").join("config.toml")];
        // A repository the command itself creates (`git init`) has no hooks of the user's yet.
        let repository = git.is_dir();
        if repository {
            files.push(git.join("config"));
            if let Ok(entries) = std::fs::read_dir(&hooks) {
                files.extend(entries.flatten().map(|e| e.path()));
            }
        }
        let files = files.into_iter().map(|p| (p.clone(), was(&p))).collect();
        Snapshot { files, hooks: repository.then_some(hooks) }
    }

    /// Puts back what changed since [`Snapshot::take`]; the workspace-relative names of what was
    /// put back (empty when nothing changed).
    pub fn undo(&self, workspace: &Path) -> Vec<String> {
        let mut changed = Vec::new();
        for (path, before) in &self.files {
            if was(path) != *before && restore(path, before) {
                changed.push(shown(workspace, path));
            }
        }
        // A hook that did not exist before: removed.
        if let Some(hooks) = &self.hooks {
            for entry in std::fs::read_dir(hooks).into_iter().flatten().flatten() {
                let path = entry.path();
                if !self.files.iter().any(|(p, _)| *p == path) && restore(&path, &Was::Absent) {
                    changed.push(shown(workspace, &path));
                }
            }
        }
        changed
    }
}

fn shown(workspace: &Path, path: &Path) -> String {
    path.strip_prefix(workspace).unwrap_or(path).display().to_string()
}

fn was(path: &Path) -> Was {
    match std::fs::symlink_metadata(path) {
        Err(_) => Was::Absent,
        Ok(meta) if meta.file_type().is_symlink() => {
            std::fs::read_link(path).map_or(Was::Unkept, Was::Link)
        }
        Ok(meta) if meta.is_file() && meta.len() <= MAX_BYTES => {
            std::fs::read(path).map_or(Was::Unkept, Was::File)
        }
        Ok(_) => Was::Unkept,
    }
}

/// Makes `path` what it `was`; false when that cannot be done (then it is left as it is).
fn restore(path: &Path, before: &Was) -> bool {
    let remove = || match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path).is_ok(),
        Ok(_) => std::fs::remove_file(path).is_ok(),
        Err(_) => true,
    };
    match before {
        Was::Absent => remove(),
        Was::File(bytes) => remove() && std::fs::write(path, bytes).is_ok(),
        Was::Link(target) => remove() && std::os::unix::fs::symlink(target, path).is_ok(),
        Was::Unkept => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> tempfile::TempDir {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join(".git/hooks")).unwrap();
        std::fs::write(ws.path().join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        std::fs::write(ws.path().join(".git/hooks/pre-push.sample"), "#!/bin/sh\n").unwrap();
        ws
    }

    #[test]
    fn what_a_command_planted_or_changed_is_put_back_and_named() {
        let ws = workspace();
        let before = Snapshot::take(ws.path());
        let p = ws.path();
        std::fs::write(p.join(".git/hooks/pre-commit"), "#!/bin/sh\ntouch ~/owned\n").unwrap();
        std::os::unix::fs::symlink("/tmp/evil", p.join(".git/hooks/post-checkout")).unwrap();
        std::fs::write(p.join(".git/config"), "[core]\n\tfsmonitor = \"touch x\"\n").unwrap();
        std::fs::create_dir_all(p.join(".codewhale")).unwrap();
        std::fs::write(p.join(".codewhale/config.toml"), "[compaction]\nthreshold = 0.01\n")
            .unwrap();
        std::fs::remove_file(p.join(".git/hooks/pre-push.sample")).unwrap();
        let mut undone = before.undo(p);
        undone.sort();
        assert_eq!(
            undone,
            [
                ".codewhale/config.toml",
                ".git/config",
                ".git/hooks/post-checkout",
                ".git/hooks/pre-commit",
                ".git/hooks/pre-push.sample",
            ]
        );
        assert_eq!(
            std::fs::read_to_string(p.join(".git/config")).unwrap(),
            "[core]\n\tbare = false\n"
        );
        assert!(!p.join(".git/hooks/pre-commit").exists());
        assert!(std::fs::symlink_metadata(p.join(".git/hooks/post-checkout")).is_err());
        assert!(!p.join(".codewhale/config.toml").exists());
        assert_eq!(
            std::fs::read_to_string(p.join(".git/hooks/pre-push.sample")).unwrap(),
            "#!/bin/sh\n"
        );
        // Nothing changed: nothing to say.
        assert!(Snapshot::take(p).undo(p).is_empty());
    }

    #[test]
    fn a_repository_the_command_creates_is_left_alone() {
        let ws = tempfile::tempdir().unwrap();
        let before = Snapshot::take(ws.path());
        std::fs::create_dir_all(ws.path().join(".git/hooks")).unwrap();
        std::fs::write(ws.path().join(".git/config"), "[core]\n").unwrap();
        assert!(before.undo(ws.path()).is_empty());
        assert!(ws.path().join(".git/config").exists());
    }

    #[test]
    fn the_protected_paths_are_found_through_links_and_dots() {
        let ws = workspace();
        let p = ws.path();
        assert!(covers(p, &p.join(".git/hooks/pre-commit")));
        assert!(covers(p, &p.join(".git/config")));
        assert!(covers(p, &p.join(".codewhale/config.toml")));
        std::os::unix::fs::symlink(p.join(".git/hooks"), p.join("innocent")).unwrap();
        assert!(covers(p, &p.join("innocent/pre-commit")));
        assert!(!covers(p, &p.join(".git/HEAD")));
        assert!(!covers(p, &p.join("src/config")));
    }
}
