//! The model's plan as the front end sees it ([`super::Event::Plan`], `context --json`'s
//! `plan`): types only; the engine's `plan` module validates, finds and restates it.

use serde::{Deserialize, Serialize};

/// Where a step stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Done,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::InProgress => "in_progress",
            StepStatus::Done => "done",
        }
    }
}

/// One step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    pub step: String,
    pub status: StepStatus,
}

/// A plan as the model last set it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub steps: Vec<PlanStep>,
}

impl Plan {
    /// How many steps are done.
    pub fn done(&self) -> usize {
        self.steps.iter().filter(|s| s.status == StepStatus::Done).count()
    }

    /// The status line's short form: `plan 2/5`.
    pub fn progress(&self) -> String {
        format!("plan {}/{}", self.done(), self.steps.len())
    }
}
