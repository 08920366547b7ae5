//! Building the context report of `/context`, [`codewhale_protocol::Op::GetContext`] and
//! `codewhale context` (docs/commands.md, docs/cli.md).
//!
//! One builder, [`build`], for both: the live session passes its own budget; `codewhale
//! context` replays the same budget from the journal file ([`crate::session::replay`]) —
//! never a provider, never an API key. So the report's total is always the figure the
//! `Usage` gauge shows, with the same label, and the report shows exactly what the next
//! request contains: the view of HEAD, its token breakdown, the active compaction, the last
//! round and whether each anchor is in it.

use std::collections::HashMap;
use std::path::Path;

use codewhale_journal::{load_read_only, render, EntryId, ItemKind, Journal, Role as JRole, View};

use crate::anchors::{self, AnchorStore};
use crate::budget::{Budget, SystemCounts, WindowSource};
use crate::compaction::checkpoint::is_checkpoint;
use crate::compaction::message::Role;
use crate::compaction::plain::PlainView;
use crate::config::{self, Overrides};
use crate::error::EngineError;
use crate::history_pages::{kind_of, trigger_of};
use crate::prompt::SystemPrompt;
use crate::session::{self, counts, replay, Resume};
use codewhale_protocol::report::{
    ActiveReport, AnchorsReport, ContextReport, CoversReport, LastRound, Tokens, ViewEntry,
};

/// Which session to report on.
#[derive(Clone, Debug)]
pub struct ReportParams<'a> {
    pub home: &'a Path,
    /// The current directory: `--last` looks for its newest session; config is read from it.
    pub cwd: &'a Path,
    pub resume: Resume,
    pub overrides: Overrides,
}

/// A session file loaded for a report, with its budget replayed from the journal.
struct Replayed {
    path: std::path::PathBuf,
    journal: Journal,
    config: config::Config,
    workspace: std::path::PathBuf,
    model: String,
    view: View,
    plain: PlainView,
    budget: Budget,
}

/// Loads the session `params` names and replays its budget, never asking a provider.
fn replay_session(params: &ReportParams<'_>) -> Result<Replayed, EngineError> {
    let path = match &params.resume {
        Resume::Id(id) => session::find_by_id(params.home, id)?,
        Resume::Last => session::find_last(params.home, params.cwd)?,
        Resume::New => session::find_last(params.home, params.cwd)?,
    };
    let journal = load_read_only(&path).map_err(|e| EngineError::Open(e.into()))?.journal;
    let workspace = Path::new(&journal.header().cwd).to_path_buf();
    let config = config::load(params.home, &workspace, &params.overrides)?;
    let recorded = replay::journal_limits(&journal);
    let model = params
        .overrides
        .model
        .clone()
        .or_else(|| recorded.model.clone())
        .or_else(|| Some(journal.header().model.clone()).filter(|m| !m.is_empty()))
        .or_else(|| config.model.clone())
        .unwrap_or_default();
    // A window learned for this session holds for its own model, also when `--model` names it;
    // another model ends it (docs/compaction.md, *Small local models*).
    let last_used = recorded.model.clone().unwrap_or_else(|| journal.header().model.clone());
    let other_model = params.overrides.model.as_ref().is_some_and(|m| *m != last_used);
    let learned = if other_model { None } else { recorded.learned_window };
    let mut limits = replay::limits_for(&config, &model, learned);
    // The journal first, then what the server last stated for this base URL and model.
    if matches!(limits.window_source, WindowSource::Default | WindowSource::Catalog) {
        if let Some(stated) = server_window(params.home, &config, &model) {
            limits = limits.with_window(stated.tokens, WindowSource::Probe(stated.source));
        }
    }
    let view = render(&journal, journal.head_id().as_str());
    // Entries whose lines carry no count are counted once and kept in the sidecar, so a
    // report on a session with a huge uncounted output costs that count only the first time.
    let mut known = counts::load_sidecar(&path);
    let loaded = known.len();
    // Every count the report makes is kept — a shortened item's and the checkpoint's under a
    // key of their own — so a report builds the encoder only for text it never counted (its
    // tables are most of a report's memory).
    for item in view.items.iter().filter(|i| i.tokens.is_none()) {
        known
            .entry(count_key(item))
            .or_insert_with(|| counts::Counted::of_item(&item.content).exact());
    }
    let compact = limits.window <= crate::budget::SMALL_WINDOW;
    let child = journal.header().parent_session.is_some();
    let system =
        system_counts(&workspace, &config, params.home, (compact, limits.usable_input), child);
    let plain = crate::compaction::plain::of(&view, |item| {
        item.tokens.or_else(|| known.get(&count_key(item)).copied())
    });
    let mut count = |e: &codewhale_journal::Entry| u64::from(count_once(&mut known, e));
    let budget = replay::replay(&journal, limits, system, plain.total(), &mut count);
    if known.len() > loaded {
        counts::store_sidecar(&path, &known);
    }
    Ok(Replayed { path, journal, config, workspace, model, view, plain, budget })
}

/// Loads the session `params` names and reports on its HEAD, replaying its budget from the
/// journal (`codewhale context`).
pub fn context_report(params: &ReportParams<'_>) -> Result<ContextReport, EngineError> {
    let Replayed { path, journal, config, workspace, model, view, plain, budget } =
        replay_session(params)?;
    // Compared in their redacted form, as the checkpoint holds them.
    let redactor =
        crate::redact::Redactor::new(&config.redaction.patterns, &[]).unwrap_or_default();
    let anchors_text = AnchorStore::new(&workspace)
        .text()
        .ok()
        .flatten()
        .map(|a| redactor.redact(&a).into_owned());
    let mut report = build(&journal, &view, &plain, &budget, &model, anchors_text.as_deref());
    report.file_store_bytes = crate::checkpoint::FileStore::beside(&path).size_bytes();
    let trusted =
        crate::extensions::workspace_trusted(params.home, &workspace, &config.trusted_workspaces);
    let catalog = crate::extensions::Catalog::discover(params.home, &workspace, trusted);
    report.skills = catalog.skills_report(budget.limits().usable_input);
    Ok(report)
}

/// The request the session `params` names would send next, as a turn fits it when no pass can make
/// room (docs/compaction.md, *Triggers*): the view, whole or trimmed; the first item still sent
/// after a left-out one; and the notice a trimmed request ends with. `codewhale eval` scores its
/// floor on this, so it measures what a session that fails open actually sends.
pub struct NextRequest {
    pub journal: Journal,
    pub view: View,
    /// What the request cuts that the view carries whole (`None` when it is the view whole).
    pub cut: Option<crate::recall::RequestCut>,
    pub notice: Option<String>,
}

/// [`NextRequest`] of the session `params` names, its budget replayed from the journal.
pub fn next_request(params: &ReportParams<'_>) -> Result<NextRequest, EngineError> {
    let Replayed { journal, view, plain, budget, config, .. } = replay_session(params)?;
    let usable = budget.limits().usable_input;
    if budget.pressure().tokens <= usable {
        return Ok(NextRequest { journal, view, cut: None, notice: None });
    }
    let plan = crate::plan::live_plan(&journal, journal.head_position(), None).plan;
    let system = budget.system_tokens() + crate::compaction::trim::notice_tokens(plan.as_ref());
    let policy = crate::compaction::cut::CutPolicy {
        retained_tokens: config.compaction.retained_user_tokens,
        ..budget.limits().cut_policy(budget.calibration())
    };
    let fit = |view, shorten| crate::compaction::trim::fit(view, &plain, system, &policy, shorten);
    let fitted = match fit(view, crate::compaction::trim::Shorten::Drop) {
        crate::compaction::trim::Fit::TooBig { view, .. } => {
            fit(view, crate::compaction::trim::Shorten::DropAndBound)
        }
        fitted => fitted,
    };
    Ok(match fitted {
        crate::compaction::trim::Fit::Trimmed { view, first, dropped, bounded, .. } => {
            let notice = (dropped > 0)
                .then(|| crate::compaction::trim::notice(dropped, &first, plan.as_ref()));
            let bounded = bounded.into_iter().map(|b| b.id).collect();
            let cut = crate::recall::RequestCut { first: (dropped > 0).then_some(first), bounded };
            NextRequest { journal, view, cut: Some(cut), notice }
        }
        crate::compaction::trim::Fit::Whole(view)
        | crate::compaction::trim::Fit::TooBig { view, .. } => {
            NextRequest { journal, view, cut: None, notice: None }
        }
    })
}

/// The window the probe cache holds for the server the configuration (and the environment's
/// base URL) points at and `model` (docs/compaction.md, *Small local models*).
fn server_window(
    home: &Path,
    config: &config::Config,
    model: &str,
) -> Option<codewhale_provider::ProbedWindow> {
    let resolved = config.resolve_provider(&config::Env::from_process()).ok()??;
    let mut provider = resolved.provider_config();
    provider.hosted = config.hosted;
    crate::probe::cached_window(home, &provider, model)
}

/// The key a view item's count is kept under in the counts sidecar: its entry's id when it
/// stands for the whole entry; the checkpoint (whose text is its record's note) and a shortened
/// tool result (a stub, or the output cut to a bound) under a key of their own, so they never
/// pass for the entry's count.
fn count_key(item: &codewhale_journal::ViewItem) -> EntryId {
    use codewhale_journal::Shortened;
    let source = item.source.as_str();
    match (item.kind, item.shortened) {
        (ItemKind::Checkpoint, _) => EntryId::from_string(format!("{source}#note")),
        (_, Some(Shortened::Pruned { .. })) => EntryId::from_string(format!("{source}#pruned")),
        (_, Some(Shortened::Bounded { max_bytes, .. })) => {
            EntryId::from_string(format!("{source}#bounded{max_bytes}"))
        }
        (_, Some(Shortened::ImagesCovered { .. })) => {
            EntryId::from_string(format!("{source}#images-covered"))
        }
        (_, None) => item.source.clone(),
    }
}

/// `entry`'s count: stored in its line, kept in `known`, or counted now and kept there.
fn count_once(known: &mut HashMap<EntryId, u32>, entry: &codewhale_journal::Entry) -> u32 {
    if let Some(n) = entry.tokens.or_else(|| known.get(&entry.id).copied()) {
        return n;
    }
    let n = counts::Counted::of_payload(&entry.payload).map_or(counts::exact(""), |c| c.exact());
    known.insert(entry.id.clone(), n);
    n
}

/// The system prompt's and the tool schemas' counts: the built-in tools plus each MCP
/// server's last listed tools (from the cache; no server is started for a report).
/// `compact`: the small window's prefix; `usable_input`: what the skills' 2 % is of. A `task`
/// child (`child`) is counted with the read-only tools a child is given by default, and never
/// `task` (docs/subagents.md).
fn system_counts(
    workspace: &Path,
    config: &config::Config,
    home: &Path,
    (compact, usable_input): (bool, u64),
    child: bool,
) -> SystemCounts {
    let mut specs = crate::tools::specs(compact, config.tools.web_fetch_enabled());
    if child {
        specs.retain(|s| crate::tools::task::READ_ONLY_TOOLS.contains(&s.name.as_str()));
    } else {
        specs.push(crate::tools::task::spec(compact));
    }
    let servers = session::mcp_servers(config, workspace, home);
    specs.extend(session::mcp_specs(&servers.offered_now()));
    let mut prompt = SystemPrompt::load(workspace, compact);
    // The skills as the live session names them.
    let trusted = crate::extensions::workspace_trusted(home, workspace, &config.trusted_workspaces);
    let catalog = crate::extensions::Catalog::discover(home, workspace, trusted);
    prompt.skills = catalog.skill_listing(usable_input).block;
    let prompt = prompt.text();
    counts::system_counts_cached(&prompt, &specs, &home.join("cache").join("system-counts.json"))
}

/// Whether each pinned note of `anchors_text` is carried verbatim by the view.
pub fn anchors_in_view(plain: &PlainView, anchors_text: &str) -> Vec<(String, bool)> {
    anchors::parse(anchors_text)
        .into_iter()
        .map(|a| {
            let present = crate::compaction::survival::carries(&plain.messages, &a);
            (a, present)
        })
        .collect()
}

/// The report for `view` (HEAD's, with `plain` its plain form and counts) under `budget`.
pub fn build(
    journal: &Journal,
    view: &View,
    plain: &PlainView,
    budget: &Budget,
    model: &str,
    anchors_text: Option<&str>,
) -> ContextReport {
    let mut tokens = Tokens {
        system: budget.system().prompt,
        tools: budget.system().schemas,
        ..Tokens::default()
    };
    let entries = view_entries(view, plain, &mut tokens);
    let shown = budget.shown();
    tokens.total = shown.tokens;
    tokens.source = shown.source;
    tokens.left_out = budget.pressure().tokens.saturating_sub(shown.tokens);
    let last_round = last_round(budget, plain);
    let anchors = anchors_report(plain, anchors_text);
    let compaction = active_report(journal, view);
    debug_assert!(plain.messages.iter().filter(|m| is_checkpoint(m)).count() <= 1);
    let limits = budget.limits();
    ContextReport {
        session: journal.session_id().to_owned(),
        head: view.head.to_string(),
        model: model.to_owned(),
        context_window: limits.window,
        window_source: limits.window_source.as_str().to_owned(),
        window_unverified: limits.is_unverified(),
        reserved_output: limits.reserved_output,
        usable_input: limits.usable_input,
        threshold: limits.threshold,
        tokens,
        compaction,
        compactions: journal.compactions().count(),
        last_round,
        anchors,
        plan: journal
            .position(view.head.as_str())
            .and_then(|head| crate::plan::live_plan(journal, head, None).plan),
        background: None,
        view: entries,
        branches: crate::branches::branches(journal),
        file_store_bytes: 0,
        skills: Default::default(),
    }
}

/// Each item of the view with its kind, role and tokens (images apart), its tokens added to
/// `tokens` by what they are.
fn view_entries(view: &View, plain: &PlainView, tokens: &mut Tokens) -> Vec<ViewEntry> {
    let retained: Vec<&EntryId> = view
        .compaction
        .as_ref()
        .map(|c| c.record.retained_ids.iter().collect())
        .unwrap_or_default();
    let mut entries = Vec::with_capacity(view.items.len());
    for (item, &n) in view.items.iter().zip(&plain.tokens) {
        let images = u64::from(counts::image_tokens(item.blocks())).min(n);
        tokens.images += images;
        let n = n - images;
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
            // File contents, like tool output (and pruned like it).
            ItemKind::Attachment => {
                tokens.tool_results += n;
                "attachment"
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
    entries
}

/// The round the cut and the survival contract protect: after a long discussion, the latest
/// turn and the two tool exchanges kept from before it.
fn last_round(budget: &Budget, plain: &PlainView) -> LastRound {
    let policy = budget.limits().cut_policy(budget.calibration());
    let round = policy.round(&plain.messages, &plain.tokens).unwrap_or_default();
    let protected: Vec<&crate::compaction::message::Message> = plain
        .messages
        .iter()
        .enumerate()
        .filter(|(i, _)| *i >= round.start || round.holds_exchange(*i))
        .map(|(_, m)| m)
        .collect();
    LastRound {
        messages: protected.len() as u64,
        tool_results: protected.iter().map(|m| m.tool_result_ids().count() as u64).sum(),
        assistant_kept: protected.iter().filter(|m| m.role == Role::Assistant).count() as u64,
    }
}

/// How many notes are pinned, their length, and whether the view carries each verbatim.
fn anchors_report(plain: &PlainView, anchors_text: Option<&str>) -> AnchorsReport {
    match anchors_text {
        Some(text) => {
            let each = anchors_in_view(plain, text);
            AnchorsReport {
                count: each.len(),
                chars: text.chars().count(),
                present: each.iter().all(|(_, present)| *present),
            }
        }
        None => AnchorsReport { present: true, ..AnchorsReport::default() },
    }
}

/// The compaction the view starts from, if any.
fn active_report(journal: &Journal, view: &View) -> Option<ActiveReport> {
    view.compaction.as_ref().map(|c| ActiveReport {
        id: c.id.to_string(),
        path: kind_of(&c.record.path),
        trigger: trigger_of(&c.record.trigger),
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
    })
}

#[cfg(test)]
mod tests {
    use codewhale_journal::{
        AssistantPayload, Block, CompactionPath, CompactionPayload, Covers, Entry, HeaderPayload,
        Journal, Reads, ToolResultPayload, Trigger, Usage, UserPayload,
    };
    use serde_json::json;

    use super::*;
    use crate::budget::{Limits, WindowSource};
    use crate::compaction::checkpoint::HEADER;
    use codewhale_journal::Payload;

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

    fn report_of(journal: &Journal, anchors: Option<&str>) -> ContextReport {
        let limits = Limits::compute(10_000, WindowSource::Config, None, 0.8);
        let view = render(journal, journal.head_id().as_str());
        let plain = crate::compaction::plain::of(&view, |i| i.tokens);
        let mut count = |e: &Entry| e.tokens.map(u64::from).unwrap_or(0);
        let budget = replay::replay(
            journal,
            limits,
            SystemCounts { prompt: 100, schemas: 0 },
            plain.total(),
            &mut count,
        );
        build(journal, &view, &plain, &budget, "m", anchors)
    }

    #[test]
    fn the_report_breaks_the_view_down() {
        let journal = journal_with_compaction();
        let report = report_of(&journal, Some("Never push to main.\n"));
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
        assert_eq!(t.source, crate::budget::Source::Reported);
        let c = report.compaction.as_ref().unwrap();
        assert_eq!(
            (c.path, c.trigger, c.retained),
            (
                codewhale_protocol::CompactionKind::Summary,
                codewhale_protocol::CompactionTrigger::Manual,
                1
            )
        );
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
            "plan",
            "view",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
        let missing = report_of(&journal, Some("Use rustls."));
        assert!(!missing.anchors.present);
    }
}
