//! Plan mode (docs/configuration.md, *Plan mode*): what the model is told, where its commands
//! may write, and the sentences it reads when something is refused.
//!
//! The approval policy ([`crate::approval`]) decides the calls: reads, searches, `recall` and
//! `update_plan` run, the file tools' writes are refused before any question, `web_fetch` asks
//! as in `ask`, commands run. This module supplies the rest:
//! - **Commands run read-only.** A command the model runs in plan mode gets the session's
//!   sandbox with one change of data: its writable set is a private temp dir of the session
//!   ([`Scratch`], also its `TMPDIR`) and nothing else ([`sandbox`]) — the same helper, the same
//!   code path, another set. A command that tries to write elsewhere fails, and the model reads
//!   [`READ_ONLY`]; nothing is offered to the user. Without a sandbox, commands are refused
//!   ([`NEEDS_SANDBOX`]): nothing else would keep the workspace read-only.
//! - **The model is told by the journal, never by the system prompt**, so the cached prefix
//!   holds: a synthetic user text ([`note`], flagged `plan_mode`) when plan mode begins and
//!   another when it ends. What the model was last told on a branch is the newest such note on
//!   its spine that the view still carries ([`told`]); a note a compaction covered no longer
//!   counts, so the model is told again.
//!
//! Neighbours: `turn::mode_note` appends the notes at the points a request is built from,
//! `turn::calls` runs the calls, the TUI offers where to start once a plan is presented.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use codewhale_journal::{flags, Journal, Payload, UserPayload};

use crate::sandbox::Sandbox;

/// What the model reads when plan mode begins.
pub const ENTERED: &str = "Plan mode is on: investigate and plan, but do not change anything \
yet. You may read files, search, fetch pages and run commands that only look: commands run with \
the workspace read-only (they may write only in $TMPDIR), and write_file and edit_file are \
refused. When you have a plan, present it with update_plan (its steps pending) and a short \
explanation of the approach, then end your turn: the user reviews it and chooses when and how \
to start.";

/// What the model reads when plan mode ends.
pub const LEFT: &str = "Plan mode is off: you may change files and run commands again, as \
the approval mode allows.";

/// The message that starts a presented plan ("Plan ready — start in: …").
pub const CARRY_OUT: &str = "Carry out the plan.";

/// The line a command that tried to write gets in plan mode.
pub const READ_ONLY: &str = "plan mode: the workspace is read-only";

/// Why a command is refused in plan mode without a sandbox.
pub const NEEDS_SANDBOX: &str = "plan mode needs the sandbox to keep the workspace read-only";

/// The result of a file tool's write in plan mode.
pub fn refused_write(tool: &str) -> String {
    format!(
        "refused: {READ_ONLY}, so `{tool}` cannot run now. Put the change in your plan \
         (update_plan) instead; the user starts the plan in a mode that allows writing."
    )
}

/// The result of a command in plan mode where commands cannot be confined.
pub fn refused_command() -> String {
    format!(
        "refused: {NEEDS_SANDBOX}, and it is not available here (off, or no Landlock), so no \
         command runs in plan mode. Read files with read_file, list_dir and search instead."
    )
}

/// The line added to the result of a command that failed to write in plan mode.
pub fn read_only_line() -> String {
    format!(
        "[{READ_ONLY}: commands may write only in $TMPDIR. Do not look for another way to \
         write: put the change in your plan (update_plan) instead.]"
    )
}

/// The synthetic note that tells the model plan mode began (`true`) or ended.
pub fn note(entering: bool) -> UserPayload {
    let mut payload = UserPayload::synthetic(if entering { ENTERED } else { LEFT });
    payload.plan_mode = Some(entering);
    payload
}

/// Whether the model was last told, on the branch ending at `head`, that it is in plan mode:
/// the newest plan-mode note on the spine says so, unless it lies at or before `covered_to`
/// (the last entry the active compaction covers), where the model no longer reads it.
pub fn told(journal: &Journal, head: &str, covered_to: Option<&str>) -> bool {
    let mut at = journal.position(head);
    while let Some(pos) = at {
        if journal.kind_at(pos) == codewhale_journal::kind::USER
            && journal.has_flags(pos, flags::PLAN_MODE)
        {
            let id = journal.id_at(pos).to_string();
            if covered_to.is_some_and(|last| journal.is_ancestor(&id, last)) {
                return false;
            }
            return matches!(&journal.read_entry(pos).payload,
                Payload::User(u) if u.plan_mode == Some(true));
        }
        at = journal.parent_at(pos);
    }
    false
}

/// A command's sandbox in plan mode: the session's, writable only in `scratch`.
pub fn sandbox(base: &Sandbox, scratch: &Path) -> Sandbox {
    base.read_only_except(vec![scratch.to_path_buf()])
}

/// The session's private temp dir for plan mode, made (0700, removed with the session) the
/// first time a command needs it.
#[derive(Debug, Default)]
pub struct Scratch {
    dir: Mutex<Option<tempfile::TempDir>>,
}

impl Scratch {
    /// The directory, made now if need be; its real path (Landlock rules need one).
    pub fn path(&self) -> std::io::Result<PathBuf> {
        let mut dir = self.dir.lock().unwrap_or_else(|p| p.into_inner());
        if dir.is_none() {
            let made = tempfile::Builder::new().prefix("codewhale-plan-").tempdir()?;
            std::fs::set_permissions(
                made.path(),
                std::os::unix::fs::PermissionsExt::from_mode(0o700),
            )?;
            *dir = Some(made);
        }
        match dir.as_ref() {
            Some(d) => std::fs::canonicalize(d.path()),
            None => Err(std::io::Error::other("no temp dir")),
        }
    }
}

#[cfg(test)]
mod tests {
    use codewhale_journal::{AssistantPayload, Block, Entry, HeaderPayload};

    use super::*;

    #[test]
    fn the_newest_note_on_the_branch_is_what_the_model_was_told() {
        let header = Entry::new(None, HeaderPayload::new("s", "/w"));
        let mut journal = Journal::new(header.clone()).unwrap();
        let mut parent = header.id.clone();
        let mut push = |journal: &mut Journal, payload: Payload| {
            let e = Entry::new(Some(parent.clone()), payload);
            parent = e.id.clone();
            journal.push(e.clone());
            e.id
        };
        let head = |j: &Journal| j.head_id().to_string();
        assert!(!told(&journal, &head(&journal), None));
        let on = push(&mut journal, note(true).into());
        push(&mut journal, UserPayload::text("plan the rename").into());
        let reply = push(&mut journal, AssistantPayload::new(vec![Block::text("ok")]).into());
        assert!(told(&journal, &head(&journal), None));
        // A compaction that covers the note: the model no longer reads it.
        assert!(!told(&journal, &head(&journal), Some(reply.as_str())));
        assert!(told(&journal, &head(&journal), Some(header.id.as_str())));
        push(&mut journal, note(false).into());
        assert!(!told(&journal, &head(&journal), None));
        assert!(told(&journal, on.as_str(), None), "the branch as it was then");
    }

    #[test]
    fn the_scratch_dir_is_private_and_made_once() {
        use std::os::unix::fs::PermissionsExt as _;
        let scratch = Scratch::default();
        let a = scratch.path().unwrap();
        assert_eq!(a, scratch.path().unwrap());
        let mode = std::fs::metadata(&a).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{mode:o}");
        drop(scratch);
        assert!(!a.exists(), "removed with the session");
    }
}
