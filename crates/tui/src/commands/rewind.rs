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
use codewhale_protocol::{BranchSummaryState, Event, Op, RestoreOutcome, TakeBack};

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
    let mut answer = Answer::default();
    while let Some(msg) = events.recv().await {
        if msg.id == summary {
            say_summary(msg.event);
        } else if msg.id == id {
            answer.follow(msg.event);
        } else if let Event::ShutdownComplete = msg.event {
            break;
        } else {
            say_opening(&msg.event);
        }
    }
    if !answer.answered {
        anyhow::bail!(
            "the engine stopped before the rewind finished; see the log in the logs folder of the Codewhale home"
        );
    }
    Ok(if answer.failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The answer to the branch summary awaited: written, or why not (which changes no exit code).
fn say_summary(event: Event) {
    match event {
        Event::BranchSummary { state: BranchSummaryState::Written, .. } => {
            outln!("wrote a summary of the branch left, for the model to read");
        }
        Event::BranchSummary { state: BranchSummaryState::Dropped, reason, .. } => {
            let why = reason.unwrap_or_else(|| "it could not be written".into());
            errln!("codewhale: no summary of the branch left was written: {why}");
        }
        _ => {}
    }
}

/// What opening the session said: a restore a kill interrupted, completed; a torn tail moved
/// aside.
fn say_opening(event: &Event) {
    if let Event::Notice { .. } = event {
        if let Some(line) = super::notices::line(event) {
            errln!("codewhale: {line}");
        }
    }
}

/// What the rewind's own answer said so far: whether it came, and whether anything asked for
/// was left undone (exit code 1).
#[derive(Debug, Default)]
struct Answer {
    answered: bool,
    failed: bool,
}

impl Answer {
    /// One event of the answer, said on stdout or stderr.
    fn follow(&mut self, event: Event) {
        match event {
            Event::Notice { message, .. } | Event::HeadMoved { message, .. } => {
                self.answered = true;
                outln!("{message}");
            }
            Event::Error { message, .. } => {
                self.answered = true;
                errln!("codewhale: {message}");
                self.failed = true;
            }
            Event::FilesRestored { outcome } => self.files_restored(&outcome),
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

    /// Says which files a restore left as they are, and why.
    fn files_restored(&mut self, outcome: &RestoreOutcome) {
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
            self.failed = true;
        }
        if !outcome.protected.is_empty() {
            errln!(
                "codewhale: left {} as they are: git, Codewhale and instruction files \
                 are written back only with a yes; run again with --force to restore them",
                outcome.protected.join(", ")
            );
            self.failed = true;
        }
        for (path, why) in &outcome.failed {
            errln!("codewhale: could not restore {path}: {why}");
            self.failed = true;
        }
    }
}
