//! `codewhale rewind [--session ID | --last] --to ENTRY [--code | --both] [--force]`: move HEAD
//! back to before ENTRY (docs/cli.md), taking back the files tools changed since with `--code`
//! (files only) or `--both`.
//!
//! Prints what changed on stdout. Exit 0 when everything asked for was done; 1 when the op was
//! refused, or when files were left as they are — changed by someone else since (named on
//! stderr; `--force` overwrites them) or impossible to restore.
//!
//! When the rewind leaves a branch worth a summary (docs/journal-format.md, *`branch_summary`*), it
//! waits for the summary before it exits, at most `compaction.branch_summary_timeout_sec`; a
//! summary that could not be written (that timeout, a provider error) is said on stderr and does
//! not change the exit code.

use std::path::Path;
use std::process::ExitCode;

use codewhale_engine::{Engine, EngineParams, Env, Resume};
use codewhale_protocol::{BranchSummaryState, Event, Op, TakeBack};

use crate::cli::{GlobalArgs, RewindArgs};

/// Runs the rewind and returns the exit code.
pub fn run(
    home: &Path,
    global: &GlobalArgs,
    workspace: Option<&Path>,
    args: RewindArgs,
) -> anyhow::Result<ExitCode> {
    let _log = crate::logging::init(home);
    let workspace = super::workspace_dir(workspace)?;
    let resume = match args.session.clone() {
        Some(id) => Resume::Id(id),
        None => Resume::Last,
    };
    let params = EngineParams {
        home: home.to_path_buf(),
        workspace,
        overrides: super::exec::overrides(global),
        env: Env::from_process(),
        resume,
        interactive: false,
        retry: None,
        front_end: codewhale_engine::FrontEnd::Cli,
        home_hint: global.home.clone(),
        // A rewind runs no commands.
        sandbox_helper: None,
    };
    let take = match (args.code, args.both) {
        (_, true) => TakeBack::Both,
        (true, false) => TakeBack::Code,
        (false, false) => TakeBack::Conversation,
    };
    let op = Op::TakeBack { to: args.to, take, fork: false, before: true, force: args.force };
    super::runtime()?.block_on(rewind(params, op))
}

async fn rewind(params: EngineParams, op: Op) -> anyhow::Result<ExitCode> {
    // Restoring files and moving HEAD need no model; only the branch summary does.
    let (handle, mut events) = Engine::spawn_without_model(params)?;
    let id = handle.submit(op);
    let summary = handle.submit(Op::AwaitBranchSummary);
    handle.submit(Op::Shutdown);
    let mut code = ExitCode::SUCCESS;
    let mut answered = false;
    while let Some(msg) = events.recv().await {
        if msg.id == summary {
            match msg.event {
                Event::BranchSummary { state: BranchSummaryState::Written, .. } => {
                    outln!("wrote a summary of the branch left, for the model to read");
                }
                Event::BranchSummary { state: BranchSummaryState::Dropped, reason, .. } => {
                    let why = reason.unwrap_or_else(|| "it could not be written".into());
                    errln!("codewhale: no summary of the branch left was written: {why}");
                }
                _ => {}
            }
            continue;
        }
        if msg.id != id {
            match &msg.event {
                Event::ShutdownComplete => break,
                // What opening the session said: a restore a kill interrupted, completed; a
                // torn tail moved aside.
                Event::Notice { .. } => {
                    if let Some(line) = super::notices::line(&msg.event) {
                        errln!("codewhale: {line}");
                    }
                }
                _ => {}
            }
            continue;
        }
        match msg.event {
            Event::Notice { message, .. } | Event::HeadMoved { message, .. } => {
                answered = true;
                outln!("{message}");
            }
            Event::Error { message, .. } => {
                answered = true;
                errln!("codewhale: {message}");
                code = ExitCode::from(1);
            }
            Event::FilesRestored { outcome } => {
                let elsewhere: Vec<&str> = outcome
                    .skipped
                    .iter()
                    .filter(|p| !outcome.protected.contains(p))
                    .map(String::as_str)
                    .collect();
                if !elsewhere.is_empty() {
                    errln!(
                        "codewhale: left {} as they are: changed by someone else since the tools \
                         wrote them; run again with --force to overwrite them",
                        elsewhere.join(", ")
                    );
                    code = ExitCode::from(1);
                }
                if !outcome.protected.is_empty() {
                    errln!(
                        "codewhale: left {} as they are: git, Codewhale and instruction files \
                         are written back only with a yes; run again with --force to restore them",
                        outcome.protected.join(", ")
                    );
                    code = ExitCode::from(1);
                }
                for (path, why) in &outcome.failed {
                    errln!("codewhale: could not restore {path}: {why}");
                    code = ExitCode::from(1);
                }
            }
            Event::BranchSummary { state: BranchSummaryState::Dropped, reason, .. } => {
                let why = reason.unwrap_or_else(|| "it could not be written".into());
                errln!("codewhale: no summary of the branch left was written: {why}");
            }
            Event::ComposerText { text } => {
                let first = text.lines().next().unwrap_or_default();
                errln!("codewhale: HEAD is before the message \"{first}\"; it was not sent again");
            }
            _ => {}
        }
    }
    if !answered {
        anyhow::bail!(
            "the engine stopped before the rewind finished; see the log in the logs folder of the Codewhale home"
        );
    }
    Ok(code)
}
