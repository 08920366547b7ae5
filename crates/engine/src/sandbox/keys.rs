//! Keys out of every command's reach (docs/security.md, *No command can read a key*).
//!
//! A command never gets a key variable in its environment (the shell tool removes
//! [`BUILT_IN`] and `api_key_env`), and in a PID namespace it sees no ancestor. Without one, a
//! command could still read Codewhale's own `/proc/PID/environ` — so Codewhale re-executes
//! itself at start without the key variables ([`reexec_without`]): the keys travel on a pipe
//! whose read end the new image inherits (its close-on-exec flag cleared with
//! `rustix::io::fcntl_setfd`) and reads through `/dev/fd/N` ([`take_inherited`]), and the
//! process marks itself not dumpable, so neither its `environ` nor its memory is readable by
//! another process of the user. No `unsafe` anywhere: the fd is found again by its number
//! through `/dev/fd`, and closed with nix's safe `close`.
//!
//! Invariants: [`take_inherited`] runs first in `main`, while the process has one thread (it
//! removes [`KEYS_FD`] from the environment, so no child inherits the number); a failed
//! re-exec leaves the process as it was (the keys stay in its environment, and `/status` says
//! so).

use std::io::{Read as _, Write as _};
use std::path::Path;

/// The built-in key variables.
pub const BUILT_IN: [&str; 2] = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"];

/// The variable that names the inherited pipe's fd in the re-executed process.
pub const KEYS_FD: &str = "CODEWHALE_KEYS_FD";

/// The most bytes of keys handed over (a pipe holds 64 KiB without a reader).
const MAX_BYTES: usize = 32 * 1024;

static INHERITED: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();

/// The key variables this process received on the pipe (empty when it did not re-execute).
pub fn inherited() -> &'static [(String, String)] {
    INHERITED.get().map(Vec::as_slice).unwrap_or_default()
}

/// Whether this process holds its keys outside its environment (it re-executed itself).
pub fn hidden() -> bool {
    !inherited().is_empty()
}

/// Why the keys could not be handed over.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeysError {
    #[error("the key variables are too large to hand over ({0} bytes)")]
    TooLarge(usize),
    #[error("cannot hand the keys over: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot read the keys handed over on fd {fd}: {reason}")]
    Inherit { fd: String, reason: String },
}

/// Re-executes this binary in place (same pid, same arguments) without the variables
/// `names` in its environment, handing their values over on a pipe. Returns only when nothing
/// needed hiding, the keys were already handed over, or the exec failed (`Err`).
pub fn reexec_without(names: &[String]) -> Result<(), KeysError> {
    if std::env::var_os(KEYS_FD).is_some() || hidden() {
        return Ok(());
    }
    let present: Vec<(String, String)> = names
        .iter()
        .filter_map(|n| std::env::var(n).ok().filter(|v| !v.is_empty()).map(|v| (n.clone(), v)))
        .collect();
    if present.is_empty() {
        return Ok(());
    }
    let mut payload = Vec::new();
    for (name, value) in &present {
        payload.extend_from_slice(name.as_bytes());
        payload.push(b'=');
        payload.extend_from_slice(value.as_bytes());
        payload.push(0);
    }
    if payload.len() > MAX_BYTES {
        return Err(KeysError::TooLarge(payload.len()));
    }
    let (reader, mut writer) = std::io::pipe()?;
    writer.write_all(&payload)?;
    drop(writer);
    // The read end survives the exec; nothing else of ours does.
    rustix::io::fcntl_setfd(&reader, rustix::io::FdFlags::empty()).map_err(std::io::Error::from)?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&reader);
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_else(|| "codewhale".into());
    // By its own path, so the process keeps its name (`ps`, `pkill codewhale`).
    let exe = std::env::current_exe()
        .ok()
        .filter(|p| p.is_file())
        .unwrap_or_else(|| "/proc/self/exe".into());
    let mut cmd = std::process::Command::new(exe);
    std::os::unix::process::CommandExt::arg0(&mut cmd, argv0);
    cmd.args(args).env(KEYS_FD, fd.to_string());
    for (name, _) in &present {
        cmd.env_remove(name);
    }
    let err = std::os::unix::process::CommandExt::exec(&mut cmd);
    Err(KeysError::Io(err))
}

/// In a re-executed process: reads the keys from the inherited pipe, closes it, forgets its
/// number and marks the process not dumpable. `Ok(false)` when this process was not
/// re-executed. Call first in `main`, before any thread starts.
pub fn take_inherited() -> Result<bool, KeysError> {
    let Some(fd) = std::env::var_os(KEYS_FD) else { return Ok(false) };
    // Children must not take the number for a pipe of theirs (single-threaded here).
    std::env::remove_var(KEYS_FD);
    let fd = fd.to_string_lossy().into_owned();
    let bad = |reason: String| KeysError::Inherit { fd: fd.clone(), reason };
    let n: i32 = fd.parse().map_err(|_| bad("not a number".into()))?;
    if n < 3 {
        return Err(bad("not an inherited pipe".into()));
    }
    let mut bytes = Vec::new();
    let read = std::fs::File::open(Path::new("/dev/fd").join(n.to_string()))
        .and_then(|f| f.take(MAX_BYTES as u64 + 1).read_to_end(&mut bytes));
    let _ = nix::unistd::close(n);
    read.map_err(|e| bad(e.to_string()))?;
    let keys: Vec<(String, String)> = bytes
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .filter_map(|p| {
            let text = String::from_utf8_lossy(p);
            text.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned()))
        })
        .collect();
    let _ = INHERITED.set(keys);
    mark_not_dumpable();
    Ok(true)
}

/// Makes this process's `/proc` entry (environment, memory) unreadable to other processes of
/// the user (`PR_SET_DUMPABLE` 0; root can still read it).
pub fn mark_not_dumpable() {
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        tracing::warn!("cannot mark the process not dumpable: {e}");
    }
}

/// Whether a command this process starts outside a PID namespace could read a key: it runs as
/// root, this process still holds a key in its environment, or an ancestor (the user's shell,
/// a wrapper) holds a key variable in its readable environment.
pub fn readable_without_pid_namespace(names: &[String]) -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    if names.iter().any(|n| std::env::var_os(n).is_some_and(|v| !v.is_empty())) {
        return true;
    }
    held_from(names, std::os::unix::process::parent_id())
}

/// Whether the process `pid` or one of its ancestors holds a variable of `names` in the
/// environment its `/proc` entry shows (as far as it is readable).
fn held_from(names: &[String], mut pid: u32) -> bool {
    let holds = |environ: &[u8]| {
        environ.split(|b| *b == 0).any(|var| {
            names.iter().any(|n| {
                var.strip_prefix(n.as_bytes()).is_some_and(|rest| rest.len() > 1 && rest[0] == b'=')
            })
        })
    };
    for _ in 0..64 {
        if pid <= 1 {
            break;
        }
        let dir = Path::new("/proc").join(pid.to_string());
        if let Ok(crate::bounded::Bounded::Read { bytes, .. }) =
            crate::bounded::read(&dir.join("environ"), 1024 * 1024)
        {
            if holds(&bytes) {
                return true;
            }
        }
        let parent = std::fs::read_to_string(dir.join("status")).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("PPid:"))
                .and_then(|p| p.trim().parse::<u32>().ok())
        });
        match parent {
            Some(p) => pid = p,
            None => break,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    /// The walk up from a process finds a key variable an ancestor holds, and nothing where
    /// none does.
    #[test]
    fn a_key_an_ancestor_holds_is_found_and_none_invented() {
        let name = "CODEWHALE_TEST_ANCESTOR_KEY".to_owned();
        let mut holder = std::process::Command::new("sh")
            .args(["-c", "echo ready; read -r _; :"])
            .env(&name, "sk-held-by-an-ancestor")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Running its script: its environment is the one it was started with.
        let mut ready = String::new();
        let stdout = holder.stdout.take().unwrap();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut ready).unwrap();
        assert_eq!(ready, "ready\n");
        let found = super::held_from(std::slice::from_ref(&name), holder.id());
        let shown = std::fs::read(format!("/proc/{}/environ", holder.id()))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_else(|e| e.to_string());
        let invented = super::held_from(&["CODEWHALE_TEST_NOBODY_HOLDS".to_owned()], holder.id());
        drop(holder.stdin.take());
        let _ = holder.wait();
        assert!(found, "the ancestor's environment holds it: {shown}");
        assert!(!invented);
        // This process holds PATH: readable, whatever the ancestors hold.
        assert!(super::readable_without_pid_namespace(&["PATH".to_owned()]));
    }
}
