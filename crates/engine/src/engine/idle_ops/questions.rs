//! The read-only questions an idle engine answers, each with one event: grants, the user's
//! messages, /status, /diff, models, branches, /context, anchors, transcripts and history
//! pages. The same questions asked while a turn runs wait for it to end, then come here.
//!
//! Invariant: nothing here changes the session or the journal.

use crate::compaction::compactor::Compactor;
use crate::session::Session;
use codewhale_protocol::{ErrorKind, Event};

/// `/approval`'s list: the mode, the grants in force and the sandbox.
pub(super) fn grants_event(session: &Session) -> Event {
    Event::Grants {
        mode: session.policy().mode(),
        grants: session.policy().grants().to_vec(),
        sandbox: session.sandbox_report(),
    }
}

/// The plain user messages of the current branch, for a `/rewind` or `/fork` picker.
pub(super) fn user_messages(session: &Session) -> Event {
    Event::UserMessages { messages: session.user_messages() }
}

/// `/status`: the session at a glance.
pub(super) fn status(session: &mut Session) -> Event {
    Event::Status { status: Box::new(session.status_report()) }
}

/// `/diff`: what the workspace changed since the session started.
pub(super) async fn diff(session: &Session) -> Event {
    // git hashes the worktree: off the engine task's thread.
    let (store, workspace) = (session.file_store(), session.workspace().to_path_buf());
    let recorded = crate::checkpoint::restore::changes_from(session.journal(), 0);
    let found = tokio::task::spawn_blocking(move || {
        crate::checkpoint::workspace_diff::since_start(&store, &workspace, recorded)
    })
    .await;
    match found {
        Ok(Ok(d)) => Event::WorkspaceDiff { diff: d.diff, files: d.files as u64, since: d.since },
        Ok(Err(reason)) => Event::Error {
            kind: ErrorKind::Io,
            message: format!("cannot compare the workspace: {reason}"),
        },
        Err(e) => Event::Error { kind: ErrorKind::Io, message: format!("/diff stopped: {e}") },
    }
}

/// The catalog's models, for `/model`'s picker.
pub(super) async fn models(session: &Session) -> Event {
    Event::Models { models: session.model_choices().await }
}

/// The session's branch tips, for `/checkout`'s picker.
pub(super) fn branches(session: &Session) -> Event {
    Event::Branches { branches: crate::branches::branches(session.journal()) }
}

/// `/context`: the report of the next request's view, with the background note's state.
pub(super) fn context(session: &mut Session, compactor: &Compactor) -> Event {
    Event::ContextReport {
        report: Box::new(crate::answers::context_report(session, compactor.background_state())),
    }
}

/// The workspace's anchors.
pub(super) fn anchors(session: &Session) -> Event {
    Event::Anchors { anchors: crate::answers::anchor_infos(session) }
}

/// A `task` child's conversation, read from its file beside the session's journal.
pub(super) fn subagent_transcript(session: &Session, child: &str) -> Event {
    let dir = session.path().parent().map(std::path::Path::to_path_buf).unwrap_or_default();
    crate::children::transcript_event(&dir, session.id(), child)
}

/// The whole conversation at HEAD as the user saw it, for `/export`.
pub(super) fn transcript(session: &Session) -> Event {
    let transcript = Box::new(crate::answers::transcript(session));
    Event::Transcript { transcript }
}

/// A page of the conversation at HEAD before `before` (the newest without it).
pub(super) fn history(session: &Session, before: Option<String>, limit: usize) -> Event {
    let page = crate::answers::history_page(session, before.as_deref(), limit, false);
    Event::History { page }
}
