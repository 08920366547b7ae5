//! The three triggers (DESIGN §5.1) as calls the turn loop and the engine make.
//!
//! `auto` and `reactive` run inside a turn and share its pass budget
//! ([`crate::turn::hooks::MAX_PASSES_PER_TURN`]); `manual` runs between turns. None of them
//! loops: each runs at most one pass per call, and the caller decides what happens next.

use codewhale_journal::Trigger;
use codewhale_provider::CancellationToken;

use super::pass::{self, PassOutcome, PassRequest};
use crate::events::EventSink;
use crate::protocol::SubmissionId;
use crate::session::Session;
use crate::turn::hooks::MAX_PASSES_PER_TURN;
use crate::turn::TurnCtx;

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
