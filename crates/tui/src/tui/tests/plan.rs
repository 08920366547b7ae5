//! The plan as the engine reports it: a cell when a call changed it, "plan N/M" in the status
//! line for as long as HEAD has a plan, nothing when it has none.

use codewhale_protocol::{Event, Plan, PlanStep, StepStatus};

use super::Harness;

fn plan() -> Plan {
    let step = |s: &str, status| PlanStep { step: s.into(), status };
    Plan {
        steps: vec![
            step("Rename the loader", StepStatus::Done),
            step("Update its callers", StepStatus::InProgress),
            step("Run the tests", StepStatus::Pending),
        ],
    }
}

fn status(h: &mut Harness) -> String {
    h.screen().lines().last().unwrap_or_default().to_owned()
}

#[test]
fn a_changed_plan_is_a_cell_and_the_status_line_counts_its_steps() {
    let mut h = Harness::new();
    h.engine(0, Event::Plan { plan: Some(plan()), updated: false });
    assert!(status(&mut h).contains("plan 1/3"), "{}", status(&mut h));
    assert!(!h.screen().contains("steps done"), "a plan found at open is not a new cell");
    h.engine(4, Event::Plan { plan: Some(plan()), updated: true });
    let screen = h.screen();
    assert!(screen.contains("◇ 1 of 3 steps done"), "{screen}");
    assert!(screen.contains("▸ Update its callers") && screen.contains("✓ Rename the loader"));
    h.engine(5, Event::Plan { plan: None, updated: false });
    assert!(!status(&mut h).contains("plan "), "{}", status(&mut h));
}
