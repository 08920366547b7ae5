//! One module per subcommand. Each exposes a `run` returning the process exit code.

pub mod anchor;
pub mod compact;
pub mod context;
pub mod eval;
pub mod exec;
pub mod export;
pub mod extensions;
pub mod import;
pub mod interactive;
pub mod journal_check;
pub mod local_servers;
pub mod mcp;
pub mod notices;
pub mod prompt;
pub mod resume;
pub mod rewind;
pub mod sandbox;
pub mod sessions;
pub mod survival_check;

use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// The workspace a command works in: `-C DIR` when given, else the current directory.
pub(crate) fn workspace_dir(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    match flag {
        Some(dir) => Ok(dir.to_path_buf()),
        None => std::env::current_dir().context("cannot read the current directory"),
    }
}

/// The async runtime a command runs the engine on. Two workers are all one session needs, and
/// fewer threads keep start-up cheap.
///
/// One blocking-pool thread is started at once and, like every blocking thread, kept for the
/// whole session: when the OS refuses a new thread (a fork bomb in a shell command filling the
/// process table), tokio queues blocking work on the threads it has, and it panics ("OS can't
/// spawn worker thread") only when it has none — which an idle timeout would otherwise allow.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_keep_alive(BLOCKING_KEEP_ALIVE)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    drop(runtime.spawn_blocking(|| ()));
    Ok(runtime)
}

/// How long an idle blocking thread is kept: longer than any session.
const BLOCKING_KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(365 * 24 * 3600);
