//! `codewhale journal check FILE`: audits a journal and never modifies it.
//!
//! Exit 0 with a one-line summary (entries, branches, head, compactions) for a sound journal,
//! after a `warning:` line for each informational field read as best it could be (another
//! tool wrote a number as a boolean, say); exit 1 with one line per problem (`line N: what is wrong`) otherwise. A file that is not a
//! journal at all (missing, empty, zero-filled, something else) is an error: one sentence on
//! stderr, exit 1.

use std::path::Path;
use std::process::ExitCode;

/// Validates the journal at `file` without modifying it.
pub fn run(file: &Path) -> anyhow::Result<ExitCode> {
    let report = codewhale_engine::offline::check_journal(file)?;
    for warning in &report.warnings {
        outln!("warning: {warning}");
    }
    if report.problems.is_empty() {
        outln!("{}", report.summary());
        return Ok(ExitCode::SUCCESS);
    }
    for problem in &report.problems {
        outln!("{problem}");
    }
    let n = report.problems.len();
    errln!(
        "{}: {n} {} found (the file was not modified)",
        file.display(),
        if n == 1 { "problem" } else { "problems" }
    );
    Ok(ExitCode::from(1))
}
