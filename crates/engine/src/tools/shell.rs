//! `shell`: `bash -c COMMAND` in the workspace, foreground (with a timeout) or background.
//!
//! Invariants: every command runs in its own process group so a timeout or an interrupt kills
//! everything it started; combined stdout+stderr is bounded in memory and in what the model
//! reads, with a marker; the exit code is always stated. Background commands go to the
//! [`super::background::BackgroundRegistry`] with a log file.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use super::background::{kill_group, BackgroundRegistry};
use super::output::{HeadTail, MAX_OUTPUT_BYTES};

/// Timeout when the call gives none.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// The longest timeout a call may ask for.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// Variables never passed to commands: the model must not be able to read Codewhale's own
/// provider keys through `env` or `echo`.
pub const HIDDEN_ENV: [&str; 2] = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"];

/// `bash -c command` in `workspace`, in its own process group, without the hidden variables.
fn bash(workspace: &Path, command: &str) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(command).current_dir(workspace).stdin(Stdio::null()).process_group(0);
    for name in HIDDEN_ENV {
        cmd.env_remove(name);
    }
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
}

impl ShellOutcome {
    /// An outcome whose text is complete (nothing was cut).
    fn whole(text: String, is_error: bool) -> ShellOutcome {
        ShellOutcome { bytes: text.len() as u64, text, is_error }
    }
}

/// Runs `command` in the foreground.
pub async fn run(
    workspace: &Path,
    command: &str,
    timeout_ms: Option<u64>,
    cancel: &CancellationToken,
) -> ShellOutcome {
    let timeout =
        Duration::from_millis(timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS).clamp(1, MAX_TIMEOUT_MS));
    let mut child = match bash(workspace, command)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(err) => return ShellOutcome::whole(format!("cannot start bash: {err}"), true),
    };
    let pgid = child.id().unwrap_or_default();
    let (Some(mut out), Some(mut err)) = (child.stdout.take(), child.stderr.take()) else {
        return ShellOutcome::whole("cannot capture the command's output".into(), true);
    };
    let mut collected = HeadTail::new(MAX_OUTPUT_BYTES);
    let mut out_buf = vec![0u8; 16 * 1024];
    let mut err_buf = vec![0u8; 16 * 1024];
    let (mut out_open, mut err_open) = (true, true);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let stopped: Option<&str> = loop {
        if !out_open && !err_open {
            break None;
        }
        tokio::select! {
            n = out.read(&mut out_buf), if out_open => match n {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => collected.push(&out_buf[..n]),
            },
            n = err.read(&mut err_buf), if err_open => match n {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => collected.push(&err_buf[..n]),
            },
            () = &mut deadline => break Some("timed out"),
            () = cancel.cancelled() => break Some("interrupted"),
        }
    };
    if let Some(why) = stopped {
        kill_group(pgid);
        let _ = child.start_kill();
        let _ = child.wait().await;
        let printed = collected.total();
        let mut text = collected.finish();
        let cut_len = text.len();
        let reason = if why == "timed out" {
            format!(
                "[timed out after {} ms; the command was killed. Pass a larger timeout_ms (up to \
                 {MAX_TIMEOUT_MS}) or run it with background: true]",
                timeout.as_millis()
            )
        } else {
            "[interrupted by the user; the command was killed]".to_owned()
        };
        push_line(&mut text, &reason);
        return cut_outcome(text, cut_len, printed, true);
    }
    let status = tokio::select! {
        s = child.wait() => s,
        () = cancel.cancelled() => {
            kill_group(pgid);
            let _ = child.start_kill();
            child.wait().await
        }
    };
    let printed = collected.total();
    let mut text = collected.finish();
    let cut_len = text.len();
    let is_error = match status {
        Ok(status) => match status.code() {
            Some(code) => {
                push_line(&mut text, &format!("[exit code: {code}]"));
                code != 0
            }
            None => {
                push_line(&mut text, "[killed by a signal]");
                true
            }
        },
        Err(err) => {
            push_line(&mut text, &format!("[cannot wait for the command: {err}]"));
            true
        }
    };
    cut_outcome(text, cut_len, printed, is_error)
}

/// `text` is the collected output (`cut_len` bytes, standing for `printed` bytes the command
/// printed) followed by status lines; the original size counts the status lines too.
fn cut_outcome(text: String, cut_len: usize, printed: u64, is_error: bool) -> ShellOutcome {
    let status = text.len().saturating_sub(cut_len) as u64;
    ShellOutcome { bytes: printed + status, text, is_error }
}

/// Starts `command` in the background and registers it.
pub fn spawn_background(
    workspace: &Path,
    command: &str,
    registry: &BackgroundRegistry,
) -> ShellOutcome {
    let fail = |what: String| ShellOutcome::whole(what, true);
    let (id, log) = match registry.reserve() {
        Ok(x) => x,
        Err(err) => return fail(format!("cannot create the background log folder: {err}")),
    };
    let file = match std::fs::File::create(&log) {
        Ok(f) => f,
        Err(err) => return fail(format!("cannot create {}: {err}", log.display())),
    };
    let Ok(file_err) = file.try_clone() else {
        return fail(format!("cannot share {} between stdout and stderr", log.display()));
    };
    let child = bash(workspace, command).stdout(file).stderr(file_err).spawn();
    match child {
        Ok(child) => {
            let pid = registry.insert(id.clone(), command.to_owned(), log.clone(), child);
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
        Err(err) => fail(format!("cannot start bash: {err}")),
    }
}

fn push_line(text: &mut String, line: &str) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(line);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn combined_output_and_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let out = run(dir.path(), "echo out; echo err >&2; exit 3", None, &cancel).await;
        assert!(out.text.contains("out\n") && out.text.contains("err\n"), "{}", out.text);
        assert!(out.text.ends_with("[exit code: 3]"));
        assert!(out.is_error);
        let ok = run(dir.path(), "pwd", None, &cancel).await;
        assert!(!ok.is_error);
        assert!(ok.text.contains(dir.path().file_name().unwrap().to_str().unwrap()));
    }

    #[test]
    fn provider_keys_are_hidden_from_commands() {
        let cmd = bash(Path::new("."), "env");
        let mut removed: Vec<_> = cmd
            .as_std()
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect();
        removed.sort();
        assert_eq!(removed, ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]);
    }

    #[tokio::test]
    async fn timeouts_kill_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let start = std::time::Instant::now();
        let out = run(dir.path(), "sleep 30 & sleep 30; echo never", Some(200), &cancel).await;
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(out.text.contains("timed out after 200 ms"), "{}", out.text);
        assert!(!out.text.contains("never"));
    }

    #[tokio::test]
    async fn huge_output_is_capped_with_a_marker() {
        let dir = tempfile::tempdir().unwrap();
        let out =
            run(dir.path(), "yes line | head -c 1000000", None, &CancellationToken::new()).await;
        assert!(out.text.len() < MAX_OUTPUT_BYTES + 200);
        assert!(out.text.contains("bytes omitted"));
        // Everything printed plus the "[exit code: 0]" line.
        assert_eq!(out.bytes, 1_000_000 + "[exit code: 0]".len() as u64);
        let small = run(dir.path(), "echo hi", None, &CancellationToken::new()).await;
        assert_eq!(small.bytes, small.text.len() as u64, "{small:?}");
    }

    #[tokio::test]
    async fn background_commands_are_listed_until_they_exit() {
        let dir = tempfile::tempdir().unwrap();
        let registry = BackgroundRegistry::new(dir.path().join("bg"));
        let out = spawn_background(dir.path(), "sleep 30", &registry);
        assert!(out.text.starts_with("started in the background as bg-1"), "{}", out.text);
        let running = registry.running();
        assert_eq!(running.len(), 1);
        assert_eq!(running[0].command, "sleep 30");
        registry.shutdown();
        assert!(registry.running().is_empty());
    }

    #[tokio::test]
    async fn listening_ports_of_background_commands_are_found() {
        if std::process::Command::new("python3").arg("--version").output().is_err() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let registry = BackgroundRegistry::new(dir.path().join("bg"));
        let server = "python3 -c 'import socket,time\ns=socket.socket()\ns.bind((\"127.0.0.1\",0))\ns.listen()\nprint(s.getsockname()[1],flush=True)\ntime.sleep(30)'";
        let out = spawn_background(dir.path(), server, &registry);
        assert!(!out.is_error, "{}", out.text);
        let log = registry.running()[0].log.clone();
        let mut port = None;
        for _ in 0..100 {
            port = std::fs::read_to_string(&log).ok().and_then(|t| t.trim().parse::<u16>().ok());
            if port.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let port = port.expect("the server printed its port");
        assert_eq!(registry.running()[0].ports, vec![port]);
        registry.shutdown();
    }
}
