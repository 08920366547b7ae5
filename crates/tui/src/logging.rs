//! Logging: `tracing` events go to `$CODEWHALE_HOME/logs/codewhale.log.<date>`, never to the
//! terminal (the terminal belongs to the answer and the UI).
//!
//! The level comes from `CODEWHALE_LOG` (an `EnvFilter` directive, default `info`; `off` turns
//! logging off). Writing happens on a background thread; the returned guard flushes it when
//! dropped, so keep it alive until the process is about to exit. With logging off nothing is
//! set up at all — no file, no thread, no queue — so it costs a one-prompt `exec` nothing.

use std::path::Path;

use tracing::level_filters::LevelFilter;
use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

/// Lines the writer thread may fall behind by before new ones are dropped. The library's
/// default (128,000) makes the queue 4 MB, all touched at start-up (~2 ms of every `exec`);
/// a few thousand lines is far more than a turn logs between two writes of the thread.
const QUEUED_LINES: usize = 4_096;

/// Starts logging under `home/logs`. Returns `None` when logging is off, the directory cannot
/// be created or a logger is already installed; the program then runs without a log rather
/// than failing.
pub fn init(home: &Path) -> Option<WorkerGuard> {
    let filter =
        EnvFilter::try_from_env("CODEWHALE_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    if filter.max_level_hint() == Some(LevelFilter::OFF) {
        return None;
    }
    let dir = home.join("logs");
    codewhale_engine::private::create_dir_all(&dir).ok()?;
    // Today's file is created private before the appender opens it (it appends to it as it
    // is); the folder is private, so a later day's file is out of others' reach too.
    let today = dir.join(format!("codewhale.log.{}", chrono::Utc::now().format("%Y-%m-%d")));
    let _ = codewhale_engine::private::options().append(true).create(true).open(today);
    let appender = tracing_appender::rolling::daily(&dir, "codewhale.log");
    let (writer, guard) =
        NonBlockingBuilder::default().buffered_lines_limit(QUEUED_LINES).finish(appender);
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}
