//! Planning and applying a restore of files from the checkpoints on HEAD's spine.
//!
//! A restore to a point takes every file a tool changed at or after that point back to its
//! content just before the first such change. A file is restored only when it holds content a
//! tool recorded for it in that stretch (a `before` or an `after`): anything else was changed
//! by someone else, and is left alone unless the user forces it. A file that already holds its
//! earlier content is left alone too, so restoring twice changes nothing the second time.
//! The files a restore left (changed by someone else) are recorded on its `system` entry
//! (`left`), and read back like a tool's changes, so the same restore run again with `force`
//! takes exactly those files back even after HEAD has moved. A file is written back whole or
//! not at all (a temporary file renamed into place). A protected path ([`crate::paths::is_protected`]:
//! git's and Codewhale's own files, instruction files) is written or removed only with the
//! user's yes (`force`), whatever the plan says, and a restore completed after a kill never
//! writes one: a forged plan cannot plant a hook. The file's current content is hashed in
//! pieces, never read whole, and only as a regular file.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use codewhale_journal::{FileChange, Journal, Payload};

use super::FileStore;
use codewhale_protocol::{RestoreFile, RestoreOutcome, RestoreState};

/// The earlier content of one file and every content tools recorded for it since.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Planned {
    pub path: String,
    /// The content to return to (`None`: the file did not exist).
    pub target: Option<String>,
    /// The recorded contents (befores and afters) of the stretch, `None` for absent.
    known: HashSet<Option<String>>,
    /// The content the last recorded change left.
    latest: Option<String>,
    pub state: RestoreState,
}

impl Planned {
    /// This file as a restore that left it records it (`left` on its `system` entry): what it
    /// would go back to, and what a tool last wrote.
    pub fn left_change(&self) -> FileChange {
        FileChange {
            path: self.path.clone(),
            before: self.target.clone(),
            after: self.latest.clone(),
            extra: Default::default(),
        }
    }
}

/// The file changes recorded on HEAD's spine from position `from` on (inclusive), oldest
/// first: the tools' `files`, and the files earlier restores left (`left`).
pub fn changes_from(journal: &Journal, from: u32) -> Vec<FileChange> {
    use codewhale_journal::kind;
    stretch(journal, from)
        .into_iter()
        .filter(|&p| matches!(journal.kind_at(p), kind::TOOL_RESULT | kind::SYSTEM))
        .filter_map(|p| match &journal.read_entry(p).payload {
            Payload::ToolResult(r) => r.files.clone(),
            Payload::System(s) => s.left.clone(),
            _ => None,
        })
        .flatten()
        .collect()
}

/// How many shell commands ran on HEAD's spine from position `from` on (results with an exit
/// code).
pub fn commands_from(journal: &Journal, from: u32) -> usize {
    stretch(journal, from)
        .into_iter()
        .filter(|&p| journal.kind_at(p) == codewhale_journal::kind::TOOL_RESULT)
        .filter(|&p| {
            matches!(&journal.read_entry(p).payload, Payload::ToolResult(r) if r.exit_code.is_some())
        })
        .count()
}

/// The positions on HEAD's spine from `from` on (inclusive), oldest first.
fn stretch(journal: &Journal, from: u32) -> Vec<u32> {
    let mut spine = journal.spine_positions(journal.head_position());
    let start = spine.iter().position(|&p| p == from).unwrap_or(spine.len());
    spine.drain(..start);
    spine
}

/// The position where the last turn starts: the newest plain user message on HEAD's spine.
pub fn last_turn_start(journal: &Journal) -> Option<u32> {
    journal
        .spine_positions(journal.head_position())
        .into_iter()
        .rev()
        .find(|&p| journal.has_flags(p, codewhale_journal::flags::PLAIN))
}

/// What restoring `changes` would do to each file, given the workspace as it is now.
pub fn plan(changes: &[FileChange], workspace: &Path, store: &FileStore) -> Vec<Planned> {
    let mut by_path: BTreeMap<&str, Planned> = BTreeMap::new();
    for c in changes {
        let entry = by_path.entry(c.path.as_str()).or_insert_with(|| Planned {
            path: c.path.clone(),
            target: c.before.clone(),
            known: HashSet::new(),
            latest: None,
            state: RestoreState::Unchanged,
        });
        entry.known.insert(c.before.clone());
        entry.known.insert(c.after.clone());
        entry.latest = c.after.clone();
    }
    restated(by_path.into_values().collect(), workspace, store)
}

/// `plan` with each file's state judged again against the workspace as it is now (a restore
/// a kill interrupted is finished from the plan it wrote down).
pub fn restated(mut plan: Vec<Planned>, workspace: &Path, store: &FileStore) -> Vec<Planned> {
    for p in &mut plan {
        p.state = state_of(p, workspace, store);
    }
    plan
}

fn state_of(p: &Planned, workspace: &Path, store: &FileStore) -> RestoreState {
    let Ok(path) = located(workspace, &p.path) else { return RestoreState::Unavailable };
    let current = match crate::bounded::hash(&path) {
        Ok(hash) => hash,
        // Unreadable (a directory, a FIFO now, no permission): not what any tool recorded.
        Err(_) => return RestoreState::ChangedElsewhere,
    };
    if current == p.target {
        return RestoreState::Unchanged;
    }
    if p.target.as_deref().is_some_and(|h| !store.contains(h)) {
        return RestoreState::Unavailable;
    }
    if protected(workspace, &p.path) {
        return RestoreState::Protected;
    }
    if !p.known.contains(&current) {
        return RestoreState::ChangedElsewhere;
    }
    if p.target.is_some() {
        RestoreState::Restore
    } else {
        RestoreState::Remove
    }
}

/// Whether `path` is protected as recorded or where it really leads (a link in the workspace to
/// `.git/hooks` makes `d/pre-commit` a hook), by the file tools' own predicate: a
/// `core.hooksPath` folder, a folder laid out as a repository and a hardlink to a protected
/// file are protected too.
fn protected(workspace: &Path, path: &str) -> bool {
    if crate::paths::is_protected(path) {
        return true;
    }
    let Ok(located) = located(workspace, path) else { return false };
    if crate::protected::is_protected(workspace, &located).is_some() {
        return true;
    }
    let real = crate::paths::real_location(&located);
    let real_ws = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    real.strip_prefix(&real_ws).is_ok_and(|rel| crate::paths::is_protected(&rel.to_string_lossy()))
}

/// What a restore may do without asking again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Consent {
    /// Overwrite files someone else changed since.
    pub elsewhere: bool,
    /// Write protected paths.
    pub protected: bool,
}

impl Consent {
    /// The user's one answer: `force` covers both (the second yes, or `--force`).
    pub fn of_user(force: bool) -> Consent {
        Consent { elsewhere: force, protected: force }
    }
}

/// The plan as the front end shows it.
pub fn shown(plan: &[Planned]) -> Vec<RestoreFile> {
    plan.iter().map(|p| RestoreFile { path: p.path.clone(), state: p.state }).collect()
}

/// Applies `plan`: restores and removes what it says; a file changed by someone else only
/// with `force`. Each file is its own step: one that fails is reported and the rest go on.
pub fn apply(
    plan: &[Planned],
    workspace: &Path,
    store: &FileStore,
    consent: Consent,
) -> RestoreOutcome {
    let mut outcome = RestoreOutcome::default();
    for p in plan {
        if p.state != RestoreState::Unchanged && is_directory(workspace, &p.path) {
            // Nothing is ever removed recursively: the user moves the folder away.
            let why = "a folder stands there now; move it away and run the same command again \
                       to restore the file"
                .to_owned();
            outcome.failed.push((p.path.clone(), why));
            continue;
        }
        match p.state {
            RestoreState::Unchanged => continue,
            RestoreState::Unavailable => {
                let why = match p.target.as_deref() {
                    Some(hash) if store.is_withheld(hash) => super::secrets::unkept_line(&p.path),
                    _ => "its earlier content is not in the session's file store".to_owned(),
                };
                outcome.failed.push((p.path.clone(), why));
                continue;
            }
            RestoreState::ChangedElsewhere if !consent.elsewhere => {
                outcome.skipped.push(p.path.clone());
                continue;
            }
            RestoreState::Protected if !consent.protected => {
                outcome.skipped.push(p.path.clone());
                outcome.protected.push(p.path.clone());
                continue;
            }
            RestoreState::ChangedElsewhere
            | RestoreState::Protected
            | RestoreState::Restore
            | RestoreState::Remove => {}
        }
        match write_back(p, workspace, store) {
            Ok(()) => outcome.restored.push(p.path.clone()),
            Err(why) => outcome.failed.push((p.path.clone(), why)),
        }
        crate::pause_point::reached("restore:file");
    }
    outcome
}

fn write_back(p: &Planned, workspace: &Path, store: &FileStore) -> Result<(), String> {
    let path = located(workspace, &p.path)?;
    match &p.target {
        Some(hash) => {
            let bytes = store.get(hash).map_err(|e| format!("reading its checkpoint: {e}"))?;
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| format!("creating its folder: {e}"))?;
            }
            // Whole or not at all, with the mode the file has now (a new one: 0644 less the
            // umask).
            let mode = file_mode(&path).unwrap_or(codewhale_journal::replace::SHARED);
            codewhale_journal::replace::replace_file(&path, mode, &bytes)
                .map_err(|e| format!("writing it: {e}"))
        }
        None => match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("removing it: {e}")),
        },
    }
}

fn is_directory(workspace: &Path, path: &str) -> bool {
    located(workspace, path).is_ok_and(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
}

#[cfg(unix)]
fn file_mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::symlink_metadata(path).ok().filter(|m| m.is_file()).map(|m| m.permissions().mode())
}

#[cfg(not(unix))]
fn file_mode(_path: &Path) -> Option<u32> {
    None
}

/// A recorded path, resolved inside the workspace again (the journal may have been edited).
fn located(workspace: &Path, path: &str) -> Result<std::path::PathBuf, String> {
    let r = crate::paths::resolve(workspace, path)?;
    if !r.inside {
        return Err(format!("{path} lies outside the workspace"));
    }
    Ok(r.path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(
        store: &FileStore,
        path: &str,
        before: Option<&[u8]>,
        after: Option<&[u8]>,
    ) -> FileChange {
        FileChange {
            path: path.into(),
            before: before.map(|b| store.put(b).unwrap()),
            after: after.map(|b| store.put(b).unwrap()),
            extra: Default::default(),
        }
    }

    #[test]
    fn binary_new_deleted_and_outside_changes() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let ws_path = std::fs::canonicalize(ws.path()).unwrap();
        let store = FileStore::beside(&home.path().join("s.jsonl"));
        let bin: &[u8] = &[0, 159, 146, 150, 255];
        let changes = vec![
            change(&store, "bin.dat", Some(bin), Some(b"text")),
            change(&store, "new/file.txt", None, Some(b"new")),
            change(&store, "gone.txt", Some(b"old"), None),
            change(&store, "other.txt", Some(b"1"), Some(b"2")),
            change(&store, "bin.dat", Some(b"text"), Some(b"text2")),
        ];
        std::fs::write(ws_path.join("bin.dat"), "text2").unwrap();
        std::fs::create_dir_all(ws_path.join("new")).unwrap();
        std::fs::write(ws_path.join("new/file.txt"), "new").unwrap();
        std::fs::write(ws_path.join("other.txt"), "someone else").unwrap();
        let planned = plan(&changes, &ws_path, &store);
        let states: Vec<_> = shown(&planned).into_iter().map(|f| (f.path, f.state)).collect();
        assert_eq!(
            states,
            [
                ("bin.dat".into(), RestoreState::Restore),
                ("gone.txt".into(), RestoreState::Restore),
                ("new/file.txt".into(), RestoreState::Remove),
                ("other.txt".into(), RestoreState::ChangedElsewhere),
            ]
        );
        let outcome = apply(&planned, &ws_path, &store, Consent::of_user(false));
        assert_eq!(outcome.restored, ["bin.dat", "gone.txt", "new/file.txt"]);
        assert_eq!(outcome.skipped, ["other.txt"]);
        assert_eq!(std::fs::read(ws_path.join("bin.dat")).unwrap(), bin);
        assert_eq!(std::fs::read(ws_path.join("gone.txt")).unwrap(), b"old");
        assert!(!ws_path.join("new/file.txt").exists());
        assert_eq!(std::fs::read(ws_path.join("other.txt")).unwrap(), b"someone else");

        // Twice: nothing left to do but the file someone else changed.
        let again = plan(&changes, &ws_path, &store);
        let outcome = apply(&again, &ws_path, &store, Consent::of_user(false));
        assert!(outcome.restored.is_empty(), "{outcome:?}");
        // Forced: the outside change is overwritten.
        let outcome = apply(&again, &ws_path, &store, Consent::of_user(true));
        assert_eq!(outcome.restored, ["other.txt"]);
        assert_eq!(std::fs::read(ws_path.join("other.txt")).unwrap(), b"1");
    }

    #[test]
    fn a_folder_where_the_file_was_is_named_and_never_removed_even_forced() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let ws_path = std::fs::canonicalize(ws.path()).unwrap();
        let store = FileStore::beside(&home.path().join("s.jsonl"));
        let changes = vec![change(&store, "f", Some(b"file"), None)];
        std::fs::create_dir_all(ws_path.join("f/inside")).unwrap();
        let planned = plan(&changes, &ws_path, &store);
        for force in [false, true] {
            let outcome = apply(&planned, &ws_path, &store, Consent::of_user(force));
            assert!(outcome.restored.is_empty() && outcome.skipped.is_empty(), "{outcome:?}");
            assert_eq!(outcome.failed.len(), 1);
            assert!(outcome.failed[0].1.starts_with("a folder stands there now"), "{outcome:?}");
            assert!(ws_path.join("f/inside").is_dir());
        }
        // Moved away, the same restore brings the file back.
        std::fs::remove_dir_all(ws_path.join("f")).unwrap();
        let outcome =
            apply(&plan(&changes, &ws_path, &store), &ws_path, &store, Consent::of_user(false));
        assert_eq!(outcome.restored, ["f"]);
        assert_eq!(std::fs::read(ws_path.join("f")).unwrap(), b"file");
    }

    #[test]
    fn judging_a_huge_file_or_a_fifo_costs_no_memory_and_never_waits() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let ws_path = std::fs::canonicalize(ws.path()).unwrap();
        let store = FileStore::beside(&home.path().join("s.jsonl"));
        let changes = vec![
            change(&store, "big.bin", Some(b"small"), Some(b"small too")),
            change(&store, "pipe", Some(b"a file"), None),
        ];
        // 512 MiB that read whole would cost as much; hashed in pieces, nothing.
        std::fs::File::create(ws_path.join("big.bin")).unwrap().set_len(512 << 20).unwrap();
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            ws_path.join("pipe"),
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let measured = codewhale_provider::test_support::peak::measure(
            module_path!(),
            "judging_a_huge_file_or_a_fifo_costs_no_memory_and_never_waits",
            || format!("{:?}", shown(&plan(&changes, &ws_path, &store))),
        );
        let Some(peak) = measured.unwrap() else { return };
        assert!(peak.growth < 32 << 20, "peak grew by {} MiB", peak.growth >> 20);
        assert!(peak.said.contains("ChangedElsewhere"), "{}", peak.said);
        assert!(!peak.said.contains("state: Restore"), "{}", peak.said);
    }

    #[test]
    fn a_protected_path_is_written_back_only_with_a_yes() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let ws_path = std::fs::canonicalize(ws.path()).unwrap();
        let store = FileStore::beside(&home.path().join("s.jsonl"));
        std::fs::create_dir_all(ws_path.join(".git/hooks")).unwrap();
        // A link made in the workspace leads a plain-looking path into .git/hooks.
        std::os::unix::fs::symlink(ws_path.join(".git/hooks"), ws_path.join("d")).unwrap();
        // The hooks folder git is told to use, and a folder laid out as a repository (which a
        // `.git` pointer or link can name): what git runs, though no `.git` is in the path.
        std::fs::write(ws_path.join(".git/config"), "[core]\n\thooksPath = .githooks\n").unwrap();
        std::fs::create_dir_all(ws_path.join(".githooks")).unwrap();
        for dir in ["gx/objects", "gx/refs"] {
            std::fs::create_dir_all(ws_path.join(dir)).unwrap();
        }
        std::fs::write(ws_path.join("gx/HEAD"), "ref: refs/heads/main\n").unwrap();
        let changes = vec![
            change(&store, ".git/hooks/pre-commit", Some(b"#!/bin/sh\n"), None),
            change(&store, "d/post-checkout", Some(b"#!/bin/sh\n"), None),
            change(&store, "docs/AGENTS.md", Some(b"be kind"), None),
            change(&store, ".githooks/pre-push", Some(b"#!/bin/sh\n"), None),
            change(&store, "gx/config", Some(b"[core]\n\tfsmonitor = x\n"), None),
            change(&store, "plain.txt", Some(b"text"), None),
        ];
        let planned = plan(&changes, &ws_path, &store);
        let states: Vec<_> =
            shown(&planned).into_iter().map(|f| (f.path.clone(), f.state)).collect();
        use RestoreState::{Protected, Restore};
        for (path, state) in &states {
            let want = if path == "plain.txt" { Restore } else { Protected };
            assert_eq!(*state, want, "{path}");
        }
        let outcome = apply(&planned, &ws_path, &store, Consent::of_user(false));
        assert_eq!(outcome.restored, ["plain.txt"]);
        assert_eq!(outcome.protected.len(), 5);
        assert_eq!(outcome.skipped, outcome.protected);
        assert!(!ws_path.join(".git/hooks/pre-commit").exists());
        assert!(!ws_path.join(".git/hooks/post-checkout").exists());
        // Said yes to: written back.
        let again = plan(&changes, &ws_path, &store);
        let outcome = apply(&again, &ws_path, &store, Consent::of_user(true));
        assert_eq!(outcome.restored.len(), 5, "{outcome:?}");
        assert!(ws_path.join(".git/hooks/pre-commit").exists());
    }

    #[test]
    fn a_path_out_of_the_workspace_is_never_written() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let store = FileStore::beside(&home.path().join("s.jsonl"));
        let changes = vec![change(&store, "../escape.txt", None, Some(b"x"))];
        let planned = plan(&changes, ws.path(), &store);
        assert_eq!(planned[0].state, RestoreState::Unavailable);
        let outcome = apply(&planned, ws.path(), &store, Consent::of_user(true));
        assert_eq!(outcome.failed.len(), 1);
    }
}
