//! One run of one hook's command: `bash -c COMMAND` started exactly as the user's own `!CMD`
//! is ([`crate::tools::shell::bash`]: the session's sandbox, the user's environment less the
//! keys, its own process group), with one JSON object on stdin and then end-of-file.
//!
//! Invariants: the run ends by [`Limits::timeout`] whatever the hook does (its whole process
//! group is ended then); stdout is kept to [`STDOUT_KEPT`] bytes and stderr to [`STDERR_KEPT`],
//! the rest dropped and marked; a hook that prints more than [`OUTPUT_KILLED`] bytes in all is
//! killed at once; nothing here panics on what a hook does.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Child;
use tokio_util::sync::CancellationToken;

use crate::tools::shell::{self, RunEnv};

/// How much of a hook's stdout is kept (DESIGN's limits: 16 KiB).
pub(crate) const STDOUT_KEPT: usize = 16 * 1024;
/// How much of a hook's stderr is kept (4 KiB).
pub(crate) const STDERR_KEPT: usize = 4 * 1024;
/// A hook that prints more than this (stdout and stderr together) is killed (1 MiB).
pub(crate) const OUTPUT_KILLED: u64 = 1024 * 1024;

/// How long output is still read after the hook itself exited (a child it left may hold the
/// pipe open).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

/// Why a run ended other than by the hook exiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// It ran past its `timeout_sec`.
    TimedOut,
    /// It printed more than [`OUTPUT_KILLED`] bytes.
    TooMuchOutput,
    /// The user interrupted what the hook was run for.
    Interrupted,
}

/// What one run gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ran {
    /// Its exit code, when it exited by itself.
    pub exit: Option<i32>,
    /// Why it was ended, when it was.
    pub stopped: Option<Stopped>,
    /// It could not be started: why.
    pub cannot_start: Option<String>,
    /// Its stdout, bounded (with a marker when cut), lossily decoded.
    pub stdout: String,
    /// Its stderr, bounded likewise.
    pub stderr: String,
    pub duration: Duration,
}

/// Runs `command` with `stdin` as its input, bounded by `timeout`; `cancel` stops it.
pub(crate) async fn run(
    env: RunEnv<'_>,
    command: &str,
    stdin: Vec<u8>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Ran {
    let started = Instant::now();
    let mut cmd = shell::bash(&env, command, false);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(err) => {
            return Ran {
                exit: None,
                stopped: None,
                cannot_start: Some(format!("cannot start bash: {err}")),
                stdout: String::new(),
                stderr: String::new(),
                duration: started.elapsed(),
            }
        }
    };
    let pgid = child.id().unwrap_or_default();
    env.groups.insert(pgid);
    let writer = feed(&mut child, stdin);
    let Watched { stopped, status, out, err } = watch(&mut child, timeout, cancel).await;
    if status.is_none() {
        // Killed at once (a hook past its bound gets no grace), then what it started.
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    codewhale_process::end_group(pgid).await;
    env.groups.remove(pgid);
    if let Some(writer) = writer {
        writer.abort();
    }
    let exit = match (&stopped, status) {
        (None, Some(Ok(status))) => status.code(),
        _ => None,
    };
    Ran {
        exit,
        stopped,
        cannot_start: None,
        stdout: out.finish(),
        stderr: err.finish(),
        duration: started.elapsed(),
    }
}

/// Hands `stdin` to the hook on a task of its own: a hook that never reads its stdin must not
/// hold the run up.
fn feed(child: &mut Child, stdin: Vec<u8>) -> Option<tokio::task::JoinHandle<()>> {
    child.stdin.take().map(|mut pipe| {
        tokio::spawn(async move {
            let _ = pipe.write_all(&stdin).await;
            let _ = pipe.shutdown().await;
        })
    })
}

/// What watching a running hook found.
struct Watched {
    /// Why it was ended, when it was.
    stopped: Option<Stopped>,
    /// How it exited, when it did.
    status: Option<std::io::Result<std::process::ExitStatus>>,
    out: Bounded,
    err: Bounded,
}

/// Reads the hook's stdout and stderr until it exited and both closed (or
/// [`DRAIN_AFTER_EXIT`] after it exited), or until it is stopped: at `timeout`, at the
/// user's interrupt, or past [`OUTPUT_KILLED`] bytes of output.
async fn watch(child: &mut Child, timeout: Duration, cancel: &CancellationToken) -> Watched {
    let mut out = Bounded::new(STDOUT_KEPT);
    let mut err = Bounded::new(STDERR_KEPT);
    let (mut out_pipe, mut err_pipe) = (child.stdout.take(), child.stderr.take());
    let mut out_buf = vec![0u8; 16 * 1024];
    let mut err_buf = vec![0u8; 16 * 1024];
    let mut status = None;
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let drain = tokio::time::sleep(timeout);
    tokio::pin!(drain);
    let stopped = loop {
        if status.is_some() && out_pipe.is_none() && err_pipe.is_none() {
            break None;
        }
        if out.total + err.total > OUTPUT_KILLED {
            break Some(Stopped::TooMuchOutput);
        }
        tokio::select! {
            n = read(&mut out_pipe, &mut out_buf), if out_pipe.is_some() => match n {
                Some(n) => out.push(&out_buf[..n]),
                None => out_pipe = None,
            },
            n = read(&mut err_pipe, &mut err_buf), if err_pipe.is_some() => match n {
                Some(n) => err.push(&err_buf[..n]),
                None => err_pipe = None,
            },
            s = child.wait(), if status.is_none() => {
                status = Some(s);
                drain.as_mut().reset(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
            }
            () = &mut drain, if status.is_some() => break None,
            () = &mut deadline => break Some(Stopped::TimedOut),
            () = cancel.cancelled() => break Some(Stopped::Interrupted),
        }
    };
    Watched { stopped, status, out, err }
}

/// One read from a pipe still open: `None` at its end (or on an error).
async fn read<R: tokio::io::AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> Option<usize> {
    let pipe = pipe.as_mut()?;
    match pipe.read(buf).await {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(n),
    }
}

/// The first `keep` bytes of a stream, and how many it had in all.
struct Bounded {
    kept: Vec<u8>,
    keep: usize,
    total: u64,
}

impl Bounded {
    fn new(keep: usize) -> Bounded {
        Bounded { kept: Vec::new(), keep, total: 0 }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.keep.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// The kept text, with a marker naming what was dropped.
    fn finish(self) -> String {
        let mut text = String::from_utf8_lossy(&self.kept).into_owned();
        let dropped = self.total - self.kept.len() as u64;
        if dropped > 0 {
            // A character cut at the bound is dropped whole.
            while text.ends_with('\u{FFFD}') {
                text.pop();
            }
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!(
                "[… {dropped} more bytes dropped: a hook's output is kept to its first {} bytes]",
                self.keep
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_past_its_bound_is_dropped_with_a_marker() {
        let mut b = Bounded::new(8);
        b.push(b"hello ");
        b.push(b"world, again");
        assert_eq!(b.total, 18);
        assert_eq!(
            b.finish(),
            "hello wo\n[… 10 more bytes dropped: a hook's output is kept to its first 8 bytes]"
        );
        let mut b = Bounded::new(STDERR_KEPT);
        b.push(b"short\n");
        assert_eq!(b.finish(), "short\n");
    }
}
