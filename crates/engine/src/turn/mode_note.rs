//! Telling the model it is planning (docs/configuration.md, *Plan mode*): before a turn's
//! message and before every request after a tool result, the approval mode in effect is
//! compared with what the model was last told on this branch ([`crate::plan_mode::told`]),
//! and the note that says plan mode began or ended is journaled when they differ. Between two
//! requests a Shift+Tab is therefore heard at the next request, never in the middle of a reply's
//! calls, and a mode changed back and forth while idle costs nothing.

use super::TurnCtx;
use crate::approval::ApprovalMode;
use crate::error::EngineError;

/// Journals the plan-mode note the model needs now, if any (module docs).
pub(super) fn sync(ctx: &mut TurnCtx<'_>) -> Result<(), EngineError> {
    if let Some(mode) = ctx.gate.take_mode() {
        ctx.session.set_approval_mode(mode);
    }
    let planning = ctx.session.policy().mode() == ApprovalMode::Plan;
    let journal = ctx.session.journal();
    let covered_to = codewhale_journal::active_compaction_of(journal, journal.head_id().as_str())
        .and_then(|a| a.record.covers.as_ref().map(|c| c.last.to_string()));
    let told = crate::plan_mode::told(journal, journal.head_id().as_str(), covered_to.as_deref());
    if planning != told {
        ctx.session.append(crate::plan_mode::note(planning))?;
    }
    Ok(())
}
