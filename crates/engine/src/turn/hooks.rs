//! The seams where compaction joins the turn loop (docs/compaction.md, *Triggers*).
//!
//! [`before_request`] runs before every model request of a turn, including the requests
//! between tool calls; [`on_context_overflow`] runs when the provider rejects a request as too
//! long, and its `true` makes the turn retry that request once. Both get the whole
//! [`TurnCtx`]: the session (journal, budget, token counts, system prompt, provider client,
//! background commands, workspace, config) and event emission.
//!
//! Invariants: at most [`MAX_PASSES_PER_TURN`] compaction passes per turn, counted in
//! [`TurnCtx::compaction_passes`]; every turn starts armed — the "past the threshold" warning is
//! said once but never skips a pass, only the backoff after a failed summary does; neither hook
//! ever loops.

use codewhale_journal::Trigger;
use codewhale_provider::ProviderError;

use super::ctx::TurnCtx;
use crate::budget::WindowSource;
use crate::compaction::pass::{self, PassRequest};
use crate::error::EngineError;
use codewhale_protocol::{Event, NoticeLevel};

/// docs/compaction.md, *Limits and configuration*: compaction passes per turn.
pub const MAX_PASSES_PER_TURN: u32 = 2;

/// Provisional counts are settled once pressure reaches this fraction of the threshold: below
/// it, the cheap upper bound is far enough from the threshold that exact counts cannot change
/// the decision.
const SETTLE_FRACTION: f64 = 0.5;

/// Runs before every model request.
pub async fn before_request(ctx: &mut TurnCtx<'_>) -> Result<(), EngineError> {
    let session = &mut *ctx.session;
    if session.has_provisional_counts() {
        let limits = *session.budget().limits();
        let near =
            session.budget().pressure().tokens as f64 >= limits.threshold as f64 * SETTLE_FRACTION;
        if near || crate::tokens::is_ready() {
            session.settle_counts();
        }
    }
    if !session.budget().over_threshold() {
        session.compaction.warned_over_threshold = false;
        // Past the early mark, the next note is written in the background meanwhile.
        let in_tool_loop = ctx.stats.requests > 0;
        let (events, submission) = (ctx.events, ctx.submission);
        let at = crate::compaction::background::StartAt::Turn { in_tool_loop };
        crate::compaction::background::maybe_start(ctx.session, events, submission, at).await;
        return Ok(());
    }
    // Armed every turn (docs/compaction.md, *Triggers*): a session above the threshold tries a
    // pass before every request while the turn has passes left; only the backoff after a failed
    // pass, or a background note still being written, holds one back.
    if in_turn(ctx, codewhale_journal::Trigger::Auto).await {
        return Ok(());
    }
    if crate::compaction::steps::backing_off(ctx.session) {
        // The backoff notice said what happens meanwhile; fit_view trims and says so.
        return Ok(());
    }
    // Said once until pressure is back under the threshold: a display choice, never a switch.
    if ctx.session.compaction.warned_over_threshold {
        return Ok(());
    }
    let session = &*ctx.session;
    let pressure = session.budget().pressure();
    let limits = *session.budget().limits();
    let message = format!(
        "the conversation uses {} tokens ({}), past the compaction threshold of {} of {} usable; \
         Codewhale tries to compact it again before the next request, and meanwhile a request \
         that does not fit is trimmed to its newest messages (the journal keeps everything); {} \
         compacts it now",
        pressure.tokens,
        pressure.source.as_str(),
        limits.threshold,
        limits.usable_input,
        session.hints.compact_with_focus()
    );
    ctx.session.compaction.warned_over_threshold = true;
    ctx.emit(Event::Notice { level: NoticeLevel::Warning, message });
    Ok(())
}

/// Runs when the provider rejected the request as too long (`estimate`: the o200k estimate of
/// the request it rejected). Returns whether to send a request again: only when it will be a
/// smaller one — compacted, or fitted to a window that just shrank — never the same twice.
pub async fn on_context_overflow(
    ctx: &mut TurnCtx<'_>,
    error: &ProviderError,
    estimate: u64,
) -> Result<bool, EngineError> {
    let limits = *ctx.session.budget().limits();
    let stated = match error.kind {
        codewhale_provider::ErrorKind::ContextOverflow { limit, .. } => limit,
        _ => None,
    };
    // The window the rejection teaches: the one it states, else 90 % of the rejected request
    // (the window is at most that), never more than the window in use.
    let (window, source) = match stated {
        Some(limit) => (limit, WindowSource::Overflow),
        None => {
            let calibration = ctx.session.budget().calibration();
            let window =
                crate::budget::unnumbered_overflow_window(estimate, calibration, limits.window);
            (window, WindowSource::OverflowUnnumbered)
        }
    };
    let shrinks = window < limits.window;
    // Said in words before anything changes: why the reply did not come, and what happens now.
    let message = match (&error.kind, shrinks) {
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
    };
    ctx.emit(Event::Notice { level: NoticeLevel::Warning, message });
    let learn = match stated {
        Some(limit) => limit != limits.window || limits.window_source != WindowSource::Overflow,
        None => shrinks,
    };
    if learn {
        // The provider's window is the truth for this session (docs/compaction.md,
        // *Triggers*); journaled, so a reopened session and `codewhale context` use it too.
        ctx.session.learn_window(window, source)?;
        ctx.emit_usage(None, None);
    }
    // Reactive compaction below the (possibly just learned) window; the request is sent again
    // when it compacted or when the fit will cut it to the smaller window — never as it was.
    let compacted = in_turn(ctx, codewhale_journal::Trigger::Reactive).await;
    let budget = ctx.session.budget();
    let refitted = shrinks && budget.calibrated(estimate) > budget.limits().usable_input;
    Ok(compacted || refitted)
}

/// Runs one in-turn pass with `trigger` if the turn has passes left; true when it compacted.
pub async fn in_turn(ctx: &mut TurnCtx<'_>, trigger: Trigger) -> bool {
    if ctx.compaction_passes >= MAX_PASSES_PER_TURN {
        tracing::info!(trigger = trigger.as_str(), "no compaction passes left in this turn");
        return false;
    }
    if trigger == Trigger::Auto {
        if !crate::compaction::steps::auto_worthwhile(ctx.session) {
            tracing::info!("the last pass could not get below the threshold; waiting for regrowth");
            return false;
        }
        if crate::compaction::steps::backing_off(ctx.session) {
            tracing::info!(backoff = ?ctx.session.compaction.summary_backoff, "summaries failed; backing off");
            return false;
        }
    }
    let submission = ctx.submission;
    let mut background = None;
    if trigger == Trigger::Auto {
        // A note written in the background is this pass's first choice, and while its request
        // is in flight no second summary request is sent for the same crossing
        // (docs/compaction.md, *Background compaction*): the note is waited for, bounded by what
        // a summary request of this model takes; a note later than that goes on, and the
        // request meanwhile is trimmed to fit.
        use crate::compaction::background::{self, Taken};
        match background::take(ctx.session, ctx.events, submission, &ctx.cancel).await {
            Taken::Note(prepared) => background = Some(prepared),
            Taken::Late | Taken::Cancelled => return false,
            Taken::Nothing => {}
        }
    }
    ctx.compaction_passes += 1;
    let events = ctx.events.clone();
    let emit = move |event| events.emit(submission, event);
    let mut request = PassRequest::new(trigger, None);
    request.background = background;
    pass::run(ctx.session, request, ctx.cancel.clone(), &emit).await.compacted()
}
