//! The plan as compaction reads it: an `update_plan` call's arguments checked into a [`Plan`]
//! ([`parse`]) and the `## Plan` section a checkpoint note restates it under ([`section`]).
//!
//! The tool itself (its schema, its confirmation, the live plan of a spine) belongs to the
//! engine; this module holds only what the survival contract must read the same way the tool
//! does, so a step the tool accepted is the step the contract looks for.

use codewhale_protocol::plan::{Plan, PlanStep, StepStatus};
use serde::Deserialize;
use serde_json::Value;

/// The tool's name.
pub const TOOL: &str = codewhale_journal::PLAN_TOOL;

/// At most this many steps.
pub const MAX_STEPS: usize = 50;

/// At most this many characters per step.
pub const MAX_STEP_CHARS: usize = 300;

/// At most this many characters of explanation.
const MAX_EXPLANATION_CHARS: usize = 2_000;

/// The heading a checkpoint note restates the plan under.
pub const SECTION_TITLE: &str = "## Plan";

/// The arguments as sent; checked by [`parse`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    steps: Vec<RawStep>,
    #[serde(default)]
    explanation: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    step: String,
    status: String,
}

/// The plan an `update_plan` call sets, or the sentence the model reads when it cannot be
/// used (what is wrong and how to send it right).
pub fn parse(input: &Value) -> Result<Plan, String> {
    let value = match input {
        // Some servers send the arguments as a JSON string.
        Value::String(s) => serde_json::from_str(s).map_err(|e| {
            format!("the arguments of {TOOL} are not a JSON object: {e}; send an object")
        })?,
        other => other.clone(),
    };
    let args: Args = serde_json::from_value(value).map_err(|e| {
        format!("invalid arguments for {TOOL}: {e}; send {{\"steps\": [{{\"step\", \"status\"}}]}}")
    })?;
    if args.steps.is_empty() {
        return Err(format!("{TOOL} needs at least one step; send the whole plan every time"));
    }
    if args.steps.len() > MAX_STEPS {
        return Err(format!(
            "the plan has {} steps, more than the {MAX_STEPS} allowed; merge small steps into \
             larger ones",
            args.steps.len()
        ));
    }
    if args.explanation.as_ref().is_some_and(|e| e.chars().count() > MAX_EXPLANATION_CHARS) {
        return Err(format!(
            "the explanation is longer than {MAX_EXPLANATION_CHARS} characters; shorten it"
        ));
    }
    let mut steps = Vec::with_capacity(args.steps.len());
    for (n, raw) in args.steps.into_iter().enumerate() {
        let status = match raw.status.as_str() {
            "pending" => StepStatus::Pending,
            "in_progress" => StepStatus::InProgress,
            // `completed` is the word Codex's plan tool uses: models trained on it send it.
            "done" | "completed" => StepStatus::Done,
            other => {
                return Err(format!(
                    "step {} has the unknown status {other:?}; use pending, in_progress or done",
                    n + 1
                ))
            }
        };
        let text = raw.step.trim();
        if text.is_empty() {
            return Err(format!("step {} is empty; describe what the step does", n + 1));
        }
        if text.contains('\n') {
            return Err(format!("step {} spans several lines; keep each step to one line", n + 1));
        }
        let chars = text.chars().count();
        if chars > MAX_STEP_CHARS {
            return Err(format!(
                "step {} is {chars} characters, more than the {MAX_STEP_CHARS} allowed; \
                 shorten it",
                n + 1
            ));
        }
        steps.push(PlanStep { step: text.to_owned(), status });
    }
    let running = steps.iter().filter(|s| s.status == StepStatus::InProgress).count();
    if running > 1 {
        return Err(format!(
            "{running} steps are in_progress; at most one may be: mark the others pending or done"
        ));
    }
    Ok(Plan { steps })
}

/// The `## Plan` section of a note: every step verbatim, with its status.
pub fn section(plan: &Plan) -> String {
    let mut out = String::from(SECTION_TITLE);
    for s in &plan.steps {
        out.push_str(&format!("\n- [{}] {}", s.status.as_str(), s.step));
    }
    out
}
