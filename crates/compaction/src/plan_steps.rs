//! The live plan as compaction reads it in plain messages: whether a note or a kept call
//! carries each step (the survival contract's plan rule), and the plan a fixture's original
//! view holds. The plan itself — its tool, parsing, the live plan on a spine — is
//! the engine's `plan` module; its parsing is [`crate::plan`].

use super::message::{Message, Part, Role};
use crate::plan::{parse, TOOL};
use codewhale_protocol::plan::Plan;

/// The newest valid `update_plan` call among plain messages (the fixture matrix's case of the
/// live plan: its original view holds the call).
pub fn in_messages(messages: &[Message]) -> Option<Plan> {
    messages.iter().rev().filter(|m| m.role == Role::Assistant).find_map(|m| {
        m.content
            .iter()
            .rev()
            .filter_map(|p| match p {
                Part::ToolUse { name, input, .. } if name == TOOL => parse(input).ok(),
                _ => None,
            })
            .next()
    })
}

/// The steps of `steps` that `messages` do not carry verbatim, either in a text block (the
/// note's `## Plan`) or in a valid `update_plan` call.
pub fn carried(messages: &[Message], steps: &[String]) -> Vec<String> {
    let mut missing = Vec::new();
    for step in steps {
        let found = messages.iter().flat_map(|m| &m.content).any(|p| match p {
            Part::Text { text } => text.contains(step.as_str()),
            Part::ToolUse { name, input, .. } if name == TOOL => {
                parse(input).is_ok_and(|plan| plan.steps.iter().any(|s| &s.step == step))
            }
            _ => false,
        });
        if !found {
            missing.push(step.clone());
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// An `update_plan` input of these (step, status) pairs.
    fn steps(list: &[(&str, &str)]) -> Value {
        let steps: Vec<Value> =
            list.iter().map(|(s, st)| json!({"step": s, "status": st})).collect();
        json!({ "steps": steps })
    }

    #[test]
    fn carried_finds_steps_in_a_note_or_a_call() {
        let note = Message::new(Role::User, vec![Part::text("## Plan\n- [done] Fix it")]);
        assert!(carried(std::slice::from_ref(&note), &["Fix it".into()]).is_empty());
        assert_eq!(carried(&[note], &["Test it".into()]), ["Test it"]);
        let call = Message::new(
            Role::Assistant,
            vec![Part::tool_use("c", TOOL, steps(&[("Test it", "pending")]))],
        );
        assert!(carried(std::slice::from_ref(&call), &["Test it".into()]).is_empty());
        assert_eq!(in_messages(&[call]).unwrap().steps[0].step, "Test it");
    }
}
