//! Named points inside multi-step operations where a test can stop the process and kill it.
//!
//! The survival of a kill in the middle of a rewind or an import (docs/security.md, *Durable or
//! failed*) is tested by killing a real process at each step. A process started with
//! `CODEWHALE_PAUSE_AT=<name>` that reaches the point of that name writes `codewhale: paused at
//! <name>` to stderr and waits there until it is killed. Without the variable, reaching a point
//! costs one read of a cached value.

use std::sync::OnceLock;

/// The environment variable that names the point to stop at.
pub const VAR: &str = "CODEWHALE_PAUSE_AT";

/// Stops here, for good, when the process was told to (module docs).
pub fn reached(name: &str) {
    static AT: OnceLock<Option<String>> = OnceLock::new();
    let at = AT.get_or_init(|| std::env::var(VAR).ok().filter(|v| !v.is_empty()));
    if at.as_deref() != Some(name) {
        return;
    }
    // The engine prints nothing else: this is a test's signal, written straight to stderr.
    let mut err = std::io::stderr();
    let _ = std::io::Write::write_fmt(&mut err, format_args!("codewhale: paused at {name}\n"));
    let _ = std::io::Write::flush(&mut err);
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
