//! Process groups: the one way Codewhale ends what it started, for the shell tool's commands
//! and for MCP servers alike.
//!
//! Everything Codewhale spawns that may start children of its own is put in a process group
//! of its own at spawn (`Command::process_group(0)`, so the group id is the child's pid), and
//! is ended as a group: [`end_group`] sends SIGTERM to every process in it, waits up to
//! [`GRACE`] for the group to be gone, then sends SIGKILL to whatever is left. A child that a
//! command or a server left running in the background (`sleep 300 &`) goes with it, even after
//! the leader itself has exited.
//!
//! Signals go through `rustix` (no `unsafe` here). Invariant: a group id is only signalled
//! while the caller still answers for it (its leader not yet reaped, or registered as running),
//! so a recycled id of an unrelated process is never hit; an id of 0 or 1 is never signalled.

use std::time::Duration;

use rustix::process::{kill_process_group, test_kill_process_group, Pid};

pub use rustix::process::Signal;

/// How long a group has to end after SIGTERM before it is killed.
pub const GRACE: Duration = Duration::from_secs(2);

/// How often an ending group is checked for being gone.
const POLL: Duration = Duration::from_millis(25);

/// Whether any process of group `pgid` is still alive.
pub fn group_alive(pgid: u32) -> bool {
    pid(pgid).is_some_and(|p| test_kill_process_group(p).is_ok())
}

/// Sends `signal` to every process of group `pgid`; a group that is already gone is fine.
pub fn signal_group(pgid: u32, signal: Signal) {
    if let Some(p) = pid(pgid) {
        let _ = kill_process_group(p, signal);
    }
}

/// Ends group `pgid`: SIGTERM, up to [`GRACE`] to exit, then SIGKILL. Returns whether anything
/// was still running when it was asked to stop.
pub async fn end_group(pgid: u32) -> bool {
    if !group_alive(pgid) {
        return false;
    }
    signal_group(pgid, Signal::TERM);
    let deadline = tokio::time::Instant::now() + GRACE;
    while tokio::time::Instant::now() < deadline {
        if !group_alive(pgid) {
            return true;
        }
        tokio::time::sleep(POLL).await;
    }
    signal_group(pgid, Signal::KILL);
    true
}

/// [`end_group`] for code that cannot await (shutdown paths, `Drop`): SIGTERM, a blocking
/// wait, SIGKILL.
pub fn end_group_blocking(pgid: u32) {
    if !group_alive(pgid) {
        return;
    }
    signal_group(pgid, Signal::TERM);
    let start = std::time::Instant::now();
    while start.elapsed() < GRACE && group_alive(pgid) {
        std::thread::sleep(POLL);
    }
    signal_group(pgid, Signal::KILL);
}

fn pid(pgid: u32) -> Option<Pid> {
    i32::try_from(pgid).ok().and_then(Pid::from_raw).filter(|p| p.as_raw_nonzero().get() > 1)
}

#[cfg(test)]
mod tests;
