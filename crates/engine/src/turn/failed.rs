//! A request the provider did not answer: sent again when a smaller or imageless request
//! answers the rejection ([`Retries`]), else the turn stops on it with what streamed kept and
//! one sentence of advice ([`stopped`]).
//!
//! Invariants: a request is sent again only when nothing of its reply streamed; without its
//! images at most once a turn, after an overflow at most [`MAX_OVERFLOW_RETRIES`] times, each
//! time smaller.

use codewhale_journal::Reads;
use codewhale_provider::{ErrorKind, ProviderFailure, Response};

use super::ctx::{TurnCtx, TurnOutcome};
use super::reply::record_response;
use super::{intake, on_context_overflow};
use crate::error::EngineError;
use codewhale_protocol::TurnStatus;

/// How many times one request of a turn is sent again after the provider rejected it as too
/// long: each time smaller (an unnumbered overflow takes 10 % off the window at least), so a
/// window far below the catalog's is found within a turn.
const MAX_OVERFLOW_RETRIES: u32 = 4;

/// What a turn has tried so far against the provider's rejections.
#[derive(Debug, Default)]
pub(super) struct Retries {
    overflows: u32,
    images_retried: bool,
}

impl Retries {
    /// Whether the request `failure` ended is sent again: without images, once, after the
    /// provider refused them; smaller after it overflowed the window, while retries are left
    /// and the compaction seam made room.
    pub(super) async fn again(
        &mut self,
        ctx: &mut TurnCtx<'_>,
        failure: &ProviderFailure,
        estimate: u64,
    ) -> Result<bool, EngineError> {
        if failure.error.rejects_images()
            && ctx.carries_images
            && !self.images_retried
            && failure.partial.is_none()
        {
            self.images_retried = true;
            intake::images_refused(ctx, &failure.error);
            return Ok(true);
        }
        // Each retry follows a compaction or a smaller window, so it is a shorter
        // request; a provider that keeps rejecting stops the turn after a few.
        if failure.error.is_context_overflow()
            && self.overflows < MAX_OVERFLOW_RETRIES
            && failure.partial.is_none()
        {
            self.overflows += 1;
            if on_context_overflow(ctx, &failure.error, estimate).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// A wait the provider asked for, as a person would say it: "45 s", "3 min", "2 h 5 min".
fn human_wait(wait: std::time::Duration) -> String {
    let secs = wait.as_secs().max(1);
    match secs {
        0..=119 => format!("{secs} s"),
        120..=7199 => format!("{} min", secs.div_ceil(60)),
        _ => format!("{} h {} min", secs / 3600, (secs % 3600).div_ceil(60)),
    }
}

/// The request failed or was cancelled: keep what streamed, report, and end the turn.
pub(super) fn stopped(
    ctx: &mut TurnCtx<'_>,
    failure: ProviderFailure,
    reads: Reads,
) -> Result<TurnOutcome, EngineError> {
    let text = failure.partial.as_ref().map(Response::text).unwrap_or_default();
    if let Some(partial) = failure.partial.as_ref().filter(|p| !p.content.is_empty()) {
        record_response(ctx, partial, reads, 0, true)?;
    }
    if failure.error.kind == ErrorKind::Cancelled {
        return Ok(TurnOutcome { status: TurnStatus::Interrupted, text });
    }
    let hints = ctx.session.hints();
    let advice = match failure.error.kind {
        ErrorKind::ContextOverflow { .. } => format!(
            "; the conversation still does not fit the model's window after compacting: {} writes \
             a shorter note, or {}",
            hints.compact_with_focus(),
            hints.larger_window()
        ),
        ErrorKind::Auth => "; check the API key".to_owned(),
        ErrorKind::RateLimited { retry_after: Some(wait) } => {
            format!("; the provider asks to wait {} before the next request", human_wait(wait))
        }
        ErrorKind::RateLimited { .. } | ErrorKind::Overloaded | ErrorKind::Network => {
            "; try again in a moment".to_owned()
        }
        _ => String::new(),
    };
    let message = format!("the model request failed: {}{advice}", failure.error);
    ctx.fail(crate::error::provider_kind(&failure.error.kind), message);
    Ok(TurnOutcome { status: TurnStatus::Failed, text })
}
