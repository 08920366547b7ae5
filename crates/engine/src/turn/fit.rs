//! Fail open (docs/compaction.md, *Room is always found*), the step before every request of a turn:
//! when the view is over usable input and no pass could make room, send it without its oldest
//! exchanges; when even the protected part does not fit, bound it — by a pass that calls no model
//! while the turn has passes left (it counts as one), else in the request alone. What may be left
//! out is the pure [`crate::compaction::trim`]; this is the turn's shell around it.

use codewhale_journal::View;

use super::ctx::{TurnCtx, TurnOutcome};
use super::hooks::MAX_PASSES_PER_TURN;
use crate::compaction::cut::CutPolicy;
use crate::compaction::trim::{self, Fit, Shorten};
use codewhale_protocol::{ErrorKind, Event, NoticeLevel, TurnStatus};

/// A request sent without its oldest exchanges (and, past that, bounded).
#[derive(Clone, Debug, PartialEq)]
pub struct Trimmed {
    /// The first history item still sent after a left-out one (`reads.trimmed_before`).
    pub first: Option<codewhale_journal::EntryId>,
    /// Items the request itself cut (`reads.bounded`), when no pass was left to do it.
    pub bounded: Vec<codewhale_journal::Bounded>,
    /// The o200k estimate of what is sent, system prompt and notice included (for
    /// calibration).
    pub estimate: u64,
    /// The system block sent after the system prompt when messages were left out
    /// ([`trim::notice`]).
    pub notice: Option<String>,
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
        let (compactor, mut turn) = ctx.lend();
        compactor.make_room(&mut turn).await;
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
    let plain = crate::compaction::plain::of(&view, |item| session.known_tokens(item));
    // A request that leaves messages out ends with a notice restating the live plan: the fit
    // makes room for it.
    let plan = session.live_plan();
    let policy = CutPolicy {
        retained_tokens: session.config().compaction.retained_user_tokens,
        ..budget.limits().cut_policy(budget.calibration())
    };
    let system = budget.system_tokens() + trim::notice_tokens(plan.as_ref());
    let fitted = trim::fit(view, &plain, system, &policy, shorten);
    match fitted {
        Fit::Whole(view) => Ok((view, None)),
        Fit::Trimmed { view, first, dropped, estimate, bounded } => {
            tracing::warn!(dropped, bounded = bounded.len(), %first, "request trimmed to fit the window");
            // Said once a turn: a long turn that keeps trimming does not repeat it per request.
            if !ctx.said_trimmed {
                ctx.said_trimmed = true;
                ctx.emit(Event::Notice {
                    level: NoticeLevel::Warning,
                    message: trimmed_notice(dropped, !bounded.is_empty()),
                });
            }
            let notice = (dropped > 0).then(|| trim::notice(dropped, &first, plan.as_ref()));
            let first = (dropped > 0).then_some(first);
            Ok((view, Some(Trimmed { first, bounded, estimate, notice })))
        }
        Fit::TooBig { view, protected_tokens } => {
            tracing::info!(protected_tokens, "the protected part alone exceeds usable input");
            Err(Box::new(view))
        }
    }
}

/// The one sentence a turn says when a request is trimmed: what was left out, what was
/// shortened — each only when there is some — and that the journal keeps it whole.
fn trimmed_notice(dropped: usize, shortened: bool) -> String {
    let what = match (dropped, shortened) {
        (0, _) => "shortens long outputs in the last round".to_owned(),
        (1, false) => "leaves out the oldest message".to_owned(),
        (1, true) => "leaves out the oldest message and shortens long outputs".to_owned(),
        (n, false) => format!("leaves out the {n} oldest messages"),
        (n, true) => format!("leaves out the {n} oldest messages and shortens long outputs"),
    };
    format!(
        "this request {what} so that it fits the window (the journal keeps everything whole); \
         the next turn tries to compact again"
    )
}

/// The stop message when nothing more can be cut: names the largest part that is too big and
/// what the user can do about it.
fn too_big_message(ctx: &TurnCtx<'_>) -> String {
    let session = &*ctx.session;
    let budget = session.budget();
    let usable = budget.limits().usable_input;
    let view = session.render();
    let plain = crate::compaction::plain::of(&view, |item| session.known_tokens(item));
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
    let hints = session.hints();
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
            "the handoff note needs about {note} tokens; {} writes a shorter one, or {}",
            hints.compact_with_focus(),
            hints.larger_window()
        )
    } else {
        format!(
            "the last round needs about {rest} tokens even with every output and message in it \
             cut to 1 KB; ask for the next step in a shorter message (the journal keeps this \
             one) or {}",
            hints.larger_window()
        )
    };
    format!(
        "the conversation cannot fit the {usable} tokens this model accepts even after \
         compaction: {part}"
    )
}

#[cfg(test)]
mod tests {
    use super::trimmed_notice;

    #[test]
    fn a_trimmed_request_says_only_what_it_did() {
        let bounded_only = trimmed_notice(0, true);
        assert!(bounded_only.starts_with("this request shortens long outputs"), "{bounded_only}");
        assert!(!bounded_only.contains('0'), "no \"0 oldest messages\": {bounded_only}");
        assert!(trimmed_notice(1, false).contains("leaves out the oldest message so"));
        assert!(trimmed_notice(7, true).contains("the 7 oldest messages and shortens"));
    }
}
