//! `codewhale sessions [--json]`.

use std::path::Path;
use std::process::ExitCode;

/// Lists the sessions under `home/sessions`, newest first.
pub fn run(home: &Path, _json: bool) -> anyhow::Result<ExitCode> {
    anyhow::bail!("listing sessions in {} is not available yet", home.display())
}
