//! What a turn works with ([`TurnCtx`]: the session, the event sink, the cancel token, the
//! pass budget) and how it ended ([`TurnOutcome`]): below the turn loop, its hooks, its calls
//! and its fail-open step, which all take it.

use codewhale_journal::EntryId;
use tokio_util::sync::CancellationToken;

use crate::compaction::compactor::{Compactor, InTurn};
use crate::events::{ApprovalGate, EventSink};
use crate::session::Session;
use codewhale_protocol::{
    ErrorKind as ProtocolErrorKind, Event, SubmissionId, TurnStats, TurnStatus,
};

/// Everything a turn (and the compaction hooks) work with.
#[derive(Debug)]
pub struct TurnCtx<'a> {
    pub session: &'a mut Session,
    /// Compaction's standing beside the session; the turn lends itself to it ([`TurnCtx::lend`]).
    pub(crate) compactor: &'a mut Compactor,
    pub events: &'a EventSink,
    /// The submission that started the turn; every event names it.
    pub submission: SubmissionId,
    /// Cancelled by an interrupt.
    pub cancel: CancellationToken,
    /// Compaction passes run in this turn (at most [`super::hooks::MAX_PASSES_PER_TURN`]).
    pub compaction_passes: u32,
    /// Whether this turn already said that a request was trimmed (said once a turn).
    pub(crate) said_trimmed: bool,
    pub(crate) gate: &'a ApprovalGate,
    /// The error that stopped the turn, journaled once the turn's calls all have results.
    pub(super) failure: Option<(ProtocolErrorKind, String)>,
    /// The user message this turn appended, and its text.
    pub(super) message: Option<(EntryId, String)>,
    /// Whether an assistant entry (complete or partial) was journaled in this turn.
    pub(super) replied: bool,
    pub(super) started: std::time::Instant,
    /// Tokens and requests so far.
    pub(super) stats: TurnStats,
    /// The session's meters when the turn began (replies, summary requests).
    pub(super) spent_at_start: (crate::spend::Spent, crate::spend::Spent),
    /// The request being answered carries image bytes.
    pub(super) carries_images: bool,
    /// The reply just journaled looks silently cut by the server: its reported count and its
    /// request's estimate, until the window is learned from them.
    pub(super) cut: Option<(u64, u64)>,
    /// A `task` child's run: the per-turn limit of compaction passes starts afresh with every
    /// model request that follows a tool result (docs/subagents.md).
    pub(crate) passes_per_request: bool,
}

impl<'a> TurnCtx<'a> {
    /// A context for one turn.
    pub fn new(
        session: &'a mut Session,
        compactor: &'a mut Compactor,
        events: &'a EventSink,
        gate: &'a ApprovalGate,
        submission: SubmissionId,
        cancel: CancellationToken,
    ) -> TurnCtx<'a> {
        let spent_at_start = (session.spend().replies.read(), session.spend().summaries.read());
        TurnCtx {
            spent_at_start,
            carries_images: false,
            cut: None,
            passes_per_request: false,
            session,
            compactor,
            events,
            submission,
            cancel,
            compaction_passes: 0,
            said_trimmed: false,
            gate,
            failure: None,
            message: None,
            replied: false,
            started: std::time::Instant::now(),
            stats: TurnStats { reported: true, ..TurnStats::default() },
        }
    }

    /// The compactor, and this turn lent to it for one call.
    pub(crate) fn lend(&mut self) -> (&mut Compactor, InTurn<'_>) {
        let turn = InTurn {
            session: &mut *self.session,
            events: self.events,
            submission: self.submission,
            cancel: &self.cancel,
            passes: &mut self.compaction_passes,
            requests: self.stats.requests,
        };
        (&mut *self.compactor, turn)
    }

    /// Emits an event for this turn's submission.
    pub fn emit(&self, event: Event) {
        self.events.emit(self.submission, event);
    }

    /// Emits the budget's current figures.
    pub fn emit_usage(&mut self, reported_input: Option<u64>, output: Option<u64>) {
        let usage = self.session.usage_event(reported_input, output);
        self.emit(usage);
    }

    /// Reports the error that stops the turn now; its `system` notice is journaled when the
    /// turn ends, after the results of interrupted calls, so it never sits between a call and
    /// its result.
    pub(crate) fn fail(&mut self, kind: ProtocolErrorKind, message: String) {
        self.emit(Event::Error { kind, message: message.clone() });
        if self.failure.is_none() {
            self.failure = Some((kind, message));
        }
    }
}

/// How a turn ended, and the text to show for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnOutcome {
    pub status: TurnStatus,
    /// The last assistant text of the turn (possibly partial).
    pub text: String,
}
