//! The Compactor (docs/architecture.md, *The Compactor*): compaction's standing, owned by the
//! engine task beside the [`Session`](crate::session::Session), and the only door to it.
//!
//! It holds what compaction keeps about itself between passes as a [`Standing`]
//! (`standing.rs`): whether summary passes are backing off after a failure, whether the "past
//! the threshold" warning was given, the background note being written and how long summary
//! requests take. Its methods are the doors the engine and the turn loop call —
//! [`Compactor::turn_started`], [`Compactor::before_request`], [`Compactor::on_overflow`],
//! [`Compactor::make_room`], [`Compactor::turn_ended`], [`Compactor::manual`],
//! [`Compactor::on_idle`], [`Compactor::on_change`] and [`Compactor::close`] — and nothing
//! outside `compaction` reads or writes the standing. A door lends the shell (`pass`,
//! `triggers`, `background`) the standing and the session, as the
//! [`super::port::Conversation`] port, for the length of one call, never kept; the shell never
//! sees the `Compactor`, so this file imports only downwards. A second conversation (a
//! subagent) is a second `Session` + `Compactor` pair.

use std::sync::Arc;

use codewhale_journal::Trigger;
use codewhale_protocol::{BackgroundState, Event, NoticeLevel, SubmissionId};
use codewhale_provider::{CancellationToken, ProviderError};

use super::background::{self, StartAt, Taken};
use super::pass::{self, PassOutcome, PassRequest};
use super::pass_plan::PassMode;
use super::standing::Standing;
use crate::budget::WindowSource;
use crate::compaction::port::Conversation;
use crate::error::EngineError;
use crate::events::EventSink;

/// docs/compaction.md, *Limits and configuration*: compaction passes per turn.
pub const MAX_PASSES_PER_TURN: u32 = 2;

/// Compaction in one conversation: its standing, behind the doors.
#[derive(Debug, Default)]
pub struct Compactor {
    /// What compaction keeps about itself between passes, lent to the shell one call at a time.
    standing: Standing,
}

/// What a turn lends the compactor for one call: the conversation, where its events go, and
/// the turn's own pass count.
pub struct InTurn<'a> {
    pub session: &'a mut dyn Conversation,
    pub events: &'a EventSink,
    /// The submission that started the turn; every event names it.
    pub submission: SubmissionId,
    /// Cancelled by an interrupt.
    pub cancel: &'a CancellationToken,
    /// Compaction passes run in this turn (at most [`MAX_PASSES_PER_TURN`]).
    pub passes: &'a mut u32,
    /// Requests the turn has sent so far: past the first, the turn is in its tool loop.
    pub requests: u32,
}

impl InTurn<'_> {
    fn emit(&self, event: Event) {
        self.events.emit(self.submission, event);
    }
}

/// A change to the conversation that makes the background note's snapshot worthless: the note
/// being written is cancelled (nothing is written) and the early mark re-arms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// HEAD moved (a checkout, a fork, a rewind, an edit).
    HeadMoved,
    /// The session switched models.
    ModelSwitched,
    /// An anchor was pinned or withdrawn.
    AnchorsChanged,
    /// The user interrupted.
    Interrupted,
    /// `/compact` runs instead.
    ManualPass,
}

impl Change {
    fn why(self) -> &'static str {
        match self {
            Change::HeadMoved => "HEAD moved",
            Change::ModelSwitched => "the model changed",
            Change::AnchorsChanged => "the anchors changed",
            Change::Interrupted => "the session was interrupted",
            Change::ManualPass => "/compact runs instead",
        }
    }
}

impl Compactor {
    /// The compactor of `session` as its journal left it: a summary backoff holds across
    /// processes (each `codewhale exec` is one).
    pub fn open(session: &dyn Conversation) -> Compactor {
        Compactor { standing: Standing::replayed(session.journal()) }
    }

    /// A turn started: one turn less to wait after a failed summary.
    pub fn turn_started(&mut self) {
        super::backoff::turn_started(&mut self.standing.summary_backoff);
    }

    /// Before every model request of a turn (docs/compaction.md, *Triggers*): below the
    /// threshold, the next note may be started in the background; above it, a pass runs while
    /// the turn has passes left, and the "past the threshold" warning is said once.
    pub async fn before_request(&mut self, turn: &mut InTurn<'_>) {
        if !turn.session.budget().over_threshold() {
            self.standing.warned_over_threshold = false;
            // Past the early mark, the next note is written in the background meanwhile.
            let at = StartAt::Turn { in_tool_loop: turn.requests > 0 };
            background::maybe_start(
                turn.session,
                &mut self.standing,
                turn.events,
                turn.submission,
                at,
            )
            .await;
            return;
        }
        // Armed every turn: a session above the threshold tries a pass before every request
        // while the turn has passes left; only the backoff after a failed pass, or a background
        // note still being written, holds one back.
        if self.in_turn(turn, Trigger::Auto).await {
            return;
        }
        if self.standing.backing_off() {
            // The backoff notice said what happens meanwhile; the fit trims and says so.
            return;
        }
        // Said once until pressure is back under the threshold: a display choice, never a switch.
        if self.standing.warned_over_threshold {
            return;
        }
        let session = &*turn.session;
        let pressure = session.budget().pressure();
        let limits = *session.budget().limits();
        let message = format!(
            "the conversation uses {} tokens ({}), past the compaction threshold of {} of {} \
             usable; Codewhale tries to compact it again before the next request, and meanwhile \
             a request that does not fit is trimmed to its newest messages (the journal keeps \
             everything); {} compacts it now",
            pressure.tokens,
            pressure.source.as_str(),
            limits.threshold,
            limits.usable_input,
            session.compact_with_focus_hint()
        );
        self.standing.warned_over_threshold = true;
        turn.emit(Event::Notice { level: NoticeLevel::Warning, message });
    }

    /// A turn completed: the user reads and types now, the time a background note is written
    /// in (when pressure is past the early mark).
    pub async fn turn_ended(&mut self, turn: &mut InTurn<'_>) {
        let at = StartAt::Turn { in_tool_loop: false };
        background::maybe_start(turn.session, &mut self.standing, turn.events, turn.submission, at)
            .await;
    }

    /// The provider rejected a request as too long (`estimate`: the o200k estimate of the
    /// request it rejected). Returns whether to send a request again: only when it will be a
    /// smaller one — compacted, or fitted to a window that just shrank — never the same twice.
    pub async fn on_overflow(
        &mut self,
        turn: &mut InTurn<'_>,
        error: &ProviderError,
        estimate: u64,
    ) -> Result<bool, EngineError> {
        let limits = *turn.session.budget().limits();
        let stated = match error.kind {
            codewhale_provider::ErrorKind::ContextOverflow { limit, .. } => limit,
            _ => None,
        };
        // The window the rejection teaches: the one it states, else 90 % of the rejected
        // request (the window is at most that), never more than the window in use.
        let (window, source) = match stated {
            Some(limit) => (limit, WindowSource::Overflow),
            None => {
                let calibration = turn.session.budget().calibration();
                let window =
                    crate::budget::unnumbered_overflow_window(estimate, calibration, limits.window);
                (window, WindowSource::OverflowUnnumbered)
            }
        };
        let shrinks = window < limits.window;
        turn.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message: overflow_message(&error.kind, shrinks, window),
        });
        let learn = match stated {
            Some(limit) => limit != limits.window || limits.window_source != WindowSource::Overflow,
            None => shrinks,
        };
        if learn {
            // The provider's window is the truth for this session (docs/compaction.md,
            // *Triggers*); journaled, so a reopened session and `codewhale context` use it too.
            turn.session.learn_window(window, source)?;
            let usage = turn.session.usage_event(None, None);
            turn.emit(usage);
        }
        // Reactive compaction below the (possibly just learned) window; the request is sent
        // again when it compacted or when the fit will cut it to the smaller window.
        let compacted = self.in_turn(turn, Trigger::Reactive).await;
        let budget = turn.session.budget();
        let refitted = shrinks && budget.calibrated(estimate) > budget.limits().usable_input;
        Ok(compacted || refitted)
    }

    /// A request that does not fit even trimmed: one pass that only bounds the last round, if
    /// the turn has a pass left. True when it ran.
    pub async fn make_room(&mut self, turn: &mut InTurn<'_>) -> bool {
        if *turn.passes >= MAX_PASSES_PER_TURN {
            tracing::info!("no compaction pass left in this turn; the request bounds itself");
            return false;
        }
        *turn.passes += 1;
        let request = PassRequest {
            trigger: Trigger::Auto,
            focus: None,
            mode: PassMode::BoundOnly,
            background: None,
        };
        let (events, submission) = (turn.events.clone(), turn.submission);
        let emit = move |event| events.emit(submission, event);
        pass::run(turn.session, &mut self.standing, request, turn.cancel.clone(), &emit).await;
        true
    }

    /// `/compact [focus]` between turns; the note being written in the background is
    /// cancelled first.
    pub async fn manual(
        &mut self,
        session: &mut dyn Conversation,
        sink: &EventSink,
        submission: SubmissionId,
        focus: Option<String>,
        cancel: CancellationToken,
    ) -> PassOutcome {
        self.on_change(sink, submission, Change::ManualPass);
        super::triggers::manual(session, &mut self.standing, sink, submission, focus, cancel).await
    }

    /// The session has been idle for [`background::idle_after`]: commit a ready note, or have
    /// one written.
    pub async fn on_idle(&mut self, session: &mut dyn Conversation, sink: &EventSink) {
        background::on_idle(session, &mut self.standing, sink).await;
    }

    /// A background request ended while the session was idle: its failure is journaled or its
    /// note composed now, and committed when idle compaction asked for it.
    pub async fn on_note_ended(&mut self, session: &mut dyn Conversation, sink: &EventSink) {
        background::settle_idle(session, &mut self.standing, sink).await;
    }

    /// A front-end op arrived: the session is no longer idle.
    pub fn on_activity(&mut self) {
        background::activity(&mut self.standing);
    }

    /// The conversation changed under the background note: it is cancelled. True when a note
    /// was being written.
    pub fn on_change(
        &mut self,
        sink: &EventSink,
        submission: SubmissionId,
        change: Change,
    ) -> bool {
        background::cancel(&mut self.standing, sink, submission, change.why())
    }

    /// The session closes: a note already written is committed, never thrown away; one still
    /// being written is waited for as long as a summary request of its model takes.
    pub async fn close(
        &mut self,
        session: &mut dyn Conversation,
        sink: &EventSink,
        submission: SubmissionId,
    ) {
        background::close(session, &mut self.standing, sink, submission).await;
    }

    /// Notified when a background request ends.
    pub fn wake(&self) -> Arc<tokio::sync::Notify> {
        self.standing.note_pass.wake()
    }

    /// Where the background note is, for the status line and `context --json`.
    pub fn background_state(&self) -> Option<BackgroundState> {
        self.standing.note_pass.state()
    }

    /// Runs one in-turn pass with `trigger` if the turn has passes left; true when it compacted.
    async fn in_turn(&mut self, turn: &mut InTurn<'_>, trigger: Trigger) -> bool {
        if *turn.passes >= MAX_PASSES_PER_TURN {
            tracing::info!(trigger = trigger.as_str(), "no compaction passes left in this turn");
            return false;
        }
        let mut from_background = None;
        if trigger == Trigger::Auto {
            if !self.standing.auto_worthwhile(turn.session) {
                tracing::info!(
                    "the last pass could not get below the threshold; waiting for regrowth"
                );
                return false;
            }
            if self.standing.backing_off() {
                tracing::info!(backoff = ?self.standing.summary_backoff, "summaries failed; backing off");
                return false;
            }
            // A note written in the background is this pass's first choice, and while its
            // request is in flight no second summary request is sent for the same crossing
            // (docs/compaction.md, *Background compaction*): the note is waited for, bounded by
            // what a summary request of this model takes; a note later than that goes on, and
            // the request meanwhile is trimmed to fit.
            let (events, submission) = (turn.events, turn.submission);
            match background::take(
                turn.session,
                &mut self.standing,
                events,
                submission,
                turn.cancel,
            )
            .await
            {
                Taken::Note(prepared) => from_background = Some(prepared),
                Taken::Late | Taken::Cancelled => return false,
                Taken::Nothing => {}
            }
        }
        *turn.passes += 1;
        let (events, submission) = (turn.events.clone(), turn.submission);
        let emit = move |event| events.emit(submission, event);
        let mut request = PassRequest::new(trigger, None);
        request.background = from_background;
        pass::run(turn.session, &mut self.standing, request, turn.cancel.clone(), &emit)
            .await
            .compacted()
    }
}

/// Why the reply did not come and what happens now, said before anything changes.
fn overflow_message(kind: &codewhale_provider::ErrorKind, shrinks: bool, window: u64) -> String {
    match (kind, shrinks) {
        (codewhale_provider::ErrorKind::ContextOverflow { limit: Some(limit), requested }, _) => {
            let asked = requested.map(|r| format!(" ({r} tokens)")).unwrap_or_default();
            format!(
                "the provider rejected the request as too long{asked}: its window is {limit} \
                 tokens, so Codewhale uses that from now on, compacts the conversation to fit and \
                 sends the request again"
            )
        }
        (_, true) => format!(
            "the provider rejected the request as too long without saying its window; the \
             window is at most that request's size, so Codewhale takes it as {window} tokens \
             (90 % of the request) from now on, compacts the conversation to fit and sends a \
             shorter request"
        ),
        (_, false) => "the provider rejected the request as too long; Codewhale compacts the \
                       conversation and sends a shorter request"
            .to_owned(),
    }
}
