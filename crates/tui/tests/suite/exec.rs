//! `codewhale exec` end to end: the real binary, real HTTP, real journal files.

use std::path::Path;
use std::process::Output;

use super::pty::SUMMARY;
use super::support::text;
use codewhale_provider::test_support::{Fault, MockServer, Reply, TEST_API_KEY};
use serde_json::{json, Value};
use tempfile::TempDir;

struct Setup {
    server: MockServer,
    home: TempDir,
    ws: TempDir,
}

impl Setup {
    async fn new() -> Setup {
        Setup {
            server: MockServer::start().await.unwrap(),
            // Not under the temp dir codewhale is given (`cli::child_tmp`), like a real home:
            // one the sandbox leaves writable gets a warning at start, and these tests read
            // stderr whole.
            home: tempfile::tempdir().unwrap(),
            ws: tempfile::tempdir().unwrap(),
        }
    }

    /// Runs `codewhale exec ARGS` in the workspace against the mock server.
    async fn exec(&self, args: &[&str]) -> Output {
        let mut cmd = self.command();
        cmd.arg("exec")
            .args(["--provider", "openai", "--model", "gpt-4.1"])
            .args(["--base-url", &self.server.openai_base_url()])
            .args(args)
            .env("OPENAI_API_KEY", TEST_API_KEY);
        cmd.output().await.unwrap()
    }

    fn command(&self) -> tokio::process::Command {
        super::cli::codewhale(self.home.path(), self.ws.path())
    }

    /// Runs `codewhale compact --last` against the mock server.
    async fn compact_last(&self) -> Output {
        let mut cmd = self.command();
        cmd.args(["compact", "--last", "--provider", "openai", "--model", "gpt-4.1"])
            .args(["--base-url", &self.server.openai_base_url()])
            .env("OPENAI_API_KEY", TEST_API_KEY);
        cmd.output().await.unwrap()
    }

    fn sessions(&self) -> Vec<std::path::PathBuf> {
        let dir = self.home.path().join("sessions");
        let Ok(read) = std::fs::read_dir(dir) else { return Vec::new() };
        read.filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect()
    }
}

fn kinds(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["kind"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prints_the_final_answer_after_a_tool_loop() {
    let s = Setup::new().await;
    s.server.push(Reply::tool_call("c1", "shell", json!({"command": "echo made > made.txt"})));
    s.server.push(Reply::text("I made the file.").with_usage(1200, 6));
    let out = s.exec(&["--approval", "full", "make", "a", "file"]).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "I made the file.\n");
    assert_eq!(
        text(&out.stderr),
        "codewhale: shell `echo made > made.txt` · done\n",
        "nothing but the answer and the call's line reach the terminal"
    );
    assert_eq!(std::fs::read_to_string(s.ws.path().join("made.txt")).unwrap(), "made\n");
    let user = &s.server.requests()[0].body["messages"][1];
    assert_eq!(user["content"], "make a file");
    let sessions = s.sessions();
    assert_eq!(sessions.len(), 1);
    assert_eq!(kinds(&sessions[0]), ["header", "user", "assistant", "tool_result", "assistant"]);
    let logs = std::fs::read_dir(s.home.path().join("logs")).unwrap().count();
    assert!(logs >= 1, "tracing logs go to the home's logs folder");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_prints_every_event_as_one_line() {
    let s = Setup::new().await;
    s.server.push(Reply::tool_call("c1", "list_dir", json!({"path": "."})));
    s.server.push(Reply::text("empty"));
    let out = s.exec(&["--json", "list"]).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let events: Vec<Value> =
        text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for expected in [
        "session_configured",
        "turn_started",
        "text_delta",
        "tool_call_requested",
        "tool_call_started",
        "tool_call_finished",
        "usage",
        "turn_finished",
        "shutdown_complete",
    ] {
        assert!(types.contains(&expected), "{expected} missing from {types:?}");
    }
    let finished = events.iter().find(|e| e["type"] == "turn_finished").unwrap();
    assert_eq!(
        (finished["status"].as_str(), finished["text"].as_str()),
        (Some("completed"), Some("empty"))
    );
    assert_eq!(finished["id"], events.iter().find(|e| e["type"] == "turn_started").unwrap()["id"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_continues_the_workspace_session() {
    let s = Setup::new().await;
    s.server.push(Reply::text("one"));
    s.server.push(Reply::text("two"));
    assert!(s.exec(&["first"]).await.status.success());
    let out = s.exec(&["--last", "second"]).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "two\n");
    assert_eq!(s.sessions().len(), 1);
    let messages = s.server.requests()[1].body["messages"].as_array().unwrap().len();
    assert_eq!(messages, 4, "system, first, one, second");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_resumed_from_another_directory_runs_its_tools_in_its_own() {
    let s = Setup::new().await;
    s.server.push(Reply::text("one"));
    assert!(s.exec(&["first"]).await.status.success());
    let id = s.sessions()[0].file_stem().unwrap().to_string_lossy().into_owned();

    let elsewhere = tempfile::tempdir().unwrap();
    s.server.push(Reply::tool_call("c1", "shell", json!({"command": "pwd > where.txt"})));
    s.server.push(Reply::text("noted"));
    let mut cmd = s.command();
    cmd.current_dir(elsewhere.path())
        .arg("exec")
        .args(["--provider", "openai", "--model", "gpt-4.1"])
        .args(["--base-url", &s.server.openai_base_url()])
        .args(["--approval", "full", "--session", &id, "where", "are", "you?"])
        .env("OPENAI_API_KEY", TEST_API_KEY);
    let out = cmd.output().await.unwrap();
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "noted\n");
    let ws = std::fs::canonicalize(s.ws.path()).unwrap();
    let written = std::fs::read_to_string(s.ws.path().join("where.txt")).unwrap();
    assert_eq!(written.trim_end(), ws.display().to_string());
    assert!(!elsewhere.path().join("where.txt").exists(), "nothing runs in the other directory");
    assert_eq!(s.sessions().len(), 1, "the same session continued");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denied_calls_are_reported_to_the_model_and_the_turn_completes() {
    let s = Setup::new().await;
    s.server.push(Reply::tool_call("w", "write_file", json!({"path": "x", "content": "x"})));
    s.server.push(Reply::text("I was not allowed to write."));
    let out = s.exec(&["write x"]).await;
    assert!(out.status.success());
    assert!(!s.ws.path().join("x").exists());
    let sent = &s.server.requests()[1].body["messages"];
    let result = sent.as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
    assert!(result["content"].as_str().unwrap().starts_with("denied:"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_exit_1_with_one_sentence() {
    let s = Setup::new().await;
    s.server.push(Reply::fault(Fault::Unauthorized));
    let out = s.exec(&["hi"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("codewhale: the model request failed") && err.contains("API key"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains(TEST_API_KEY));

    // No provider at all.
    let out = s.command().args(["exec", "hi"]).output().await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no model provider is configured"), "{}", text(&out.stderr));

    // A bad config file names file, line and key.
    std::fs::write(s.home.path().join("config.toml"), "model = \"m\"\napprovals = \"full\"\n")
        .unwrap();
    let out = s.exec(&["hi"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("config.toml:2: bad `approvals`"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_usage_exits_2() {
    let s = Setup::new().await;
    let out = s.exec(&["--session", "abc", "--last", "hi"]).await;
    assert_eq!(out.status.code(), Some(2));
    let out = s.exec(&["--approval", "sometimes", "hi"]).await;
    assert_eq!(out.status.code(), Some(2));
    let out = s.command().arg("exec").output().await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = s.exec(&["--session", "nope", "hi"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no session nope"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_mid_tool_leaves_a_session_the_next_exec_repairs() {
    let s = Setup::new().await;
    s.server.push(Reply::tool_call("c1", "shell", json!({"command": "touch started; sleep 5"})));
    let mut cmd = s.command();
    cmd.arg("exec")
        .args(["--provider", "openai", "--model", "gpt-4.1", "--approval", "full"])
        .args(["--base-url", &s.server.openai_base_url()])
        .arg("wait for it")
        .env("OPENAI_API_KEY", TEST_API_KEY)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let started = s.ws.path().join("started");
    for _ in 0..200 {
        if started.exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(started.exists(), "the tool never started");
    child.kill().await.unwrap();

    s.server.push(Reply::text("recovered"));
    let out = s.exec(&["--last", "what happened?"]).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "recovered\n");
    let messages = s.server.requests()[1].body["messages"].clone();
    let result = messages.as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(result["tool_call_id"], "c1");
    assert_eq!(result["content"], "no result: the call was interrupted");
    let sessions = s.sessions();
    assert_eq!(
        kinds(&sessions[0]),
        ["header", "user", "assistant", "tool_result", "user", "assistant"]
    );
}

/// A process killed while the reply was still to come leaves an unanswered message: the next
/// `exec --last` sets it aside (saying so on stderr) and sends its own prompt alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_left_unanswered_by_a_kill_is_set_aside_not_merged() {
    let s = Setup::new().await;
    s.server.push(Reply::text("never arrives").hang_after(0));
    let mut cmd = s.command();
    cmd.arg("exec")
        .args(["--provider", "openai", "--model", "gpt-4.1"])
        .args(["--base-url", &s.server.openai_base_url()])
        .arg("long reply please")
        .env("OPENAI_API_KEY", TEST_API_KEY)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let sent = s.server.wait_for_requests(1);
    tokio::time::timeout(std::time::Duration::from_secs(20), sent)
        .await
        .expect("the request was never sent");
    assert_eq!(s.server.requests().len(), 1, "one request");
    child.kill().await.unwrap();

    s.server.push(Reply::text("on its own"));
    let out = s.exec(&["--last", "branch message"]).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "on its own\n");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("(\"long reply please\") never got a reply"), "{stderr}");
    let sent = s.server.requests()[1].body["messages"].to_string();
    assert!(sent.contains("branch message") && !sent.contains("long reply please"), "{sent}");
}

/// A reader that leaves early (`exec --json | head -c 10`) is not an error: the turn runs to
/// its end, the session is whole (no message taken back), and exec exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_leaves_early_cuts_nothing_short() {
    use tokio::io::AsyncReadExt as _;
    let s = Setup::new().await;
    s.server.push(Reply::text("a whole answer").slow(std::time::Duration::from_millis(50)));
    let mut cmd = s.command();
    cmd.arg("exec")
        .args(["--provider", "openai", "--model", "gpt-4.1", "--json"])
        .args(["--base-url", &s.server.openai_base_url()])
        .arg("tell me")
        .env("OPENAI_API_KEY", TEST_API_KEY)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 10];
    stdout.read_exact(&mut first).await.unwrap();
    drop(stdout);
    let out = child.wait_with_output().await.unwrap();
    assert!(out.status.success(), "exit {:?}, stderr: {}", out.status, text(&out.stderr));
    let journal = std::fs::read_to_string(&s.sessions()[0]).unwrap();
    assert!(journal.contains("a whole answer"), "the turn ran to its end");
    assert!(!journal.contains("\"kind\":\"head\""), "nothing was taken back: {journal}");
}

/// Runs `codewhale exec ARGS` inside a pseudo-terminal (`script`), typing `input`.
async fn exec_in_terminal(s: &Setup, args: &str, input: &str) -> Output {
    use tokio::io::AsyncWriteExt as _;
    let line = format!(
        "{} exec --provider openai --model gpt-4.1 --base-url {} {args}",
        env!("CARGO_BIN_EXE_codewhale"),
        s.server.openai_base_url()
    );
    let mut cmd = s.command();
    let mut cmd = {
        let std = cmd.as_std_mut();
        let mut script = tokio::process::Command::new("script");
        script.args(["-qec", &line, "/dev/null"]).current_dir(s.ws.path());
        for (k, v) in std.get_envs() {
            match v {
                Some(v) => script.env(k, v),
                None => script.env_remove(k),
            };
        }
        script
    };
    cmd.env("OPENAI_API_KEY", TEST_API_KEY)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    child.wait_with_output().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_exec_asks_before_a_call_that_needs_approval() {
    if std::process::Command::new("script").arg("--version").output().is_err() {
        return;
    }
    let s = Setup::new().await;
    s.server.push(Reply::tool_call("c1", "shell", json!({"command": "touch approved.txt"})));
    s.server.push(Reply::text("touched"));
    let out = exec_in_terminal(&s, "'touch it'", "y\n").await;
    let screen = text(&out.stdout);
    assert!(out.status.success(), "{screen}");
    assert!(screen.contains("allow shell `touch approved.txt`?"), "{screen}");
    assert!(screen.contains("touched"), "{screen}");
    assert!(s.ws.path().join("approved.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_a_no_denies_the_call() {
    if std::process::Command::new("script").arg("--version").output().is_err() {
        return;
    }
    let s = Setup::new().await;
    s.server.push(Reply::tool_call("c1", "shell", json!({"command": "touch refused.txt"})));
    s.server.push(Reply::text("ok, not touching"));
    let out = exec_in_terminal(&s, "'touch it'", "n\n").await;
    assert!(out.status.success(), "{}", text(&out.stdout));
    assert!(!s.ws.path().join("refused.txt").exists());
    let sent = &s.server.requests()[1].body["messages"];
    let result = sent.as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
    assert!(result["content"].as_str().unwrap().contains("the user declined"));
}

/// Plain `exec` says on stderr what the UI would show as notices: here a torn tail moved aside
/// on open, and every step of an auto compaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_exec_prints_every_notice_on_stderr() {
    let s = Setup::new().await;
    for k in 0..4 {
        s.server.push(Reply::text(format!("answer {k}: {}", "lorem ipsum dolor ".repeat(400))));
        let prompt = format!("question {k}");
        let mut args = vec!["--context-window", "9216"];
        if k > 0 {
            args.push("--last");
        }
        args.push(&prompt);
        let out = s.exec(&args).await;
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    }
    let session = s.sessions().remove(0);
    let mut file = std::fs::OpenOptions::new().append(true).open(&session).unwrap();
    std::io::Write::write_all(&mut file, b"{\"v\":1,\"id\":\"torn").unwrap();
    drop(file);
    s.server.push(Reply::text(
        "## Objective\nGo on.\n## User direction\nNone\n## Permissions and limits\nNone\n## Done\n\
         None\n## Changed files\nNone\n## Still running\nNone\n## Verification left\nNone\n\
         ## Open questions\nNone\n## Next action\nGo on.\n## Reference\nNone",
    ));
    s.server.push(Reply::text("done").with_usage(2_000, 5));
    let out = s.exec(&["--context-window", "9216", "--last", "one more"]).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("codewhale: warning: line ") && stderr.contains("torn final line"),
        "{stderr}"
    );
    assert!(!stderr.contains("compacting the conversation"), "one line per pass: {stderr}");
    assert_eq!(stderr.matches("codewhale: compacted (summary, ").count(), 1, "{stderr}");
    assert_eq!(text(&out.stdout), "done\n");
}

/// Plain `exec` names every tool call on stderr as it ends: what it touched and how it ended,
/// a denial with what would allow it, a failure with its exit code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_exec_prints_one_line_per_tool_call() {
    let s = Setup::new().await;
    std::fs::write(s.ws.path().join("notes.md"), "hello\n").unwrap();
    s.server.push(Reply::tool_call("r", "read_file", json!({"path": "notes.md"})));
    s.server.push(Reply::tool_call("w", "write_file", json!({"path": "out.txt", "content": "x"})));
    s.server.push(Reply::tool_call("s", "shell", json!({"command": "exit 3"})));
    s.server.push(Reply::text("finished"));
    let out = s.exec(&["--approval", "auto-edit", "go"]).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("codewhale: read_file notes.md · done\n"), "{stderr}");
    assert!(stderr.contains("codewhale: write_file out.txt · done\n"), "{stderr}");
    assert!(
        stderr.contains(
            "codewhale: shell `exit 3` · denied: it needs approval and nobody can answer"
        ),
        "{stderr}"
    );
    assert_eq!(text(&out.stdout), "finished\n");
    s.server.push(Reply::tool_call("s2", "shell", json!({"command": "exit 3"})));
    s.server.push(Reply::text("it failed"));
    let out = s.exec(&["--approval", "full", "--last", "again"]).await;
    let stderr = text(&out.stderr);
    assert!(stderr.contains("codewhale: shell `exit 3` · failed (exit code 3)\n"), "{stderr}");
}

/// Every reply is priced at the model's published price: `cost_usd` in the journal's usage,
/// in `exec --json`'s turn stats and in `sessions`; a model with no known price has none (never
/// a guess) until `[pricing]` gives it one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_are_priced_by_the_model_id_and_unknown_models_show_tokens_only() {
    let s = Setup::new().await;
    // gpt-4.1: $2 in, $0.50 cached, $8 out per million.
    s.server.push(Reply::text("priced").with_usage(1_000_000, 100_000).with_cache(500_000, 0));
    let out = s.exec(&["--json", "hello"]).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let finished: Value = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "turn_finished")
        .unwrap();
    let cost = finished["stats"]["cost_usd"].as_f64().unwrap();
    assert!((cost - (1.0 + 0.25 + 0.8)).abs() < 1e-9, "{finished}");
    assert_eq!(finished["stats"]["compaction_cost_usd"].as_f64(), Some(0.0));
    let journal = std::fs::read_to_string(&s.sessions()[0]).unwrap();
    assert!(journal.contains("\"cost_usd\":2.05"), "{journal}");
    let listed = s.command().args(["sessions", "--json"]).output().await.unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert!((listed[0]["cost_usd"].as_f64().unwrap() - 2.05).abs() < 1e-9, "{listed}");

    // A model the catalog has no price for: tokens only.
    s.server.push(Reply::text("unpriced").with_usage(1_000, 10));
    let out = local(&s).await;
    let finished: Value = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "turn_finished")
        .unwrap();
    assert!(finished["stats"]["cost_usd"].is_null(), "{finished}");
    assert_eq!(finished["stats"]["input_tokens"], 1_000);
    // ... until the user's config prices it.
    std::fs::write(
        s.home.path().join("config.toml"),
        "[pricing.\"my-local-model\"]\ninput = 1.0\noutput = 2.0\n",
    )
    .unwrap();
    s.server.push(Reply::text("now priced").with_usage(1_000_000, 1_000_000));
    let out = local(&s).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let finished: Value = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "turn_finished")
        .unwrap();
    assert_eq!(finished["stats"]["cost_usd"].as_f64(), Some(3.0), "{finished}");
}

/// A note's summary requests are priced too: the compaction record carries their `cost_usd`,
/// so the session's total in `codewhale sessions` counts them, and `compact` prints each request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_note_cost_is_journaled_and_counted_in_the_sessions_total() {
    let s = Setup::new().await;
    // The replies report a fixed prompt size: the mock stands for a hosted API, which never
    // cuts a prompt silently.
    std::fs::write(s.home.path().join("config.toml"), "[provider]\nhosted = true\n").unwrap();
    for k in 0..3 {
        let answer = format!("{} end {k}.", "the parser keeps every span it reads. ".repeat(300));
        s.server.push(Reply::text(answer).with_usage(1_000, 1_000));
        let last: &[&str] = if k == 0 { &[] } else { &["--last"] };
        let out = s.exec(&[last, &[&format!("question {k}")]].concat()).await;
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    }
    // gpt-4.1 at $2 in and $8 out per million: 1M in and 10k out cost $2.08.
    s.server.push(Reply::text(SUMMARY).with_usage(1_000_000, 10_000));
    let out = s.compact_last().await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(text(&out.stderr).contains("codewhale: summary 1 of 1 · "), "{}", text(&out.stderr));
    let journal = std::fs::read_to_string(&s.sessions()[0]).unwrap();
    let record = journal.lines().find(|l| l.contains("\"kind\":\"compaction\"")).unwrap();
    assert!(record.contains("\"cost_usd\":2.08"), "{record}");
    let listed = s.command().args(["sessions", "--json"]).output().await.unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    // Three replies of 1,000 in and 1,000 out ($0.01 each) and the note.
    let total = listed[0]["cost_usd"].as_f64().unwrap();
    assert!((total - (3.0 * 0.01 + 2.08)).abs() < 1e-9, "{listed}");
}

/// `exec --json hello` with a model the catalog has no price for.
async fn local(s: &Setup) -> Output {
    let mut cmd = s.command();
    cmd.arg("exec")
        .args(["--provider", "openai", "--model", "my-local-model"])
        .args(["--base-url", &s.server.openai_base_url(), "--json", "hello"])
        .env("OPENAI_API_KEY", TEST_API_KEY);
    cmd.output().await.unwrap()
}

/// `codewhale compact` on a conversation with nothing to shrink says so and exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_with_nothing_to_shrink_is_information() {
    let s = Setup::new().await;
    s.server.push(Reply::text("hi"));
    assert!(s.exec(&["hello"]).await.status.success());
    let out = s.compact_last().await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("nothing to compact: "), "{}", text(&out.stdout));
}

/// A one-prompt `exec` is decided by the cheap upper bound (docs/architecture.md, *Budget and
/// tokens*): it never builds the encoder's tables, nor waits for them on exit (they cost more CPU
/// than the rest of the run).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_prompt_exec_never_builds_the_encoder() {
    let s = Setup::new().await;
    s.server.push(Reply::text("42").with_usage(1200, 2));
    let mut cmd = s.command();
    cmd.arg("exec")
        .args(["--provider", "openai", "--model", "gpt-4.1"])
        .args(["--base-url", &s.server.openai_base_url(), "say the answer"])
        .env("OPENAI_API_KEY", TEST_API_KEY)
        .env("CODEWHALE_LOG", "debug");
    let out = cmd.output().await.unwrap();
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let logs: String = std::fs::read_dir(s.home.path().join("logs"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    assert!(!logs.is_empty(), "the debug log was written");
    assert!(!logs.contains("building the o200k encoder"), "{logs}");
}

/// A local server that is not running: the error names the address and what to do, at once
/// (no retries with "try again in a moment"); an unknown host says the lookup failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_not_there_is_named_with_what_to_do() {
    let s = Setup::new().await;
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let base = format!("http://127.0.0.1:{port}/v1");
    for (url, expected) in [
        (base.as_str(), format!("nothing answers at http://127.0.0.1:{port} (connection refused)")),
        (
            "http://no-such-host.invalid/v1",
            "the host of http://no-such-host.invalid cannot be found".to_owned(),
        ),
    ] {
        let mut cmd = s.command();
        cmd.arg("exec")
            .args(["--provider", "openai", "--model", "gpt-4.1", "--base-url", url])
            .arg("hello")
            .env("OPENAI_API_KEY", TEST_API_KEY);
        let out = cmd.output().await.unwrap();
        assert!(!out.status.success());
        let stderr = text(&out.stderr);
        assert!(stderr.contains(&expected), "{stderr}");
        assert!(stderr.contains("--base-url"), "{stderr}");
        assert!(!stderr.contains("try again in a moment"), "{stderr}");
    }
}

/// `codewhale compact` on a young session (three short turns) sends no request, exits 0 and
/// says "nothing to compact" with the reason — a note would not be smaller than what it covers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_on_a_young_session_sends_nothing() {
    let s = Setup::new().await;
    for k in 0..3 {
        s.server.push(Reply::text(format!("answer {k}")));
        let last: &[&str] = if k == 0 { &[] } else { &["--last"] };
        let out = s.exec(&[last, &[&format!("question {k}")]].concat()).await;
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    }
    let sent = s.server.requests().len();
    let out = s.compact_last().await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("nothing to compact: a note would not make the conversation smaller"),
        "{stdout}"
    );
    assert_eq!(s.server.requests().len(), sent, "no request was paid for");
}

/// `exec --last` while another codewhale holds the newest session of the workspace (it was
/// started a moment earlier and is still answering) continues the newest free one and says so,
/// instead of failing on the other's lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_passes_over_a_session_another_codewhale_holds() {
    let s = Setup::new().await;
    s.server.push(Reply::text("first answer"));
    let out = s.exec(&["first"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let first = s.sessions().remove(0);
    let first_id = first.file_stem().unwrap().to_string_lossy().into_owned();

    s.server.push(Reply::text("slow answer").after(std::time::Duration::from_secs(4)));
    s.server.push(Reply::text("third answer"));
    let mut busy = s.command();
    busy.arg("exec")
        .args(["--provider", "openai", "--model", "gpt-4.1"])
        .args(["--base-url", &s.server.openai_base_url(), "second"])
        .env("OPENAI_API_KEY", TEST_API_KEY)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut busy = busy.spawn().unwrap();
    // The second session exists and is held once its request is out.
    let sent = s.server.wait_for_requests(2);
    tokio::time::timeout(std::time::Duration::from_secs(20), sent)
        .await
        .expect("the second session's request was never sent");
    assert_eq!(s.sessions().len(), 2);

    let out = s.exec(&["--last", "third"]).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(text(&out.stdout), "third answer\n");
    assert!(stderr.contains("is open in another codewhale (pid"), "{stderr}");
    assert!(stderr.contains(&format!("continuing {first_id}")), "{stderr}");
    assert!(kinds(&first).iter().filter(|k| *k == "user").count() == 2, "third went to the first");
    assert!(busy.wait().await.unwrap().success());
}

/// A model named on the command line of a resumed session is a switch, journaled like
/// `/model`: `context` and `sessions` report the model the session last used, and the next
/// `exec --last` goes on with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_named_when_resuming_is_journaled_and_reported() {
    let s = Setup::new().await;
    s.server.push_all([Reply::text("one"), Reply::text("two"), Reply::text("three")]);
    assert!(s.exec(&["first"]).await.status.success());
    let mut cmd = s.command();
    cmd.arg("exec")
        .args(["--provider", "openai", "--model", "other-model"])
        .args(["--base-url", &s.server.openai_base_url(), "--last", "second"])
        .env("OPENAI_API_KEY", TEST_API_KEY);
    let out = cmd.output().await.unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(s.server.last_request().unwrap().body["model"], "other-model");

    let out = s.command().args(["context", "--last", "--json"]).output().await.unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["model"], "other-model", "{report}");
    let out = s.command().args(["sessions", "--json"]).output().await.unwrap();
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed[0]["model"], "other-model", "{listed}");

    // Without --model the session goes on with the one it last used.
    let mut cmd = s.command();
    cmd.arg("exec")
        .args([
            "--provider",
            "openai",
            "--base-url",
            &s.server.openai_base_url(),
            "--last",
            "third",
        ])
        .env("OPENAI_API_KEY", TEST_API_KEY);
    assert!(cmd.output().await.unwrap().status.success());
    assert_eq!(s.server.last_request().unwrap().body["model"], "other-model");
    let switches = kinds(&s.sessions()[0]).iter().filter(|k| *k == "system").count();
    assert_eq!(switches, 1, "one switch journaled, not one per run");
}

/// One figure for one fact: the last `usage` event of `exec --json` says the same size of the
/// next request as `context --last --json` says right after, with the same label, with and
/// without a usage report from the provider.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_usage_event_and_context_agree() {
    for reported in [true, false] {
        let s = Setup::new().await;
        let (call, answer) = (
            Reply::tool_call("c1", "list_dir", json!({"path": "."})),
            Reply::text("a long answer with many words in it ".repeat(40)),
        );
        if reported {
            s.server.push_all([call.with_usage(1_358, 40), answer.with_usage(1_500, 300)]);
        } else {
            s.server.push_all([call, answer]);
        }
        let out = s.exec(&["--json", "list the files and tell me a story"]).await;
        assert!(out.status.success(), "{}", text(&out.stderr));
        let events: Vec<Value> =
            text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let usage = events.iter().rev().find(|e| e["type"] == "usage").unwrap();
        let out = s.command().args(["context", "--last", "--json"]).output().await.unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            usage["pressure"]["tokens"], report["tokens"]["total"],
            "reported={reported}: {usage} vs {}",
            report["tokens"]
        );
        assert_eq!(usage["pressure"]["source"], report["tokens"]["source"], "reported={reported}");
    }
}

/// `compact --last` starts from the figure `context --last` gives right before it, and ends on
/// the one `context --last` gives right after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_reports_the_figures_context_reports() {
    let s = Setup::new().await;
    for k in 0..4 {
        let answer = format!("{} end {k}.", "the parser keeps every span it reads. ".repeat(120));
        s.server.push(Reply::text(answer).with_usage(1_000 + 900 * k, 500));
        let last: &[&str] = if k == 0 { &[] } else { &["--last"] };
        let out = s.exec(&[last, &[&format!("question {k}")]].concat()).await;
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    }
    let total = |out: &Output| -> u64 {
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        report["tokens"]["total"].as_u64().unwrap()
    };
    let context = || {
        let mut cmd = s.command();
        cmd.args(["context", "--last", "--json"]);
        async move { cmd.output().await.unwrap() }
    };
    let before = total(&context().await);
    s.server.push(Reply::text(SUMMARY).with_usage(3_000, 300));
    let out = s.compact_last().await;
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let after = total(&context().await);
    assert!(
        stdout.contains(&format!(": {before} → {after} tokens")),
        "{before} → {after}: {stdout}"
    );
}

/// `--provider openai-responses`: a tool-loop turn over OpenAI's Responses API — stateless
/// (`store: false`, the whole conversation each time), the call and its output as items, the
/// reasoning item sent back unchanged on the next request — and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_loop_over_the_responses_api() {
    let s = Setup::new().await;
    s.server.push_all([
        Reply::parts(vec![
            codewhale_provider::test_support::Part::Thinking {
                text: "list first".into(),
                signature: "gAAAA-encrypted".into(),
            },
            codewhale_provider::test_support::Part::ToolCall(
                codewhale_provider::test_support::ToolCall::new(
                    "call_1",
                    "list_dir",
                    json!({"path": "."}),
                ),
            ),
        ])
        .with_usage(900, 30),
        Reply::text("the workspace is empty").with_usage(1_000, 8),
    ]);
    let mut cmd = s.command();
    cmd.arg("exec")
        .args(["--provider", "openai-responses", "--model", "gpt-5-codex"])
        .args(["--base-url", &s.server.openai_base_url(), "--approval", "full", "what is here?"])
        .env("OPENAI_API_KEY", TEST_API_KEY);
    let out = cmd.output().await.unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "the workspace is empty\n");
    let requests = s.server.requests();
    assert_eq!(requests[0].path, "/v1/responses");
    let second = &requests[1].body;
    assert_eq!(second["store"], false);
    assert!(second.get("previous_response_id").is_none());
    let kinds: Vec<&str> =
        second["input"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["message", "reasoning", "function_call", "function_call_output"]);
    assert_eq!(second["input"][1]["encrypted_content"], "gAAAA-encrypted", "sent back unchanged");
    assert_eq!(second["input"][3]["call_id"], "call_1");

    // The session goes on over the same wire.
    s.server.push(Reply::text("still empty"));
    let mut cmd = s.command();
    cmd.arg("exec")
        .args(["--provider", "openai-responses", "--model", "gpt-5-codex"])
        .args(["--base-url", &s.server.openai_base_url(), "--last", "and now?"])
        .env("OPENAI_API_KEY", TEST_API_KEY);
    let out = cmd.output().await.unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = s
        .command()
        .args(["journal", "check", &s.sessions()[0].to_string_lossy()])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stdout));
}

/// `codewhale context` on a session whose counts are all known (in its lines or its sidecar,
/// and the system prompt's in the cache) builds no token encoder: only new text needs one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_context_report_builds_no_encoder() {
    let s = Setup::new().await;
    s.server.push(Reply::text("42").with_usage(1200, 2));
    assert!(s.exec(&["say the answer"]).await.status.success());
    let logs_dir = s.home.path().join("logs");
    let context = || {
        let mut cmd = s.command();
        cmd.args(["context", "--last", "--json"]).env("CODEWHALE_LOG", "debug");
        async move { cmd.output().await.unwrap() }
    };
    let logs = || -> String {
        std::fs::read_dir(&logs_dir)
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default()
    };
    let first = context().await;
    assert!(first.status.success(), "{}", text(&first.stderr));
    // The first report counts what `exec` left uncounted (and the system prompt).
    assert!(logs().contains("building the o200k encoder"), "the log is written: {}", logs());
    let _ = std::fs::remove_dir_all(&logs_dir);
    let second = context().await;
    assert!(second.status.success(), "{}", text(&second.stderr));
    assert_eq!(first.stdout, second.stdout, "the same report");
    // Logging works (the first run wrote the line); this run has nothing of the kind to say.
    let logs = logs();
    assert!(!logs.contains("building the o200k encoder"), "{logs}");
}
