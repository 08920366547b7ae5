//! The files of a branch `/checkout` moved to (docs/journal-format.md, *The file store*): the
//! disk and the branch's history never disagree silently.
//!
//! After a code rewind, the branch that was left still shows its tools creating and changing
//! files that the rewind took back; checking it out again moves HEAD, not the files. So after a
//! checkout, the files the tools of the checked-out branch changed after the branch point (the
//! last entry the old HEAD's spine and the new one share) are compared with the disk, and those
//! that do not hold the content the branch last gave them are named, with an offer to restore
//! them — `--code` semantics, forwards: a file holding a content some tool of the stretch
//! recorded (the one before the branch changed it, say) is written back; one holding anything
//! else was changed by someone else (or by the other branch) and is overwritten only with a
//! second yes; a protected path only with a yes. Pure planning over the journal and the disk;
//! [`super::ops`] applies the plan through the same intent and account as every restore.

use codewhale_journal::{kind, EntryId, FileChange, Journal, Payload};

use crate::checkpoint::restore::{self, Planned};
use crate::session::Session;
use codewhale_protocol::{RestoreFile, RestoreState};

/// How a restore of a checked-out branch's files names its point in the account.
pub(crate) const WHEN: &str = "on the checked-out branch";

/// The last entry of HEAD's spine that `old`'s spine shares: where the branch HEAD moved to
/// left the one it came from. `None` when HEAD did not leave `old`'s branch (it is on it, or
/// went back along it).
pub(crate) fn branch_point(journal: &Journal, old: &str) -> Option<EntryId> {
    let head = journal.head_id().clone();
    if journal.is_ancestor(head.as_str(), old) {
        return None;
    }
    let old_spine: std::collections::HashSet<u32> =
        journal.spine_positions(journal.position(old)?).into_iter().collect();
    let spine = journal.spine_positions(journal.head_position());
    let shared = spine.iter().rev().find(|p| old_spine.contains(p))?;
    Some(EntryId::from_string(journal.id_at(*shared).to_string()))
}

/// The file changes the tools made on HEAD's spine after `from`, oldest first.
fn changes_after(journal: &Journal, from: &EntryId) -> Result<Vec<FileChange>, String> {
    if !journal.is_ancestor(from.as_str(), journal.head_id().as_str()) {
        return Err(format!(
            "entry {from} is not on the current branch; check out the branch again to see its \
             files"
        ));
    }
    let spine = journal.spine_positions(journal.head_position());
    let at = journal.position(from.as_str()).unwrap_or(0);
    let start = spine.iter().position(|&p| p == at).map_or(spine.len(), |i| i + 1);
    Ok(spine[start..]
        .iter()
        .filter(|&&p| journal.kind_at(p) == kind::TOOL_RESULT)
        .filter_map(|&p| match &journal.read_entry(p).payload {
            Payload::ToolResult(r) => r.files.clone(),
            _ => None,
        })
        .flatten()
        .collect())
}

/// What bringing the files HEAD's branch changed after `from` to the content it last gave them
/// would do to each, given the disk as it is now.
pub(crate) fn plan(session: &Session, from: &EntryId) -> Result<Vec<Planned>, String> {
    let changes = changes_after(session.journal(), from)?;
    // A restore plans back to the first `before`; forwards is back through the changes
    // reversed, each swapped: the target is then the branch's last `after`.
    let forwards: Vec<FileChange> = changes
        .into_iter()
        .rev()
        .map(|c| FileChange { before: c.after, after: c.before, ..c })
        .collect();
    Ok(restore::plan(&forwards, session.workspace(), &session.file_store()))
}

/// The files of a plan that do not hold what the branch last gave them, as the front end
/// shows them.
pub(crate) fn differing(plan: &[Planned]) -> Vec<RestoreFile> {
    restore::shown(plan).into_iter().filter(|f| f.state != RestoreState::Unchanged).collect()
}

/// The line a checkout adds to its message when files differ: which, and what can be done.
pub(crate) fn line(files: &[RestoreFile]) -> String {
    let names: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let n = names.len();
    let (count, verb) =
        if n == 1 { ("1 file".to_owned(), "does") } else { (format!("{n} files"), "do") };
    format!(
        "{count} this branch's tools changed {verb} not hold what its history shows (a code \
         rewind on another branch, or that branch, changed them): {}; restoring them is \
         offered, and nothing is written without a yes",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_every_file() {
        let files = vec![
            RestoreFile { path: "a.txt".into(), state: RestoreState::Restore },
            RestoreFile { path: "b.txt".into(), state: RestoreState::ChangedElsewhere },
        ];
        let text = line(&files);
        assert!(text.starts_with("2 files this branch's tools changed do not hold"), "{text}");
        assert!(text.contains("a.txt, b.txt"), "{text}");
        assert!(line(&files[..1]).starts_with("1 file this branch's tools changed does not"));
    }
}
