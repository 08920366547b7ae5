//! The put-back guard (docs/security.md, *What git and Codewhale execute is out of the model's reach*): a snapshot, taken before a command,
//! of everything git and Codewhale execute from — in every repository directory of the
//! workspace its `config`, `config.worktree`, `commondir`, every entry of `hooks/` and
//! `info/`, each `.git` entry itself (a directory by its inode, a pointer file by its bytes, a
//! link by its target), a `core.hooksPath` folder inside the workspace, all of `.codewhale/`,
//! and the instruction files the system prompt reads — and, after the command, each of them
//! made again what it was, byte for byte and mode for mode, with every change named.
//!
//! A `.git` directory a command moved away (`mv .git .gx`) is found again by its inode and
//! moved back before anything else is put back, so hooks planted in `.gx` are then removed like
//! any new hook. Invariants: nothing outside the recorded places is touched; a file over
//! [`MAX_FILE_BYTES`], or past [`MAX_TOTAL_BYTES`] in all, is recorded by size and time only
//! (a change to it is named, not undone); at most [`MAX_ENTRIES`] entries are recorded.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use super::places;
use super::walk::{GitEntry, GitKind, Walk};

/// The largest file kept for putting back.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// The most bytes one snapshot keeps.
pub const MAX_TOTAL_BYTES: u64 = 32 * 1024 * 1024;
/// The most entries one snapshot records.
pub const MAX_ENTRIES: usize = 8192;
/// How deep `.codewhale/` is recorded.
const CODEWHALE_DEPTH: usize = 4;

/// One recorded entry as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Was {
    Absent,
    File {
        bytes: Vec<u8>,
        mode: u32,
    },
    Link(PathBuf),
    Dir {
        mode: u32,
    },
    /// Too big to keep (or unreadable): its size and time, so a change is still seen.
    Unkept {
        len: u64,
        mtime: (i64, i64),
    },
}

/// What [`Snapshot::take`] records.
#[derive(Debug, Clone, Default)]
pub struct Places {
    /// Every `.git` of the workspace.
    pub gits: Vec<GitEntry>,
    /// Every repository directory they lead to ([`places::repositories`]).
    pub repositories: Vec<PathBuf>,
    /// `core.hooksPath` folders inside the workspace.
    pub hooks_paths: Vec<PathBuf>,
    /// The workspace's `.codewhale/`.
    pub codewhale: PathBuf,
    /// The instruction files the system prompt reads (those that exist are kept).
    pub instructions: Vec<PathBuf>,
}

/// The protected places of a workspace, before a command.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    entries: BTreeMap<PathBuf, Was>,
    /// Folders whose new entries a command planted (removed by [`Snapshot::undo`]).
    folders: Vec<PathBuf>,
    gits: Vec<GitEntry>,
    kept: u64,
    /// Whether [`MAX_ENTRIES`] stopped the recording.
    pub truncated: bool,
}

/// A change [`Snapshot::undo`] found, by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: PathBuf,
    /// Whether it was made what it was (false: only named).
    pub undone: bool,
    /// What happened, when more than "changed" is worth saying.
    pub note: Option<String>,
}

impl Snapshot {
    /// Records `places`.
    pub fn take(places: &Places) -> Snapshot {
        let mut s = Snapshot::default();
        for git in &places.gits {
            s.record(&git.path);
            s.gits.push(git.clone());
        }
        for repo in &places.repositories {
            for file in places::EXECUTABLE_FILES {
                s.record(&repo.join(file));
            }
            for folder in places::EXECUTABLE_DIRS {
                s.record_folder(&repo.join(folder), 1);
            }
        }
        for hooks in &places.hooks_paths {
            s.record_folder(hooks, 1);
        }
        s.record_folder(&places.codewhale, CODEWHALE_DEPTH);
        for file in &places.instructions {
            if std::fs::symlink_metadata(file).is_ok() {
                s.record(file);
            }
        }
        s
    }

    fn record(&mut self, path: &Path) {
        if self.entries.contains_key(path) {
            return;
        }
        if self.entries.len() >= MAX_ENTRIES {
            self.truncated = true;
            return;
        }
        let was = self.read(path);
        self.entries.insert(path.to_path_buf(), was);
    }

    /// Records `folder` (absent or not) and, `depth` levels down, what it holds.
    fn record_folder(&mut self, folder: &Path, depth: usize) {
        self.record(folder);
        if !matches!(self.entries.get(folder), Some(Was::Dir { .. })) {
            return;
        }
        self.folders.push(folder.to_path_buf());
        let Ok(list) = std::fs::read_dir(folder) else { return };
        let mut children: Vec<PathBuf> = list.flatten().map(|e| e.path()).collect();
        children.sort();
        for child in children {
            let is_dir = std::fs::symlink_metadata(&child).is_ok_and(|m| m.is_dir());
            if is_dir && depth > 1 {
                self.record_folder(&child, depth - 1);
            } else {
                self.record(&child);
            }
        }
    }

    fn read(&mut self, path: &Path) -> Was {
        let Ok(meta) = std::fs::symlink_metadata(path) else { return Was::Absent };
        let mode = meta.permissions().mode() & 0o7777;
        if meta.file_type().is_symlink() {
            return std::fs::read_link(path)
                .map_or(Was::Unkept { len: 0, mtime: (0, 0) }, Was::Link);
        }
        if meta.is_dir() {
            return Was::Dir { mode };
        }
        let unkept = Was::Unkept { len: meta.len(), mtime: (meta.mtime(), meta.mtime_nsec()) };
        if !meta.is_file()
            || meta.len() > MAX_FILE_BYTES
            || self.kept + meta.len() > MAX_TOTAL_BYTES
        {
            return unkept;
        }
        match crate::bounded::read(path, MAX_FILE_BYTES as usize) {
            Ok(crate::bounded::Bounded::Read { bytes, cut: false }) => {
                self.kept += bytes.len() as u64;
                Was::File { bytes, mode }
            }
            _ => unkept,
        }
    }

    /// The paths this snapshot records (for the read-only binds and the inode check of a
    /// hardlink).
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.entries.keys().map(PathBuf::as_path)
    }

    /// The same snapshot with `paths` recorded as they are now: what the user changed (an
    /// approved write, a pinned anchor, their own command) is the state to keep. A path
    /// outside the recorded places is left out.
    pub fn with_current(&self, paths: &[PathBuf]) -> Snapshot {
        let mut next = self.clone();
        for path in paths {
            let recorded = next.entries.contains_key(path)
                || path.parent().is_some_and(|p| next.folders.iter().any(|f| f == p));
            if recorded {
                let was = next.read(path);
                next.entries.insert(path.clone(), was);
            }
        }
        next
    }

    /// Whether every recorded `.git` directory is still where it was (so no walk is needed to
    /// find one that moved).
    pub fn gits_in_place(&self) -> bool {
        self.gits.iter().filter(|g| g.kind == GitKind::Dir).all(|g| {
            std::fs::symlink_metadata(&g.path)
                .is_ok_and(|m| m.is_dir() && (m.dev(), m.ino()) == g.id)
        })
    }

    /// Makes every recorded place what it was; `walk` is the walk made after the command (it
    /// knows where a moved `.git` went). Returns what changed, in path order.
    pub fn undo(&self, walk: &Walk) -> Vec<Change> {
        self.changes(walk, true)
    }

    /// What changed since the snapshot, left as it is (the user's own command).
    pub fn compare(&self) -> Vec<Change> {
        self.changes(&Walk::default(), false)
    }

    fn changes(&self, walk: &Walk, put_back: bool) -> Vec<Change> {
        let mut changes = Vec::new();
        if put_back {
            for git in &self.gits {
                if let Some(change) = bring_back(git, walk) {
                    changes.push(change);
                }
            }
        }
        for (path, before) in &self.entries {
            if unchanged(path, before) {
                continue;
            }
            // A folder that was not there is named by what it holds (`.codewhale/config.toml`).
            let planted = match before {
                Was::Absent => files_below(path),
                _ => Vec::new(),
            };
            let undone = put_back && restore(path, before);
            if planted.is_empty() {
                changes.push(Change { path: path.clone(), undone, note: None });
            }
            changes.extend(planted.into_iter().map(|p| Change { path: p, undone, note: None }));
        }
        // What a command planted in a recorded folder.
        for folder in &self.folders {
            let Ok(list) = std::fs::read_dir(folder) else { continue };
            let mut planted: Vec<PathBuf> = list
                .flatten()
                .map(|e| e.path())
                .filter(|p| !self.entries.contains_key(p))
                .collect();
            planted.sort();
            for path in planted {
                let undone = put_back && restore(&path, &Was::Absent);
                changes.push(Change { path, undone, note: None });
            }
        }
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        changes.dedup_by(|a, b| a.path == b.path);
        changes
    }
}

/// The files below a folder (at most a few, for naming), or nothing when `path` is not one.
fn files_below(path: &Path) -> Vec<PathBuf> {
    const MAX: usize = 20;
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(list) = std::fs::read_dir(&dir) else { continue };
        for entry in list.flatten() {
            if out.len() >= MAX {
                return out;
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            } else {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    out
}

/// Whether `path` is still what it `was`: an unkept file while its size and time are.
fn unchanged(path: &Path, was: &Was) -> bool {
    match was {
        Was::Unkept { len, mtime } => std::fs::symlink_metadata(path).is_ok_and(|m| {
            !m.file_type().is_symlink() && m.len() == *len && (m.mtime(), m.mtime_nsec()) == *mtime
        }),
        was => Snapshot::default().read(path) == *was,
    }
}

/// A `.git` directory that is no longer where it was, moved back from where the walk found
/// it (whatever took its place is removed first). Pointer files and links are put back with
/// the other entries.
fn bring_back(git: &GitEntry, walk: &Walk) -> Option<Change> {
    if git.kind != GitKind::Dir {
        return None;
    }
    let now = std::fs::symlink_metadata(&git.path).ok();
    if now.as_ref().is_some_and(|m| m.is_dir() && (m.dev(), m.ino()) == git.id) {
        return None;
    }
    let Some(moved) = walk.dir_with_id(git.id).filter(|p| *p != git.path) else {
        return Some(Change {
            path: git.path.clone(),
            undone: false,
            note: Some("the repository was removed and cannot be put back".to_owned()),
        });
    };
    let moved = moved.to_path_buf();
    let cleared = match now {
        Some(m) if m.is_dir() => std::fs::remove_dir_all(&git.path).is_ok(),
        Some(_) => std::fs::remove_file(&git.path).is_ok(),
        None => true,
    };
    let undone = cleared && std::fs::rename(&moved, &git.path).is_ok();
    let shown = moved.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Some(Change {
        path: git.path.clone(),
        undone,
        note: Some(format!("it had been moved to {shown} and replaced")),
    })
}

/// Makes `path` what it `was`; false when that cannot be done (it is then left as it is).
fn restore(path: &Path, was: &Was) -> bool {
    let clear = || match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path).is_ok(),
        Ok(_) => std::fs::remove_file(path).is_ok(),
        Err(_) => true,
    };
    let mode = |m: u32| std::fs::set_permissions(path, std::fs::Permissions::from_mode(m)).is_ok();
    match was {
        Was::Absent => clear(),
        Was::File { bytes, mode: m } => clear() && std::fs::write(path, bytes).is_ok() && mode(*m),
        Was::Link(target) => clear() && std::os::unix::fs::symlink(target, path).is_ok(),
        Was::Dir { mode: m } => {
            let is_dir = std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir());
            (is_dir || (clear() && std::fs::create_dir(path).is_ok())) && mode(*m)
        }
        Was::Unkept { .. } => false,
    }
}

#[cfg(test)]
mod tests;
