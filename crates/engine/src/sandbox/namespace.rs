//! The helper's namespaces (docs/security.md, *What git and Codewhale execute is out of the model's reach*): what git and Codewhale
//! execute is read-only to a command because the file system says so, not because a list of
//! names was checked.
//!
//! `codewhale sandbox-exec --ns --ro PATH… RULES -- COMMAND` is a fresh, single-threaded
//! process (the first stage). It leaves the caller's user, mount and PID namespaces with
//! nix's safe `unshare`, maps the user's uid and gid to root of the new user namespace
//! (`/proc/self/{setgroups,uid_map,gid_map}` written as files), makes every mount private, and
//! binds each `--ro` path onto itself read-only (`MS_BIND`, then `MS_REMOUNT | MS_BIND |
//! MS_RDONLY` with the flags the kernel locks on the original mount kept). It then starts the
//! second stage, `sandbox-exec --init RULES -- COMMAND`, which is the first process (PID 1) of
//! the new PID namespace: it mounts a fresh `/proc` (so no ancestor is visible, nor its
//! environment or memory), gives up its root by entering a nested user namespace in which it
//! is the user again (so the command holds no capability over the mount namespace and cannot
//! unmount or remount a bind, whatever its uid outside), applies the Landlock rules
//! ([`super::confine::restrict`], which deny mount and unmount too) and starts the command as
//! its child. When the command exits, the first process counts what it left running and exits
//! with the command's status, and the kernel ends everything else in the namespace with it.
//!
//! Invariants: no step runs the command unless every step before it succeeded (a failure is a
//! [`SandboxError::Namespace`] naming the step); the first stage stays the leader of the
//! process group the shell tool ends, and the second stage dies with it (its parent-death
//! signal is SIGKILL), so ending the group ends the namespace. [`probe`] tries the whole setup
//! once without a command; the engine asks it once per process ([`availability`]).

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::signal::{sigprocmask, SigSet, SigmaskHow, Signal};
use nix::sys::statvfs::{statvfs, FsFlags};
use nix::sys::wait::{waitpid, WaitStatus};

use super::confine::{HelperArgs, SandboxError};
use super::HELPER_SUBCOMMAND;

/// The steps of the setup, as a failure names them.
pub mod step {
    pub const UNSHARE: &str = "unshare(user, mount, PID)";
    pub const ID_MAP: &str = "uid/gid map";
    pub const PRIVATE: &str = "private mounts";
    pub const READ_ONLY_BIND: &str = "read-only bind";
    pub const SECOND_STAGE: &str = "start the namespace's first process";
    pub const PROC: &str = "mount /proc";
    pub const DROP_ROOT: &str = "nested user namespace";
}

fn failed(step: &'static str, reason: impl std::fmt::Display) -> SandboxError {
    SandboxError::Namespace { step, reason: reason.to_string() }
}

/// Leaves the caller's namespaces and sets up the mount namespace: the first stage up to the
/// point where the second one is started.
fn enter(read_only: &[PathBuf]) -> Result<(), SandboxError> {
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID)
        .map_err(|e| failed(step::UNSHARE, e))?;
    // Without `deny`, an unprivileged process may not write its gid map.
    match std::fs::write("/proc/self/setgroups", "deny") {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(failed(step::ID_MAP, e)),
    }
    // Root here, so that the second stage keeps the capabilities it needs for `/proc` across
    // its exec; it gives them up before the command starts ([`drop_root`]).
    std::fs::write("/proc/self/uid_map", format!("0 {uid} 1"))
        .map_err(|e| failed(step::ID_MAP, e))?;
    std::fs::write("/proc/self/gid_map", format!("0 {gid} 1"))
        .map_err(|e| failed(step::ID_MAP, e))?;
    // Nothing mounted here reaches the caller's namespace.
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
        .map_err(|e| failed(step::PRIVATE, e))?;
    for path in read_only {
        match bind_read_only(path) {
            Ok(()) => {}
            // Gone since the engine listed it: there is nothing left to protect there.
            Err(nix::errno::Errno::ENOENT) => {}
            Err(e) => return Err(failed(step::READ_ONLY_BIND, format!("{}: {e}", path.display()))),
        }
    }
    Ok(())
}

/// Binds `path` onto itself read-only. A mount made in a user namespace keeps the flags the
/// kernel locked on the original (`nosuid`, `nodev`, `noexec`, the atime ones): the remount
/// must repeat them or it is refused.
fn bind_read_only(path: &Path) -> nix::Result<()> {
    mount(Some(path), path, None::<&str>, MsFlags::MS_BIND | MsFlags::MS_REC, None::<&str>)?;
    let locked = statvfs(path)?.flags();
    let mut flags = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY;
    for (st, ms) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if locked.contains(st) {
            flags |= ms;
        }
    }
    mount(None::<&str>, path, None::<&str>, flags, None::<&str>)
}

/// The second stage's command line: this binary's `sandbox-exec --init`, the same rules, the
/// command.
fn second_stage(args: &HelperArgs, probe: bool) -> std::process::Command {
    // By its own path, so the process keeps its name.
    let exe = std::env::current_exe()
        .ok()
        .filter(|p| p.is_file())
        .unwrap_or_else(|| "/proc/self/exe".into());
    let mut cmd = std::process::Command::new(exe);
    cmd.arg(HELPER_SUBCOMMAND).arg("--init");
    if probe {
        cmd.arg("--probe");
    } else {
        cmd.args(args.rules.to_args()).arg("--").args(&args.command);
    }
    cmd
}

/// The exit code that stands for `status`: its own code, or 128 + the signal that ended it
/// (as a shell reports it).
fn code_of(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt as _;
    status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1)
}

/// The first stage: namespaces, binds, then the second stage; its exit code is the command's.
pub fn run(args: &HelperArgs) -> Result<i32, SandboxError> {
    enter(&args.read_only)?;
    stop_signals(SigmaskHow::SIG_BLOCK)?;
    let mut child = second_stage(args, false).spawn().map_err(|e| failed(step::SECOND_STAGE, e))?;
    let status = child.wait().map_err(|e| failed(step::SECOND_STAGE, e))?;
    Ok(code_of(status))
}

/// The first stage leads the process group the shell tool ends with SIGTERM, then SIGKILL after
/// a grace. Were it to die of the SIGTERM, its second stage would follow (parent-death signal)
/// and take the whole namespace with it at once, so the command would lose the grace it is
/// owed to clean up. So the first stage blocks SIGTERM, SIGINT and SIGHUP: the command, in the
/// same group, gets its own copy and decides; the first stage ends when the command has, or
/// with the group's SIGKILL. A signal mask is inherited, so the second stage unblocks them
/// before it starts the command ([`init`]).
fn stop_signals(how: SigmaskHow) -> Result<(), SandboxError> {
    let mut set = SigSet::empty();
    for signal in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        set.add(signal);
    }
    sigprocmask(how, Some(&set), None).map_err(|e| failed(step::SECOND_STAGE, e))
}

/// How the command the first process of the namespace started ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finished {
    /// Its exit code (128 + the signal when a signal ended it).
    pub code: i32,
    /// Processes it left running, which end with the namespace.
    pub left: usize,
}

impl Finished {
    /// The line the command's output ends with when it left processes behind.
    pub fn left_line(&self) -> Option<String> {
        let n = self.left;
        (n > 0).then(|| {
            let what = if n == 1 { "process" } else { "processes" };
            format!(
                "[ended with the command: {n} background {what}; use `shell{{background: true}}` \
                 to keep a server running]"
            )
        })
    }
}

/// The second stage, PID 1 of the namespace: `/proc`, Landlock, the command; it reaps every
/// orphan the namespace hands it until the command itself has ended.
pub fn init(args: &HelperArgs) -> Result<Finished, SandboxError> {
    // Dies with the first stage: ending the process group ends the namespace.
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(|e| failed(step::SECOND_STAGE, e))?;
    // The first stage's block on the stop signals ends here: the command must see them. (As
    // PID 1 of the namespace, this process is not ended by a signal it has no handler for.)
    stop_signals(SigmaskHow::SIG_UNBLOCK)?;
    mount_proc()?;
    drop_root()?;
    super::confine::restrict(&args.rules)?;
    let Some((program, rest)) = args.command.split_first() else {
        return Err(SandboxError::Usage("no command after --".into()));
    };
    let child = std::process::Command::new(program).args(rest).spawn().map_err(|source| {
        SandboxError::Exec { program: program.to_string_lossy().into_owned(), source }
    })?;
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let code = loop {
        match waitpid(None::<nix::unistd::Pid>, None) {
            Ok(WaitStatus::Exited(p, code)) if p == pid => break code,
            Ok(WaitStatus::Signaled(p, signal, _)) if p == pid => break 128 + signal as i32,
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break 1,
        }
    };
    Ok(Finished { code, left: still_running() })
}

fn mount_proc() -> Result<(), SandboxError> {
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(Some("proc"), "/proc", Some("proc"), flags, None::<&str>)
        .map_err(|e| failed(step::PROC, e))
}

/// Enters a user namespace nested in the first stage's, in which this process is the user's
/// own uid and gid again (as outside): the command then holds no capability in the namespace
/// that owns the mounts — not even when the user is root — and files and git see their owner.
fn drop_root() -> Result<(), SandboxError> {
    let outside = |map: &str| -> Result<String, SandboxError> {
        let text = std::fs::read_to_string(map).map_err(|e| failed(step::DROP_ROOT, e))?;
        // "0 OUTSIDE 1", as the first stage wrote it.
        text.split_whitespace()
            .nth(1)
            .map(str::to_owned)
            .ok_or_else(|| failed(step::DROP_ROOT, format!("{map} holds no mapping")))
    };
    let (uid, gid) = (outside("/proc/self/uid_map")?, outside("/proc/self/gid_map")?);
    unshare(CloneFlags::CLONE_NEWUSER).map_err(|e| failed(step::DROP_ROOT, e))?;
    std::fs::write("/proc/self/setgroups", "deny").map_err(|e| failed(step::DROP_ROOT, e))?;
    std::fs::write("/proc/self/uid_map", format!("{uid} 0 1"))
        .map_err(|e| failed(step::DROP_ROOT, e))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} 0 1"))
        .map_err(|e| failed(step::DROP_ROOT, e))?;
    // Changing credentials may clear the parent-death signal: set it again.
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(|e| failed(step::DROP_ROOT, e))
}

/// Processes of the namespace other than its first one that have not exited.
fn still_running() -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| *pid != 1)
        .filter(|pid| {
            // A zombie has exited; only its entry is left.
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z'))
                })
                .is_some_and(|zombie| !zombie)
        })
        .count()
}

/// The answer of `sandbox-exec --probe`: `ok`, or the step that failed and why.
pub const PROBE_OK: &str = "ok";

/// Tries the whole setup (the three namespaces, one read-only bind, the `/proc` mount in the
/// first process of the PID namespace) without running anything; `Err` names the failing
/// step.
pub fn probe() -> Result<(), SandboxError> {
    let dir = std::env::temp_dir();
    enter(std::slice::from_ref(&dir))?;
    // The bind must really be read-only: a write is refused by the file system itself.
    match rustix::fs::access(&dir, rustix::fs::Access::WRITE_OK) {
        Err(rustix::io::Errno::ROFS) => {}
        Ok(()) => return Err(failed(step::READ_ONLY_BIND, "the bind stayed writable")),
        Err(e) => return Err(failed(step::READ_ONLY_BIND, e)),
    }
    let out = second_stage(&HelperArgs::default(), true)
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|e| failed(step::SECOND_STAGE, e))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    Err(failed(step::PROC, if said.is_empty() { format!("{}", out.status) } else { said }))
}

/// The second stage of [`probe`]: it is PID 1, can mount `/proc` and give up its root.
pub fn probe_init() -> Result<(), SandboxError> {
    if std::process::id() != 1 {
        return Err(failed(step::SECOND_STAGE, "not the first process of the namespace"));
    }
    mount_proc()?;
    drop_root()
}

/// Writes the probe's answer for the engine to read: [`PROBE_OK`] or the failure.
pub fn report_probe(outcome: &Result<(), SandboxError>) {
    let line = match outcome {
        Ok(()) => PROBE_OK.to_owned(),
        Err(SandboxError::Namespace { step, reason }) => format!("{step}: {reason}"),
        Err(other) => other.to_string(),
    };
    let _ = writeln!(std::io::stdout(), "{line}");
}

/// Whether commands can run in namespaces here, asked once per process: `Err` says which step
/// of the setup failed (for `/status`).
pub fn availability(helper: &Path) -> Result<(), String> {
    static FOUND: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            let out = std::process::Command::new(helper)
                .arg(HELPER_SUBCOMMAND)
                .arg("--probe")
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .output()
                .map_err(|e| format!("cannot start the sandbox helper: {e}"))?;
            let said = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            if out.status.success() && said == PROBE_OK {
                Ok(())
            } else if said.is_empty() {
                Err(format!("the probe ended with {}", out.status))
            } else {
                Err(said)
            }
        })
        .clone()
}

/// The helper's arguments of a command run in namespaces: `--ns`, one `--ro` per path.
pub fn args(read_only: &[PathBuf]) -> Vec<OsString> {
    let mut args = vec![OsString::from("--ns")];
    for path in read_only {
        args.push("--ro".into());
        args.push(path.clone().into_os_string());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_for_processes_left_behind_counts_them() {
        assert_eq!(Finished { code: 0, left: 0 }.left_line(), None);
        assert_eq!(
            Finished { code: 0, left: 1 }.left_line().unwrap(),
            "[ended with the command: 1 background process; use `shell{background: true}` to \
             keep a server running]"
        );
        assert!(Finished { code: 0, left: 3 }
            .left_line()
            .unwrap()
            .contains("3 background processes"));
    }

    #[test]
    fn read_only_paths_become_helper_arguments() {
        let args = args(&[PathBuf::from("/w/.git"), PathBuf::from("/w/AGENTS.md")]);
        assert_eq!(args, ["--ns", "--ro", "/w/.git", "--ro", "/w/AGENTS.md"]);
    }
}
