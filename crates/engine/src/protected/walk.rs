//! Every `.git` below the workspace — a directory, a pointer file (`gitdir: …`) or a link —
//! found by a walk that does not descend into a `.git`, skips nothing else (ignored folders
//! such as `node_modules` and `target` included: git runs a nested repository's config
//! wherever it is) and follows no link to a directory.
//!
//! The walk is cached between commands ([`Walk`]): a directory whose modification time and
//! inode are what they were is not read again (its entries are the same; only its
//! subdirectories are visited, to check theirs). A directory changed within the last two
//! seconds of the walk that read it is read again next time, since a second change in the same
//! clock tick would leave its time as it was (git's "racy" rule). Invariant: at most
//! [`MAX_DIRS`] directories are visited; a bigger tree is walked that far and
//! [`Walk::truncated`] says so.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The most directories one walk visits.
pub const MAX_DIRS: usize = 200_000;

/// How recent a change must be for a cached listing not to be trusted.
const RACY: Duration = Duration::from_secs(2);

/// What a `.git` entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GitKind {
    Dir,
    /// A file, normally `gitdir: PATH` (a submodule, a linked worktree).
    File,
    Link,
}

/// One `.git` found.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GitEntry {
    /// The `.git` itself, absolute.
    pub path: PathBuf,
    pub kind: GitKind,
    /// Its device and inode (of the entry itself, not followed).
    pub id: (u64, u64),
}

#[derive(Debug, Clone)]
struct Listing {
    mtime: (i64, i64),
    ino: u64,
    subdirs: Vec<OsString>,
    has_git: bool,
    /// Read too soon after its last change to be trusted next time.
    racy: bool,
}

/// The cached walk of one workspace.
#[derive(Debug, Default)]
pub struct Walk {
    cache: HashMap<PathBuf, Listing>,
    /// Directory inodes seen by the last walk, by path (to find a `.git` that was moved).
    inodes: HashMap<(u64, u64), PathBuf>,
    truncated: bool,
}

impl Walk {
    /// Every `.git` below `root` (which is itself included: `root/.git`), in walk order.
    pub fn scan(&mut self, root: &Path) -> Vec<GitEntry> {
        let mut found = Vec::new();
        let mut visited = 0usize;
        let mut seen = HashMap::new();
        let mut next_cache = HashMap::new();
        let mut stack = vec![root.to_path_buf()];
        self.truncated = false;
        while let Some(dir) = stack.pop() {
            if visited >= MAX_DIRS {
                self.truncated = true;
                break;
            }
            visited += 1;
            let Ok(meta) = std::fs::symlink_metadata(&dir) else { continue };
            if !meta.is_dir() {
                continue;
            }
            seen.insert((meta.dev(), meta.ino()), dir.clone());
            let mtime = (meta.mtime(), meta.mtime_nsec());
            let listing = match self.cache.remove(&dir) {
                Some(l) if l.mtime == mtime && l.ino == meta.ino() && !l.racy => l,
                _ => match read(&dir, mtime, meta.ino()) {
                    Some(l) => l,
                    None => continue,
                },
            };
            if listing.has_git {
                let git = dir.join(".git");
                if let Ok(m) = std::fs::symlink_metadata(&git) {
                    let kind = if m.file_type().is_symlink() {
                        GitKind::Link
                    } else if m.is_dir() {
                        GitKind::Dir
                    } else {
                        GitKind::File
                    };
                    if kind == GitKind::Dir {
                        seen.insert((m.dev(), m.ino()), git.clone());
                    }
                    found.push(GitEntry { path: git, kind, id: (m.dev(), m.ino()) });
                }
            }
            stack.extend(listing.subdirs.iter().rev().map(|name| dir.join(name)));
            next_cache.insert(dir, listing);
        }
        self.cache = next_cache;
        self.inodes = seen;
        found
    }

    /// Whether the last walk stopped at [`MAX_DIRS`].
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Where the last walk saw the directory with this device and inode (a `.git` moved by a
    /// command is found by it).
    pub fn dir_with_id(&self, id: (u64, u64)) -> Option<&Path> {
        self.inodes.get(&id).map(PathBuf::as_path)
    }
}

fn read(dir: &Path, mtime: (i64, i64), ino: u64) -> Option<Listing> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut subdirs = Vec::new();
    let mut has_git = false;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name == ".git" {
            has_git = true;
            continue;
        }
        // Not followed: a link to a directory may lead anywhere, or in a circle.
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            subdirs.push(name);
        }
    }
    subdirs.sort();
    let changed = SystemTime::UNIX_EPOCH
        + Duration::new(u64::try_from(mtime.0).unwrap_or(0), u32::try_from(mtime.1).unwrap_or(0));
    let racy = SystemTime::now().duration_since(changed).map_or(true, |age| age < RACY);
    Some(Listing { mtime, ino, subdirs, has_git, racy })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(root: &Path, found: &[GitEntry]) -> Vec<(String, GitKind)> {
        let mut v: Vec<_> = found
            .iter()
            .map(|e| (e.path.strip_prefix(root).unwrap().display().to_string(), e.kind))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    #[test]
    fn every_git_is_found_nested_ignored_or_not_and_none_inside_a_git() {
        let ws = tempfile::tempdir().unwrap();
        let p = ws.path();
        for dir in [".git/modules/sub", "src/.git", "node_modules/dep/.git", "a/b/c"] {
            std::fs::create_dir_all(p.join(dir)).unwrap();
        }
        std::fs::write(p.join(".gitignore"), "node_modules\n").unwrap();
        std::fs::create_dir_all(p.join("sub")).unwrap();
        std::fs::write(p.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
        std::os::unix::fs::symlink("/tmp", p.join("a/b/c/.git")).unwrap();
        // A link to a directory is not followed.
        std::os::unix::fs::symlink(p.join("src"), p.join("loop")).unwrap();
        let mut walk = Walk::default();
        let found = walk.scan(p);
        assert_eq!(
            names(p, &found),
            [
                (".git".to_owned(), GitKind::Dir),
                ("a/b/c/.git".to_owned(), GitKind::Link),
                ("node_modules/dep/.git".to_owned(), GitKind::Dir),
                ("src/.git".to_owned(), GitKind::Dir),
                ("sub/.git".to_owned(), GitKind::File),
            ]
        );
        assert!(!walk.truncated());
        // Cached: the same answer, and a change is seen.
        assert_eq!(names(p, &walk.scan(p)), names(p, &found));
        std::fs::create_dir_all(p.join("a/b/.git")).unwrap();
        std::fs::remove_dir(p.join("src/.git")).unwrap();
        std::fs::write(p.join("src/.git"), "gitdir: /elsewhere\n").unwrap();
        let again = names(p, &walk.scan(p));
        assert!(again.contains(&("a/b/.git".to_owned(), GitKind::Dir)), "{again:?}");
        assert!(again.contains(&("src/.git".to_owned(), GitKind::File)), "{again:?}");
        // A moved .git is found by its inode.
        let id = found.iter().find(|e| e.path == p.join(".git")).unwrap().id;
        std::fs::rename(p.join(".git"), p.join(".gx")).unwrap();
        walk.scan(p);
        assert_eq!(walk.dir_with_id(id), Some(p.join(".gx").as_path()));
    }
}
