//! The scenarios of `codewhale eval` (docs/compaction.md, *Measuring what survives: `codewhale
//! eval`*): their file format and the journal entries a scenario's turns become.
//!
//! A scenario is a JSON file (`assets/eval/*.json`): user turns, each with scripted assistant
//! steps (texts, tool calls with their results), marks where a compaction pass runs, and probes
//! (a question, an answer key and a category). Nothing here calls a model: the scripted turns
//! are written as they are, so every run compacts the same conversation.
//!
//! Steps: `{"say": TEXT}` is an assistant text; `{"call": TOOL, "input": {...}, "result":
//! TEXT}` an assistant tool call and its result, `repeat` times (`{n}` in the input's strings
//! and the result is the repetition's number), the result padded with `filler` bytes of neutral
//! rows around it (half before, half after) — digits, no words, so that neither a
//! key nor a probe's words can be found in them. A turn's `pad` appends that many bytes of neutral
//! text to the user's message.

use codewhale_journal::{AssistantPayload, Block, Payload, ToolResultPayload, UserPayload};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The categories of docs/compaction.md, *Measuring what survives: `codewhale eval`*.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::EnumIter,
)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Constraint,
    Decision,
    Artifact,
    Recall,
    Plan,
    Continuation,
}

impl Category {
    /// Every category, in the order reports list them.
    pub fn all() -> impl Iterator<Item = Category> {
        <Category as strum::IntoEnumIterator>::iter()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Constraint => "constraint",
            Category::Decision => "decision",
            Category::Artifact => "artifact",
            Category::Recall => "recall",
            Category::Plan => "plan",
            Category::Continuation => "continuation",
        }
    }

    /// Facts of these categories are also scored by whether `recall` finds them.
    pub fn recallable(self) -> bool {
        matches!(self, Category::Artifact | Category::Recall)
    }
}

/// A question with its answer key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    pub category: Category,
    pub question: String,
    /// A case-insensitive substring, or a regular expression when `regex` is set.
    pub key: String,
    #[serde(default)]
    pub regex: bool,
}

/// One assistant step of a turn.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    #[serde(default)]
    pub say: Option<String>,
    #[serde(default)]
    pub call: Option<String>,
    #[serde(default)]
    pub input: Value,
    #[serde(default)]
    pub result: String,
    #[serde(default)]
    pub is_error: bool,
    #[serde(default)]
    pub repeat: Option<usize>,
    #[serde(default)]
    pub filler: usize,
}

/// One user turn.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    pub user: String,
    #[serde(default)]
    pub pad: usize,
    #[serde(default)]
    pub steps: Vec<Step>,
    /// A compaction pass runs after this turn.
    #[serde(default)]
    pub compact: bool,
}

/// A whole scenario.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub about: String,
    pub turns: Vec<Turn>,
    pub probes: Vec<Probe>,
}

/// The built-in scenarios, in name order.
const BUILT_IN: [(&str, &str); 8] = [
    ("agentic-40-calls", include_str!("../../../../assets/eval/agentic-40-calls.json")),
    ("correction-early", include_str!("../../../../assets/eval/correction-early.json")),
    ("decision-and-reason", include_str!("../../../../assets/eval/decision-and-reason.json")),
    ("identifier-in-output", include_str!("../../../../assets/eval/identifier-in-output.json")),
    ("large-last-exchange", include_str!("../../../../assets/eval/large-last-exchange.json")),
    ("last-failure", include_str!("../../../../assets/eval/last-failure.json")),
    ("over-retained-budget", include_str!("../../../../assets/eval/over-retained-budget.json")),
    ("two-step-task", include_str!("../../../../assets/eval/two-step-task.json")),
];

/// Why a scenario cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("there is no built-in scenario named {0:?}; the scenarios are: {1}")]
    Unknown(String, String),
    #[error("scenario {name} is malformed: {message}")]
    Malformed { name: String, message: String },
}

/// Parses and checks one scenario's text.
pub fn parse(name: &str, text: &str) -> Result<Scenario, ScenarioError> {
    let bad = |message: String| ScenarioError::Malformed { name: name.to_owned(), message };
    let scenario: Scenario = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    if scenario.turns.is_empty() || scenario.probes.is_empty() {
        return Err(bad("it needs at least one turn and one probe".into()));
    }
    for (n, turn) in scenario.turns.iter().enumerate() {
        for step in &turn.steps {
            if step.say.is_some() == step.call.is_some() {
                return Err(bad(format!(
                    "a step of turn {} needs exactly one of say and call",
                    n + 1
                )));
            }
        }
    }
    for probe in scenario.probes.iter().filter(|p| p.regex) {
        regex::Regex::new(&probe.key).map_err(|e| bad(format!("key {:?}: {e}", probe.key)))?;
    }
    Ok(scenario)
}

/// The built-in scenarios `names` asks for (all when it is empty), in name order.
pub fn built_in(names: &[String]) -> Result<Vec<Scenario>, ScenarioError> {
    let known = || BUILT_IN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
    for name in names {
        if !BUILT_IN.iter().any(|(n, _)| n == name) {
            return Err(ScenarioError::Unknown(name.clone(), known()));
        }
    }
    BUILT_IN
        .iter()
        .filter(|(n, _)| names.is_empty() || names.iter().any(|w| w == n))
        .map(|(n, text)| parse(n, text))
        .collect()
}

/// `bytes` of neutral rows (digits only, which cost tokens like real text does), so a padded
/// text is long without planting anything a probe's words could match.
fn filler(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 64);
    let mut row = 0usize;
    while out.len() < bytes {
        let x = (row as u64).wrapping_mul(2_654_435_761) % 10_000_000_000;
        out.push_str(&format!("{row:05} {x:010} {:010} {:010}\n", x / 3, x / 7));
        row += 1;
    }
    out.truncate(bytes);
    out
}

fn substitute(value: &Value, n: usize) -> Value {
    match value {
        Value::String(s) => Value::String(s.replace("{n}", &n.to_string())),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, n)).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), substitute(v, n))).collect())
        }
        other => other.clone(),
    }
}

/// The payloads turn `index` of a scenario becomes, in chain order.
pub fn turn_payloads(turn: &Turn, index: usize) -> Vec<Payload> {
    let mut out = Vec::new();
    let user = if turn.pad > 0 {
        format!("{}\n\n{}", turn.user, filler(turn.pad))
    } else {
        turn.user.clone()
    };
    out.push(UserPayload::text(user).into());
    for (k, step) in turn.steps.iter().enumerate() {
        if let Some(text) = &step.say {
            out.push(AssistantPayload::new(vec![Block::text(text.clone())]).into());
            continue;
        }
        let Some(name) = &step.call else { continue };
        for n in 0..step.repeat.unwrap_or(1).max(1) {
            let id = format!("eval-{index}-{k}-{n}");
            let input = substitute(&step.input, n);
            out.push(AssistantPayload::new(vec![Block::tool_use(id.clone(), name, input)]).into());
            let result = step.result.replace("{n}", &n.to_string());
            let result = if step.filler > 0 {
                let half = filler(step.filler / 2);
                format!("{half}\n{result}\n{half}")
            } else {
                result
            };
            let mut payload = ToolResultPayload::new(id, result.clone(), step.is_error);
            payload.bytes = Some(result.len() as u64);
            out.push(payload.into());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_scenario_parses_and_all_categories_are_covered() {
        let all = built_in(&[]).unwrap();
        assert_eq!(all.len(), 8);
        for category in Category::all() {
            assert!(
                all.iter().flat_map(|s| &s.probes).any(|p| p.category == category),
                "no probe of {category:?}"
            );
        }
        for s in &all {
            assert!(s.turns.iter().filter(|t| t.compact).count() >= 3, "{} marks < 3", s.name);
        }
        let err = built_in(&["nope".into()]).unwrap_err().to_string();
        assert!(err.contains("two-step-task"), "{err}");
    }

    #[test]
    fn steps_become_calls_and_padded_results() {
        let turn: Turn = serde_json::from_value(serde_json::json!({
            "user": "go", "steps": [
                {"call": "shell", "input": {"command": "step {n}"}, "result": "ok {n}", "repeat": 3},
                {"call": "read_file", "input": {"path": "a"}, "result": "ID-1", "filler": 1000},
                {"say": "done"}
            ]
        }))
        .unwrap();
        let payloads = turn_payloads(&turn, 0);
        assert_eq!(payloads.len(), 1 + 3 * 2 + 2 + 1);
        let Payload::ToolResult(r) = &payloads[6] else { panic!() };
        assert_eq!(r.content.as_str(), "ok 2");
        let Payload::ToolResult(r) = &payloads[8] else { panic!() };
        assert!(r.content.len() > 1000 && r.content.as_str().contains("\nID-1\n"));
        assert!(parse("x", r#"{"name":"x","about":"","turns":[{"user":"u","steps":[{}]}],"probes":[{"category":"plan","question":"q","key":"k"}]}"#).is_err());
    }
}
