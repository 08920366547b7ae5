//! The flags Claude Code users type, and a prompt piped to `exec`, with the real binary
//! against the mock server: `-p PROMPT` is `exec PROMPT`, `-c -p` is `exec --last`, a piped
//! standard input is the prompt when no PROMPT is given (never when one is), and what would
//! ask is refused when the prompt came down the pipe.

use std::process::{Output, Stdio};
use std::time::Duration;

use super::support::text;
use codewhale_provider::test_support::{MockServer, Reply, TEST_API_KEY};
use serde_json::json;
use tempfile::TempDir;
use tokio::io::AsyncWriteExt as _;

struct Setup {
    server: MockServer,
    home: TempDir,
    ws: TempDir,
}

impl Setup {
    async fn new() -> Setup {
        Setup {
            server: MockServer::start().await.unwrap(),
            home: tempfile::tempdir().unwrap(),
            ws: tempfile::tempdir().unwrap(),
        }
    }

    /// `codewhale ARGS` against the mock server, `stdin` piped in (or closed when `None`).
    async fn run(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let mut cmd = super::cli::codewhale(self.home.path(), self.ws.path());
        // The GLOBAL flags first: a prompt may follow `--`.
        cmd.args(["--provider", "openai", "--model", "gpt-4.1"])
            .args(["--base-url", &self.server.openai_base_url()])
            .args(args)
            .env("OPENAI_API_KEY", TEST_API_KEY)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut pipe = child.stdin.take().unwrap();
        if let Some(bytes) = stdin {
            // A reader that stops early (over 1 MiB) closes the pipe: not an error here.
            let _ = pipe.write_all(bytes).await;
        }
        drop(pipe);
        child.wait_with_output().await.unwrap()
    }

    fn sent_user_text(&self, request: usize) -> String {
        let messages = self.server.requests()[request].body["messages"].clone();
        let user = messages.as_array().unwrap().iter().rfind(|m| m["role"] == "user").unwrap();
        user["content"].as_str().map(str::to_owned).unwrap_or_else(|| user["content"].to_string())
    }

    fn sessions(&self) -> usize {
        std::fs::read_dir(self.home.path().join("sessions"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
                    .count()
            })
            .unwrap_or(0)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dash_p_is_exec_and_dash_c_dash_p_continues_the_newest_session() {
    let s = Setup::new().await;
    s.server.push(Reply::text("Blue, noted."));
    let out = s.run(&["-p", "my", "color", "is", "blue"], None).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Blue, noted.\n");
    assert_eq!(s.sent_user_text(0), "my color is blue");
    s.server.push(Reply::text("It is blue."));
    let out = s.run(&["-c", "-p", "what", "is", "my", "color?"], None).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "It is blue.\n");
    let sent = s.server.requests()[1].body["messages"].to_string();
    assert!(sent.contains("my color is blue") && sent.contains("what is my color?"), "{sent}");
    assert_eq!(s.sessions(), 1, "-c -p went on with the same session");
    // --print and --continue are the long names; --json goes with -p.
    s.server.push(Reply::text("Still blue."));
    let out = s.run(&["--continue", "--print", "--json", "and now?"], None).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"type\":\"turn_finished\""), "{}", text(&out.stdout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_piped_stdin_is_the_prompt_only_without_one() {
    let s = Setup::new().await;
    s.server.push(Reply::text("Read it."));
    let out = s.run(&["exec"], Some(b"explain the piped text\nline two\n")).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(s.sent_user_text(0), "explain the piped text\nline two");
    s.server.push(Reply::text("Dash too."));
    let out = s.run(&["-p", "-"], Some(b"through a dash")).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(s.sent_user_text(1), "through a dash");
    // With a PROMPT, whatever is piped is not the prompt.
    s.server.push(Reply::text("Argument."));
    let out = s.run(&["exec", "the", "argument"], Some(b"NOT THE PROMPT")).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(s.sent_user_text(2), "the argument");
    assert!(!s.server.requests()[2].body.to_string().contains("NOT THE PROMPT"));
}

/// With PROMPT given, stdin is never read: a pipe nobody ever closes does not hold the turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_given_never_waits_for_stdin() {
    let s = Setup::new().await;
    s.server.push(Reply::text("Done without stdin."));
    let mut cmd = super::cli::codewhale(s.home.path(), s.ws.path());
    cmd.args(["-p", "go", "--provider", "openai", "--model", "gpt-4.1"])
        .args(["--base-url", &s.server.openai_base_url()])
        .env("OPENAI_API_KEY", TEST_API_KEY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let _open = child.stdin.take().unwrap();
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output()).await;
    let out = out.expect("the turn ended while stdin stayed open").unwrap();
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Done without stdin.\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_prompt_or_an_oversized_one_is_bad_usage_and_sends_nothing() {
    let s = Setup::new().await;
    for (args, stdin) in [
        (&["exec"][..], Some(&b""[..])),
        (&["-p"][..], Some(&b"  \n"[..])),
        (&["exec", "-"][..], None),
    ] {
        let out = s.run(args, stdin).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        assert_eq!(text(&out.stderr), "codewhale: no prompt: give PROMPT or pipe one\n");
    }
    let big = vec![b'a'; 1024 * 1024 + 1];
    let out = s.run(&["exec"], Some(&big)).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).starts_with("codewhale: the piped prompt is over 1 MiB"),
        "{}",
        text(&out.stderr)
    );
    assert!(s.server.requests().is_empty(), "nothing was sent");
    assert_eq!(s.sessions(), 0, "no session was started");
    // Exactly 1 MiB is a prompt.
    s.server.push(Reply::text("A big one."));
    let out = s.run(&["exec"], Some(&big[1..])).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
}

/// A piped prompt leaves nobody to ask: a write that would ask in `ask` mode is refused, and
/// the model reads why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_would_ask_is_refused_with_a_piped_prompt() {
    let s = Setup::new().await;
    s.server.push(Reply::tool_call("w", "write_file", json!({"path": "a.txt", "content": "a\n"})));
    s.server.push(Reply::text("It was refused."));
    let out = s.run(&["exec"], Some(b"write a.txt")).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(text(&out.stderr).contains("write_file a.txt · denied"), "{}", text(&out.stderr));
    assert!(!s.ws.path().join("a.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_new_flags_refuse_what_they_cannot_mean() {
    let s = Setup::new().await;
    for (args, said) in [
        (&["-p", "sessions"][..], "-p runs one turn, as `exec` does, and takes no subcommand"),
        (&["-c", "exec", "hi"][..], "-c continues the newest session of this workspace"),
        (&["hello", "there"][..], "unrecognized subcommand 'hello'"),
        (&["-c", "continue", "please"][..], "add -p (`codewhale -c -p PROMPT`)"),
        (&["--json"][..], "--json and --image before a subcommand go with -p"),
    ] {
        let out = s.run(args, None).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert!(stderr.starts_with("codewhale: ") && stderr.contains(said), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    // A prompt that starts with a subcommand's name goes after `--`.
    s.server.push(Reply::text("About sessions."));
    let out = s.run(&["-p", "--", "sessions", "are", "what?"], None).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(s.sent_user_text(0), "sessions are what?");
    assert!(s.server.requests().len() == 1);
}
