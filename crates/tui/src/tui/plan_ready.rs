//! "Plan ready — start in: auto-edit / ask / stay in plan": offered when a turn in plan mode
//! ends after the model presented its plan with `update_plan` (docs/configuration.md, *Plan
//! mode*). Choosing a mode asks the engine to switch to it and start a turn whose message is
//! "Carry out the plan." (`Op::CarryOutPlan`); "stay in plan" (or Esc) sends nothing. Enter on
//! the list as it opens chooses `ask`. Typed text is never parsed for a phrase: only this
//! question starts the plan.

use codewhale_protocol::ApprovalMode;

use super::views::{Choice, ChoiceView, ViewAction};

/// The view's title.
pub const TITLE: &str = "Plan ready — start in:";

/// The question, `ask` selected.
pub fn view() -> ChoiceView {
    let start = |mode: ApprovalMode, what: &str| Choice {
        label: format!("{mode} — {what}"),
        action: ViewAction::CarryOutPlan(mode),
    };
    let choices = vec![
        start(ApprovalMode::AutoEdit, "edits run without asking, commands ask"),
        start(ApprovalMode::Ask, "edits and commands ask"),
        Choice { label: "stay in plan — send nothing".to_owned(), action: ViewAction::Close },
    ];
    ChoiceView::new(TITLE, choices, "", "Enter start · Esc stay in plan").selected(1)
}
