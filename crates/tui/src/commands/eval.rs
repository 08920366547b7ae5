//! `codewhale eval [--scenario NAME]... [--passes N] [--floor-only] [--json]`: how well the
//! configured model and settings compact, measured on the built-in scenarios (docs/compaction.md,
//! *Measuring what survives: `codewhale eval`*).
//!
//! Progress goes to stderr while it runs; the report to stdout, as a table or (`--json`) one
//! JSON object. Exit 0 when every scenario ran (whatever the scores), 1 when one could not.

use std::path::Path;
use std::process::ExitCode;

use codewhale_engine::eval::{self, EvalParams};
use codewhale_engine::Env;

use crate::cli::{EvalArgs, GlobalArgs};

/// Runs the scenarios and returns the exit code.
pub fn run(home: &Path, global: &GlobalArgs, args: EvalArgs) -> anyhow::Result<ExitCode> {
    codewhale_engine::warm_up();
    let _log = crate::logging::init(home);
    let params = EvalParams {
        home: home.to_path_buf(),
        overrides: super::exec::overrides(global),
        env: Env::from_process(),
        scenarios: args.scenario,
        passes: usize::from(args.passes),
        floor_only: args.floor_only,
        retry: None,
    };
    let runtime = super::runtime()?;
    let progress = |line: &str| errln!("{line}");
    let report = match runtime.block_on(eval::run(&params, &progress)) {
        Ok(report) => report,
        Err(err) => {
            errln!("codewhale: eval failed: {err}");
            return Ok(ExitCode::from(1));
        }
    };
    if args.json {
        outln!("{}", serde_json::to_string(&report)?);
    } else {
        out!("{}", report.table());
    }
    Ok(ExitCode::SUCCESS)
}
