//! `/diff`: what changed in the workspace since the session started, tracked and untracked
//! files alike, as one unified diff.
//!
//! In a git work tree the first worktree snapshot of the session (taken in the background when
//! it opens, [`super::snapshot::warm_up`]) is kept as its baseline, `baseline-index` beside
//! the snapshot index, and never replaced: a resumed session still compares with the worktree
//! as it was when the session began, whoever changed it since — a tool, a command, the user.
//! Outside git the baseline is what the journal recorded: every file a tool changed, from the
//! content it had before its first change to what is on disk now.
//!
//! Read-only towards the workspace; the contents compared are kept in the session's store.

use std::collections::BTreeMap;
use std::path::Path;

use codewhale_journal::FileChange;

use super::snapshot::Snapshots;
use super::FileStore;
use crate::text_diff::{cap, unified};

/// The most of the whole diff `/diff` shows.
pub const MAX_WORKSPACE_DIFF_BYTES: usize = 4 * 1024 * 1024;

/// What changed, as `/diff` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceDiff {
    /// The unified diff of every changed file, in path order.
    pub diff: String,
    /// How many files differ.
    pub files: usize,
    /// What the diff compares with, in words.
    pub since: String,
}

/// The workspace's changes since the session started; `recorded` is every file change the
/// journal holds on HEAD's branch, oldest first (used outside git).
pub fn since_start(
    store: &FileStore,
    workspace: &Path,
    recorded: Vec<FileChange>,
) -> Result<WorkspaceDiff, String> {
    match Snapshots::find(store, workspace) {
        Some(snapshots) => git_diff(store, &snapshots),
        None => Ok(recorded_diff(store, workspace, recorded)),
    }
}

fn git_diff(store: &FileStore, snapshots: &Snapshots) -> Result<WorkspaceDiff, String> {
    let now = snapshots.snapshot()?;
    let kept = super::baseline::path(store);
    let baseline = match crate::bounded::read_own(&kept, super::snapshot::MAX_INDEX_BYTES) {
        Ok(Some(bytes)) => snapshots.kept_index(bytes),
        Ok(None) => {
            // Asked before the first snapshot was kept: from now on, this is the baseline.
            super::baseline::keep(store, now.index_bytes());
            now.clone()
        }
        Err(e) => return Err(format!("cannot read the worktree baseline: {e}")),
    };
    let changes = snapshots.changes(store, &baseline, &now)?;
    let mut diff = String::new();
    for change in &changes {
        let before = text_of(store, change.before.as_deref())?;
        let after = text_of(store, change.after.as_deref())?;
        diff.push_str(&file_diff(&change.path, before, after));
    }
    let since = "the worktree when the session started (tracked and untracked files, \
                 .gitignore honoured)"
        .to_owned();
    Ok(WorkspaceDiff { diff: cap(diff, MAX_WORKSPACE_DIFF_BYTES), files: changes.len(), since })
}

/// Outside git: each file a tool changed, from before its first change to now.
fn recorded_diff(store: &FileStore, workspace: &Path, recorded: Vec<FileChange>) -> WorkspaceDiff {
    let mut first: BTreeMap<String, Option<String>> = BTreeMap::new();
    for change in recorded {
        first.entry(change.path).or_insert(change.before);
    }
    let mut diff = String::new();
    let mut files = 0;
    for (path, before) in &first {
        let before = match text_of(store, before.as_deref()) {
            Ok(text) => text,
            Err(e) => {
                diff.push_str(&format!("{path}: {e}\n"));
                continue;
            }
        };
        let now = match super::read_state(&workspace.join(path), store.max_file_bytes()) {
            Ok(super::FileState::Bytes(bytes)) => Some(Content::of(bytes)),
            Ok(super::FileState::Absent) => None,
            Ok(super::FileState::TooBig(size)) => {
                diff.push_str(&format!("{path}: {size} bytes now, too large to compare\n"));
                continue;
            }
            Err(e) => {
                diff.push_str(&format!("{path}: cannot read it: {e}\n"));
                continue;
            }
        };
        if before != now {
            files += 1;
            diff.push_str(&file_diff(path, before, now));
        }
    }
    let since = "the files as they were before the session's tools first changed them (not a \
                 git work tree: changes made outside Codewhale's tools are not seen)"
        .to_owned();
    WorkspaceDiff { diff: cap(diff, MAX_WORKSPACE_DIFF_BYTES), files, since }
}

/// A file's content as `/diff` compares it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Content {
    Text(String),
    Binary(usize),
}

impl Content {
    fn of(bytes: Vec<u8>) -> Content {
        let len = bytes.len();
        if bytes.contains(&0) {
            return Content::Binary(len);
        }
        String::from_utf8(bytes).map_or(Content::Binary(len), Content::Text)
    }
}

fn text_of(store: &FileStore, hash: Option<&str>) -> Result<Option<Content>, String> {
    let Some(hash) = hash else { return Ok(None) };
    store.get(hash).map(|b| Some(Content::of(b))).map_err(|e| format!("not in the store: {e}"))
}

fn file_diff(path: &str, before: Option<Content>, after: Option<Content>) -> String {
    match (&before, &after) {
        (Some(Content::Binary(_)), _) | (_, Some(Content::Binary(_))) => {
            let size = |c: &Option<Content>| match c {
                None => "absent".to_owned(),
                Some(Content::Binary(n)) => format!("{n} bytes"),
                Some(Content::Text(t)) => format!("{} bytes", t.len()),
            };
            format!("Binary file {path} changed ({} → {})\n", size(&before), size(&after))
        }
        _ => {
            let text = |c: &Option<Content>| match c {
                Some(Content::Text(t)) => Some(t.clone()),
                _ => None,
            };
            unified(path, text(&before).as_deref(), text(&after).as_deref())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_file_is_named_not_diffed() {
        let text = file_diff("a.png", Some(Content::Binary(10)), Some(Content::Binary(12)));
        assert_eq!(text, "Binary file a.png changed (10 bytes → 12 bytes)\n");
        let new = file_diff("n.txt", None, Some(Content::Text("hi\n".into())));
        assert!(new.starts_with("--- /dev/null\n+++ b/n.txt\n"), "{new}");
        let gone = file_diff("g.txt", Some(Content::Text("bye\n".into())), None);
        assert!(gone.starts_with("--- a/g.txt\n+++ /dev/null\n"), "{gone}");
    }
}
