//! The seams where compaction joins the turn loop (docs/compaction.md, *Triggers*).
//!
//! [`before_request`] runs before every model request of a turn, including the requests
//! between tool calls; [`on_context_overflow`] runs when the provider rejects a request as too
//! long, and its `true` makes the turn retry that request once. The turn settles its provisional
//! token counts, then lends itself to the session's
//! [`Compactor`](crate::compaction::compactor::Compactor), which decides and keeps its own
//! standing (the warning said once, the backoff, the background note).
//!
//! Invariants: at most [`MAX_PASSES_PER_TURN`] compaction passes per turn, counted in
//! [`TurnCtx::compaction_passes`]; every turn starts armed — the "past the threshold" warning is
//! said once but never skips a pass, only the backoff after a failed summary does; neither hook
//! ever loops.

use codewhale_provider::ProviderError;

use super::ctx::TurnCtx;
use crate::error::EngineError;

pub use crate::compaction::compactor::MAX_PASSES_PER_TURN;

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
    let (compactor, mut turn) = ctx.lend();
    compactor.before_request(&mut turn).await;
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
    let (compactor, mut turn) = ctx.lend();
    compactor.on_overflow(&mut turn, error, estimate).await
}
