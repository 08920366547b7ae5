//! The ops that run work other than a turn while ops are still read: a side question, `/compact`
//! and the user's `!CMD`; and the wait for a branch summary, during which ops wait.
//!
//! Invariant: as for a turn, a `Shutdown` received meanwhile ends the loop once the work ends,
//! and the questions asked meanwhile are answered then.

use tokio_util::sync::CancellationToken;

use super::busy::{answer_deferred, listening, Family};
use super::Task;
use codewhale_protocol::{Event, SubmissionId};

impl Task {
    /// A side question: answered now, with the session's model; neither it nor the answer joins
    /// what the model reads later.
    pub(super) async fn side_question(&mut self, id: SubmissionId, question: String) {
        let Task { session, compactor, ops, sink, gate, shutdown, .. } = self;
        let cancel = CancellationToken::new();
        let mcp = session.mcp().clone();
        let family = Family::of(session);
        let run = crate::side_question::run(session, sink, id, question, cancel.clone());
        let (stop, deferred) = listening(run, ops, sink, gate, &cancel, (&mcp, &family)).await;
        *shutdown = stop;
        answer_deferred(session, compactor, sink, deferred).await;
    }

    /// `/compact [FOCUS]`: a manual pass, the background note cancelled first.
    pub(super) async fn compact(&mut self, id: SubmissionId, focus: Option<String>) {
        let Task { session, compactor, ops, sink, gate, shutdown, .. } = self;
        let cancel = CancellationToken::new();
        let mcp = session.mcp().clone();
        let family = Family::of(session);
        let pass = compactor.manual(session, sink, id, focus, cancel.clone());
        let (stop, deferred) = listening(pass, ops, sink, gate, &cancel, (&mcp, &family)).await;
        *shutdown = stop;
        if gate.user_away() {
            crate::hooks::notification(session, id, "the compaction finished").await;
        }
        sink.emit(id, session.usage_event(None, None));
        answer_deferred(session, compactor, sink, deferred).await;
    }

    /// `!CMD`: the user's own command, its output journaled.
    pub(super) async fn user_shell(&mut self, id: SubmissionId, command: String) {
        let Task { session, compactor, ops, sink, gate, shutdown, .. } = self;
        let cancel = CancellationToken::new();
        let mcp = session.mcp().clone();
        let family = Family::of(session);
        let run = crate::user_shell::run(session, sink, id, command, cancel.clone());
        let (stop, deferred) = listening(run, ops, sink, gate, &cancel, (&mcp, &family)).await;
        *shutdown = stop;
        answer_deferred(session, compactor, sink, deferred).await;
    }

    /// Waits for the summary of the branch HEAD left, if one is being written.
    pub(super) async fn await_branch_summary(&mut self, id: SubmissionId) {
        let Task { session, sink, .. } = self;
        // Ops wait meanwhile, a `shutdown` sent right after among them (that is how
        // `codewhale rewind` uses it); the wait is bounded by the summary's timeout.
        let never = CancellationToken::new();
        let state = crate::branch_summary::wait(session, sink, id, &never).await;
        if state == codewhale_protocol::BranchSummaryState::None {
            let none = Event::BranchSummary {
                state,
                summary: None,
                reason: Some("no summary was being written".into()),
            };
            sink.emit(id, none);
        }
    }
}
