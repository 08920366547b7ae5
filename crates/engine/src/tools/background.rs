//! The registry of background commands (`shell{background: true}`): pid, command, log file and
//! the TCP ports they listen on.
//!
//! Owns the children it starts: a task per command waits for it to exit and then runs what the
//! command's end must do (the guard's check, `tools::guard`). Compaction reads
//! [`BackgroundRegistry::running`] to write the "Running now" list of a handoff note.
//! Invariants: a command that exited is reaped and no longer listed; ports are read from
//! `/proc/net/tcp{,6}` for every process in the command's process group, so a server started
//! through a wrapper script is still found; when the engine shuts down, every command still
//! running is ended with its process group (SIGTERM, then SIGKILL after a grace period) —
//! unless the configuration asks to keep them (`[shell] keep_background = true`) — and the
//! end of every command is handled once, by its task or by the shutdown, whichever comes
//! first.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::process::Child;

/// What is done once when a background command has ended.
pub type OnEnd = Box<dyn FnOnce() + Send>;

/// A command's end, done once: by its task when it exits, or at shutdown.
#[derive(Clone, Default)]
struct Ending {
    exited: Arc<AtomicBool>,
    on_end: Arc<Mutex<Option<OnEnd>>>,
}

impl Ending {
    /// Runs the job once. The slot stays locked while it runs, so a second caller (shutdown,
    /// while the command's own task is checking it) returns only once the first is done: what
    /// the check says is said before the session closes, never after its last event.
    fn run(&self) {
        let mut slot = self.on_end.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(job) = slot.take() {
            job();
        }
    }
}

use super::cgroup::CallCgroup;

/// A background command as listed to the model and the UI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningCommand {
    /// Registry-local id (`bg-1`, `bg-2` ...).
    pub id: String,
    pub pid: u32,
    pub command: String,
    /// Where its combined output goes.
    pub log: PathBuf,
    /// TCP ports it listens on, ascending.
    pub ports: Vec<u16>,
}

struct Entry {
    id: String,
    pid: u32,
    command: String,
    log: PathBuf,
    ending: Ending,
    /// The command's capped cgroup, ended (whatever is left in it killed) with the command.
    cgroup: Option<CallCgroup>,
}

/// Background commands of one engine.
pub struct BackgroundRegistry {
    log_dir: PathBuf,
    /// Leave commands running when the session closes.
    keep_on_exit: bool,
    next: Mutex<u32>,
    entries: Mutex<Vec<Entry>>,
}

impl std::fmt::Debug for BackgroundRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundRegistry").field("log_dir", &self.log_dir).finish()
    }
}

impl BackgroundRegistry {
    /// A registry writing command logs under `log_dir` (created on first use).
    pub fn new(log_dir: PathBuf) -> BackgroundRegistry {
        BackgroundRegistry {
            log_dir,
            keep_on_exit: false,
            next: Mutex::new(0),
            entries: Mutex::new(Vec::new()),
        }
    }

    /// The same registry, leaving its commands running when the session closes.
    pub fn keeping_on_exit(mut self, keep: bool) -> BackgroundRegistry {
        self.keep_on_exit = keep;
        self
    }

    /// The next id and the log file path for it.
    pub(crate) fn reserve(&self) -> std::io::Result<(String, PathBuf)> {
        codewhale_journal::private::create_dir_all(&self.log_dir)?;
        let n = {
            let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
            *next += 1;
            *next
        };
        let id = format!("bg-{n}");
        let log = self.log_dir.join(format!("{}-{id}.log", std::process::id()));
        Ok((id, log))
    }

    /// Registers a started command; a task waits for it and then runs `on_end` (on a
    /// blocking thread).
    pub(crate) fn insert(
        &self,
        id: String,
        command: String,
        log: PathBuf,
        mut child: Child,
        cgroup: Option<CallCgroup>,
        on_end: Option<OnEnd>,
    ) -> u32 {
        let pid = child.id().unwrap_or_default();
        let ending = Ending {
            exited: Arc::new(AtomicBool::new(false)),
            on_end: Arc::new(Mutex::new(on_end)),
        };
        let waiter = ending.clone();
        tokio::spawn(async move {
            let _ = child.wait().await;
            waiter.exited.store(true, Ordering::SeqCst);
            let _ = tokio::task::spawn_blocking(move || waiter.run()).await;
        });
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.push(Entry { id, pid, command, log, ending, cgroup });
        pid
    }

    /// Commands still running, with their listening ports. Exited ones are reaped here.
    pub fn running(&self) -> Vec<RunningCommand> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain_mut(|e| {
            let alive = !e.ending.exited.load(Ordering::SeqCst);
            if !alive {
                // What the command left behind in its cgroup ends with it.
                if let Some(cgroup) = e.cgroup.take() {
                    cgroup.end_blocking();
                }
            }
            alive
        });
        let listening = listening_inodes();
        entries
            .iter()
            .map(|e| RunningCommand {
                id: e.id.clone(),
                pid: e.pid,
                command: e.command.clone(),
                log: e.log.clone(),
                ports: ports_of_group(e.pid, &listening),
            })
            .collect()
    }

    /// Ends every command still running, with its process group, unless the registry keeps
    /// them on exit.
    pub fn shutdown(&self) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if !self.keep_on_exit {
            for e in entries.iter_mut() {
                if !e.ending.exited.load(Ordering::SeqCst) {
                    codewhale_process::end_group_blocking(e.pid);
                }
                if let Some(cgroup) = e.cgroup.take() {
                    cgroup.end_blocking();
                }
                // Checked now, before the session closes, if its task has not yet.
                e.ending.run();
            }
        }
        entries.clear();
    }
}

impl Drop for BackgroundRegistry {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Socket inode → port, for every TCP socket in LISTEN state.
fn listening_inodes() -> HashMap<u64, u16> {
    let mut map = HashMap::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(table) {
            parse_tcp_table(&text, &mut map);
        }
    }
    map
}

/// Parses a `/proc/net/tcp` table: `sl local rem st ... uid timeout inode`.
fn parse_tcp_table(text: &str, out: &mut HashMap<u64, u16>) {
    for line in text.lines().skip(1) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 10 || fields[3] != "0A" {
            continue;
        }
        let port = fields[1].rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok());
        let inode = fields[9].parse::<u64>().ok();
        if let (Some(port), Some(inode)) = (port, inode) {
            out.insert(inode, port);
        }
    }
}

/// Ports listened on by any process whose process group is `pgid`.
fn ports_of_group(pgid: u32, listening: &HashMap<u64, u16>) -> Vec<u16> {
    let mut ports = Vec::new();
    if listening.is_empty() {
        return ports;
    }
    for pid in group_members(pgid) {
        let Ok(fds) = std::fs::read_dir(Path::new("/proc").join(pid.to_string()).join("fd")) else {
            continue;
        };
        for fd in fds.filter_map(Result::ok) {
            let Ok(target) = std::fs::read_link(fd.path()) else { continue };
            let target = target.to_string_lossy();
            let inode = target
                .strip_prefix("socket:[")
                .and_then(|s| s.strip_suffix(']'))
                .and_then(|s| s.parse::<u64>().ok());
            if let Some(port) = inode.and_then(|i| listening.get(&i)) {
                ports.push(*port);
            }
        }
    }
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// Pids whose process group is `pgid` (from `/proc/<pid>/stat`).
fn group_members(pgid: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return pids };
    for entry in dir.filter_map(Result::ok) {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // The command name may contain spaces and parentheses; fields resume after the last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { continue };
        let group = rest.split_whitespace().nth(2).and_then(|g| g.parse::<u32>().ok());
        if group == Some(pgid) {
            pids.push(pid);
        }
    }
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_listening_sockets_only() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000\n   1: 0100007F:0050 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 4243 1 0000\n";
        let mut map = HashMap::new();
        parse_tcp_table(table, &mut map);
        assert_eq!(map.len(), 1);
        assert_eq!(map.get(&4242), Some(&8080));
    }
}
