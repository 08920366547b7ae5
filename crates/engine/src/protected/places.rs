//! Where git finds what it executes, for each `.git` of the workspace: the repository
//! directory a `.git` stands for (itself, a pointer file's `gitdir:` target, a link's target),
//! its `commondir` target, the repositories of its submodules (`modules/*`) and linked
//! worktrees (`worktrees/*`), and in each of them the files git runs code from (`config`,
//! `config.worktree`, `hooks/`, `info/`, `commondir`). Also `core.hooksPath` when it resolves
//! inside the workspace (husky's `.husky/_`, a `.githooks` folder).
//!
//! Invariant: every file read here is small and read through a bound ([`crate::bounded`]):
//! a pointer or a `commondir` of more than [`POINTER_BYTES`] is not followed.

use std::path::{Path, PathBuf};

use super::walk::{GitEntry, GitKind};

/// The longest pointer file (`gitdir: …`) or `commondir` followed.
pub const POINTER_BYTES: usize = 4096;
/// How deep submodules of submodules are followed.
const MAX_DEPTH: usize = 4;

/// The repository directories one `.git` stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub entry: GitEntry,
    /// The repository directory (canonical), when the entry leads to one.
    pub dir: Option<PathBuf>,
    /// Where a pointer file or link leads, canonical, whether or not it is a directory (for
    /// "points outside the workspace").
    pub target: Option<PathBuf>,
}

/// Reads a small file that names a path (`gitdir: X`, a `commondir`), resolved against `base`.
fn pointed(file: &Path, base: &Path, prefix: Option<&str>) -> Option<PathBuf> {
    let bytes = match crate::bounded::read(file, POINTER_BYTES) {
        Ok(crate::bounded::Bounded::Read { bytes, cut: false }) => bytes,
        _ => return None,
    };
    let text = String::from_utf8(bytes).ok()?;
    let line = text.lines().next()?.trim();
    let raw = match prefix {
        Some(p) => line.strip_prefix(p)?.trim(),
        None => line,
    };
    if raw.is_empty() {
        return None;
    }
    let path = Path::new(raw);
    Some(if path.is_absolute() { path.to_path_buf() } else { base.join(path) })
}

fn canonical(path: &Path) -> PathBuf {
    crate::paths::real_location(path)
}

/// The repository a `.git` entry stands for.
pub fn resolve(entry: &GitEntry) -> Resolved {
    let parent = entry.path.parent().unwrap_or(Path::new("/"));
    let target = match entry.kind {
        GitKind::Dir => None,
        GitKind::File => pointed(&entry.path, parent, Some("gitdir:")).map(|p| canonical(&p)),
        GitKind::Link => std::fs::read_link(&entry.path).ok().map(|t| canonical(&parent.join(t))),
    };
    let dir = match entry.kind {
        GitKind::Dir => Some(canonical(&entry.path)),
        _ => target.clone().filter(|t| t.is_dir()),
    };
    Resolved { entry: entry.clone(), dir, target }
}

/// A repository directory's `commondir` target (a linked worktree's main repository).
pub fn common_dir(dir: &Path) -> Option<PathBuf> {
    pointed(&dir.join("commondir"), dir, None).map(|p| canonical(&p))
}

/// Every repository directory git may use through `dirs`: each of them, its `commondir`
/// target, and its `modules/*` and `worktrees/*` (nested up to a few levels), without
/// repeats, in a stable order.
pub fn repositories(dirs: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut queue: Vec<(PathBuf, usize)> = dirs.into_iter().map(|d| (d, 0)).collect();
    while let Some((dir, depth)) = queue.pop() {
        if out.contains(&dir) || !dir.is_dir() {
            continue;
        }
        if let Some(common) = common_dir(&dir) {
            queue.push((common, depth));
        }
        if depth < MAX_DEPTH {
            for nested in ["modules", "worktrees"] {
                queue.extend(subdirs(&dir.join(nested)).into_iter().map(|d| (d, depth + 1)));
            }
        }
        out.push(dir);
    }
    out.sort();
    out
}

/// The directories right below `dir` (a submodule's repository may itself be nested:
/// `modules/a/modules/b` is reached through `a`).
fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// The files git runs code from (or follows to such code) in one repository directory.
pub const EXECUTABLE_FILES: [&str; 3] = ["config", "config.worktree", "commondir"];
/// The folders of one repository directory whose every file counts (hooks, and `info/`,
/// whose `attributes` choose filters and diff drivers).
pub const EXECUTABLE_DIRS: [&str; 2] = ["hooks", "info"];

/// The repository that holds `workspace` when its `.git` lies above it (the workspace is a
/// folder of a larger work tree): git in the workspace uses it too.
pub fn enclosing(workspace: &Path) -> Option<GitEntry> {
    use std::os::unix::fs::MetadataExt as _;
    let mut dir = workspace.parent();
    while let Some(d) = dir {
        let git = d.join(".git");
        if let Ok(m) = std::fs::symlink_metadata(&git) {
            let kind = if m.file_type().is_symlink() {
                GitKind::Link
            } else if m.is_dir() {
                GitKind::Dir
            } else {
                GitKind::File
            };
            return Some(GitEntry { path: git, kind, id: (m.dev(), m.ino()) });
        }
        dir = d.parent();
    }
    None
}

/// `core.hooksPath` of the repository directories `dirs` where it resolves inside `workspace`
/// (relative paths are relative to the work tree that holds `entry`), canonical.
pub fn hooks_paths(workspace: &Path, repos: &[Resolved]) -> Vec<PathBuf> {
    let ws = canonical(workspace);
    let mut out = Vec::new();
    for repo in repos {
        let Some(dir) = &repo.dir else { continue };
        let work_tree = repo.entry.path.parent().unwrap_or(Path::new("/"));
        for file in ["config", "config.worktree"] {
            let Ok(crate::bounded::Bounded::Read { bytes, .. }) =
                crate::bounded::read(&dir.join(file), 1024 * 1024)
            else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes);
            let Some(value) = super::gitconfig::value_of(&text, "core", "hooksPath") else {
                continue;
            };
            if value.is_empty() {
                continue;
            }
            let path = match value.strip_prefix("~/") {
                Some(rest) => dirs::home_dir().map(|h| h.join(rest)),
                None => Some(work_tree.join(&value)),
            };
            let Some(path) = path.map(|p| canonical(&p)) else { continue };
            if path.starts_with(&ws) && path != ws && !out.contains(&path) {
                out.push(path);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: PathBuf) -> GitEntry {
        let kind = match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => GitKind::Link,
            Ok(m) if m.is_dir() => GitKind::Dir,
            _ => GitKind::File,
        };
        GitEntry { path, kind, id: (0, 0) }
    }

    #[test]
    fn pointers_commondirs_submodules_and_worktrees_lead_to_their_repositories() {
        let ws = tempfile::tempdir().unwrap();
        let p = &crate::paths::real_location(ws.path());
        for d in [".git/modules/sub/modules/inner", ".git/worktrees/wt", "cc", "sub"] {
            std::fs::create_dir_all(p.join(d)).unwrap();
        }
        std::fs::write(p.join(".git/commondir"), "../cc\n").unwrap();
        std::fs::write(p.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
        let sub = resolve(&entry(p.join("sub/.git")));
        assert_eq!(sub.dir.as_deref(), Some(p.join(".git/modules/sub").as_path()));
        let top = resolve(&entry(p.join(".git")));
        let all = repositories(top.dir.clone());
        for want in [
            ".git",
            ".git/modules/sub",
            ".git/modules/sub/modules/inner",
            ".git/worktrees/wt",
            "cc",
        ] {
            assert!(all.contains(&p.join(want)), "{want}: {all:?}");
        }
        // A pointer outside the workspace is seen as such.
        std::fs::write(p.join("sub/.git"), "gitdir: /nonexistent/x\n").unwrap();
        let out = resolve(&entry(p.join("sub/.git")));
        assert_eq!(out.target.as_deref(), Some(Path::new("/nonexistent/x")));
        assert!(out.dir.is_none());
    }

    #[test]
    fn a_hooks_path_inside_the_workspace_is_found() {
        let ws = tempfile::tempdir().unwrap();
        let p = &crate::paths::real_location(ws.path());
        std::fs::create_dir_all(p.join(".git")).unwrap();
        std::fs::create_dir_all(p.join(".husky/_")).unwrap();
        std::fs::write(p.join(".git/config"), "[core]\n\thooksPath = .husky/_\n").unwrap();
        let repos = [resolve(&entry(p.join(".git")))];
        assert_eq!(hooks_paths(p, &repos), [p.join(".husky/_")]);
        std::fs::write(p.join(".git/config"), "[core]\n\thooksPath = /usr/share/hooks\n").unwrap();
        assert!(hooks_paths(p, &repos).is_empty(), "outside the workspace: Landlock's part");
    }
}
