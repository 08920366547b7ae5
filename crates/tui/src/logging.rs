//! Logging: `tracing` events go to `$CODEWHALE_HOME/logs/codewhale.log.<date>`, never to the
//! terminal (the terminal belongs to the answer and the UI).
//!
//! The level comes from `CODEWHALE_LOG` (an `EnvFilter` directive, default `info`). Writing
//! happens on a background thread; the returned guard flushes it when dropped, so keep it
//! alive until the process is about to exit.

use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;

/// Starts logging under `home/logs`. Returns `None` when the directory cannot be created or a
/// logger is already installed; the program then runs without a log rather than failing.
pub fn init(home: &Path) -> Option<WorkerGuard> {
    let dir = home.join("logs");
    std::fs::create_dir_all(&dir).ok()?;
    let appender = tracing_appender::rolling::daily(&dir, "codewhale.log");
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let filter =
        EnvFilter::try_from_env("CODEWHALE_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}
