//! A cap on how many processes one shell command may have: each foreground command runs in a
//! pids cgroup of its own (`pids.max`), made for the call and removed with it, so a fork bomb
//! hits the cap instead of filling the machine's process table — which would also leave
//! Codewhale unable to start a thread or a process.
//!
//! Where: under the process's own pids cgroup — the v1 `pids` hierarchy, or on cgroup v2 the
//! own cgroup or its parent when that one hands the `pids` controller to its children (a root
//! cgroup, a delegated systemd unit). Where no such cgroup is writable (an unprivileged user
//! without delegation, a container without a writable cgroup mount) commands run without the
//! cap; that is found once per process and said once in the log.
//!
//! Invariants: the command's leader is moved into the cgroup right after it started, while it
//! still waits on its stdin (the shell tool's gate), so nothing it starts runs outside the
//! cgroup; when the call ends, everything still in the cgroup is killed (so a `setsid`
//! escapee from the process group ends too) and the cgroup is removed. Leftovers of an earlier
//! process of ours whose cgroup could not be removed are removed when found empty.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// The cap when the configuration sets none (`[shell] max_processes`). Threads count too.
pub const DEFAULT_MAX_PROCESSES: u32 = 4096;

/// What the names of our cgroups start with.
const PREFIX: &str = "codewhale-shell-";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// Where calls' cgroups are made.
#[derive(Debug)]
struct Base {
    dir: PathBuf,
    version: Version,
}

static BASE: OnceLock<Option<Base>> = OnceLock::new();
static NEXT: AtomicU64 = AtomicU64::new(0);

fn base() -> Option<&'static Base> {
    BASE.get_or_init(|| {
        let found = find();
        match &found {
            Some(base) => {
                tracing::debug!(dir = %base.dir.display(), "shell commands get a pids cgroup");
                remove_leftovers(&base.dir);
            }
            None => tracing::info!(
                "no writable pids cgroup: shell commands run without a cap on their processes"
            ),
        }
        found
    })
    .as_ref()
}

/// Whether shell commands get a capped cgroup in this process (found once); the tests of the
/// cap skip without one.
#[cfg(any(test, feature = "internals"))]
pub fn available() -> bool {
    base().is_some()
}

/// The pids cgroup this process can make children in, if any.
fn find() -> Option<Base> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let v1 = own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == "pids").then_some(path)
    });
    if let Some(path) = v1 {
        let mount = mount_point(&mounts, |fstype, options| {
            fstype == "cgroup" && options.split(',').any(|o| o == "pids")
        })?;
        let dir = mount.join(path.trim_start_matches('/'));
        return usable(&dir).then_some(Base { dir, version: Version::V1 });
    }
    let path = own.lines().find_map(|line| line.strip_prefix("0::"))?;
    let mount = mount_point(&mounts, |fstype, _| fstype == "cgroup2")?;
    let dir = mount.join(path.trim_start_matches('/'));
    let delegates = |dir: &Path| {
        std::fs::read_to_string(dir.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "pids"))
    };
    [Some(dir.clone()), dir.parent().map(Path::to_path_buf)]
        .into_iter()
        .flatten()
        .find(|d| d.starts_with(&mount) && delegates(d) && usable(d))
        .map(|dir| Base { dir, version: Version::V2 })
}

/// The mount point of the first mount whose file-system type and super options match.
fn mount_point(mountinfo: &str, matches: impl Fn(&str, &str) -> bool) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mount = left.split(' ').nth(4)?;
        let mut right = right.split(' ');
        let (fstype, _source, options) = (right.next()?, right.next()?, right.next()?);
        matches(fstype, options).then(|| PathBuf::from(mount))
    })
}

/// Whether a cgroup can be made under `dir` (tried once: the directory is removed again).
fn usable(dir: &Path) -> bool {
    let probe = dir.join(format!("{PREFIX}{}-probe", std::process::id()));
    let made = std::fs::create_dir(&probe).is_ok() && probe.join("pids.max").exists();
    let _ = std::fs::remove_dir(&probe);
    made
}

/// Removes empty cgroups of ours left by a process that is gone.
fn remove_leftovers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else { continue };
        let owner = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        if owner.is_some_and(|pid| {
            pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists()
        }) {
            // Only an empty cgroup can be removed: a running one is left alone.
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// The cgroup of one call. Removed by [`CallCgroup::end`].
#[derive(Debug)]
pub struct CallCgroup {
    dir: PathBuf,
    version: Version,
    max: u32,
}

impl CallCgroup {
    /// A new cgroup capped at `max` processes, or `None` where none can be made.
    pub fn create(max: u32) -> Option<CallCgroup> {
        let base = base()?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = base.dir.join(format!("{PREFIX}{}-{n}", std::process::id()));
        let made = std::fs::create_dir(&dir)
            .and_then(|()| std::fs::write(dir.join("pids.max"), max.to_string()));
        match made {
            Ok(()) => Some(CallCgroup { dir, version: base.version, max }),
            Err(e) => {
                tracing::warn!(dir = %dir.display(), "cannot make a pids cgroup for a command: {e}");
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    pub fn max(&self) -> u32 {
        self.max
    }

    /// Moves `leader` (a command that has not started anything yet) into the cgroup. Returns
    /// whether it moved.
    pub fn adopt(&self, leader: u32) -> bool {
        match std::fs::write(self.dir.join("cgroup.procs"), leader.to_string()) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("cannot move a command into its pids cgroup: {e}");
                false
            }
        }
    }

    /// How many processes (tasks) are in the cgroup now.
    pub fn current(&self) -> Option<u64> {
        std::fs::read_to_string(self.dir.join("pids.current")).ok()?.trim().parse().ok()
    }

    /// Whether a fork was refused because of the cap.
    pub fn hit_cap(&self) -> bool {
        std::fs::read_to_string(self.dir.join("pids.events")).is_ok_and(|events| {
            events.lines().any(|l| l.strip_prefix("max ").is_some_and(|n| n.trim() != "0"))
        })
    }

    /// Kills everything still in the cgroup and removes it (waiting up to a second for the
    /// killed processes to leave it).
    pub async fn end(self) {
        for _ in 0..40 {
            if self.try_remove() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        tracing::warn!(dir = %self.dir.display(), "cannot remove a command's pids cgroup");
    }

    /// [`CallCgroup::end`] on a thread that may block (a background command reaped while
    /// listing, or the session closing).
    pub fn end_blocking(self) {
        for _ in 0..40 {
            if self.try_remove() {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        tracing::warn!(dir = %self.dir.display(), "cannot remove a command's pids cgroup");
    }

    /// One step of ending: kill what is left; remove the cgroup once it is empty.
    fn try_remove(&self) -> bool {
        self.kill_all() == 0 && std::fs::remove_dir(&self.dir).is_ok()
    }

    /// SIGKILL to every process in the cgroup; how many there were.
    fn kill_all(&self) -> usize {
        if self.version == Version::V2 && std::fs::write(self.dir.join("cgroup.kill"), "1").is_ok()
        {
            return self.current().map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
        }
        let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        let pids: Vec<i32> = procs.lines().filter_map(|l| l.trim().parse().ok()).collect();
        for pid in &pids {
            if let Some(pid) = rustix::process::Pid::from_raw(*pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        pids.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::process::ProcessGroups;
    use crate::tools::shell::run;
    use crate::tools::shell::tests::{in_dir, running};
    use tokio_util::sync::CancellationToken;

    /// A fork bomb under a cap of 40 processes: it hits the cap, holds it, and is killed
    /// within seconds rather than at its timeout; nothing of it is left, and the next command
    /// runs. The command refuses to start the bomb unless it runs in its capped cgroup, so a
    /// failure can never take the machine down.
    #[tokio::test]
    async fn a_fork_bomb_is_capped_and_killed_and_the_next_command_runs() {
        if !available() {
            codewhale_mcp::test_support::skip_without_capability(
                "no writable pids cgroup here (cgroup v1 pids or a v2 cgroup delegating pids)",
            );
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let groups: &'static ProcessGroups =
            Box::leak(Box::new(ProcessGroups::with_max_processes(40)));
        let capped = "grep -q codewhale-shell- /proc/self/cgroup || exit 97; ";
        let cancel = CancellationToken::new();
        // The classic: the command itself returns at once, its descendants multiply.
        let classic = format!("{capped}:(){{ :|:& }};:");
        let out = run(in_dir(dir.path(), groups), &classic, Some(60_000), &cancel).await;
        assert!(!out.text.contains("[exit code: 97]"), "not capped: {}", out.text);
        assert!(out.is_error, "{}", out.text);
        assert!(out.text.contains("reached the limit of 40 processes"), "{}", out.text);
        // One that waits for its bomb holds the cap until it is killed, long before its
        // timeout.
        let holding = format!("{capped}bomb() {{ bomb | bomb; }}; bomb");
        let out = run(in_dir(dir.path(), groups), &holding, Some(60_000), &cancel).await;
        assert!(out.is_error, "{}", out.text);
        assert!(
            out.text.contains("kept all 40 processes one shell command may have in use for 2 s"),
            "{}",
            out.text
        );
        assert!(!out.text.contains("timed out"), "{}", out.text);
        let next = run(in_dir(dir.path(), groups), "echo next", None, &cancel).await;
        assert_eq!(next.text, "next\n[exit code: 0]");
    }

    /// A process that leaves the command's process group (`setsid`) is still ended with the
    /// call: it stays in the call's cgroup.
    #[tokio::test]
    async fn a_setsid_escapee_ends_with_the_call() {
        if !available() {
            codewhale_mcp::test_support::skip_without_capability("no writable pids cgroup here");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let marker = format!("sleep 603.{}", std::process::id());
        let cmd = format!("setsid bash -c 'exec -a \"{marker}\" sleep 603' & sleep 0.3; echo ok");
        let groups: &'static ProcessGroups = Box::leak(Box::default());
        let cancel = CancellationToken::new();
        let out = run(in_dir(dir.path(), groups), &cmd, Some(20_000), &cancel).await;
        assert!(out.text.contains("ok"), "{}", out.text);
        for _ in 0..40 {
            if !running(&marker) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(!running(&marker), "the setsid child outlived the call");
    }

    /// Whether a process of this test process's cgroups (`codewhale-shell-<pid>-`) still runs.
    fn any_in_our_cgroups() -> bool {
        let ours = format!("{PREFIX}{}-", std::process::id());
        std::fs::read_dir("/proc").unwrap().filter_map(Result::ok).any(|e| {
            std::fs::read_to_string(e.path().join("cgroup")).is_ok_and(|c| c.contains(&ours))
        })
    }

    /// A background command gets the same cap: its bomb stays inside 40 processes, and when
    /// the session closes everything in its cgroup ends with it.
    #[tokio::test]
    async fn a_background_fork_bomb_is_capped_and_ends_with_the_session() {
        if !available() {
            codewhale_mcp::test_support::skip_without_capability("no writable pids cgroup here");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let registry = crate::tools::background::BackgroundRegistry::new(dir.path().join("bg"));
        let bomb = "grep -q codewhale-shell- /proc/self/cgroup || exit 97; echo capped; \
                    :(){ :|:& };:; sleep 30";
        let env = crate::tools::shell::tests::in_dir(dir.path(), Box::leak(Box::default()));
        let out = crate::tools::shell::spawn_background(env, bomb, &registry, 40, None).await;
        assert!(!out.is_error, "{}", out.text);
        let log = registry.running()[0].log.clone();
        for _ in 0..100 {
            if std::fs::read_to_string(&log).is_ok_and(|t| t.contains("capped")) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(std::fs::read_to_string(&log).unwrap().contains("capped"), "not in its cgroup");
        tokio::time::sleep(Duration::from_millis(300)).await;
        registry.shutdown();
        assert!(!any_in_our_cgroups(), "a process of the bomb outlived the session");
    }

    #[test]
    fn mount_points_are_read_from_mountinfo() {
        let info = "\
30 25 0:26 / /sys/fs/cgroup/unified rw,relatime shared:4 - cgroup2 cgroup2 rw
36 25 0:32 / /sys/fs/cgroup/pids rw,relatime shared:14 - cgroup cgroup rw,pids
";
        let v1 = mount_point(info, |t, o| t == "cgroup" && o.split(',').any(|o| o == "pids"));
        assert_eq!(v1, Some(PathBuf::from("/sys/fs/cgroup/pids")));
        let v2 = mount_point(info, |t, _| t == "cgroup2");
        assert_eq!(v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
    }
}
