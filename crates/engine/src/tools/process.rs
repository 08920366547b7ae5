//! Process groups of the commands the shell tool runs: every command gets its own group, and
//! every group ends with the call that started it — or with the session.
//!
//! Ending a group sends SIGTERM to all of it, waits up to [`GRACE`] for it to be gone, then
//! sends SIGKILL to whatever is left. [`ProcessGroups`] keeps the groups of the calls still
//! running so that closing the session ends them too. Signals go through `rustix` (no `unsafe`
//! here). Invariant: a group id is only signalled while its leader has not been reaped by us
//! *or* we still hold it registered, so a recycled id of an unrelated process is never hit
//! after the call is over.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};

/// How long a group has to end after SIGTERM before it is killed.
pub const GRACE: Duration = Duration::from_secs(2);

/// Whether any process of group `pgid` is still alive.
pub fn group_alive(pgid: u32) -> bool {
    pid(pgid).is_some_and(|p| test_kill_process_group(p).is_ok())
}

fn pid(pgid: u32) -> Option<Pid> {
    i32::try_from(pgid).ok().and_then(Pid::from_raw).filter(|p| p.as_raw_nonzero().get() > 1)
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
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    signal_group(pgid, Signal::KILL);
    true
}

/// [`end_group`] for code that cannot await (shutdown paths): TERM, a blocking wait, KILL.
pub fn end_group_blocking(pgid: u32) {
    if !group_alive(pgid) {
        return;
    }
    signal_group(pgid, Signal::TERM);
    let start = std::time::Instant::now();
    while start.elapsed() < GRACE && group_alive(pgid) {
        std::thread::sleep(Duration::from_millis(25));
    }
    signal_group(pgid, Signal::KILL);
}

/// The groups of shell calls still running in one session, and how many processes one call
/// may have ([`super::cgroup`]).
#[derive(Debug)]
pub struct ProcessGroups {
    groups: Mutex<HashSet<u32>>,
    max_processes: u32,
}

impl Default for ProcessGroups {
    fn default() -> ProcessGroups {
        ProcessGroups::with_max_processes(super::cgroup::DEFAULT_MAX_PROCESSES)
    }
}

impl ProcessGroups {
    /// Groups whose calls may each have at most `max` processes (`[shell] max_processes`).
    pub fn with_max_processes(max: u32) -> ProcessGroups {
        ProcessGroups { groups: Mutex::default(), max_processes: max }
    }

    pub fn max_processes(&self) -> u32 {
        self.max_processes
    }

    pub fn insert(&self, pgid: u32) {
        self.groups.lock().unwrap_or_else(|p| p.into_inner()).insert(pgid);
    }

    pub fn remove(&self, pgid: u32) {
        self.groups.lock().unwrap_or_else(|p| p.into_inner()).remove(&pgid);
    }

    /// Ends every group still registered (the session is closing).
    pub fn end_all(&self) {
        let groups: Vec<u32> =
            self.groups.lock().unwrap_or_else(|p| p.into_inner()).drain().collect();
        for pgid in groups {
            end_group_blocking(pgid);
        }
    }
}

impl Drop for ProcessGroups {
    fn drop(&mut self) {
        self.end_all();
    }
}
