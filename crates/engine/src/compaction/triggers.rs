//! The three triggers (DESIGN §5.1) as calls the turn loop and the engine make, and the
//! fail-open step before every request.
//!
//! `auto` and `reactive` run inside a turn and share its pass budget
//! ([`crate::turn::hooks::MAX_PASSES_PER_TURN`]); `manual` runs between turns. None of them
//! loops: each runs at most one pass per call, and the caller decides what happens next.
//! After a summary pass fails, auto passes back off for a number of turns that doubles with
//! each failure in a row ([`Backoff`]), so a model that cannot summarize does not pay two
//! summary requests every turn; the user is told once.
//! [`fit_view`] is the fail-open step before every request: trim the oldest exchanges, and
//! when even the protected part does not fit, bound it — by a pass that calls no model while
//! the turn has passes left (it counts as one), else in the request alone.

use codewhale_journal::{Trigger, View};
use codewhale_provider::CancellationToken;

use super::pass::{self, PassMode, PassOutcome, PassRequest};
use super::plain::PlainView;
use super::trim::{self, Fit, Shorten};
use crate::events::EventSink;
use crate::protocol::{ErrorKind, Event, NoticeLevel, SubmissionId, TurnStatus};
use crate::session::Session;
use crate::turn::hooks::MAX_PASSES_PER_TURN;
use crate::turn::{TurnCtx, TurnOutcome};

/// Auto passes held back after failed summaries: a model that cannot write a note will not
/// write one next turn either, so each failure in a row doubles how many turns pass before the
/// next attempt (2, 4, 8, ... up to [`MAX_SKIPPED_TURNS`]). A summary written by any pass
/// (manual, reactive) ends the backoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Summary failures in a row.
    pub failures: u32,
    /// Turns still to start before an auto pass may summarize again.
    pub skip_turns: u32,
}

/// The longest wait, in turns, between two auto summary attempts.
pub const MAX_SKIPPED_TURNS: u32 = 32;

/// The turns an auto pass waits after `failures` summary failures in a row: 2, 4, 8, … up to
/// [`MAX_SKIPPED_TURNS`] (DESIGN §5.1). The one formula, live and replayed from the journal.
pub fn turns_to_wait(failures: u32) -> u32 {
    2u32.saturating_pow(failures).min(MAX_SKIPPED_TURNS)
}

/// The backoff a session's journal implies: the summary failures since the last summary
/// record (a `system` notice with `summary_failed`), and the turns started since the latest
/// one. So a backoff holds across processes — each `codewhale exec` is one.
pub(crate) fn replay_backoff(journal: &codewhale_journal::Journal) -> Option<Backoff> {
    use codewhale_journal::{flags, kind, CompactionPath, Payload};
    let mut failures = 0u32;
    let mut turns = 0u32;
    let mut turns_since_latest = None;
    // Newest first, reading only records and notices (users are told apart by their flags).
    for pos in (0..journal.len() as u32).rev() {
        if journal.has_flags(pos, flags::PLAIN) {
            turns += 1;
            continue;
        }
        if !matches!(journal.kind_at(pos), kind::COMPACTION | kind::SYSTEM) {
            continue;
        }
        match &journal.entry_at(pos).payload {
            Payload::Compaction(r) if r.path == CompactionPath::Summary => break,
            Payload::System(s) if s.summary_failed => {
                failures += 1;
                turns_since_latest.get_or_insert(turns);
            }
            _ => {}
        }
    }
    let since = turns_since_latest?;
    Some(Backoff { failures, skip_turns: turns_to_wait(failures).saturating_sub(since) })
}

/// Called when a turn starts: one turn less to wait.
pub(crate) fn turn_started(session: &mut Session) {
    if let Some(b) = &mut session.summary_backoff {
        b.skip_turns = b.skip_turns.saturating_sub(1);
    }
}

/// Called when a pass wrote a summary: auto passes run normally again.
pub(crate) fn summary_succeeded(session: &mut Session, outcome: &PassOutcome) {
    if matches!(
        outcome,
        PassOutcome::Compacted { path: codewhale_journal::CompactionPath::Summary, .. }
    ) {
        session.summary_backoff = None;
    }
}

/// Called when the summarizer failed: hold auto passes back, and say so once per streak.
pub(crate) fn summary_failed(
    session: &mut Session,
    reason: &str,
    emit: &(dyn Fn(Event) + Send + Sync),
) {
    let failures = session.summary_backoff.map_or(0, |b| b.failures) + 1;
    let skip_turns = turns_to_wait(failures);
    let first = session.summary_backoff.is_none();
    session.summary_backoff = Some(Backoff { failures, skip_turns });
    if first {
        pass::warn(
            emit,
            format!(
                "the model could not write a usable summary ({reason}); automatic compaction \
                 now waits a few turns between attempts (longer after each failure), and \
                 meanwhile each request leaves out the oldest messages that do not fit (the \
                 journal keeps them); {} asks again at any time",
                session.hints.compact()
            ),
        );
    }
}

/// Whether auto passes are holding back after failed summaries.
pub(crate) fn backing_off(session: &Session) -> bool {
    session.summary_backoff.is_some_and(|b| b.skip_turns > 0)
}

/// Runs one in-turn pass with `trigger` if the turn has passes left; true when it compacted.
pub async fn in_turn(ctx: &mut TurnCtx<'_>, trigger: Trigger) -> bool {
    if ctx.compaction_passes >= MAX_PASSES_PER_TURN {
        tracing::info!(trigger = trigger.as_str(), "no compaction passes left in this turn");
        return false;
    }
    if trigger == Trigger::Auto {
        if !pass::auto_worthwhile(ctx.session) {
            tracing::info!("the last pass could not get below the threshold; waiting for regrowth");
            return false;
        }
        if backing_off(ctx.session) {
            tracing::info!(backoff = ?ctx.session.summary_backoff, "summaries failed; backing off");
            return false;
        }
    }
    ctx.compaction_passes += 1;
    let events = ctx.events.clone();
    let submission = ctx.submission;
    let emit = move |event| events.emit(submission, event);
    let mut request = PassRequest::new(trigger.clone(), None);
    if trigger == Trigger::Auto {
        // A note written in the background is this pass's first choice (DESIGN §5.8).
        let note = super::background::take(ctx.session, ctx.events, submission, &ctx.cancel);
        request.background = note.await.map(Box::new);
    }
    pass::run(ctx.session, request, ctx.cancel.clone(), &emit).await.compacted()
}

/// `/compact [focus]` between turns.
pub async fn manual(
    session: &mut Session,
    sink: &EventSink,
    submission: SubmissionId,
    focus: Option<String>,
    cancel: CancellationToken,
) -> PassOutcome {
    let sink = sink.clone();
    let emit = move |event| sink.emit(submission, event);
    let request = PassRequest::new(Trigger::Manual, focus);
    pass::run(session, request, cancel, &emit).await
}

/// A request sent without its oldest exchanges (and, past that, bounded).
#[derive(Clone, Debug, PartialEq)]
pub struct Trimmed {
    /// The first history item still sent after a left-out one (`reads.trimmed_before`).
    pub first: Option<codewhale_journal::EntryId>,
    /// Items the request itself cut (`reads.bounded`), when no pass was left to do it.
    pub bounded: Vec<codewhale_journal::Bounded>,
    /// The o200k estimate of what is sent, system prompt included (for calibration).
    pub estimate: u64,
}

/// Fail open: when the view is still over usable input before a request (no pass could make
/// room), sends it without its oldest exchanges. When even the protected part plus anchors
/// cannot fit, the round is bounded — by a pass that calls no model and is journaled like any
/// other while the turn has passes left, otherwise by the request itself (`reads.bounded`);
/// only when that minimum cannot fit either does the turn stop, with a message naming the part
/// that is too big and what to do (`Err` carries the outcome).
pub async fn fit_view(
    ctx: &mut TurnCtx<'_>,
    view: View,
) -> Result<(View, Option<Trimmed>), TurnOutcome> {
    let budget = ctx.session.budget();
    if budget.pressure().tokens <= budget.limits().usable_input {
        return Ok((view, None));
    }
    let view = match fit_once(ctx, view, Shorten::Drop) {
        Ok(fitted) => return Ok(fitted),
        Err(view) => *view,
    };
    let view = if ctx.compaction_passes < MAX_PASSES_PER_TURN {
        drop(view);
        ctx.compaction_passes += 1;
        let events = ctx.events.clone();
        let submission = ctx.submission;
        let emit = move |event| events.emit(submission, event);
        let request = PassRequest {
            trigger: Trigger::Auto,
            focus: None,
            mode: PassMode::BoundOnly,
            background: None,
        };
        pass::run(ctx.session, request, ctx.cancel.clone(), &emit).await;
        let view = ctx.session.render();
        match fit_once(ctx, view, Shorten::Drop) {
            Ok(fitted) => return Ok(fitted),
            Err(view) => *view,
        }
    } else {
        tracing::info!("no compaction pass left in this turn; the request bounds itself");
        view
    };
    if let Ok(fitted) = fit_once(ctx, view, Shorten::DropAndBound) {
        return Ok(fitted);
    }
    let message = too_big_message(ctx);
    tracing::warn!(%message, "the protected round does not fit");
    ctx.fail(ErrorKind::ContextFull, message);
    Err(TurnOutcome { status: TurnStatus::Failed, text: String::new() })
}

/// One trim of `view`; `Err` gives the view back when even the protected part does not fit.
fn fit_once(
    ctx: &mut TurnCtx<'_>,
    view: View,
    shorten: Shorten,
) -> Result<(View, Option<Trimmed>), Box<View>> {
    let session = &*ctx.session;
    let budget = session.budget();
    let plain = PlainView::new(&view, |item| session.known_tokens(item));
    let fitted = trim::fit(
        view,
        &plain,
        budget.system_tokens(),
        budget.calibration(),
        budget.limits().usable_input,
        shorten,
    );
    match fitted {
        Fit::Whole(view) => Ok((view, None)),
        Fit::Trimmed { view, first, dropped, estimate, bounded } => {
            tracing::warn!(dropped, bounded = bounded.len(), %first, "request trimmed to fit the window");
            // Said once a turn: a long turn that keeps trimming does not repeat it per request.
            if !ctx.said_trimmed {
                ctx.said_trimmed = true;
                let shortened =
                    if bounded.is_empty() { "" } else { " and shortens long outputs in it" };
                ctx.emit(Event::Notice {
                    level: NoticeLevel::Warning,
                    message: format!(
                        "this request leaves out the {dropped} oldest messages{shortened} so that \
                         it fits the window (the journal keeps them whole); the next turn tries \
                         to compact again"
                    ),
                });
            }
            let first = (dropped > 0).then_some(first);
            Ok((view, Some(Trimmed { first, bounded, estimate })))
        }
        Fit::TooBig { view, protected_tokens } => {
            tracing::info!(protected_tokens, "the protected part alone exceeds usable input");
            Err(Box::new(view))
        }
    }
}

/// The stop message when nothing more can be cut: names the largest part that is too big and
/// what the user can do about it.
fn too_big_message(ctx: &TurnCtx<'_>) -> String {
    let session = &*ctx.session;
    let budget = session.budget();
    let usable = budget.limits().usable_input;
    let view = session.render();
    let plain = PlainView::new(&view, |item| session.known_tokens(item));
    let sum = |kind: codewhale_journal::ItemKind| -> u64 {
        view.items
            .iter()
            .zip(&plain.tokens)
            .filter(|(i, _)| i.kind == kind)
            .map(|(_, t)| budget.calibrated(*t))
            .sum()
    };
    let system = budget.calibrated(budget.system_tokens());
    let anchors = sum(codewhale_journal::ItemKind::Anchor);
    let note = sum(codewhale_journal::ItemKind::Checkpoint);
    let total = budget.calibrated(budget.system_tokens() + plain.total());
    let rest = total.saturating_sub(system + anchors + note);
    let hints = &session.hints;
    let part = if system >= anchors.max(note).max(rest) {
        format!(
            "the system prompt with the project instructions (AGENTS.md, \
             .codewhale/instructions.md) and the tool schemas needs about {system} tokens; \
             shorten the project instructions or {}",
            hints.larger_window()
        )
    } else if anchors >= note.max(rest) {
        format!(
            "the pinned anchors need about {anchors} tokens; remove some with {} or {}",
            hints.anchor_rm(),
            hints.larger_window()
        )
    } else if note >= rest {
        format!(
            "the handoff note needs about {note} tokens; {} or {}",
            hints.new_session(),
            hints.larger_window()
        )
    } else {
        format!(
            "the last round needs about {rest} tokens even with every output and message in it \
             cut to 1 KB; {} or {}",
            hints.new_session(),
            hints.larger_window()
        )
    };
    format!(
        "the conversation cannot fit the {usable} tokens this model accepts even after \
         compaction: {part}"
    )
}
