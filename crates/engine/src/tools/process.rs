//! The process groups of the shell calls still running in one session: every command gets a
//! group of its own ([`codewhale_process`]), and every group ends with the call that started it
//! — or with the session. Invariant: a group is registered exactly while its call runs, so
//! closing the session ends what is still running and never signals a group that is over.

use std::collections::HashSet;
use std::sync::Mutex;

use codewhale_process::end_group_blocking;

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
