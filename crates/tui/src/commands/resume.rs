//! `codewhale resume [SESSION | --last]`: the terminal UI on an existing session.
//!
//! With an id (a unique prefix is enough) that session opens wherever its workspace is; with
//! `--last`, the newest session of the current workspace; with neither, the UI opens on a
//! picker of this workspace's sessions.

use std::path::Path;
use std::process::ExitCode;

use codewhale_engine::Resume;

use crate::cli::GlobalArgs;

/// Opens the session and runs the UI.
pub fn run(
    global: &GlobalArgs,
    workspace: Option<&Path>,
    session: Option<String>,
    last: bool,
) -> anyhow::Result<ExitCode> {
    let resume = match (session, last) {
        (Some(id), _) => Some(Resume::Id(id)),
        (None, true) => Some(Resume::Last),
        (None, false) => None,
    };
    super::interactive::run_with(global, workspace, resume)
}
