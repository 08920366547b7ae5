//! Worktree snapshots around a `shell` call (docs/journal-format.md, *The file store*): in a git
//! workspace, the worktree — tracked and untracked files, `.gitignore` honoured — is staged by `git
//! add -A` into Codewhale's own index and object store before and after the command, and the files
//! whose blobs differ become the call's `files` record, so a command's edits can be taken back like
//! a `write_file`.
//!
//! Invariants: every git command runs with Codewhale's own `GIT_DIR` (a bare repository inside
//! the session's file store) and its own `GIT_INDEX_FILE`; the user's repository, index and refs
//! are never written, and nothing refers to the user's objects, so no `git gc` of theirs can
//! drop a snapshot. Inherited `GIT_*` variables are cleared first (a command run inside a git
//! hook would otherwise aim these at the user's repository). The index is kept between
//! snapshots, so git's stat cache makes every snapshot after the first cost about one `stat`
//! per file. A snapshot that fails records nothing and never fails the call. Outside git there
//! are no snapshots: a command's edits then read as changed by someone else.
//!
//! What a shell call pays is kept small: a workspace found to be a git work tree is remembered
//! ([`Snapshots::find`]); a snapshot is the index's bytes as `git add -A` left them, and two
//! snapshots are compared by reading both indexes in the process ([`super::git_index`]) — equal
//! bytes are the same worktree — so a call runs one `git add` before, one after, and, only when a
//! blob differs, one `git cat-file` for the contents. No tree is written, none is diffed.
//!
//! Left out of every snapshot, and named once: files over the store's limit, and files that
//! hold secrets ([`super::secrets`]: `.env*`, private keys, a key-shaped secret inside), so the
//! session's store never holds a copy of them. Only new and changed files are looked at (git's
//! `ls-files -o -m`), each through a bound.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{LazyLock, Mutex};

use codewhale_journal::FileChange;

use super::git_index::{read_entries, IndexEntry};
use super::{FileStore, Unkept};

static SNAPSHOT_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Workspaces found to be git work trees, by (snapshot directory, workspace).
static FOUND: LazyLock<Mutex<HashMap<(PathBuf, PathBuf), Snapshots>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// One snapshot of a worktree: Codewhale's index as `git add -A` left it (every blob it names
/// is in Codewhale's object store). Two snapshots are equal when they name the same files with
/// the same modes and contents, whatever the stat data.
#[derive(Clone)]
pub struct WorktreeSnapshot {
    index: Vec<u8>,
    hash_len: usize,
    /// Files left out because they are larger than the store keeps (`[checkpoints]
    /// max_file_bytes`, default [`MAX_FILE_BYTES`]) or hold secrets: (path relative to the
    /// repository's top, why). They are not kept for rewind.
    pub skipped: Vec<(String, Unkept)>,
}

/// docs/journal-format.md, *The file store*: a file larger than this is not snapshotted (not
/// kept for rewind), so a build artefact or a dataset is never copied into the store.
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// The largest snapshot index read back (a work tree of about two million files).
pub const MAX_INDEX_BYTES: u64 = 256 * 1024 * 1024;

impl WorktreeSnapshot {
    /// The index bytes this snapshot is (kept as a session's `/diff` baseline).
    pub fn index_bytes(&self) -> &[u8] {
        &self.index
    }

    fn entries(&self) -> Result<Vec<IndexEntry<'_>>, String> {
        if self.index.is_empty() {
            return Ok(Vec::new());
        }
        read_entries(&self.index, self.hash_len)
            .map_err(|e| format!("cannot read the snapshot index: {e}"))
    }
}

impl PartialEq for WorktreeSnapshot {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index
            || matches!((self.entries(), other.entries()), (Ok(a), Ok(b)) if a == b)
    }
}

impl std::fmt::Debug for WorktreeSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let files = self.entries().map(|e| e.len());
        f.debug_struct("WorktreeSnapshot").field("files", &files).finish()
    }
}

/// Takes a first snapshot in the background, so the first `shell` call does not pay for
/// hashing the whole worktree (about a second on 10,000 files; later snapshots reuse the
/// index's stat cache). Does nothing outside a git work tree.
pub fn warm_up(store: FileStore, workspace: PathBuf) {
    let spawned = std::thread::Builder::new().name("codewhale-snapshot".into()).spawn(move || {
        if let Some(snapshots) = Snapshots::find(&store, &workspace) {
            match snapshots.snapshot() {
                // The session's first snapshot is what `/diff` compares with, ever after.
                Ok(first) => super::baseline::keep(&store, first.index_bytes()),
                Err(e) => tracing::warn!("the first worktree snapshot failed: {e}"),
            }
        }
    });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the worktree snapshot: {e}");
    }
}

/// The snapshots of one workspace in one session's store.
#[derive(Debug, Clone)]
pub struct Snapshots {
    git_dir: PathBuf,
    index: PathBuf,
    /// The repository's top level: the work tree the snapshot reads (so every `.gitignore`
    /// of the repository applies).
    top: PathBuf,
    /// The workspace relative to `top` (empty when they are the same): what is snapshotted,
    /// and the prefix stripped from recorded paths.
    prefix: String,
    /// Codewhale's sessions directory relative to `top`, when it lies inside it: left out.
    own: Option<String>,
    /// Files larger than this are left out ([`FileStore::max_file_bytes`]).
    max_file_bytes: u64,
}

impl Snapshots {
    /// Like [`Snapshots::discover`], remembering a work tree once found, so a shell call does
    /// not pay for asking git again. A workspace that is not one is asked again next time (it
    /// may have become one); one that stopped being one makes the snapshot fail (open).
    pub fn find(store: &FileStore, workspace: &Path) -> Option<Snapshots> {
        let key = (store.snapshot_dir(), workspace.to_path_buf());
        let found =
            FOUND.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&key).cloned();
        if let Some(mut found) = found {
            found.max_file_bytes = store.max_file_bytes();
            return Some(found);
        }
        let snapshots = Snapshots::discover(store, workspace)?;
        FOUND
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, snapshots.clone());
        Some(snapshots)
    }

    /// The snapshots of `workspace` (canonical) kept in `store`: `None` outside a git work
    /// tree, or when git is not installed.
    pub fn discover(store: &FileStore, workspace: &Path) -> Option<Snapshots> {
        let out = clean(Command::new("git"))
            .current_dir(workspace)
            .args(["rev-parse", "--show-toplevel"])
            .stderr(Stdio::null())
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let top = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim_end_matches('\n'));
        let top = std::fs::canonicalize(top).ok()?;
        let prefix = workspace.strip_prefix(&top).ok()?.to_string_lossy().into_owned();
        let dir = store.snapshot_dir();
        // Codewhale's own sessions (journals and stores) may lie inside the work tree (a home
        // under a dotfiles repository): a snapshot must never take in itself.
        let sessions = store.sessions_dir().and_then(|s| std::fs::canonicalize(s).ok());
        let own = sessions.and_then(|s| s.strip_prefix(&top).ok().map(Path::to_path_buf));
        Some(Snapshots {
            git_dir: dir.join("git"),
            index: dir.join("index"),
            top,
            prefix,
            own: own.map(|p| p.to_string_lossy().into_owned()),
            max_file_bytes: store.max_file_bytes(),
        })
    }

    fn git(&self) -> Command {
        let mut cmd = clean(Command::new("git"));
        cmd.current_dir(&self.top)
            .env("GIT_DIR", &self.git_dir)
            .env("GIT_INDEX_FILE", &self.index)
            .env("GIT_WORK_TREE", &self.top)
            // Content exactly as on disk, no filters, no background daemons.
            .args(["-c", "core.autocrlf=false", "-c", "core.fsmonitor=false"])
            .args(["-c", "core.untrackedCache=false", "-c", "gc.auto=0"])
            // One plain index file the snapshot reader understands.
            .args(["-c", "core.splitIndex=false", "-c", "index.sparse=false"])
            .stdin(Stdio::null());
        cmd
    }

    fn ensure_repository(&self) -> Result<(), String> {
        if self.git_dir.join("HEAD").is_file() {
            return Ok(());
        }
        if let Some(parent) = self.git_dir.parent() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|e| format!("cannot create the snapshot store: {e}"))?;
        }
        let mut cmd = clean(Command::new("git"));
        // Private like the rest of the store: folders 0700, files 0600.
        cmd.args(["init", "--bare", "-q", "--shared=0600"]).arg(&self.git_dir).stdin(Stdio::null());
        run(cmd)?;
        if let Some(own) = &self.own {
            let exclude = self.git_dir.join("info").join("exclude");
            let _ = std::fs::create_dir_all(self.git_dir.join("info"));
            std::fs::write(&exclude, format!("/{own}/\n"))
                .map_err(|e| format!("cannot write the snapshot excludes: {e}"))?;
        }
        Ok(())
    }

    /// Stages the worktree into Codewhale's index and returns that index. Snapshots of one
    /// process run one at a time: two `git add` on one index would fight over its lock.
    pub fn snapshot(&self) -> Result<WorktreeSnapshot, String> {
        let _one = SNAPSHOT_LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.ensure_repository()?;
        // The session is held by this process and its snapshots run one at a time: a lock file
        // found now was left by a process killed mid-snapshot. Left there, every `git add`
        // would fail and file checkpoints would silently stop; it is removed.
        let stale = self.index.with_extension("lock");
        if stale.exists() {
            tracing::warn!(lock = %stale.display(), "removing a stale snapshot lock");
            std::fs::remove_file(&stale)
                .map_err(|e| format!("a stale lock {} cannot be removed: {e}", stale.display()))?;
        }
        let pathspec = if self.prefix.is_empty() { ".".to_owned() } else { self.prefix.clone() };
        let skipped = self.left_out(&pathspec);
        let mut add = self.git();
        add.args(["add", "-A", "--ignore-errors", "--"]).arg(&pathspec);
        add.args(skipped.iter().map(|(path, _)| format!(":(exclude,literal){path}")));
        // A file that vanishes mid-walk makes `add` complain but still stage the rest.
        let _ = run(add);
        // No index yet: `git add` found nothing to stage (an empty worktree).
        let index = match crate::bounded::read_own(&self.index, MAX_INDEX_BYTES) {
            Ok(bytes) => bytes.unwrap_or_default(),
            Err(e) => return Err(format!("cannot read the snapshot index: {e}")),
        };
        Ok(WorktreeSnapshot { index, hash_len: self.hash_len(), skipped })
    }

    /// The new or changed files (against Codewhale's index: git's stat cache makes this cheap)
    /// left out of the snapshot: over the store's limit, or holding secrets.
    fn left_out(&self, pathspec: &str) -> Vec<(String, Unkept)> {
        let mut list = self.git();
        list.args(["ls-files", "-z", "-o", "-m", "--exclude-standard", "--"]).arg(pathspec);
        let Ok(out) = run(list) else { return Vec::new() };
        out.split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .filter_map(|p| {
                let path = String::from_utf8_lossy(p).into_owned();
                let full = self.top.join(&path);
                let meta = std::fs::symlink_metadata(&full).ok()?;
                if !meta.is_file() {
                    return None;
                }
                if meta.len() > self.max_file_bytes {
                    return Some((path, Unkept::TooBig(meta.len())));
                }
                if super::secrets::by_name(&path) {
                    return Some((path, Unkept::Secrets));
                }
                let (bytes, _) =
                    crate::bounded::read_regular(&full, self.max_file_bytes).ok()??;
                super::secrets::holds_secrets(&path, &bytes).then_some((path, Unkept::Secrets))
            })
            .collect()
    }

    /// A snapshot kept as `index` bytes earlier (a session's baseline).
    pub fn kept_index(&self, index: Vec<u8>) -> WorktreeSnapshot {
        WorktreeSnapshot { index, hash_len: self.hash_len(), skipped: Vec::new() }
    }

    /// The object id length of Codewhale's repository: SHA-256 when git made it so (a user's
    /// `init.defaultObjectFormat`), SHA-1 otherwise.
    fn hash_len(&self) -> usize {
        let config = std::fs::read_to_string(self.git_dir.join("config")).unwrap_or_default();
        let sha256 = config.lines().any(|line| {
            let line = line.trim().to_ascii_lowercase();
            line.starts_with("objectformat") && line.ends_with("sha256")
        });
        if sha256 {
            32
        } else {
            20
        }
    }

    /// The files that differ between snapshots `before` and `after`, their contents kept in
    /// `store`, in path order.
    pub fn changes(
        &self,
        store: &FileStore,
        before: &WorktreeSnapshot,
        after: &WorktreeSnapshot,
    ) -> Result<Vec<FileChange>, String> {
        if before.index == after.index {
            return Ok(Vec::new());
        }
        let (old, new) = (before.entries()?, after.entries()?);
        let mut rows = Vec::new();
        for (a, b) in differing(&old, &new) {
            let Some(entry) = a.or(b) else { continue };
            let Some(rel) = self.relative(&entry.path_text()) else { continue };
            // A symlink or submodule on either side is not a file content to put back.
            let (Some(a), Some(b)) = (side(a), side(b)) else { continue };
            rows.push((rel, a, b));
        }
        let wanted: Vec<&str> =
            rows.iter().flat_map(|(_, a, b)| [a.as_deref(), b.as_deref()]).flatten().collect();
        let contents = self.read_blobs(&wanted)?;
        let keep = |blob: &Option<String>| -> Result<Option<String>, String> {
            let Some(blob) = blob else { return Ok(None) };
            let bytes =
                contents.get(blob.as_str()).ok_or_else(|| format!("git lost blob {blob}"))?;
            store.put(bytes).map(Some).map_err(|e| format!("cannot keep a snapshot file: {e}"))
        };
        let mut changes = Vec::with_capacity(rows.len());
        for (path, a, b) in &rows {
            let (before, after) = (keep(a)?, keep(b)?);
            changes.push(FileChange {
                path: path.clone(),
                before,
                after,
                extra: Default::default(),
            });
        }
        Ok(changes)
    }

    fn relative(&self, path: &str) -> Option<String> {
        if self.prefix.is_empty() {
            return Some(path.to_owned());
        }
        path.strip_prefix(&self.prefix)?.strip_prefix('/').map(str::to_owned)
    }

    /// The contents of `blobs`, read with one `git cat-file --batch`.
    fn read_blobs(
        &self,
        blobs: &[&str],
    ) -> Result<std::collections::HashMap<String, Vec<u8>>, String> {
        use std::io::{Read, Write};
        let mut out = std::collections::HashMap::new();
        if blobs.is_empty() {
            return Ok(out);
        }
        let mut cmd = self.git();
        cmd.args(["cat-file", "--batch"]).stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| format!("cannot run git: {e}"))?;
        let mut stdin = child.stdin.take().ok_or("git took no input")?;
        let input: String = blobs.iter().map(|b| format!("{b}\n")).collect();
        // Written from a thread: git answers as it reads, and a full pipe would block both.
        // The OS may refuse the thread (a process table filled by a fork bomb): an error then.
        let writer =
            match std::thread::Builder::new().spawn(move || stdin.write_all(input.as_bytes())) {
                Ok(writer) => writer,
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("cannot start a thread to feed git: {e}"));
                }
            };
        let mut stdout = child.stdout.take().ok_or("git gave no output")?;
        let mut all = Vec::new();
        stdout.read_to_end(&mut all).map_err(|e| format!("reading from git: {e}"))?;
        let _ = writer.join();
        let _ = child.wait();
        let mut rest = &all[..];
        while let Some(nl) = rest.iter().position(|b| *b == b'\n') {
            let header = String::from_utf8_lossy(&rest[..nl]).into_owned();
            rest = &rest[nl + 1..];
            let parts: Vec<&str> = header.split(' ').collect();
            let [id, "blob", size] = parts[..] else {
                return Err(format!("git could not read an object: {header}"));
            };
            let size: usize = size.parse().map_err(|_| format!("git said: {header}"))?;
            if rest.len() < size {
                return Err("git's output ended early".into());
            }
            out.insert(id.to_owned(), rest[..size].to_vec());
            rest = rest.get(size + 1..).unwrap_or_default();
        }
        Ok(out)
    }
}

/// The entries that differ between two path-sorted entry lists, each side's entry for one path
/// (`None`: no such path on that side). Compares bytes: nothing is formatted for an entry that
/// did not change.
fn differing<'s, 'a>(
    old: &'s [IndexEntry<'a>],
    new: &'s [IndexEntry<'a>],
) -> Vec<(Option<&'s IndexEntry<'a>>, Option<&'s IndexEntry<'a>>)> {
    use std::cmp::Ordering;
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < old.len() || j < new.len() {
        let order = match (old.get(i), new.get(j)) {
            (Some(a), Some(b)) => a.path.cmp(&b.path),
            (Some(_), None) => Ordering::Less,
            _ => Ordering::Greater,
        };
        match order {
            Ordering::Less => {
                out.push((Some(&old[i]), None));
                i += 1;
            }
            Ordering::Greater => {
                out.push((None, Some(&new[j])));
                j += 1;
            }
            Ordering::Equal => {
                let (a, b) = (&old[i], &new[j]);
                if a.mode != b.mode || a.oid != b.oid {
                    out.push((Some(a), Some(b)));
                }
                i += 1;
                j += 1;
            }
        }
    }
    out
}

/// One side of a changed path: `Some(None)` absent, `Some(Some(blob))` a regular file (its id
/// in hex), `None` anything else (a symlink, a submodule).
fn side(entry: Option<&IndexEntry<'_>>) -> Option<Option<String>> {
    match entry {
        None => Some(None),
        Some(e) if e.mode == 0o100644 || e.mode == 0o100755 => Some(Some(e.oid_hex())),
        Some(_) => None,
    }
}

/// A git command with no inherited `GIT_*` variable and no user prompt.
fn clean(mut cmd: Command) -> Command {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0").env("GIT_OPTIONAL_LOCKS", "0");
    cmd
}

fn run(mut cmd: Command) -> Result<Vec<u8>, String> {
    let out = cmd.stderr(Stdio::piped()).output().map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!("git failed: {}", err.lines().next().unwrap_or("no message")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh git work tree (its canonical path; the directory lives as long as the guard),
    /// or `None`, the skip reported, when git is not installed.
    fn git_work_tree() -> Option<(tempfile::TempDir, PathBuf)> {
        if Command::new("git").arg("--version").output().is_err() {
            codewhale_mcp::test_support::skip_test("git is not installed");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        assert!(Command::new("git")
            .current_dir(&ws)
            .args(["init", "-q"])
            .status()
            .unwrap()
            .success());
        Some((dir, ws))
    }

    #[test]
    fn a_store_inside_the_work_tree_is_never_snapshotted() {
        let Some((_dir, ws)) = git_work_tree() else { return };
        std::fs::create_dir_all(ws.join("home/sessions")).unwrap();
        let store = FileStore::beside(&ws.join("home/sessions/s.jsonl"));
        let snaps = Snapshots::discover(&store, &ws).unwrap();
        let before = snaps.snapshot().unwrap();
        std::fs::write(ws.join("a.txt"), "a").unwrap();
        std::fs::write(ws.join("home/sessions/s.jsonl"), "{}\n").unwrap();
        store.put(b"kept").unwrap();
        let after = snaps.snapshot().unwrap();
        let changes = snaps.changes(&store, &before, &after).unwrap();
        let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["a.txt"]);
        assert_eq!(store.get(changes[0].after.as_deref().unwrap()).unwrap(), b"a");
        // The user's repository was not written: no index, no objects.
        assert!(!ws.join(".git/index").exists());
    }

    #[test]
    fn an_unchanged_worktree_is_the_same_tree_and_a_change_is_seen_after_it() {
        let Some((_dir, ws)) = git_work_tree() else { return };
        let home = tempfile::tempdir().unwrap();
        let store = FileStore::beside(&home.path().join("s.jsonl"));
        std::fs::write(ws.join("a.txt"), "one").unwrap();
        let snaps = Snapshots::find(&store, &ws).unwrap();
        let first = snaps.snapshot().unwrap();
        // Found once, remembered: the same snapshots, the same tree while nothing changes.
        let again = Snapshots::find(&store, &ws).unwrap();
        assert_eq!(again.snapshot().unwrap(), first);
        assert_eq!(snaps.snapshot().unwrap(), first);
        // A change (same size, so only the content tells) and a new file are seen.
        std::fs::write(ws.join("a.txt"), "two").unwrap();
        std::fs::write(ws.join("b.txt"), "new").unwrap();
        let after = snaps.snapshot().unwrap();
        assert_ne!(after, first);
        let changes = snaps.changes(&store, &first, &after).unwrap();
        let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["a.txt", "b.txt"]);
        assert_eq!(store.get(changes[0].before.as_deref().unwrap()).unwrap(), b"one");
        // Back to the first content: the first tree again, whatever the index went through.
        std::fs::remove_file(ws.join("b.txt")).unwrap();
        std::fs::write(ws.join("a.txt"), "one").unwrap();
        assert_eq!(snaps.snapshot().unwrap(), first);
    }
}
