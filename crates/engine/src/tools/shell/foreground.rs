//! A foreground `shell` command from start to result: started in its own process group (and
//! pids cgroup, where one can be made), its output read as it arrives, stopped at its timeout,
//! at the user's interrupt or when it holds its whole process cap, its group ended, and its
//! result written with the status lines the model reads.
//!
//! Invariants: whatever ends the call, the whole group (and cgroup) is ended before the result
//! is returned, so nothing the command started outlives it; the exit code, or why there is
//! none, is always stated.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdout};
use tokio_util::sync::CancellationToken;

use super::{
    bash, cannot_start, cut_outcome, push_line, refusal_line, RunEnv, ShellOutcome,
    DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS,
};
use crate::sandbox::Sandbox;
use crate::tools::cgroup::CallCgroup;
use crate::tools::output::{HeadTail, MAX_OUTPUT_BYTES};
use crate::tools::process::ProcessGroups;

/// How often a command's process count is checked against its cap ([`CallCgroup`]).
const CAP_CHECK: Duration = Duration::from_millis(250);
/// A command that uses its whole process cap for this many checks in a row is killed: a fork
/// bomb never lets go of it, and waiting out its timeout would keep the machine busy.
const SATURATED_CHECKS: u32 = 8;

/// How long output is still read after the command itself exited: a background child it left
/// may hold the pipe open, and its output up to here is kept.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

/// Runs `command` in the foreground, in its own process group. The call ends when the command
/// exits (its own exit code is reported, even when a background child it started still holds
/// the output pipe), when the timeout passes (which also covers waiting for a process whose
/// output is redirected), or when the user interrupts; either way the whole group is ended
/// then (SIGTERM, then SIGKILL after a grace period), so nothing it started outlives the call.
pub async fn run(
    env: RunEnv<'_>,
    command: &str,
    timeout_ms: Option<u64>,
    cancel: &CancellationToken,
) -> ShellOutcome {
    let timeout =
        Duration::from_millis(timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS).clamp(1, MAX_TIMEOUT_MS));
    let mut running = match Running::start(&env, command).await {
        Ok(running) => running,
        Err(message) => return ShellOutcome::whole(message, true),
    };
    let read = running.read(&env, timeout, cancel).await;
    let ended = running.end(env.groups, read.status).await;
    let printed = read.collected.total();
    let mut text = read.collected.finish();
    let cut_len = text.len();
    if let Some(why) = read.stopped {
        return stopped(&env, why, timeout, text, cut_len, printed);
    }
    let is_error = state_exit(&mut text, &ended.status);
    finished(&env, &ended, is_error, text, cut_len, printed)
}

/// A command started: its process (the group's leader), its group, the cgroup it was moved
/// into, and its output pipes.
struct Running {
    child: Child,
    pgid: u32,
    cgroup: Option<CallCgroup>,
    out: ChildStdout,
    err: ChildStderr,
}

/// What reading a command's output found.
struct Read {
    collected: HeadTail,
    /// How it exited, when it did before it was stopped.
    status: Option<std::io::Result<ExitStatus>>,
    /// Why it was stopped: "timed out", "process limit" or "interrupted".
    stopped: Option<&'static str>,
}

/// How a command ended, once its group was.
struct Ended {
    status: Option<std::io::Result<ExitStatus>>,
    /// Processes it left running were stopped with the group.
    lingering: bool,
    /// The process cap it reached (some of its forks failed), if it did.
    capped: Option<u32>,
}

impl Running {
    /// Starts `command` through bash with its output piped, moved into a new pids cgroup when
    /// one can be made, and registered with the session's groups; or the sentence saying why
    /// it could not start.
    async fn start(env: &RunEnv<'_>, command: &str) -> Result<Running, String> {
        // Made before the command starts; the command waits to be moved in (see [`GATE`]).
        let cgroup = CallCgroup::create(env.groups.max_processes());
        let mut cmd = bash(env, command, cgroup.is_some());
        let mut child =
            match cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true).spawn() {
                Ok(child) => child,
                Err(err) => {
                    if let Some(cgroup) = cgroup {
                        cgroup.end().await;
                    }
                    return Err(cannot_start(&err));
                }
            };
        let pgid = child.id().unwrap_or_default();
        let cgroup = cgroup.filter(|c| c.adopt(pgid));
        if let Some(mut gate) = child.stdin.take() {
            // Opens the gate, moved or not (a command that could not be moved runs uncapped).
            let _ = gate.write_all(b"\n").await;
        }
        env.groups.insert(pgid);
        let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
            codewhale_process::end_group(pgid).await;
            if let Some(cgroup) = cgroup {
                cgroup.end().await;
            }
            env.groups.remove(pgid);
            return Err("cannot capture the command's output".into());
        };
        Ok(Running { child, pgid, cgroup, out, err })
    }

    /// Reads the output (handing it to `env.progress` as it arrives) until the command exited
    /// and its pipes closed, or [`DRAIN_AFTER_EXIT`] after it exited; or until it is stopped:
    /// at `timeout`, at the user's interrupt, or when it held its whole process cap for
    /// [`SATURATED_CHECKS`] checks.
    async fn read(
        &mut self,
        env: &RunEnv<'_>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Read {
        let Running { child, cgroup, out, err, .. } = self;
        let mut collected = HeadTail::new(MAX_OUTPUT_BYTES);
        let mut out_buf = vec![0u8; 16 * 1024];
        let mut err_buf = vec![0u8; 16 * 1024];
        let (mut out_open, mut err_open) = (true, true);
        let mut status = None;
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        // Armed only once the command has exited (reset then to DRAIN_AFTER_EXIT).
        let drain = tokio::time::sleep(timeout);
        tokio::pin!(drain);
        let mut cap_check = tokio::time::interval(CAP_CHECK);
        cap_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut saturated = 0u32;
        let stopped: Option<&str> = loop {
            if status.is_some() && !out_open && !err_open {
                break None;
            }
            tokio::select! {
                n = out.read(&mut out_buf), if out_open => match n {
                    Ok(0) | Err(_) => out_open = false,
                    Ok(n) => {
                        (env.progress)(&out_buf[..n]);
                        collected.push(&out_buf[..n]);
                    }
                },
                n = err.read(&mut err_buf), if err_open => match n {
                    Ok(0) | Err(_) => err_open = false,
                    Ok(n) => {
                        (env.progress)(&err_buf[..n]);
                        collected.push(&err_buf[..n]);
                    }
                },
                s = child.wait(), if status.is_none() => {
                    status = Some(s);
                    drain.as_mut().reset(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
                }
                () = &mut drain, if status.is_some() => break None,
                _ = cap_check.tick(), if cgroup.is_some() => {
                    let full = cgroup.as_ref().is_some_and(|c| {
                        c.current().is_some_and(|n| n >= u64::from(c.max()))
                    });
                    saturated = if full { saturated + 1 } else { 0 };
                    if saturated >= SATURATED_CHECKS {
                        break Some("process limit");
                    }
                }
                () = &mut deadline => break Some("timed out"),
                () = cancel.cancelled() => break Some("interrupted"),
            }
        };
        Read { collected, status, stopped }
    }

    /// Ends the group and the cgroup (which also ends what left the group, `setsid`), waits
    /// for the command if it had not exited, and takes it out of the session's groups.
    async fn end(
        mut self,
        groups: &ProcessGroups,
        status: Option<std::io::Result<ExitStatus>>,
    ) -> Ended {
        let lingering = codewhale_process::end_group(self.pgid).await;
        let capped = match self.cgroup {
            Some(cgroup) => {
                let hit = cgroup.hit_cap().then_some(cgroup.max());
                // Also ends what left the process group (`setsid`).
                cgroup.end().await;
                hit
            }
            None => None,
        };
        let status = match status {
            Some(s) => Some(s),
            None => {
                let _ = self.child.start_kill();
                self.child.wait().await.ok().map(Ok)
            }
        };
        groups.remove(self.pgid);
        Ended { status, lingering, capped }
    }
}

/// The result of a command that was stopped: its output and the line saying why.
fn stopped(
    env: &RunEnv<'_>,
    why: &str,
    timeout: Duration,
    mut text: String,
    cut_len: usize,
    printed: u64,
) -> ShellOutcome {
    let reason = match why {
        "timed out" => format!(
            "[timed out after {} ms; the command was killed. Pass a larger timeout_ms (up to \
             {MAX_TIMEOUT_MS}) or run it with background: true]",
            timeout.as_millis()
        ),
        "process limit" => format!(
            "[the command kept all {} processes one shell command may have in use for {} s \
             (a fork bomb, or a runaway loop starting processes) and was killed; run fewer \
             processes at once, or ask the user to raise [shell] max_processes]",
            env.groups.max_processes(),
            (CAP_CHECK * SATURATED_CHECKS).as_secs()
        ),
        _ => "[interrupted by the user; the command was killed]".to_owned(),
    };
    push_line(&mut text, &reason);
    let mut outcome = cut_outcome(text, cut_len, printed, true);
    outcome.timed_out = why == "timed out";
    outcome
}

/// States how the command exited on a line of its own; whether that is an error.
fn state_exit(text: &mut String, status: &Option<std::io::Result<ExitStatus>>) -> bool {
    match status {
        Some(Ok(status)) => match status.code() {
            Some(code) => {
                push_line(text, &format!("[exit code: {code}]"));
                code != 0
            }
            None => {
                push_line(text, "[killed by a signal]");
                true
            }
        },
        Some(Err(err)) => {
            push_line(text, &format!("[cannot wait for the command: {err}]"));
            true
        }
        None => {
            push_line(text, "[cannot wait for the command]");
            true
        }
    }
}

/// The result of a command that ended by itself: after its exit line, what the process cap,
/// the ended group and the sandbox did to it.
fn finished(
    env: &RunEnv<'_>,
    ended: &Ended,
    is_error: bool,
    mut text: String,
    cut_len: usize,
    printed: u64,
) -> ShellOutcome {
    let exit_code = ended.status.as_ref().and_then(|s| s.as_ref().ok()).and_then(|s| s.code());
    // Some of its forks failed: what it did is not what it meant to do.
    let is_error = is_error || ended.capped.is_some();
    if let Some(max) = ended.capped {
        push_line(
            &mut text,
            &format!(
                "[the command reached the limit of {max} processes for one shell command, so \
                 some of its forks failed; run fewer processes at once, or ask the user to raise \
                 [shell] max_processes]"
            ),
        );
    }
    if ended.lingering {
        push_line(
            &mut text,
            "[processes the command left running were stopped; start servers and watchers \
             with background: true]",
        );
    }
    let git_refused = is_error
        && env.sandbox.is_some_and(Sandbox::namespaces)
        && env.read_only.is_some_and(|ro| !ro.is_empty())
        && crate::sandbox::refusal::read_only_refusal(text.get(..cut_len).unwrap_or_default());
    if git_refused {
        push_line(
            &mut text,
            "[sandbox: every .git, .codewhale/ and the instruction files are read-only to your \
             commands (Read-only file system), so git cannot write its repository here; tell \
             the user which git command you need and why — they can run it, or allow it once \
             with .git writable]",
        );
    }
    let refused = match env.sandbox {
        Some(sandbox) if is_error && !git_refused => {
            let output = text.get(..cut_len).unwrap_or_default();
            let refused =
                crate::sandbox::refusal::refused_writes(output, env.workspace, sandbox.rules());
            if let Some(line) = refusal_line(&refused, output, sandbox) {
                push_line(&mut text, &line);
            }
            refused
        }
        _ => Vec::new(),
    };
    let mut outcome = cut_outcome(text, cut_len, printed, is_error);
    outcome.refused = refused;
    outcome.exit_code = exit_code;
    outcome.git_refused = git_refused;
    outcome
}
