//! The survival fixture matrix (docs/survival-contract.md): loading it and running it through
//! [`check`].
//!
//! Format: `{"schema_version":2,"cases":[{"id","expect":"pass|fail","last_round_start"?,
//! "usable_input"?,"anchors"?,"original":[messages],"replacement":[messages]}]}`. Two optional
//! case fields extend it: `rule` (a fail case must fail for this rule, see [`Violation::RULES`])
//! and `path` (`summary`, the default, requires a checkpoint; `prune-only` does not). `anchors`
//! is a string or a list of strings. `usable_input` (tokens) lets a case's toolless tail be
//! measured as the engine measures it: each message counted with o200k, against a quarter of
//! it; without it only the count of user turns ends the walk back. A file that does not have
//! this shape is a [`MatrixError`], never a panic.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Deserializer};

use super::message::{Message, Part};
use super::survival::{check, SurvivalInput, Violation};

/// The only schema version this build reads.
pub const SCHEMA_VERSION: u64 = 2;

/// A matrix that cannot be run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MatrixError {
    #[error("cannot read the matrix {path}: {source}; check the path")]
    Read { path: String, source: std::io::Error },
    #[error(
        "the matrix is not valid JSON of the expected shape: {0}; see docs/survival-contract.md"
    )]
    Json(String),
    #[error("the matrix has schema_version {0}, but this codewhale reads only version 2")]
    Schema(u64),
    #[error("case {case} is malformed: {reason}")]
    Case { case: String, reason: String },
}

/// What a case expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    Pass,
    Fail,
}

/// One case of the matrix.
#[derive(Clone, Debug, Deserialize)]
pub struct Case {
    pub id: String,
    pub expect: Expect,
    #[serde(default)]
    pub last_round_start: Option<usize>,
    /// `U`, in tokens: a toolless tail whose o200k count exceeds a quarter of it is a long
    /// discussion (docs/survival-contract.md, *The last round*).
    #[serde(default)]
    pub usable_input: Option<u64>,
    #[serde(default, deserialize_with = "anchors")]
    pub anchors: Vec<String>,
    /// Branch summary texts that must survive verbatim, like `anchors` (a string or a list).
    #[serde(default, deserialize_with = "anchors")]
    pub branch_summaries: Vec<String>,
    pub original: Vec<Message>,
    pub replacement: Vec<Message>,
    /// Extension: the rule a fail case must break.
    #[serde(default)]
    pub rule: Option<String>,
    /// Extension: `summary` (default) or `prune-only`.
    #[serde(default)]
    pub path: Option<String>,
}

/// A loaded matrix.
#[derive(Clone, Debug, Deserialize)]
pub struct Matrix {
    /// (`schema_version` is checked by [`Matrix::parse`] before the rest is read.)
    pub cases: Vec<Case>,
}

fn anchors<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => Vec::new(),
        Some(OneOrMany::One(s)) => vec![s],
        Some(OneOrMany::Many(v)) => v,
    })
}

/// A case whose verdict differs from what it expects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub id: String,
    pub reason: String,
}

/// The outcome of a run.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub total: usize,
    pub mismatches: Vec<Mismatch>,
}

impl Matrix {
    /// Reads and validates a matrix file.
    pub fn load(path: &Path) -> Result<Matrix, MatrixError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| MatrixError::Read { path: path.display().to_string(), source })?;
        Matrix::parse(&text)
    }

    /// Parses and validates a matrix.
    pub fn parse(text: &str) -> Result<Matrix, MatrixError> {
        let version = serde_json::from_str::<serde_json::Value>(text)
            .map_err(|e| MatrixError::Json(e.to_string()))?
            .get("schema_version")
            .and_then(serde_json::Value::as_u64);
        match version {
            Some(SCHEMA_VERSION) => {}
            Some(other) => return Err(MatrixError::Schema(other)),
            None => {
                return Err(MatrixError::Json(
                    "\"schema_version\" is missing or not a number".into(),
                ))
            }
        }
        let matrix: Matrix =
            serde_json::from_str(text).map_err(|e| MatrixError::Json(e.to_string()))?;
        matrix.validate()?;
        Ok(matrix)
    }

    fn validate(&self) -> Result<(), MatrixError> {
        let mut ids = HashSet::new();
        for (i, case) in self.cases.iter().enumerate() {
            let bad = |reason: String| MatrixError::Case {
                case: if case.id.is_empty() { format!("#{i}") } else { case.id.clone() },
                reason,
            };
            if case.id.trim().is_empty() {
                return Err(bad("its id is empty".into()));
            }
            if !ids.insert(case.id.as_str()) {
                return Err(bad("its id is used by an earlier case".into()));
            }
            if let Some(start) = case.last_round_start {
                if start >= case.original.len() {
                    return Err(bad(format!(
                        "last_round_start {start} is past the end of original ({} messages)",
                        case.original.len()
                    )));
                }
            }
            if case.usable_input == Some(0) {
                return Err(bad(
                    "usable_input is 0; give the window's usable input in tokens".into()
                ));
            }
            if let Some(rule) = &case.rule {
                if !Violation::RULES.contains(&rule.as_str()) {
                    return Err(bad(format!(
                        "rule {rule:?} is unknown; known rules: {}",
                        Violation::RULES.join(", ")
                    )));
                }
            }
            match case.path.as_deref() {
                None | Some("summary") | Some("prune-only") => {}
                Some(other) => {
                    return Err(bad(format!("path {other:?} is neither summary nor prune-only")))
                }
            }
        }
        Ok(())
    }

    /// Runs every case through the survival validator.
    pub fn run(&self) -> Report {
        let mismatches = self.cases.iter().filter_map(run_case).collect();
        Report { total: self.cases.len(), mismatches }
    }
}

fn run_case(case: &Case) -> Option<Mismatch> {
    // The live plan of a case is the newest valid `update_plan` call of its original view.
    let plan_steps: Vec<String> = super::plan_steps::in_messages(&case.original)
        .map(|p| p.steps.into_iter().map(|s| s.step).collect())
        .unwrap_or_default();
    let tokens: Vec<u64> = match case.usable_input {
        Some(_) => case.original.iter().map(message_tokens).collect(),
        None => Vec::new(),
    };
    let tail = case.usable_input.map(|usable| super::round::TailMeasure {
        tokens: &tokens,
        target: super::cut::CutPolicy::new(usable, 1.0).long_tail_target(),
    });
    let violations = check(&SurvivalInput {
        original: &case.original,
        replacement: &case.replacement,
        last_round_start: case.last_round_start,
        tail,
        anchors: &case.anchors,
        branch_summaries: &case.branch_summaries,
        require_checkpoint: case.path.as_deref() != Some("prune-only"),
        plan_steps: &plan_steps,
    });
    let reasons = || violations.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ");
    let reason = match (case.expect, violations.is_empty()) {
        (Expect::Pass, true) => return None,
        (Expect::Pass, false) => format!("expected pass, but {}", reasons()),
        (Expect::Fail, true) => "expected fail, but the replacement passed every rule".to_owned(),
        (Expect::Fail, false) => match &case.rule {
            Some(rule) if !violations.iter().any(|v| v.rule() == rule) => {
                format!("expected rule {rule} to fail, but only: {}", reasons())
            }
            _ => return None,
        },
    };
    Some(Mismatch { id: case.id.clone(), reason })
}

/// A fixture message's o200k count: its texts, its calls (name and input) and its results.
fn message_tokens(message: &Message) -> u64 {
    message
        .content
        .iter()
        .map(|part| {
            let text = match part {
                Part::Text { text } => text.clone(),
                Part::ToolUse { name, input, .. } => format!("{name} {input}"),
                Part::ToolResult { content, .. } => content.to_string(),
                Part::Thinking { thinking, .. } => thinking.clone(),
            };
            u64::from(crate::tokens::count(&text))
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHIPPED: &str = include_str!("../../../../fixtures/compaction/matrix.json");

    #[test]
    fn shipped_matrix_passes_and_covers_every_rule_both_ways() {
        let matrix = Matrix::parse(SHIPPED).unwrap();
        let report = matrix.run();
        assert_eq!(report.mismatches, vec![]);
        assert!(report.total >= 30, "only {} cases", report.total);
        for rule in Violation::RULES {
            assert!(
                matrix
                    .cases
                    .iter()
                    .any(|c| c.expect == Expect::Fail && c.rule.as_deref() == Some(rule)),
                "no fail case for rule {rule}"
            );
        }
        assert!(matrix.cases.iter().filter(|c| c.expect == Expect::Pass).count() >= 12);
    }

    #[test]
    fn a_wrong_expectation_is_reported_with_its_reason() {
        let text = r#"{"schema_version":2,"cases":[{"id":"x","expect":"pass",
            "original":[{"role":"user","content":[{"type":"text","text":"keep me"}]}],
            "replacement":[]}]}"#;
        let report = Matrix::parse(text).unwrap().run();
        assert_eq!(report.mismatches.len(), 1);
        assert!(report.mismatches[0].reason.contains("keep me"), "{:?}", report.mismatches);
    }

    #[test]
    fn malformed_files_are_errors_with_reasons() {
        assert!(matches!(Matrix::parse("{"), Err(MatrixError::Json(_))));
        assert!(matches!(
            Matrix::parse(r#"{"schema_version":1,"cases":[]}"#),
            Err(MatrixError::Schema(1))
        ));
        let dup = r#"{"schema_version":2,"cases":[
            {"id":"a","expect":"pass","original":[],"replacement":[]},
            {"id":"a","expect":"pass","original":[],"replacement":[]}]}"#;
        assert!(matches!(Matrix::parse(dup), Err(MatrixError::Case { .. })));
        let bad_role = r#"{"schema_version":2,"cases":[{"id":"a","expect":"pass",
            "original":[{"role":"robot","content":[]}],"replacement":[]}]}"#;
        assert!(matches!(Matrix::parse(bad_role), Err(MatrixError::Json(_))));
        let past_end = r#"{"schema_version":2,"cases":[{"id":"a","expect":"fail",
            "last_round_start":3,"original":[],"replacement":[]}]}"#;
        let err = Matrix::parse(past_end).unwrap_err().to_string();
        assert!(err.contains("last_round_start 3"), "{err}");
        let zero = r#"{"schema_version":2,"cases":[{"id":"a","expect":"pass",
            "usable_input":0,"original":[],"replacement":[]}]}"#;
        let err = Matrix::parse(zero).unwrap_err().to_string();
        assert!(err.contains("usable_input is 0"), "{err}");
    }

    #[test]
    fn usable_input_measures_the_toolless_tail_and_a_given_round_start_still_wins() {
        let matrix = Matrix::parse(SHIPPED).unwrap();
        let case = |id: &str| matrix.cases.iter().find(|c| c.id == id).unwrap().clone();
        let heavy = case("toolless-tail-over-a-quarter-of-usable-input-keeps-the-latest-turn");
        assert_eq!(run_case(&heavy), None);
        // Without usable_input only the two user turns count: the walk back reaches the tool
        // round, whose first user text the replacement left out.
        let counted = Case { usable_input: None, ..heavy.clone() };
        assert!(run_case(&counted).is_some_and(|m| m.reason.contains("user text")));
        // A given round start wins over both rules.
        let given = Case { last_round_start: Some(0), ..heavy };
        assert!(run_case(&given).is_some());
    }
}
