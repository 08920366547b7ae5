//! Each request of a turn, up to the moment it is sent (docs/architecture.md, *A turn*): the
//! session readied for it ([`ready`]: plan mode heard, the window probed, the compaction seam,
//! MCP tools fixed), the view rendered ([`rendered`]) and, once fitted, checked and converted
//! into the request with what its reply's entry records of it ([`Outgoing`]).
//!
//! Invariants: nothing is decided from the window before the probe; MCP tools are fixed before
//! the view is fitted, so the fit counts their schemas; a view that fails the check is never
//! sent; a trim notice goes after the system prompt's cache breakpoint.

use codewhale_journal::{Reads, View};
use codewhale_provider::Request;

use super::ctx::TurnCtx;
use super::fit::Trimmed;
use super::{before_request, mode_note};
use crate::convert::{self, RequestParams};
use crate::error::EngineError;
use codewhale_protocol::{Event, NoticeLevel};

/// A request ready to send, and what its reply's entry records of it.
pub(super) struct Outgoing {
    pub request: Request,
    /// The estimate of what is sent, kept with the reply for calibration.
    pub estimate: u64,
    /// What the request read of the journal (`reads`).
    pub reads: Reads,
}

/// Readies the session for the next request: a mode change heard, the window the server states
/// probed, the compaction seam passed, MCP tools fixed.
pub(super) async fn ready(ctx: &mut TurnCtx<'_>) -> Result<(), EngineError> {
    // A Shift+Tab into or out of plan mode during the tool loop is heard here.
    mode_note::sync(ctx)?;
    // The window the local server states, before anything is decided from the window.
    if ctx.session.probe_before_request().await? {
        ctx.emit_usage(None, None);
    }
    before_request(ctx).await?;
    // MCP tools are fixed (or refreshed after a server announced a change) before the
    // view is fitted, so the fit counts their schemas.
    let cancel = ctx.cancel.clone();
    ctx.session.refresh_mcp_tools(&cancel).await;
    Ok(())
}

/// The view at HEAD, with a warning when lines of the session file could not be read back.
pub(super) fn rendered(ctx: &mut TurnCtx<'_>) -> View {
    let view = ctx.session.render();
    let unreadable = ctx.session.journal().take_unreadable();
    if unreadable > 0 {
        ctx.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message: format!(
                "{unreadable} line(s) of the session file could not be read back (the file \
                 changed on disk or the disk failed), so this request leaves them out; \
                 `codewhale journal check` names them"
            ),
        });
    }
    view
}

impl Outgoing {
    /// The request for a fitted `view` (and the trim that fitted it): checked, converted, the
    /// trim's notice after the system prompt, the budget told whether it was trimmed.
    pub(super) fn of(
        ctx: &mut TurnCtx<'_>,
        view: View,
        trimmed: Option<Trimmed>,
    ) -> Result<Outgoing, EngineError> {
        codewhale_journal::check_view(&view)
            .map_err(|source| EngineError::View { source, hint: ctx.session.hints().rewind() })?;
        if let Some(reason) = convert::unreadable_output(&view) {
            return Err(EngineError::Unreadable { reason });
        }
        let mut request = to_request(ctx, &view);
        ctx.carries_images = request.messages.iter().any(|m| {
            m.content.iter().any(|b| matches!(b, codewhale_provider::Block::Image { .. }))
        });
        // After the system prompt's cache breakpoint, so the cached prefix stays as it was.
        if let Some(notice) = trimmed.as_ref().and_then(|t| t.notice.clone()) {
            request.system.push(codewhale_provider::SystemBlock::text(notice));
        }
        let estimate =
            trimmed.as_ref().map_or_else(|| ctx.session.budget().raw_estimate(), |t| t.estimate);
        // The gauge shows what is sent: after a trimmed request, the provider's report of it.
        ctx.session.budget_mut().set_trimmed(trimmed.is_some());
        let mut reads =
            Reads::new(view.head.clone(), view.compaction.as_ref().map(|c| c.id.clone()));
        if let Some(t) = trimmed {
            reads.trimmed_before = t.first;
            reads.bounded = (!t.bounded.is_empty()).then_some(t.bounded);
        }
        drop(view);
        Ok(Outgoing { request, estimate, reads })
    }
}

/// `view` converted for the session's model: its system prompt and tools, the output the window
/// leaves room for, images sent unless the provider refused them.
fn to_request(ctx: &TurnCtx<'_>, view: &View) -> Request {
    let limits = *ctx.session.budget().limits();
    let max_output = codewhale_provider::lookup_model(ctx.session.model())
        .max_output
        .min(limits.reserved_output)
        .max(1);
    let blobs = ctx.session.blob_dir();
    let images = if ctx.session.images_refused() {
        convert::Images::Refused
    } else {
        convert::Images::Send(&blobs)
    };
    convert::to_request(
        view,
        RequestParams {
            model: ctx.session.model(),
            system: ctx.session.system_prompt(),
            tools: ctx.session.tool_specs(),
            max_output_tokens: u32::try_from(max_output).unwrap_or(u32::MAX),
            images,
        },
    )
}
