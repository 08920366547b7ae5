//! Scoring and reporting `codewhale eval`: whether a probe's key is in a text, what the
//! post-compaction request carries, and the report (JSON for machines, a table for people).
//!
//! The floor needs no model: `in_view` is whether the key is in the request the compacted
//! session would send (every text block, tool-call input and tool result of the view), and
//! `via_recall` whether `recall` with the probe's own words returns it. A key that is nowhere
//! is a miss — the scorer can fail, which a test pins.

use std::collections::BTreeMap;

use codewhale_journal::{ItemContent, Journal, View};
use serde::{Deserialize, Serialize};

use super::scenario::{Category, Probe};
use crate::redact::Redactor;

/// Whether `text` holds `probe`'s key (case-insensitive).
pub fn matches(probe: &Probe, text: &str) -> bool {
    if probe.regex {
        regex::RegexBuilder::new(&probe.key)
            .case_insensitive(true)
            .build()
            .is_ok_and(|r| r.is_match(text))
    } else {
        text.to_lowercase().contains(&probe.key.to_lowercase())
    }
}

/// Everything the model reads of `view`, as one text.
pub fn view_text(view: &View) -> String {
    let mut out = String::new();
    for item in &view.items {
        match &item.content {
            ItemContent::ToolResult(r) => out.push_str(r.content.as_str()),
            ItemContent::Blocks(blocks) => {
                for block in blocks {
                    if let Some(t) = block.as_text() {
                        out.push_str(t);
                    } else if let Some(call) = block.as_tool_use() {
                        out.push_str(&call.input.to_string());
                    }
                    out.push('\n');
                }
            }
        }
        out.push('\n');
    }
    out
}

/// What `recall` with the probe's question returns on `view` (room is not the limit here),
/// with `trim` what the request it answers cut.
pub fn recall_text(
    journal: &Journal,
    view: &View,
    trim: Option<&crate::recall::RequestCut>,
    probe: &Probe,
) -> String {
    let redactor = Redactor::default();
    let ctx = crate::recall::RecallContext {
        journal,
        view,
        room_chars: 1 << 20,
        redactor: &redactor,
        trim,
    };
    let input = serde_json::json!({"query": probe.question, "max_chars": 1u64 << 20});
    crate::recall::run(&ctx, &input).unwrap_or_default()
}

/// One probe's scores.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeScore {
    pub category: Category,
    pub question: String,
    pub key: String,
    /// After each pass.
    pub in_view: Vec<bool>,
    /// After each pass; only for `artifact` and `recall` probes.
    pub via_recall: Option<Vec<bool>>,
    /// The model's answer on a fork of the final session; `None` with `--floor-only`.
    pub answered: Option<bool>,
}

/// One pass of one scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassReport {
    /// `compacted`, `refused` or `failed`.
    pub outcome: String,
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// The note written (empty when none was).
    pub note: String,
    /// The tokens its summary requests read and wrote, as the provider reported them.
    #[serde(default)]
    pub tokens_in: u64,
    #[serde(default)]
    pub tokens_out: u64,
}

/// One scenario's run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioReport {
    pub name: String,
    pub session: String,
    pub passes: Vec<PassReport>,
    pub probes: Vec<ProbeScore>,
    pub elapsed_ms: u64,
}

/// Hits of one measure, as counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    pub hits: usize,
    pub of: usize,
}

impl Tally {
    fn add(&mut self, hit: bool) {
        self.of += 1;
        self.hits += usize::from(hit);
    }

    fn cell(self) -> String {
        if self.of == 0 {
            return "—".to_owned();
        }
        format!("{}/{} ({}%)", self.hits, self.of, self.hits * 100 / self.of)
    }
}

/// A category's figures after the last pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CategoryTotals {
    pub in_view: Tally,
    pub via_recall: Tally,
    pub answered: Tally,
}

/// The whole run (`codewhale eval --json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    pub model: String,
    pub floor_only: bool,
    pub scenarios: Vec<ScenarioReport>,
    /// After the last pass of each scenario.
    pub categories: BTreeMap<String, CategoryTotals>,
    /// `in_view` and `via_recall` over all probes, after pass 1, 2, ….
    pub per_pass: Vec<CategoryTotals>,
    /// Summary and probe requests' tokens as the provider reported them.
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub elapsed_ms: u64,
}

impl EvalReport {
    /// Fills the totals from the scenarios.
    pub fn tally(&mut self) {
        self.categories.clear();
        self.per_pass.clear();
        for probe in self.scenarios.iter().flat_map(|s| &s.probes) {
            let totals = self.categories.entry(probe.category.as_str().to_owned()).or_default();
            totals.in_view.add(probe.in_view.last().copied().unwrap_or(false));
            if let Some(v) = &probe.via_recall {
                totals.via_recall.add(v.last().copied().unwrap_or(false));
            }
            if let Some(a) = probe.answered {
                totals.answered.add(a);
            }
            for (pass, hit) in probe.in_view.iter().enumerate() {
                if self.per_pass.len() <= pass {
                    self.per_pass.resize(pass + 1, CategoryTotals::default());
                }
                self.per_pass[pass].in_view.add(*hit);
                if let Some(hit) = probe.via_recall.as_ref().and_then(|v| v.get(pass)) {
                    self.per_pass[pass].via_recall.add(*hit);
                }
            }
        }
    }

    /// The table for people.
    pub fn table(&self) -> String {
        let mut out =
            format!("{:<14}{:>16}{:>16}{:>16}\n", "category", "in_view", "via_recall", "answered");
        for (name, t) in &self.categories {
            let answered = if self.floor_only { "—".to_owned() } else { t.answered.cell() };
            out.push_str(&format!(
                "{name:<14}{:>16}{:>16}{answered:>16}\n",
                t.in_view.cell(),
                t.via_recall.cell()
            ));
        }
        for (n, p) in self.per_pass.iter().enumerate() {
            out.push_str(&format!(
                "after pass {}: in_view {} · via_recall {}\n",
                n + 1,
                p.in_view.cell(),
                p.via_recall.cell()
            ));
        }
        out.push_str(
            "in_view: the fact is in the next request after the pass · via_recall: `recall` \
             finds it in the journal · answered: the model's answer to the probe holds it\n",
        );
        let probes: usize = self.scenarios.iter().map(|s| s.probes.len()).sum();
        out.push_str(&format!(
            "{} scenarios, {probes} probes, {} tokens in, {} out (every request, the summaries' \
             included), {:.1} s\n",
            self.scenarios.len(),
            self.tokens_in,
            self.tokens_out,
            self.elapsed_ms as f64 / 1000.0
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(key: &str, regex: bool) -> Probe {
        Probe { category: Category::Artifact, question: "q".into(), key: key.into(), regex }
    }

    #[test]
    fn keys_match_case_insensitively_and_as_regexes() {
        assert!(matches(&probe("bld-7q4", false), "the id is BLD-7Q4-ZETA"));
        assert!(!matches(&probe("BLD-7Q5", false), "the id is BLD-7Q4-ZETA"));
        assert!(matches(&probe(r"step 1\b.*done", true), "Step 1 is DONE"));
        assert!(!matches(&probe("(", true), "("), "a bad pattern never matches");
    }

    /// The harness can fail: a key that was never planted is a miss in the request and through
    /// recall, while a planted one is found.
    #[test]
    fn a_key_absent_from_the_request_is_a_miss() {
        use codewhale_journal::{Entry, HeaderPayload, UserPayload};
        let header = Entry::new(None, HeaderPayload::new("s", "/w"));
        let mut journal = Journal::new(header.clone()).unwrap();
        let planted = Entry::new(Some(header.id.clone()), UserPayload::text("the port is 48213"));
        journal.push(planted);
        let view = codewhale_journal::render(&journal, journal.head_id().as_str());
        let text = view_text(&view);
        assert!(matches(&probe("48213", false), &text));
        let absent = probe("KEY-NEVER-PLANTED", false);
        assert!(!matches(&absent, &text));
        assert!(!matches(&absent, &recall_text(&journal, &view, None, &absent)));
    }

    #[test]
    fn the_table_names_every_category_and_pass() {
        let mut report = EvalReport {
            model: "m".into(),
            floor_only: true,
            scenarios: vec![ScenarioReport {
                name: "s".into(),
                session: "x".into(),
                passes: Vec::new(),
                probes: vec![ProbeScore {
                    category: Category::Plan,
                    question: "q".into(),
                    key: "k".into(),
                    in_view: vec![true, false],
                    via_recall: None,
                    answered: None,
                }],
                elapsed_ms: 5,
            }],
            categories: BTreeMap::new(),
            per_pass: Vec::new(),
            tokens_in: 0,
            tokens_out: 0,
            elapsed_ms: 5,
        };
        report.tally();
        let table = report.table();
        assert!(table.contains("plan") && table.contains("0/1 (0%)"), "{table}");
        assert!(table.contains("after pass 1: in_view 1/1 (100%)"), "{table}");
    }
}
