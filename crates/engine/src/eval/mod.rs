//! `codewhale eval` (docs/compaction.md, *Measuring what survives: `codewhale eval`*): how much of
//! what matters survives compaction, measured on scripted scenarios.
//!
//! For each scenario [`run`] writes the scripted turns into a fresh session (no model plays
//! them), and at each marked point (the first `passes` marks) runs a manual compaction pass
//! through the real engine with the configured provider as the summarizer. After each pass it
//! scores the floor (see [`score`]); after the last one, unless `floor_only`, it asks each
//! probe as a new user turn on a fork of the compacted session (tools on, `recall` included)
//! and matches the reply against the key, moving HEAD back before the next probe.
//!
//! Everything runs in its own home under `$CODEWHALE_HOME/eval/` (the user's `config.toml` is
//! copied in, so the same provider, model and `compaction_model` apply), with an empty
//! workspace, and is kept there afterwards: the report names each scenario's session, whose
//! notes can be read with `codewhale context`.

pub mod scenario;
pub mod score;

use std::path::{Path, PathBuf};
use std::time::Instant;

use codewhale_journal::{load_read_only, render, Entry, HeaderPayload, JournalFile};

use crate::config::{Env, Overrides};
use crate::engine::{Engine, EngineParams};
use crate::error::EngineError;
use crate::session::Resume;
use codewhale_protocol::{Event, Op};
use scenario::Scenario;
pub use score::EvalReport;
use score::{PassReport, ProbeScore, ScenarioReport};

/// What to run.
#[derive(Clone, Debug)]
pub struct EvalParams {
    /// The user's Codewhale home (its `config.toml` is used; runs are kept under `eval/`).
    pub home: PathBuf,
    pub overrides: Overrides,
    pub env: Env,
    /// Scenario names; empty means all.
    pub scenarios: Vec<String>,
    /// At most this many passes per scenario (at its first marks).
    pub passes: usize,
    pub floor_only: bool,
    /// Overrides the provider client's retry policy (tests use fast retries).
    pub retry: Option<codewhale_provider::RetryPolicy>,
}

/// Why a run stopped.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    Scenario(#[from] scenario::ScenarioError),
    #[error("cannot prepare the evaluation directory {path}: {source}")]
    Setup { path: PathBuf, source: std::io::Error },
    #[error("scenario {scenario}: {message}")]
    Run { scenario: String, message: String },
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Runs the scenarios; `progress` hears one line per step (the command line prints it on
/// stderr).
pub async fn run(params: &EvalParams, progress: &dyn Fn(&str)) -> Result<EvalReport, EvalError> {
    let scenarios = scenario::built_in(&params.scenarios)?;
    let started = Instant::now();
    let root = prepare(&params.home)?;
    let mut report = EvalReport {
        model: params.overrides.model.clone().unwrap_or_default(),
        floor_only: params.floor_only,
        scenarios: Vec::new(),
        categories: Default::default(),
        per_pass: Vec::new(),
        tokens_in: 0,
        tokens_out: 0,
        elapsed_ms: 0,
    };
    for (n, s) in scenarios.iter().enumerate() {
        progress(&format!("[{}/{}] {}: {}", n + 1, scenarios.len(), s.name, s.about));
        let scenario_report = run_one(params, &root, s, &mut report, progress).await?;
        report.scenarios.push(scenario_report);
    }
    report.tally();
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

/// A fresh home for this run, with the user's configuration.
fn prepare(home: &Path) -> Result<PathBuf, EvalError> {
    let root = home.join("eval").join(uuid::Uuid::now_v7().hyphenated().to_string());
    let setup = |path: &Path| {
        let path = path.to_path_buf();
        move |source| EvalError::Setup { path, source }
    };
    std::fs::create_dir_all(root.join("workspace")).map_err(setup(&root))?;
    std::fs::create_dir_all(root.join("sessions")).map_err(setup(&root))?;
    // Each probe is answered on the compacted session and HEAD goes back after it: a summary of
    // the probe's branch would be read by the next probe, so none is written (the workspace's
    // file, which wins over the user's, says so).
    let ws_config = crate::config::workspace_file(&root.join("workspace"));
    if let Some(dir) = ws_config.parent() {
        std::fs::create_dir_all(dir).map_err(setup(dir))?;
    }
    std::fs::write(&ws_config, "[compaction]\nbranch_summaries = false\n")
        .map_err(setup(&ws_config))?;
    let config = crate::config::user_file(home);
    if config.is_file() {
        std::fs::copy(&config, crate::config::user_file(&root)).map_err(setup(&config))?;
    }
    Ok(root)
}

fn engine_params(params: &EvalParams, root: &Path, resume: Resume) -> EngineParams {
    EngineParams {
        home: root.to_path_buf(),
        workspace: root.join("workspace"),
        overrides: params.overrides.clone(),
        env: params.env.clone(),
        resume,
        interactive: false,
        retry: params.retry.clone(),
        front_end: crate::hints::FrontEnd::Cli,
        home_hint: None,
        sandbox_helper: None,
    }
}

async fn run_one(
    params: &EvalParams,
    root: &Path,
    s: &Scenario,
    report: &mut EvalReport,
    progress: &dyn Fn(&str),
) -> Result<ScenarioReport, EvalError> {
    let started = Instant::now();
    let fail = |message: String| EvalError::Run { scenario: s.name.clone(), message };
    let (session_id, file) = create_session(params, root, &fail)?;
    let path = file.path().to_path_buf();
    let mut file = Some(file);
    let mut probes = unscored(s);
    let mut passes = Vec::new();
    for (index, turn) in s.turns.iter().enumerate() {
        append_turn(&mut file, &path, turn, index, &fail)?;
        if !turn.compact || passes.len() >= params.passes {
            continue;
        }
        if let Some(f) = file.take() {
            f.close().map_err(|e| fail(e.to_string()))?;
        }
        progress(&format!("  pass {} after turn {}…", passes.len() + 1, index + 1));
        let pass = compact(params, root, &session_id, &mut report.model).await?;
        // Every request counts, the summarizer's included.
        report.tokens_in += pass.tokens_in;
        report.tokens_out += pass.tokens_out;
        progress(&format!(
            "  pass {}: {} ({} → {} tokens)",
            passes.len() + 1,
            pass.outcome,
            pass.tokens_before,
            pass.tokens_after
        ));
        passes.push(pass);
        score_floor(params, root, &session_id, s, &mut probes).map_err(fail)?;
    }
    if let Some(f) = file.take() {
        f.close().map_err(|e| fail(e.to_string()))?;
    }
    if passes.is_empty() {
        score_floor(params, root, &session_id, s, &mut probes).map_err(fail)?;
    }
    if !params.floor_only {
        answer(params, root, &session_id, s, &mut probes, report, progress).await?;
    }
    Ok(ScenarioReport {
        name: s.name.clone(),
        session: session_id,
        passes,
        probes,
        elapsed_ms: started.elapsed().as_millis() as u64,
    })
}

/// A new session in the evaluation's `root`, for one scenario: its id and its journal.
fn create_session(
    params: &EvalParams,
    root: &Path,
    fail: &dyn Fn(String) -> EvalError,
) -> Result<(String, JournalFile), EvalError> {
    let session_id = uuid::Uuid::now_v7().hyphenated().to_string();
    let workspace = std::fs::canonicalize(root.join("workspace"))
        .map_err(|e| fail(format!("the workspace is gone: {e}")))?;
    let mut header = HeaderPayload::new(session_id.clone(), workspace.display().to_string());
    header.app_version = env!("CARGO_PKG_VERSION").to_owned();
    header.model = params.overrides.model.clone().unwrap_or_default();
    let file = JournalFile::create_session(&root.join("sessions"), header)
        .map_err(|e| fail(e.to_string()))?;
    Ok((session_id, file))
}

/// The scenario's probes, nothing scored yet.
fn unscored(s: &Scenario) -> Vec<ProbeScore> {
    s.probes
        .iter()
        .map(|p| ProbeScore {
            category: p.category,
            question: p.question.clone(),
            key: p.key.clone(),
            in_view: Vec::new(),
            via_recall: p.category.recallable().then(Vec::new),
            answered: None,
        })
        .collect()
}

/// Appends turn `index` of the scenario to the session's journal at `path`, opening it again
/// when a pass closed it.
fn append_turn(
    file: &mut Option<JournalFile>,
    path: &Path,
    turn: &scenario::Turn,
    index: usize,
    fail: &dyn Fn(String) -> EvalError,
) -> Result<(), EvalError> {
    let journal_file = match file.as_mut() {
        Some(f) => f,
        None => {
            let (f, _) = JournalFile::open(path).map_err(|e| fail(e.to_string()))?;
            file.insert(f)
        }
    };
    for payload in scenario::turn_payloads(turn, index) {
        let parent = journal_file.journal().head_id().clone();
        journal_file.append(Entry::new(Some(parent), payload)).map_err(|e| fail(e.to_string()))?;
    }
    Ok(())
}

/// One manual pass through the engine.
async fn compact(
    params: &EvalParams,
    root: &Path,
    session: &str,
    model: &mut String,
) -> Result<PassReport, EvalError> {
    let resume = Resume::Id(session.to_owned());
    let (handle, mut events) = Engine::spawn(engine_params(params, root, resume))?;
    handle.submit(Op::Compact { focus: None });
    let mut out = PassReport {
        outcome: "failed".into(),
        tokens_before: 0,
        tokens_after: 0,
        note: String::new(),
        tokens_in: 0,
        tokens_out: 0,
    };
    let mut written = None;
    while let Some(msg) = events.recv().await {
        match msg.event {
            Event::SessionConfigured { model: m, .. } => *model = m,
            Event::CompactionFinished { id, tokens_before, tokens_after, note, .. } => {
                out.outcome = "compacted".into();
                (out.tokens_before, out.tokens_after, out.note) =
                    (tokens_before, tokens_after, note);
                written = Some(id);
                break;
            }
            Event::CompactionRefused { reason } => {
                out.outcome = format!("refused: {reason}");
                break;
            }
            Event::CompactionFailed { reason } => {
                out.outcome = format!("failed: {reason}");
                break;
            }
            Event::Error { message, .. } => {
                out.outcome = format!("failed: {message}");
                break;
            }
            _ => {}
        }
    }
    shutdown(handle, &mut events).await;
    // What its summary requests read and wrote, from the record the pass wrote.
    if let Some(id) = written {
        let path = root.join("sessions").join(format!("{session}.jsonl"));
        if let Ok(loaded) = load_read_only(&path) {
            let record = loaded.journal.compactions().find(|(e, _)| e.id.as_str() == id);
            if let Some((_, record)) = record {
                (out.tokens_in, out.tokens_out) = crate::compaction::record::usage(record);
            }
        }
    }
    Ok(out)
}

async fn shutdown(handle: crate::EngineHandle, events: &mut crate::EventReceiver) {
    handle.submit(Op::Shutdown);
    while let Some(msg) = events.recv().await {
        if matches!(msg.event, Event::ShutdownComplete) {
            break;
        }
    }
}

/// Scores the floor of every probe on the session file as it stands: in the request the
/// session would send next (trimmed, with its notice, when the session failed open) and in
/// what `recall` returns with that request's trim in its scope.
fn score_floor(
    params: &EvalParams,
    root: &Path,
    session: &str,
    s: &Scenario,
    probes: &mut [ProbeScore],
) -> Result<(), String> {
    let workspace = root.join("workspace");
    let next = crate::context_report::next_request(&crate::offline::ReportParams {
        home: root,
        cwd: &workspace,
        resume: Resume::Id(session.to_owned()),
        overrides: params.overrides.clone(),
    })
    .map_err(|e| e.to_string())?;
    let mut text = score::view_text(&next.view);
    if let Some(notice) = &next.notice {
        text.push_str(notice);
    }
    let journal = &next.journal;
    let whole = render(journal, journal.head_id().as_str());
    for (probe, scored) in s.probes.iter().zip(probes.iter_mut()) {
        scored.in_view.push(score::matches(probe, &text));
        if let Some(v) = scored.via_recall.as_mut() {
            let found = score::recall_text(journal, &whole, next.cut.as_ref(), probe);
            v.push(score::matches(probe, &found));
        }
    }
    Ok(())
}

/// Asks every probe on a fork of the compacted session.
async fn answer(
    params: &EvalParams,
    root: &Path,
    session: &str,
    s: &Scenario,
    probes: &mut [ProbeScore],
    report: &mut EvalReport,
    progress: &dyn Fn(&str),
) -> Result<(), EvalError> {
    let head = {
        let path = root.join("sessions").join(format!("{session}.jsonl"));
        let journal = load_read_only(&path)
            .map_err(|e| EvalError::Run { scenario: s.name.clone(), message: e.to_string() })?
            .journal;
        journal.head_id().to_string()
    };
    let resume = Resume::Id(session.to_owned());
    let (handle, mut events) = Engine::spawn(engine_params(params, root, resume))?;
    for (n, (probe, scored)) in s.probes.iter().zip(probes.iter_mut()).enumerate() {
        progress(&format!("  probe {}/{}: {}", n + 1, s.probes.len(), probe.question));
        let id = handle.submit(Op::UserInput {
            text: probe.question.clone(),
            attachments: Vec::new(),
            images: Vec::new(),
        });
        let mut reply = String::new();
        while let Some(msg) = events.recv().await {
            if msg.id != id {
                continue;
            }
            if let Event::TurnFinished { text, stats, .. } = msg.event {
                report.tokens_in += stats.input_tokens;
                report.tokens_out += stats.output_tokens;
                reply = text;
                break;
            }
        }
        scored.answered = Some(score::matches(probe, &reply));
        // Back to the compacted session for the next probe.
        let moved = handle.submit(Op::Checkout { to: head.clone() });
        while let Some(msg) = events.recv().await {
            if msg.id == moved && matches!(msg.event, Event::Usage { .. } | Event::Error { .. }) {
                break;
            }
        }
    }
    shutdown(handle, &mut events).await;
    Ok(())
}
