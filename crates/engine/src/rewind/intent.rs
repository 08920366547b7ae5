//! A restore's intent: what a rewind or `/undo` is about to do, written down before it does
//! anything, so a kill in the middle never leaves half of it (docs/journal-format.md, *The file
//! store*).
//!
//! The intent (`<session-id>.files/restore-intent.json`, replaced atomically) names the HEAD
//! the restore starts from, the HEAD move it makes (if any) and the plan of files with the
//! force it was given. Then, in this order: HEAD moves, the files are written back one by one
//! (each whole or not at all), the `system` entry and the model's note are appended with the
//! intent's id (`restore_id`), the journal is synced, and the intent is removed.
//!
//! When the session is opened again with an intent left ([`finish`]), the restore is
//! completed, never half-undone: HEAD is moved if it still is where the restore started, the
//! files are judged again and written back where the plan says (those already back count as
//! restored), the entries are appended unless an entry with the intent's id is already in the
//! journal, and the user is told in one line. Finishing twice does nothing the second time.
//!
//! The intent is read as one of Codewhale's own files ([`crate::bounded::read_own`]): never
//! through a link, never a FIFO (which would hang every open), at most [`MAX_INTENT_BYTES`];
//! anything else is set aside as damaged. Completing it never writes a protected path (no
//! one is there to say yes): a forged intent cannot plant a git hook from the store.

use std::path::PathBuf;

use codewhale_journal::EntryId;

use crate::checkpoint::restore::{self, Planned};
use crate::checkpoint::FileStore;
use crate::session::Session;
use codewhale_protocol::{NoticeLevel, RestoreState};

/// The HEAD move a restore makes with its files.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct HeadMove {
    pub to: EntryId,
    pub fork: bool,
}

/// What a restore is about to do (module docs).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Intent {
    pub id: String,
    /// How the restore names its point ("before entry …", "before the last turn").
    pub when: String,
    /// HEAD when the restore started.
    pub head_before: EntryId,
    pub head: Option<HeadMove>,
    pub files: Vec<Planned>,
    pub force: bool,
}

impl Intent {
    pub fn new(session: &Session, when: &str, head: Option<HeadMove>, plan: &[Planned]) -> Self {
        Intent {
            id: uuid::Uuid::now_v7().hyphenated().to_string(),
            when: when.to_owned(),
            head_before: session.journal().head_id().clone(),
            head,
            files: plan.to_vec(),
            force: false,
        }
    }

    /// Writes the intent down (synced) before anything changes.
    pub fn write(&self, store: &FileStore) -> std::io::Result<()> {
        let path = path(store);
        if let Some(dir) = path.parent() {
            codewhale_journal::private::create_dir_all(dir)?;
        }
        let bytes = serde_json::to_vec(self).map_err(std::io::Error::other)?;
        codewhale_journal::replace::replace_file(&path, codewhale_journal::replace::PRIVATE, &bytes)
    }
}

/// Whether a plan changes anything on disk (only then is an intent worth writing).
pub(crate) fn has_work(plan: &[Planned]) -> bool {
    plan.iter().any(|p| p.state != RestoreState::Unchanged)
}

/// The largest intent read: a plan of some 50,000 files.
pub(crate) const MAX_INTENT_BYTES: u64 = 16 * 1024 * 1024;

fn path(store: &FileStore) -> PathBuf {
    store.dir().join("restore-intent.json")
}

/// Removes the intent once everything it names is on disk and in the journal.
pub(crate) fn clear(store: &FileStore) {
    if let Err(e) = std::fs::remove_file(path(store)) {
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(error = %e, "could not remove a finished restore's intent");
        }
    }
}

/// The files of `plan` that a restore of it brought back (or would have): those that now hold
/// their earlier content and needed a change when the plan was made.
fn back_now(planned: &[Planned], now: &[Planned]) -> Vec<String> {
    planned
        .iter()
        .zip(now)
        .filter(|(then, now)| {
            then.state != RestoreState::Unchanged && now.state == RestoreState::Unchanged
        })
        .map(|(then, _)| then.path.clone())
        .collect()
}

/// Completes a restore a kill interrupted, if the session holds one (module docs): the line
/// that tells the user, or `None` when there was nothing to finish.
pub(crate) fn finish(session: &mut Session) -> Option<(NoticeLevel, String)> {
    let store = session.file_store();
    let bytes = match crate::bounded::read_own(&path(&store), MAX_INTENT_BYTES) {
        Ok(Some(b)) => b,
        Ok(None) => return None,
        // A link, a FIFO, a device or a file far larger than any plan: not what a restore
        // wrote. Removing it never blocks.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData
            ) =>
        {
            clear(&store);
            return Some((
                NoticeLevel::Warning,
                format!(
                    "a rewind or /undo record was found that Codewhale did not write ({e}); it \
                     was set aside and nothing was restored from it"
                ),
            ));
        }
        Err(e) => {
            return Some((
                NoticeLevel::Warning,
                format!(
                    "a rewind or /undo was interrupted and its record cannot be read ({e}); run \
                     it again to finish it"
                ),
            ))
        }
    };
    let intent: Intent = match serde_json::from_slice(&bytes) {
        Ok(i) => i,
        Err(e) => {
            clear(&store);
            return Some((
                NoticeLevel::Warning,
                format!(
                    "a rewind or /undo was interrupted and its record is damaged ({e}); it was \
                     set aside — check the files with /diff and run it again if needed"
                ),
            ));
        }
    };
    match complete(session, &intent) {
        Ok(line) => {
            clear(&store);
            Some((NoticeLevel::Warning, line))
        }
        Err(e) => Some((
            NoticeLevel::Warning,
            format!("a rewind or /undo was interrupted and could not be finished now: {e}"),
        )),
    }
}

fn complete(session: &mut Session, intent: &Intent) -> Result<String, crate::error::EngineError> {
    if let Some(head) = &intent.head {
        let journal = session.journal();
        if journal.head_id() == &intent.head_before {
            let record = if head.fork {
                journal.fork(head.to.as_str())
            } else {
                journal.rewind(head.to.as_str())
            }?;
            session.append_entry(record)?;
        }
    }
    let workspace = session.workspace().to_path_buf();
    let now = restore::restated(intent.files.clone(), &workspace, &store_of(session));
    let consent = restore::Consent { elsewhere: intent.force, protected: false };
    let mut outcome = restore::apply(&now, &workspace, &store_of(session), consent);
    // Those a restore before the kill already wrote back count as restored by it.
    let after = restore::restated(intent.files.clone(), &workspace, &store_of(session));
    for path in back_now(&intent.files, &after) {
        if !outcome.restored.contains(&path) {
            outcome.restored.push(path);
        }
    }
    outcome.restored.sort();
    if !journaled(session, &intent.id) {
        super::account::record(session, &intent.files, &outcome, &intent.when, &intent.id)?;
    }
    session.sync_blocking()?;
    let what = if intent.head.is_some() {
        "a rewind"
    } else if intent.when == super::branch_files::WHEN {
        "a restore of the checked-out branch's files"
    } else {
        "an undo"
    };
    Ok(format!(
        "{what} was interrupted before it finished and has been completed: {}",
        super::account::outcome_line(&outcome, &intent.when)
    ))
}

fn store_of(session: &Session) -> FileStore {
    session.file_store()
}

/// Whether the journal already holds the entry of the restore `id`.
fn journaled(session: &Session, id: &str) -> bool {
    let journal = session.journal();
    (0..journal.len() as u32)
        .rev()
        .filter(|&p| journal.kind_at(p) == codewhale_journal::kind::SYSTEM)
        .any(|p| {
            matches!(&journal.read_entry(p).payload,
            codewhale_journal::Payload::System(s) if s.restore_id.as_deref() == Some(id))
        })
}
