//! The context report of `codewhale context` and `/context` (DESIGN §7, §8).
//!
//! Built from the journal file alone — never from a provider, and without an API key — so it
//! shows exactly what the next request would contain: the view of HEAD, its token breakdown,
//! the active compaction, the last round and whether the anchors survive. Every total says
//! whether it was reported by the provider or estimated by Codewhale.

use std::path::Path;

use codewhale_journal::{
    load_read_only, render, EntryId, ItemKind, Journal, Payload, Role as JRole, View,
};
use serde::Serialize;

use super::checkpoint::is_checkpoint;
use super::message::Role;
use super::plain::PlainView;
use super::round;
use crate::anchors::{self, AnchorStore};
use crate::budget::Limits;
use crate::config::{self, Overrides};
use crate::error::EngineError;
use crate::prompt::SystemPrompt;
use crate::session::{self, Resume};

/// Token breakdown of the next request.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Tokens {
    pub total: u64,
    /// `reported` or `estimated`.
    pub source: String,
    pub system: u64,
    pub anchors: u64,
    pub checkpoint: u64,
    pub retained: u64,
    pub history: u64,
    pub tool_results: u64,
}

/// The active compaction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ActiveReport {
    pub id: String,
    pub path: String,
    pub trigger: String,
    pub covers: Option<CoversReport>,
    pub retained: usize,
    pub tokens_before: Option<u64>,
    pub tokens_after: Option<u64>,
    pub model: Option<String>,
    /// When the record was written (RFC 3339).
    pub when: String,
}

/// The covered segment of the active compaction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoversReport {
    pub first: String,
    pub last: String,
    pub count: u64,
}

/// The last round of the view.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LastRound {
    pub messages: u64,
    pub tool_results: u64,
    pub assistant_kept: u64,
}

/// The workspace's anchors and whether the view carries them verbatim.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AnchorsReport {
    pub count: usize,
    pub chars: usize,
    pub present: bool,
}

/// One item of the view, in request order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ViewEntry {
    pub id: String,
    pub kind: String,
    pub role: String,
    pub tokens: u64,
}

/// The whole report (the JSON object of `codewhale context --json`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContextReport {
    pub session: String,
    pub head: String,
    pub model: String,
    pub context_window: u64,
    pub window_unverified: bool,
    pub reserved_output: u64,
    pub usable_input: u64,
    pub threshold: u64,
    pub tokens: Tokens,
    pub compaction: Option<ActiveReport>,
    pub compactions: usize,
    pub last_round: LastRound,
    pub anchors: AnchorsReport,
    pub view: Vec<ViewEntry>,
}

/// Which session to report on.
#[derive(Clone, Debug)]
pub struct ReportParams<'a> {
    pub home: &'a Path,
    /// The current directory: `--last` looks for its newest session; config is read from it.
    pub cwd: &'a Path,
    pub resume: Resume,
    pub overrides: Overrides,
}

/// Loads the session `params` names and reports on its HEAD.
pub fn context_report(params: &ReportParams<'_>) -> Result<ContextReport, EngineError> {
    let path = match &params.resume {
        Resume::Id(id) => session::find_by_id(params.home, id)?,
        Resume::Last => session::find_last(params.home, params.cwd)?,
        Resume::New => session::find_last(params.home, params.cwd)?,
    };
    let journal = load_read_only(&path).map_err(|e| EngineError::Open(e.into()))?.journal;
    let workspace = Path::new(&journal.header().cwd).to_path_buf();
    let config = config::load(params.home, &workspace, &params.overrides)?;
    let model = params
        .overrides
        .model
        .clone()
        .or_else(|| config.model.clone())
        .unwrap_or_else(|| journal.header().model.clone());
    let limits = Limits::for_model(&config, &model);
    let system = system_tokens(&workspace);
    // Compared in their redacted form, as the checkpoint holds them.
    let redactor =
        crate::redact::Redactor::new(&config.redaction.patterns, &[]).unwrap_or_default();
    let anchors_text = AnchorStore::new(&workspace)
        .text()
        .ok()
        .flatten()
        .map(|a| redactor.redact(&a).into_owned());
    Ok(build(&journal, &model, &limits, system, anchors_text.as_deref()))
}

fn system_tokens(workspace: &Path) -> u64 {
    let mut text = SystemPrompt::load(workspace).text();
    if let Ok(schemas) = serde_json::to_string(&crate::tools::specs()) {
        text.push_str(&schemas);
    }
    u64::from(crate::tokens::count(&text))
}

/// The report for `journal`'s HEAD: pure, given the figures from outside the journal.
pub fn build(
    journal: &Journal,
    model: &str,
    limits: &Limits,
    system: u64,
    anchors_text: Option<&str>,
) -> ContextReport {
    let view = render(journal, journal.head_id().as_str());
    let plain = PlainView::new(&view, |item| item.tokens);
    let retained: Vec<&EntryId> = view
        .compaction
        .as_ref()
        .map(|c| c.record.retained_ids.iter().collect())
        .unwrap_or_default();
    let mut tokens = Tokens { system, ..Tokens::default() };
    let mut entries = Vec::with_capacity(view.items.len());
    for (item, &n) in view.items.iter().zip(&plain.tokens) {
        let kind = match item.kind {
            ItemKind::Checkpoint => {
                tokens.checkpoint += n;
                "checkpoint"
            }
            ItemKind::Anchor => {
                tokens.anchors += n;
                "anchor"
            }
            ItemKind::ToolResult => {
                tokens.tool_results += n;
                "tool_result"
            }
            kind if retained.contains(&&item.source) => {
                tokens.retained += n;
                kind.as_str()
            }
            kind => {
                tokens.history += n;
                kind.as_str()
            }
        };
        let role = match item.role {
            JRole::User => "user",
            JRole::Assistant => "assistant",
        };
        entries.push(ViewEntry {
            id: item.source.to_string(),
            kind: kind.into(),
            role: role.into(),
            tokens: n,
        });
    }
    let estimate = system + plain.total();
    let (total, source) = match reported(&view, journal, &plain) {
        Some(r) if r >= estimate => (r, "reported"),
        _ => (estimate, "estimated"),
    };
    tokens.total = total;
    tokens.source = source.into();

    let round_start = round::last_round_start(&plain.messages).unwrap_or(0);
    let round = &plain.messages[round_start.min(plain.messages.len())..];
    let last_round = LastRound {
        messages: round.len() as u64,
        tool_results: round.iter().map(|m| m.tool_result_ids().count() as u64).sum(),
        assistant_kept: round.iter().filter(|m| m.role == Role::Assistant).count() as u64,
    };
    let anchors = match anchors_text {
        Some(text) => {
            let present = super::survival::carries(&plain.messages, text);
            AnchorsReport {
                count: anchors::parse(text).len(),
                chars: text.chars().count(),
                present,
            }
        }
        None => AnchorsReport { present: true, ..AnchorsReport::default() },
    };
    let compaction = view.compaction.as_ref().map(|c| ActiveReport {
        id: c.id.to_string(),
        path: c.record.path.as_str().to_owned(),
        trigger: c.record.trigger.as_str().to_owned(),
        covers: c.record.covers.as_ref().map(|v| CoversReport {
            first: v.first.to_string(),
            last: v.last.to_string(),
            count: v.count,
        }),
        retained: c.record.retained_ids.len(),
        tokens_before: c.record.tokens_before,
        tokens_after: c.record.tokens_after,
        model: c.record.model.clone(),
        when: journal.get(c.id.as_str()).map(|e| e.ts.to_string()).unwrap_or_default(),
    });
    debug_assert!(plain.messages.iter().filter(|m| is_checkpoint(m)).count() <= 1);
    ContextReport {
        session: journal.session_id().to_owned(),
        head: view.head.to_string(),
        model: model.to_owned(),
        context_window: limits.window,
        window_unverified: limits.is_unverified(),
        reserved_output: limits.reserved_output,
        usable_input: limits.usable_input,
        threshold: limits.threshold,
        tokens,
        compaction,
        compactions: journal.compactions().count(),
        last_round,
        anchors,
        view: entries,
    }
}

/// The provider's last reported prompt plus estimates of what came after it, when that report
/// was for this same view (same active compaction).
fn reported(view: &View, journal: &Journal, plain: &PlainView) -> Option<u64> {
    let active = view.compaction.as_ref().map(|c| &c.id);
    let (index, usage) = view.items.iter().enumerate().rev().find_map(|(i, item)| {
        let entry = journal.get(item.source.as_str())?;
        match &entry.payload {
            Payload::Assistant(a) => {
                let usage = a.usage.as_ref()?.input_tokens;
                let same_basis = a.reads.as_ref().map(|r| r.summary.as_ref()) == Some(active);
                same_basis.then_some((i, usage))
            }
            _ => None,
        }
    })?;
    // The same figure the budget takes as the truth for a prompt.
    let reported = usage;
    (reported > 0).then(|| reported + plain.tokens[index..].iter().sum::<u64>())
}

#[cfg(test)]
mod tests {
    use codewhale_journal::{
        AssistantPayload, Block, CompactionPath, CompactionPayload, Covers, Entry, HeaderPayload,
        Journal, Reads, ToolResultPayload, Trigger, Usage, UserPayload,
    };
    use serde_json::json;

    use super::*;
    use crate::budget::WindowSource;
    use crate::compaction::checkpoint::HEADER;

    fn journal_with_compaction() -> Journal {
        let header = Entry::new(None, HeaderPayload::new("s-1", "/w"));
        let mut journal = Journal::new(header.clone()).unwrap();
        let mut parent = header.id.clone();
        let mut push = |journal: &mut Journal, payload: Payload, tokens: u32| {
            let e = Entry::new(Some(parent.clone()), payload).with_tokens(tokens);
            parent = e.id.clone();
            journal.push(e.clone());
            e.id
        };
        let u1 = push(&mut journal, UserPayload::text("first").into(), 10);
        let a1 = push(&mut journal, AssistantPayload::new(vec![Block::text("one")]).into(), 20);
        push(&mut journal, UserPayload::anchor("Never push to main.").into(), 7);
        push(&mut journal, UserPayload::text("second").into(), 10);
        let call = Block::tool_use("t1", "read_file", json!({"path": "a.rs"}));
        push(&mut journal, AssistantPayload::new(vec![call]).into(), 15);
        push(&mut journal, ToolResultPayload::new("t1", "contents", false).into(), 30);
        let mut record = CompactionPayload::new(CompactionPath::Summary, Trigger::Manual);
        record.covers = Some(Covers::new(u1.clone(), a1, 2));
        record.retained_ids = vec![u1];
        record.note = format!("{HEADER}\n\n## Objective\nx");
        record.tokens_before = Some(900);
        record.tokens_after = Some(300);
        let compaction = Entry::new(Some(header.id.clone()), record).with_tokens(50);
        let compaction_id = compaction.id.clone();
        journal.push(compaction);
        let mut answer = AssistantPayload::new(vec![Block::text("done")]);
        answer.usage = Some(Usage { input_tokens: 400, ..Usage::default() });
        answer.reads = Some(Reads::new(journal.head_id().clone(), Some(compaction_id)));
        push(&mut journal, answer.into(), 5);
        journal
    }

    #[test]
    fn the_report_breaks_the_view_down() {
        let journal = journal_with_compaction();
        let limits = Limits::compute(10_000, WindowSource::Config, None, 0.8);
        let report = build(&journal, "m", &limits, 100, Some("Never push to main.\n"));
        let kinds: Vec<&str> = report.view.iter().map(|v| v.kind.as_str()).collect();
        assert_eq!(
            kinds,
            ["user", "checkpoint", "anchor", "user", "assistant", "tool_result", "assistant"]
        );
        let t = &report.tokens;
        assert_eq!(
            (t.system, t.retained, t.checkpoint, t.anchors, t.tool_results),
            (100, 10, 50, 7, 30)
        );
        assert_eq!(t.history, 10 + 15 + 5);
        assert_eq!(t.total, 400 + 5, "reported prompt plus what came after it");
        assert_eq!(t.source, "reported");
        let c = report.compaction.as_ref().unwrap();
        assert_eq!((c.path.as_str(), c.trigger.as_str(), c.retained), ("summary", "manual", 1));
        assert_eq!(report.compactions, 1);
        assert_eq!(
            report.last_round,
            LastRound { messages: 4, tool_results: 1, assistant_kept: 2 }
        );
        assert_eq!(report.anchors, AnchorsReport { count: 1, chars: 20, present: true });
        let json = serde_json::to_value(&report).unwrap();
        for key in [
            "session",
            "head",
            "model",
            "context_window",
            "usable_input",
            "threshold",
            "tokens",
            "compaction",
            "compactions",
            "last_round",
            "anchors",
            "view",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
        let missing = build(&journal, "m", &limits, 100, Some("Use rustls."));
        assert!(!missing.anchors.present);
    }
}
