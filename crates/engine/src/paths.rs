//! Resolving the paths tools, attachments, images and restores name against the workspace.
//!
//! Invariant: a path counts as inside the workspace only if its real location is, after `..`
//! is folded and symlinks of the existing part are followed; a link pointing out of the
//! workspace therefore "leaves" it and needs approval like any outside path. A hardlink cannot
//! be followed to where else it lives, so a file with more than one link counts as outside
//! too ([`hardlinked`]), and one that is Codewhale's own config under another name is that
//! config ([`same_file`]).

use std::path::{Component, Path, PathBuf};

/// A path a tool will touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Absolute, with `.` and `..` folded (symlinks not followed, so messages show what the
    /// model asked for).
    pub path: PathBuf,
    /// Whether its real location lies inside the workspace.
    pub inside: bool,
}

/// Resolves `raw` (relative to `workspace`, or absolute). `workspace` must be absolute.
pub fn resolve(workspace: &Path, raw: &str) -> Result<Resolved, String> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err("the path is empty; pass a path relative to the workspace".into());
    }
    if raw.contains('\0') {
        return Err("the path contains a NUL byte".into());
    }
    let expanded = match raw.strip_prefix("~/") {
        Some(rest) => dirs::home_dir().map_or_else(|| PathBuf::from(raw), |h| h.join(rest)),
        None => PathBuf::from(raw),
    };
    let joined = if expanded.is_absolute() { expanded } else { workspace.join(expanded) };
    let path = fold(&joined);
    let real_ws = std::fs::canonicalize(workspace).unwrap_or_else(|_| fold(workspace));
    let inside = real_location(&path).starts_with(&real_ws);
    Ok(Resolved { path, inside })
}

/// Folds `.` and `..` lexically.
fn fold(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The path with its longest existing prefix canonicalized (symlinks followed).
pub(crate) fn real_location(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.file_name().map(|n| n.to_owned()), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Whether `path` is a file with more than one hardlink: its other names may lie anywhere on
/// the same file system (a user's config, a file of another project), so the file tools treat
/// it as outside the workspace.
pub(crate) fn hardlinked(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.nlink() > 1)
}

/// Whether `a` and `b` are the same existing file (device and inode), whatever their names.
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Whether the workspace-relative `path` is one Codewhale or git executes or reads as
/// instructions (docs/security.md, *Codewhale's own files*): any `.git` or `.codewhale`
/// component, an `AGENTS.md` or `CLAUDE.md` at any depth. A restore never
/// writes one without the user's yes.
pub fn is_protected(path: &str) -> bool {
    let parts: Vec<&str> = path.split(['/', '\\']).filter(|p| !p.is_empty()).collect();
    let last = parts.len().saturating_sub(1);
    parts.iter().enumerate().any(|(i, part)| {
        *part == ".git"
            || *part == ".codewhale"
            || (i == last && (*part == "AGENTS.md" || *part == "CLAUDE.md"))
    })
}

/// `path` relative to `workspace` for display, or the full path when outside it.
pub fn display(workspace: &Path, path: &Path) -> String {
    match path.strip_prefix(workspace) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_paths_at_any_depth() {
        for p in [
            ".git/hooks/pre-commit",
            "src/.git/config",
            ".git",
            ".codewhale/config.toml",
            "AGENTS.md",
            "docs/CLAUDE.md",
            "a/.codewhale/anchors.md",
        ] {
            assert!(is_protected(p), "{p}");
        }
        for p in [
            "src/main.rs",
            ".gitignore",
            ".github/workflows/ci.yml",
            "AGENTS.md.bak",
            ".codewhale.bak",
        ] {
            assert!(!is_protected(p), "{p}");
        }
    }

    #[test]
    fn relative_absolute_and_dotdot() {
        let ws = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(ws.path()).unwrap();
        let r = resolve(&root, "src/../a.txt").unwrap();
        assert_eq!((r.path, r.inside), (root.join("a.txt"), true));
        assert!(resolve(&root, root.join("x").to_str().unwrap()).unwrap().inside);
        assert!(!resolve(&root, "../outside").unwrap().inside);
        assert!(!resolve(&root, "/etc/passwd").unwrap().inside);
        assert!(resolve(&root, "  ").is_err());
    }

    #[test]
    fn symlinks_out_of_the_workspace_leave_it() {
        let ws = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(ws.path()).unwrap();
        std::os::unix::fs::symlink(other.path(), root.join("link")).unwrap();
        assert!(!resolve(&root, "link/file.txt").unwrap().inside);
    }

    #[test]
    fn hardlinks_are_seen_for_what_they_are() {
        let ws = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let outside = other.path().join("config.toml");
        std::fs::write(&outside, "").unwrap();
        let inside = ws.path().join("notes.txt");
        std::fs::hard_link(&outside, &inside).unwrap();
        assert!(hardlinked(&inside) && same_file(&inside, &outside));
        std::fs::write(ws.path().join("plain.txt"), "").unwrap();
        assert!(!hardlinked(&ws.path().join("plain.txt")));
        assert!(!hardlinked(&ws.path().join("missing.txt")) && !hardlinked(ws.path()));
    }
}
