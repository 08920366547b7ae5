//! What an idle op changes of the session: the background note (cancelled by `Interrupt`), the
//! approval mode, the grants, the model and the pinned anchors.
//!
//! Invariant: a model switch and an anchor change are synced to disk before the front end is
//! told, tell the compactor (which cancels a background pass), and end with a `Usage` event.

use crate::compaction::compactor::{Change, Compactor};
use crate::events::EventSink;
use crate::session::Session;
use codewhale_protocol::{AnchorChange, ErrorKind, Event, NoticeLevel, SubmissionId};

use super::questions::grants_event;

/// `Interrupt` with no turn running: cancels the note being written in the background, if any.
pub(super) fn interrupt(compactor: &mut Compactor, sink: &EventSink, id: SubmissionId) {
    let notice = |message: String| Event::Notice { level: NoticeLevel::Info, message };
    if compactor.background_state().is_some() {
        compactor.on_change(sink, id, Change::Interrupted);
        sink.emit(id, notice("the note being written in the background was cancelled".into()));
    } else {
        sink.emit(id, notice("nothing to interrupt: no turn is running".into()));
    }
}

/// `/approval MODE`.
pub(super) fn set_approval(
    session: &mut Session,
    sink: &EventSink,
    id: SubmissionId,
    mode: crate::approval::ApprovalMode,
) {
    session.set_approval_mode(mode);
    sink.emit(id, super::super::replies::approval_changed(mode));
}

/// Takes back grant `index` (1-based); the list follows either way.
pub(super) fn revoke_grant(
    session: &mut Session,
    sink: &EventSink,
    id: SubmissionId,
    index: usize,
) {
    match index.checked_sub(1).and_then(|i| session.revoke_grant(i)) {
        Some(grant) => sink.emit(id, Event::GrantRevoked { grant }),
        None => sink.emit(
            id,
            Event::Error {
                kind: ErrorKind::NoSuchCall,
                message: format!(
                    "there is no grant {index}; /approval lists them with their numbers"
                ),
            },
        ),
    }
    sink.emit(id, grants_event(session));
}

/// Pins `text` as an anchor.
pub(super) async fn add_anchor(
    session: &mut Session,
    compactor: &mut Compactor,
    sink: &EventSink,
    id: SubmissionId,
    text: &str,
) {
    let result = crate::anchors::add_to_session(session, text);
    let result = durable(session, result).await;
    compactor.on_change(sink, id, Change::AnchorsChanged);
    anchor_changed(session, sink, id, result);
}

/// Unpins the `index`-th anchor (1-based).
pub(super) async fn remove_anchor(
    session: &mut Session,
    compactor: &mut Compactor,
    sink: &EventSink,
    id: SubmissionId,
    index: usize,
) {
    let result = crate::answers::withdraw_anchor(session, index);
    let result = durable(session, result).await;
    compactor.on_change(sink, id, Change::AnchorsChanged);
    anchor_changed(session, sink, id, result);
}

/// `/model NAME`: the switch is journaled and synced before it is told.
pub(super) async fn switch_model(
    session: &mut Session,
    compactor: &mut Compactor,
    sink: &EventSink,
    id: SubmissionId,
    model: String,
) {
    let switched = match session.switch_model(&model) {
        Ok(()) => session.sync().await,
        Err(err) => Err(err),
    };
    match switched {
        Ok(()) => {
            compactor.on_change(sink, id, Change::ModelSwitched);
            let message = format!("model switched to {model}");
            sink.emit(id, Event::ModelSwitched { model, message });
            sink.emit(id, session.usage_event(None, None));
        }
        Err(err) => sink.emit(id, err.event()),
    }
}

/// An explicit user action is on disk before the front end is told it happened (and before
/// `codewhale context` could read the file).
async fn durable(
    session: &mut Session,
    result: Result<(AnchorChange, String), String>,
) -> Result<(AnchorChange, String), String> {
    let (change, message) = result?;
    session.sync().await.map_err(|e| format!("{message}, but {e}"))?;
    Ok((change, message))
}

/// After an anchor was pinned or unpinned: the outcome, the list, and the new figures.
fn anchor_changed(
    session: &mut Session,
    sink: &EventSink,
    id: SubmissionId,
    result: Result<(AnchorChange, String), String>,
) {
    match result {
        Ok((change, message)) => {
            sink.emit(id, Event::AnchorChanged { change, message });
            sink.emit(id, Event::Anchors { anchors: crate::answers::anchor_infos(session) });
            sink.emit(id, session.usage_event(None, None));
        }
        Err(message) => sink.emit(id, Event::Error { kind: ErrorKind::Anchor, message }),
    }
}
