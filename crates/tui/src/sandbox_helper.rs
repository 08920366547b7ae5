//! The helper the engine starts shell commands through (`codewhale sandbox-exec`, which
//! confines the command and execs it): this very binary, for every front end that opens a
//! session.

use std::path::PathBuf;

/// This binary, as the engine's sandbox helper; `None` when it cannot be found (commands then
/// run unconfined, and the sandbox report says so).
pub fn path() -> Option<PathBuf> {
    std::env::current_exe().ok()
}
