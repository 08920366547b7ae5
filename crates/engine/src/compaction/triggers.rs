//! The three triggers (DESIGN §5.1) as calls the turn loop and the engine make.
//!
//! `auto` and `reactive` run inside a turn and share its pass budget
//! ([`crate::turn::hooks::MAX_PASSES_PER_TURN`]); `manual` runs between turns. None of them
//! loops: each runs at most one pass per call, and the caller decides what happens next.
//! [`fit_view`] is the fail-open step before every request.

use codewhale_journal::{Entry, Level, SystemPayload, Trigger, View};
use codewhale_provider::CancellationToken;

use super::pass::{self, PassOutcome, PassRequest};
use super::plain::PlainView;
use super::trim::{self, Fit};
use crate::events::EventSink;
use crate::protocol::{Event, NoticeLevel, SubmissionId, TurnStatus};
use crate::session::Session;
use crate::turn::hooks::MAX_PASSES_PER_TURN;
use crate::turn::{TurnCtx, TurnOutcome};

/// Runs one in-turn pass with `trigger` if the turn has passes left; true when it compacted.
pub async fn in_turn(ctx: &mut TurnCtx<'_>, trigger: Trigger) -> bool {
    if ctx.compaction_passes >= MAX_PASSES_PER_TURN {
        tracing::info!(trigger = trigger.as_str(), "no compaction passes left in this turn");
        return false;
    }
    if trigger == Trigger::Auto && !pass::auto_worthwhile(ctx.session) {
        tracing::info!("the last pass could not get below the threshold; waiting for regrowth");
        return false;
    }
    ctx.compaction_passes += 1;
    let events = ctx.events.clone();
    let submission = ctx.submission;
    let emit = move |event| events.emit(submission, event);
    let request = PassRequest { trigger, focus: None };
    pass::run(ctx.session, request, ctx.cancel.clone(), &emit).await.compacted()
}

/// `/compact [focus]` between turns.
pub async fn manual(
    session: &mut Session,
    sink: &EventSink,
    submission: SubmissionId,
    focus: Option<String>,
) -> PassOutcome {
    let sink = sink.clone();
    let emit = move |event| sink.emit(submission, event);
    let request = PassRequest { trigger: Trigger::Manual, focus };
    pass::run(session, request, CancellationToken::new(), &emit).await
}

/// A request sent without its oldest exchanges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trimmed {
    /// The first history item still sent (`reads.trimmed_before`).
    pub first: codewhale_journal::EntryId,
    /// The o200k estimate of what is sent, system prompt included (for calibration).
    pub estimate: u64,
}

/// Fail open: when the view is still over usable input before a request (no pass could make
/// room), sends it without its oldest exchanges. When even the protected round plus anchors
/// cannot fit, the turn stops with a message saying what is protected and what to do (`Err`
/// carries the outcome).
pub fn fit_view(ctx: &mut TurnCtx<'_>, view: View) -> Result<(View, Option<Trimmed>), TurnOutcome> {
    let budget = ctx.session.budget();
    let limits = *budget.limits();
    if budget.pressure().tokens <= limits.usable_input {
        return Ok((view, None));
    }
    let session = &*ctx.session;
    let plain =
        PlainView::new(&view, |item| item.tokens.or_else(|| session.counts.get(&item.source)));
    let fitted =
        trim::fit(view, &plain, budget.system_tokens(), budget.calibration(), limits.usable_input);
    match fitted {
        Fit::Whole(view) => Ok((view, None)),
        Fit::Trimmed { view, first, dropped, estimate } => {
            tracing::warn!(dropped, %first, "request trimmed to fit the window");
            ctx.emit(Event::Notice {
                level: NoticeLevel::Warning,
                message: format!(
                    "compaction could not make room, so this request leaves out the {dropped} \
                     oldest messages (the journal keeps them); the next turn tries to compact \
                     again"
                ),
            });
            Ok((view, Some(Trimmed { first, estimate })))
        }
        Fit::TooBig { protected_tokens, usable_input } => {
            let message = format!(
                "the protected part of the conversation (the last round's messages and tool \
                 exchanges, the anchors and the checkpoint) needs about {protected_tokens} \
                 tokens, more than the {usable_input} this model accepts; run `/compact <focus>` \
                 to summarize it, start a new session with `/new`, or use a model with a \
                 larger window (--context-window)"
            );
            tracing::warn!(protected_tokens, usable_input, "the protected round does not fit");
            ctx.emit(Event::Error { kind: "context_full".into(), message: message.clone() });
            let parent = ctx.session.journal().head_id().clone();
            let notice = Entry::new(Some(parent), SystemPayload::new(Level::Error, message));
            if let Err(err) = ctx.session.append_entry(notice) {
                tracing::error!("cannot journal the notice: {err}");
            }
            Err(TurnOutcome { status: TurnStatus::Failed, text: String::new() })
        }
    }
}
