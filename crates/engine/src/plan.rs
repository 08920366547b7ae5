//! The model's plan (docs/compaction.md, *The plan (`update_plan`)*, `update_plan`): its schema,
//! validation, the live plan of a branch and how a checkpoint note restates it.
//!
//! The plan is never stored anywhere but in the `update_plan` calls themselves: the live plan
//! of a HEAD is the newest call on its spine whose arguments are valid ([`live_plan`]), found
//! in the journal, so a compaction that covers the call loses nothing, and a fork or a checkout
//! has the plan of its own branch. A call with invalid arguments gets an error result the model
//! reads ([`parse`]) and changes nothing. Every checkpoint note restates the live plan verbatim
//! under [`SECTION_TITLE`] ([`section`]), and the survival contract refuses a view that carries
//! neither that section nor the call ([`carried`]).

use codewhale_journal::{Journal, Payload};
use codewhale_provider::ToolSpec;
use serde_json::json;

/// The tool's name.
pub const TOOL: &str = codewhale_journal::PLAN_TOOL;

pub use codewhale_protocol::plan::{Plan, StepStatus};

pub use codewhale_compaction::plan::{parse, section, MAX_STEPS, MAX_STEP_CHARS};

/// What the model reads after a plan was set.
pub fn confirmation(plan: &Plan) -> String {
    let current = plan.steps.iter().find(|s| s.status == StepStatus::InProgress);
    let next = plan.steps.iter().find(|s| s.status == StepStatus::Pending);
    let mut out = format!("Plan updated: {} of {} steps done.", plan.done(), plan.steps.len());
    if let Some(s) = current {
        out.push_str(&format!(" In progress: {}.", s.step));
    } else if let Some(s) = next {
        out.push_str(&format!(" Next: {}.", s.step));
    } else {
        out.push_str(" Every step is done.");
    }
    out
}

/// The tool's schema.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: TOOL.to_owned(),
        description: "Set your plan for multi-step work: send every step each time, with its \
                      status. At most one step is in_progress. Mark a step done as soon as it \
                      is finished. The plan survives compaction verbatim."
            .to_owned(),
        input_schema: json!({"type": "object", "properties": {
            "steps": {"type": "array", "maxItems": MAX_STEPS, "minItems": 1, "items": {
                "type": "object", "properties": {
                    "step": {"type": "string", "maxLength": MAX_STEP_CHARS, "description": "What the step does, in one line."},
                    "status": {"type": "string", "enum": ["pending", "in_progress", "done"]}
                }, "required": ["step", "status"], "additionalProperties": false
            }},
            "explanation": {"type": "string", "description": "Why the plan changed (optional)."}
        }, "required": ["steps"], "additionalProperties": false}),
    }
}

/// The newest valid `update_plan` call among the tool calls of `payload`.
fn plan_in(payload: &Payload) -> Option<Plan> {
    let Payload::Assistant(a) = payload else { return None };
    a.tool_uses().filter(|c| c.name == TOOL).filter_map(|c| parse(&c.input).ok()).last()
}

/// Where a plan was found, so a later search can stop there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The position of the HEAD it was found for.
    pub head: u32,
    pub plan: Option<Plan>,
}

/// The key under which a compaction record stores the live plan at the time of its pass
/// (`null` when there was none), so finding the plan never has to read what a record covers.
pub const RECORD_KEY: &str = "plan";

/// The live plan at the entry at position `head`: the newest valid `update_plan` call on its
/// spine. `known` is an earlier answer; when its head is on this spine, the walk stops there
/// and uses it, so following a growing conversation costs only the new entries. The walk also
/// stops where the active compaction's covered segment ends (or, for a record that covers
/// nothing, at its splice point): the record holds the plan as it was when the pass ran, which
/// is the newest call up to there — so a long compacted session costs only its kept tail.
pub fn live_plan(journal: &Journal, head: u32, known: Option<&Found>) -> Found {
    let recorded = recorded_plan(journal, head);
    let mut pos = Some(head);
    while let Some(p) = pos {
        if let Some(k) = known.filter(|k| k.head == p) {
            return Found { head, plan: k.plan.clone() };
        }
        if let Some((_, plan)) = recorded.as_ref().filter(|(at, _)| *at == p) {
            return Found { head, plan: plan.clone() };
        }
        // Only replies that call the tool are read (their flag is in the index).
        if journal.has_flags(p, codewhale_journal::flags::PLAN) {
            if let Some(plan) = plan_in(&journal.read_entry(p).payload) {
                return Found { head, plan: Some(plan) };
            }
        }
        pos = journal.parent_at(p);
    }
    Found { head, plan: None }
}

/// Where the walk may stop, and the plan the active record of `head` stored: `None` for a
/// record written before records stored it.
fn recorded_plan(journal: &Journal, head: u32) -> Option<(u32, Option<Plan>)> {
    let active = codewhale_journal::active_compaction_of(journal, &journal.id_at(head))?;
    let stored = active.record.extra.get(RECORD_KEY)?;
    let plan = serde_json::from_value::<Option<Plan>>(stored.clone()).ok()?;
    let at = match &active.record.covers {
        Some(c) => c.last.clone(),
        None => journal.get(active.id.as_str())?.parent.clone()?,
    };
    Some((journal.position(at.as_str())?, plan))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::Value;

    /// An `update_plan` input of these (step, status) pairs.
    pub(crate) fn steps(list: &[(&str, &str)]) -> Value {
        let steps: Vec<Value> =
            list.iter().map(|(s, st)| json!({"step": s, "status": st})).collect();
        json!({ "steps": steps })
    }

    #[test]
    fn a_good_plan_parses_and_counts() {
        let plan =
            parse(&steps(&[("Fix the parser", "done"), ("Add tests", "in_progress")])).unwrap();
        assert_eq!(plan.progress(), "plan 1/2");
        assert_eq!(confirmation(&plan), "Plan updated: 1 of 2 steps done. In progress: Add tests.");
        let text = json!({"steps": [{"step": "a", "status": "pending"}], "explanation": "why"});
        assert!(parse(&Value::String(text.to_string())).is_ok());
        assert_eq!(section(&plan), "## Plan\n- [done] Fix the parser\n- [in_progress] Add tests");
    }

    #[test]
    fn bad_plans_are_sentences_the_model_can_act_on() {
        let two = parse(&steps(&[("a", "in_progress"), ("b", "in_progress")])).unwrap_err();
        assert!(two.contains("2 steps are in_progress"), "{two}");
        let unknown = parse(&steps(&[("a", "started")])).unwrap_err();
        assert!(unknown.contains("unknown status \"started\""), "{unknown}");
        let many: Vec<(String, &str)> = (0..51).map(|i| (format!("s{i}"), "pending")).collect();
        let many: Vec<(&str, &str)> = many.iter().map(|(s, st)| (s.as_str(), *st)).collect();
        assert!(parse(&steps(&many)).unwrap_err().contains("51 steps"));
        let long = "x".repeat(301);
        assert!(parse(&steps(&[(&long, "pending")])).unwrap_err().contains("301 characters"));
        assert!(parse(&json!({"steps": []})).unwrap_err().contains("at least one step"));
        assert!(parse(&json!({"plan": []})).unwrap_err().contains("invalid arguments"));
        assert!(parse(&steps(&[("two\nlines", "done")])).is_err());
    }

    #[test]
    fn completed_is_taken_as_done() {
        let plan =
            parse(&steps(&[("Fix the parser", "completed"), ("Add tests", "pending")])).unwrap();
        assert_eq!(plan.steps[0].status, StepStatus::Done);
        assert_eq!(plan.progress(), "plan 1/2");
        // Restated with the one word the plan uses.
        assert_eq!(section(&plan), "## Plan\n- [done] Fix the parser\n- [pending] Add tests");
    }

    #[test]
    fn the_schema_is_an_object_with_the_fixed_fields() {
        let s = spec();
        assert_eq!(s.name, "update_plan");
        assert_eq!(s.input_schema["required"], json!(["steps"]));
        let item = &s.input_schema["properties"]["steps"]["items"];
        assert_eq!(item["properties"]["status"]["enum"], json!(["pending", "in_progress", "done"]));
        assert_eq!(s.input_schema["properties"]["steps"]["maxItems"], json!(50));
    }

    /// The walk stops at the active record's covered end and takes the plan the record stored;
    /// a record without one (an older version's) makes it read the covered calls.
    #[test]
    fn the_walk_stops_at_a_record_that_stores_the_plan() {
        use codewhale_journal::{
            AssistantPayload, Block, CompactionPath, CompactionPayload, Covers, Entry,
            HeaderPayload, ToolResultPayload, Trigger, UserPayload,
        };
        let build = |stored: Option<Value>| {
            let header = Entry::new(None, HeaderPayload::new("s", "/w"));
            let mut journal = Journal::new(header.clone()).unwrap();
            let mut parent = header.id.clone();
            let mut ids = Vec::new();
            let call = Block::tool_use("c1", TOOL, steps(&[("in the covered call", "done")]));
            let payloads: Vec<Payload> = vec![
                UserPayload::text("go").into(),
                AssistantPayload::new(vec![call]).into(),
                ToolResultPayload::new("c1", "ok", false).into(),
                UserPayload::text("next").into(),
                AssistantPayload::new(vec![Block::text("fine")]).into(),
            ];
            for payload in payloads {
                let e = Entry::new(Some(parent.clone()), payload);
                parent = e.id.clone();
                ids.push(e.id.clone());
                journal.push(e);
            }
            let mut record = CompactionPayload::new(CompactionPath::Summary, Trigger::Manual);
            record.covers = Some(Covers::new(ids[0].clone(), ids[2].clone(), 3));
            record.note = "Codewhale handoff note. x".into();
            if let Some(v) = stored {
                record.extra.insert(RECORD_KEY.into(), v);
            }
            journal.push(Entry::new(Some(header.id.clone()), record));
            journal
        };
        let stored = json!({"steps": [{"step": "as the record stored it", "status": "pending"}]});
        let journal = build(Some(stored));
        let found = live_plan(&journal, journal.head_position(), None);
        assert_eq!(found.plan.unwrap().steps[0].step, "as the record stored it");
        let journal = build(Some(Value::Null));
        assert_eq!(live_plan(&journal, journal.head_position(), None).plan, None);
        let journal = build(None);
        let found = live_plan(&journal, journal.head_position(), None);
        assert_eq!(found.plan.unwrap().steps[0].step, "in the covered call");
    }
}
