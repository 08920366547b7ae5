//! `codewhale context [--session ID | --last] [--json]`: what the next request of a session
//! contains (docs/cli.md). Never contacts a provider and needs no API key.
//!
//! `--json` prints the report object as one line; the default is a human-readable summary with
//! a bar of the token breakdown. Every total says whether it was reported or estimated.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use codewhale_engine::offline::{self, ReportParams};
use codewhale_engine::Resume;

use crate::cli::{ContextArgs, GlobalArgs};

/// Prints the report and returns the exit code.
pub fn run(
    home: &Path,
    global: &GlobalArgs,
    workspace: Option<&Path>,
    args: ContextArgs,
) -> anyhow::Result<ExitCode> {
    // A report logs only when asked (`CODEWHALE_LOG`): it is meant to be instant.
    let _log = std::env::var_os("CODEWHALE_LOG").and_then(|_| crate::logging::init(home));
    let cwd = super::workspace_dir(workspace)?;
    let resume = match args.session {
        Some(id) => Resume::Id(id),
        None => Resume::Last,
    };
    let report = offline::context(&ReportParams {
        home,
        cwd: &cwd,
        resume,
        overrides: super::exec::overrides(global),
    })?;
    if args.json {
        outln!("{}", serde_json::to_string(&report).context("cannot encode the report")?);
    } else {
        out!("{}", crate::report_text::human(&report));
    }
    Ok(ExitCode::SUCCESS)
}
