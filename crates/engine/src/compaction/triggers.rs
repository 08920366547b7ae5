//! The triggers (docs/compaction.md, *Triggers*) as calls the engine makes between turns: `manual`
//! (`/compact`), reached through [`super::compactor::Compactor::manual`], which lends it the
//! [`Standing`] (the start of a turn, which counts down the summary backoff, is
//! [`super::compactor::Compactor::turn_started`]).
//!
//! `auto` and `reactive` run inside a turn and share its pass budget; they are the turn's
//! (`crate::turn::hooks`), as is the fail-open step before every request (`crate::turn::fit`).
//! None of them loops: each runs at most one pass per call. Below the Compactor: imports only
//! `pass`, the standing and the port.

use codewhale_journal::Trigger;
use codewhale_provider::CancellationToken;

use super::pass::{self, PassOutcome, PassRequest};
use super::standing::Standing;
use crate::compaction::port::Conversation;
use crate::events::EventSink;
use codewhale_protocol::SubmissionId;

/// `/compact [focus]` between turns.
pub(super) async fn manual(
    session: &mut dyn Conversation,
    standing: &mut Standing,
    sink: &EventSink,
    submission: SubmissionId,
    focus: Option<String>,
    cancel: CancellationToken,
) -> PassOutcome {
    // The pass is sized to the window: the one the local server states, when it says in time.
    match session.probe_before_request().await {
        Ok(true) => sink.emit(submission, session.usage_event(None, None)),
        Ok(false) => {}
        Err(err) => tracing::warn!("cannot journal the server's window: {err}"),
    }
    let sink = sink.clone();
    let emit = move |event| sink.emit(submission, event);
    let request = PassRequest::new(Trigger::Manual, focus);
    pass::run(session, standing, request, cancel, &emit).await
}
