//! What git and Codewhale execute, found in a workspace (docs/security.md, *What git and Codewhale execute is out of the model's reach*): every `.git` below it ([`walk`]) and the repositories they lead to ([`places`]),
//! `core.hooksPath` inside it, `.codewhale/`, and the instruction files read into the system
//! prompt. The structure is the rule, not a list of file names: anything with a `.git`
//! component, anything inside a folder git would take for a repository, anything under
//! `.codewhale/`, and `AGENTS.md`/`CLAUDE.md` at any depth.
//!
//! Owns [`is_protected`], the one predicate every writer asks (the file tools before they
//! write, a restore before it puts a file back), the [`Survey`] of a workspace the sandbox
//! binds read-only and the guard snapshots ([`snapshot`]), and the scrub of a `.git` a
//! command created ([`scrub`]). Neighbours: `sandbox::namespace` mounts what
//! [`Survey::read_only`] lists; `tools::guard` runs a survey around every command.

pub mod gitconfig;
pub mod places;
pub mod scrub;
pub mod snapshot;
pub mod walk;

use std::os::unix::fs::MetadataExt as _;
use std::path::{Component, Path, PathBuf};

/// Instruction files, at any depth.
pub const INSTRUCTION_NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// Why a path is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// A `.git` or what is in one, or a folder git takes for a repository.
    Git,
    /// The repository's hooks folder (`core.hooksPath`) inside the workspace.
    HooksPath,
    /// `.codewhale/`: config, anchors, commands, skills, hooks, instructions.
    Codewhale,
    /// `AGENTS.md` or `CLAUDE.md`.
    Instructions,
}

impl Protection {
    /// Why only the user may change it, as the approval question and a refusal say.
    pub fn reason(self) -> &'static str {
        match self {
            Protection::Git => {
                "git runs what a repository's .git holds (hooks, config) outside the sandbox on \
                 your next git command"
            }
            Protection::HooksPath => {
                "it is the repository's hooks folder (core.hooksPath), which git runs outside \
                 the sandbox"
            }
            Protection::Codewhale => {
                "it is Codewhale's own workspace configuration (.codewhale/: config, anchors, \
                 commands, skills, instructions)"
            }
            Protection::Instructions => {
                "it is an instruction file, read into the model's system prompt"
            }
        }
    }
}

/// Whether writing `path` (absolute, `..` folded; symlinks are followed here) would change
/// what git or Codewhale executes or reads as instructions: checked on the path as named and
/// on where it really leads, so a link made earlier (`d -> .git/hooks`) or a hardlink to a
/// protected file is seen for what it is.
pub fn is_protected(workspace: &Path, path: &Path) -> Option<Protection> {
    let ws = crate::paths::real_location(workspace);
    let real = crate::paths::real_location(path);
    for p in [path, real.as_path()] {
        if p.components().any(|c| c == Component::Normal(".git".as_ref())) {
            return Some(Protection::Git);
        }
    }
    if real.starts_with(ws.join(".codewhale")) || path.starts_with(workspace.join(".codewhale")) {
        return Some(Protection::Codewhale);
    }
    for p in [path, real.as_path()] {
        if p.file_name().is_some_and(|n| INSTRUCTION_NAMES.iter().any(|i| n == *i)) {
            return Some(Protection::Instructions);
        }
    }
    if inside_repository_folder(&ws, &real) {
        return Some(Protection::Git);
    }
    let top = top_repositories(&ws);
    if places::hooks_paths(&ws, &top).iter().any(|h| real.starts_with(h)) {
        return Some(Protection::HooksPath);
    }
    if crate::paths::hardlinked(&real) {
        return hardlink_of_protected(&ws, &real, &top);
    }
    None
}

/// The workspace's own `.git` and the one of a work tree holding it, resolved.
fn top_repositories(ws: &Path) -> Vec<places::Resolved> {
    let own = ws.join(".git");
    let own = std::fs::symlink_metadata(&own).ok().map(|m| walk::GitEntry {
        path: own,
        kind: if m.file_type().is_symlink() {
            walk::GitKind::Link
        } else if m.is_dir() {
            walk::GitKind::Dir
        } else {
            walk::GitKind::File
        },
        id: (m.dev(), m.ino()),
    });
    own.into_iter().chain(places::enclosing(ws)).map(|e| places::resolve(&e)).collect()
}

/// Whether a folder between `real` and the workspace is laid out as a repository (`HEAD`,
/// `objects/`, `refs/`): git uses such a folder through a pointer or link named anything.
fn inside_repository_folder(ws: &Path, real: &Path) -> bool {
    let mut dir = real.parent();
    while let Some(d) = dir {
        if !d.starts_with(ws) {
            return false;
        }
        if d.join("HEAD").is_file() && d.join("objects").is_dir() && d.join("refs").is_dir() {
            return true;
        }
        dir = d.parent();
    }
    false
}

/// A file with other links is protected when one of its other names is: compared by inode
/// with the protected files of the workspace's own repositories, `.codewhale/` and its
/// instruction files.
fn hardlink_of_protected(ws: &Path, real: &Path, top: &[places::Resolved]) -> Option<Protection> {
    let meta = std::fs::metadata(real).ok()?;
    let id = (meta.dev(), meta.ino());
    let repositories = places::repositories(top.iter().filter_map(|r| r.dir.clone()));
    let snapshot = snapshot::Snapshot::take(&snapshot::Places {
        gits: Vec::new(),
        repositories,
        hooks_paths: places::hooks_paths(ws, top),
        codewhale: ws.join(".codewhale"),
        instructions: INSTRUCTION_NAMES.iter().map(|n| ws.join(n)).collect(),
    });
    let same = |p: &Path| std::fs::metadata(p).is_ok_and(|m| (m.dev(), m.ino()) == id);
    let hit = snapshot.paths().find(|p| same(p))?;
    Some(if hit.starts_with(ws.join(".codewhale")) {
        Protection::Codewhale
    } else if hit.file_name().is_some_and(|n| INSTRUCTION_NAMES.iter().any(|i| n == *i)) {
        Protection::Instructions
    } else {
        Protection::Git
    })
}

/// Where git and Codewhale execute from in a workspace, as found now.
#[derive(Debug, Clone, Default)]
pub struct Survey {
    /// Every `.git` below the workspace, and the one of a work tree holding it.
    pub gits: Vec<walk::GitEntry>,
    pub resolved: Vec<places::Resolved>,
    /// Every repository directory they lead to.
    pub repositories: Vec<PathBuf>,
    /// `core.hooksPath` folders inside the workspace.
    pub hooks_paths: Vec<PathBuf>,
    /// The walk stopped at [`walk::MAX_DIRS`] folders.
    pub truncated: bool,
}

impl Survey {
    /// Surveys `workspace` (canonical) with the cached `walk`.
    pub fn take(workspace: &Path, walk: &mut walk::Walk) -> Survey {
        let mut gits = walk.scan(workspace);
        gits.extend(places::enclosing(workspace));
        let resolved: Vec<places::Resolved> = gits.iter().map(places::resolve).collect();
        let repositories = places::repositories(resolved.iter().filter_map(|r| r.dir.clone()));
        let hooks_paths = places::hooks_paths(workspace, &resolved);
        Survey { gits, resolved, repositories, hooks_paths, truncated: walk.truncated() }
    }

    /// What a snapshot of this survey records.
    pub fn places(&self, workspace: &Path, instructions: &[PathBuf]) -> snapshot::Places {
        snapshot::Places {
            gits: self.gits.clone(),
            repositories: self.repositories.clone(),
            hooks_paths: self.hooks_paths.clone(),
            codewhale: workspace.join(".codewhale"),
            instructions: instructions.to_vec(),
        }
    }

    /// What a command's namespace binds read-only: every `.git` and the repositories they
    /// lead to (unless `git_writable`), `core.hooksPath` folders, `.codewhale/` and the
    /// instruction files that exist — each once (a path inside another is covered by it),
    /// never the workspace or a folder above it (a `.git` that links there is scrubbed after
    /// the command instead).
    pub fn read_only(
        &self,
        workspace: &Path,
        instructions: &[PathBuf],
        git_writable: bool,
    ) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = Vec::new();
        if !git_writable {
            for r in &self.resolved {
                match r.entry.kind {
                    walk::GitKind::Link => paths.extend(r.dir.clone()),
                    _ => paths.push(crate::paths::real_location(&r.entry.path)),
                }
                paths.extend(r.dir.clone());
            }
            paths.extend(self.repositories.iter().cloned());
            paths.extend(self.hooks_paths.iter().cloned());
        }
        let codewhale = workspace.join(".codewhale");
        if codewhale.is_dir() {
            paths.push(crate::paths::real_location(&codewhale));
        }
        paths.extend(
            instructions.iter().filter(|p| p.is_file()).map(|p| crate::paths::real_location(p)),
        );
        paths.retain(|p| p.exists() && !workspace.starts_with(p));
        paths.sort();
        paths.dedup();
        let mut out: Vec<PathBuf> = Vec::new();
        for p in paths {
            if !out.iter().any(|kept| p.starts_with(kept)) {
                out.push(p);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
