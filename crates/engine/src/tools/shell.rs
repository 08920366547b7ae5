//! `shell`: `bash -c COMMAND` in the workspace, foreground (with a timeout) or background.
//!
//! Invariants: every command runs in its own process group so a timeout or an interrupt kills
//! everything it started; combined stdout+stderr is bounded in memory and in what the model
//! reads, with a marker; the exit code is always stated. Background commands go to the
//! [`super::background::BackgroundRegistry`] with a log file. With a [`Sandbox`], commands
//! start through its helper (confined, same pid, same group; in namespaces of their own with
//! the given paths read-only where the sandbox has them), and a failed command's refused
//! writes are named in its result ([`crate::sandbox::refusal`]). No command gets a key
//! variable ([`RunEnv::hidden`]). A foreground command runs in a
//! pids cgroup of its own where one can be made ([`super::cgroup`]): a fork bomb hits the cap,
//! and one that holds the whole cap is killed; the OS refusing a new process is an error
//! result, never a panic.
//!
//! Here: how bash is started, the outcome, the sandbox's refusal line and the background start;
//! a foreground command's run from start to result is in `foreground`.

use std::path::Path;
use std::process::Stdio;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::background::BackgroundRegistry;
use super::cgroup::CallCgroup;
use super::process::ProcessGroups;
use crate::sandbox::Sandbox;
pub use foreground::run;

mod foreground;

/// Timeout when the call gives none.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// The longest timeout a call may ask for.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// Variables never passed to commands, whatever the configuration names: the model must not
/// be able to read Codewhale's own provider keys through `env` or `echo`.
pub const HIDDEN_ENV: [&str; 2] = crate::sandbox::keys::BUILT_IN;

/// What a gated command runs first: it waits for one line on stdin — written once the
/// command's process is in its cgroup — then becomes `bash -c COMMAND` with stdin from
/// `/dev/null`, as an ungated one starts.
const GATE: &str = "read -r _; exec bash -c \"$1\" </dev/null";

/// `bash -c command` in `env.workspace`, in its own process group, with `[shell] env` and
/// without the hidden variables; confined when a sandbox is given. `gated`: it starts only
/// once a line is written to its stdin (see [`GATE`]), so that nothing it starts can run
/// before it is moved into its cgroup.
pub(crate) fn bash(env: &RunEnv<'_>, command: &str, gated: bool) -> Command {
    let args: Vec<&str> =
        if gated { vec!["-c", GATE, "bash", command] } else { vec!["-c", command] };
    let mut cmd = match env.sandbox {
        Some(sandbox) => sandbox.command("bash", &args, env.read_only),
        None => {
            let mut cmd = Command::new("bash");
            cmd.args(&args);
            cmd
        }
    };
    let stdin = if gated { Stdio::piped() } else { Stdio::null() };
    cmd.current_dir(env.workspace).stdin(stdin).process_group(0);
    cmd.envs(env.vars.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    for name in HIDDEN_ENV.iter().copied().chain(env.hidden.iter().map(String::as_str)) {
        cmd.env_remove(name);
    }
    cmd.env_remove(crate::sandbox::keys::KEYS_FD);
    cmd
}

/// What a finished command produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellOutcome {
    pub text: String,
    pub is_error: bool,
    /// Size of the whole output before the middle was cut: everything the command printed
    /// plus the status lines Codewhale added.
    pub bytes: u64,
    /// Paths the sandbox refused to let the failed command write (named in `text` too).
    pub refused: Vec<std::path::PathBuf>,
    /// The command's exit code, when it exited by itself (also stated in `text`).
    pub exit_code: Option<i32>,
    /// Whether it ran past its timeout and was killed.
    pub timed_out: bool,
    /// It failed after a write under a read-only bind (`.git` and the like) was refused.
    pub git_refused: bool,
}

impl ShellOutcome {
    /// An outcome whose text is complete (nothing was cut).
    fn whole(text: String, is_error: bool) -> ShellOutcome {
        ShellOutcome {
            bytes: text.len() as u64,
            text,
            is_error,
            refused: Vec::new(),
            exit_code: None,
            timed_out: false,
            git_refused: false,
        }
    }
}

/// Where a foreground command runs and what it gets.
#[derive(Clone, Copy)]
pub struct RunEnv<'a> {
    pub workspace: &'a Path,
    /// Extra variables from the configuration (`[shell] env`).
    pub vars: &'a [(String, String)],
    /// Key variables no command may see (besides [`HIDDEN_ENV`]): `api_key_env`.
    pub hidden: &'a [String],
    /// The session's running groups, so closing the session ends this one too.
    pub groups: &'a ProcessGroups,
    /// Gets the output as it arrives (the live view).
    pub progress: &'a (dyn Fn(&[u8]) + Send + Sync),
    /// Confines the command; `None` runs it unconfined.
    pub sandbox: Option<&'a Sandbox>,
    /// With a sandbox that has namespaces: run the command in its own, with these paths
    /// read-only (`None`: Landlock alone).
    pub read_only: Option<&'a [std::path::PathBuf]>,
}

/// Why bash could not start, in one sentence: the OS refusing a new process (`EAGAIN`, a full
/// process table) says what to do about it.
fn cannot_start(err: &std::io::Error) -> String {
    if err.kind() == std::io::ErrorKind::WouldBlock {
        format!(
            "cannot start bash: the system refuses new processes right now ({err}), probably \
             because too many are running; wait for some to end, then try again"
        )
    } else {
        format!("cannot start bash: {err}")
    }
}

/// The status line that tells the model what the sandbox refused (or may have refused).
pub(crate) fn refusal_line(
    refused: &[std::path::PathBuf],
    output: &str,
    sandbox: &Sandbox,
) -> Option<String> {
    let allowed = match sandbox.mode() {
        crate::sandbox::SandboxMode::ReadOnly if sandbox.rules().writable.is_empty() => {
            "commands may write nowhere (read-only)".to_owned()
        }
        crate::sandbox::SandboxMode::ReadOnly => {
            let roots: Vec<String> =
                sandbox.rules().writable.iter().map(|p| p.display().to_string()).collect();
            format!(
                "the workspace is read-only; commands may write only under {}",
                roots.join(", ")
            )
        }
        _ => "commands may write only under the workspace, the temp dir and [sandbox] writable"
            .to_owned(),
    };
    if refused.is_empty() {
        return crate::sandbox::refusal::mentions_refusal(output).then(|| {
            format!(
                "[sandbox: a \"Permission denied\" may come from the sandbox: {allowed}; if the \
                 command must write elsewhere, tell the user which path and why]"
            )
        });
    }
    let paths: Vec<String> = refused.iter().map(|p| p.display().to_string()).collect();
    Some(format!(
        "[sandbox: refused writing to {}: {allowed}; if the command must write there, tell the \
         user which path and why (they can rerun it unconfined or add the path to [sandbox] \
         writable)]",
        paths.join(", ")
    ))
}

/// `text` is the collected output (`cut_len` bytes, standing for `printed` bytes the command
/// printed) followed by status lines; the original size counts the status lines too.
fn cut_outcome(text: String, cut_len: usize, printed: u64, is_error: bool) -> ShellOutcome {
    let status = text.len().saturating_sub(cut_len) as u64;
    ShellOutcome { bytes: printed + status, ..ShellOutcome::whole(text, is_error) }
}

/// The guard's watch over a background command: the places as they were when it started,
/// checked when it ends.
pub struct Watch {
    pub guard: std::sync::Arc<super::guard::GitGuard>,
    pub before: super::guard::Before,
}

/// Starts `command` in the background (confined when a sandbox is given, in namespaces of its
/// own where the sandbox has them, in a cgroup capped at `max_processes` where one can be made,
/// as a foreground command) and registers it; `watch` is checked when it ends.
pub async fn spawn_background(
    env: RunEnv<'_>,
    command: &str,
    registry: &BackgroundRegistry,
    max_processes: u32,
    watch: Option<Watch>,
) -> ShellOutcome {
    let fail = |what: String| ShellOutcome::whole(what, true);
    // Nothing started: the guard stops waiting for this command's end.
    let give_back = |watch: Option<Watch>| {
        if let Some(w) = watch {
            w.guard.background_abandoned();
        }
    };
    let (id, log) = match registry.reserve() {
        Ok(x) => x,
        Err(err) => {
            give_back(watch);
            return fail(format!("cannot create the background log folder: {err}"));
        }
    };
    let file = match codewhale_journal::private::options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&log)
    {
        Ok(f) => f,
        Err(err) => {
            give_back(watch);
            return fail(format!("cannot create {}: {err}", log.display()));
        }
    };
    let Ok(file_err) = file.try_clone() else {
        give_back(watch);
        return fail(format!("cannot share {} between stdout and stderr", log.display()));
    };
    let cgroup = CallCgroup::create(max_processes);
    let mut cmd = bash(&env, command, cgroup.is_some());
    let child = cmd.stdout(file).stderr(file_err).spawn();
    match child {
        Ok(mut child) => {
            let cgroup = cgroup.filter(|c| c.adopt(child.id().unwrap_or_default()));
            if let Some(mut gate) = child.stdin.take() {
                // Opens the gate, moved or not (see [`GATE`]).
                let _ = gate.write_all(b"\n").await;
            }
            let on_end = watch.map(|w| {
                let id = id.clone();
                Box::new(move || w.guard.background_ended(&id, &w.before))
                    as super::background::OnEnd
            });
            let pid =
                registry.insert(id.clone(), command.to_owned(), log.clone(), child, cgroup, on_end);
            ShellOutcome::whole(
                format!(
                    "started in the background as {id} (pid {pid}); its output goes to {}. Check \
                     on it with a shell command such as `tail -n 50 {}`.",
                    log.display(),
                    log.display()
                ),
                false,
            )
        }
        Err(err) => {
            if let Some(cgroup) = cgroup {
                cgroup.end().await;
            }
            give_back(watch);
            fail(cannot_start(&err))
        }
    }
}

fn push_line(text: &mut String, line: &str) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(line);
}

/// The exit code a shell result states on its last line (`[exit code: N]`).
pub(crate) fn exit_code_of(output: &str) -> Option<i32> {
    let last = output.lines().rev().find(|l| l.starts_with("[exit code: "))?;
    last.trim_start_matches("[exit code: ").trim_end_matches(']').parse().ok()
}

#[cfg(test)]
pub(crate) mod tests;
