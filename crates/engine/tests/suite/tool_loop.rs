//! Multi-step tool loops, one per tool, and parallel calls.

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::protocol::{Event, TurnStatus};
use codewhale_journal::Payload;
use codewhale_provider::test_support::{Reply, ToolCall};
use serde_json::json;

use super::common::{kinds, reload_checked, results, session_file, Harness};

/// Runs: model calls `name(input)`, then answers "done"; returns the result the model read.
async fn one_call(h: &Harness, name: &str, input: serde_json::Value) -> (String, bool) {
    h.server.push(Reply::tool_call("call_1", name, input).with_usage(900, 20));
    h.server.push(Reply::text("done").with_usage(1000, 5));
    let mut engine = h.spawn(ApprovalMode::Full);
    let run = engine.turn("please do it").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    assert_eq!(run.text, "done");
    engine.shutdown().await;
    let sent = h.tool_results_in_request(1);
    assert_eq!(sent.len(), 1);
    let journal = reload_checked(&session_file(h.home.path()));
    assert_eq!(kinds(&journal), ["user", "assistant", "tool_result", "assistant"]);
    let (_, content, is_error) = results(&journal).remove(0);
    assert_eq!(content, sent[0].1, "the model read exactly what was journaled");
    (content, is_error)
}

#[tokio::test]
async fn read_file_loop() {
    let h = Harness::new().await;
    h.write("notes.txt", "alpha\nbeta\n");
    let (out, err) = one_call(&h, "read_file", json!({"path": "notes.txt"})).await;
    assert!(!err);
    assert_eq!(out, "     1\talpha\n     2\tbeta\n");
}

#[tokio::test]
async fn list_dir_loop() {
    let h = Harness::new().await;
    h.write("src/main.rs", "fn main() {}\n");
    let (out, err) = one_call(&h, "list_dir", json!({"path": "."})).await;
    assert!(!err);
    assert_eq!(out, "src/");
}

#[tokio::test]
async fn search_loop() {
    let h = Harness::new().await;
    h.write("src/lib.rs", "pub fn needle() {}\n");
    let (out, err) = one_call(&h, "search", json!({"pattern": "fn needle"})).await;
    assert!(!err);
    assert_eq!(out.trim(), "src/lib.rs:1:pub fn needle() {}");
}

#[tokio::test]
async fn write_file_loop() {
    let h = Harness::new().await;
    let (out, err) =
        one_call(&h, "write_file", json!({"path": "out/new.txt", "content": "hello\n"})).await;
    assert!(!err, "{out}");
    assert_eq!(h.read("out/new.txt"), "hello\n");
}

#[tokio::test]
async fn edit_file_loop() {
    let h = Harness::new().await;
    h.write("a.rs", "let x = 1;\n");
    let input = json!({"path": "a.rs", "old_string": "x = 1", "new_string": "x = 2"});
    let (out, err) = one_call(&h, "edit_file", input).await;
    assert!(!err, "{out}");
    assert_eq!(h.read("a.rs"), "let x = 2;\n");
}

/// An edit made without asking (here under `full`) still shows what it changed: the finished
/// call carries the diff; a refused edit carries none.
#[tokio::test]
async fn an_edit_made_without_asking_reports_its_diff() {
    let h = Harness::new().await;
    h.write("a.rs", "let x = 1;\n");
    let edit = json!({"path": "a.rs", "old_string": "x = 1", "new_string": "x = 2"});
    let refused = json!({"path": "a.rs", "old_string": "nowhere", "new_string": "y"});
    h.server.push(Reply::tool_call("call_1", "edit_file", edit).with_usage(900, 20));
    h.server.push(Reply::tool_call("call_2", "edit_file", refused).with_usage(950, 20));
    h.server.push(Reply::text("done").with_usage(1000, 5));
    let mut engine = h.spawn(ApprovalMode::Full);
    let run = engine.turn("please do it").await;
    engine.shutdown().await;
    let diffs: Vec<Option<String>> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished { diff, .. } => Some(diff.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(diffs.len(), 2, "{:?}", run.events);
    let made = diffs[0].as_deref().expect("the edit's diff");
    assert!(made.contains("-let x = 1;") && made.contains("+let x = 2;"), "{made}");
    assert_eq!(diffs[1], None, "a refused edit changed nothing");
}

#[tokio::test]
async fn edit_file_refusal_is_an_error_result_the_model_reads() {
    let h = Harness::new().await;
    h.write("a.rs", "x x\n");
    let input = json!({"path": "a.rs", "old_string": "x", "new_string": "y"});
    let (out, err) = one_call(&h, "edit_file", input).await;
    assert!(err);
    assert!(out.contains("matches 2 places"), "{out}");
    assert_eq!(h.read("a.rs"), "x x\n");
}

#[tokio::test]
async fn shell_loop() {
    let h = Harness::new().await;
    let (out, err) = one_call(&h, "shell", json!({"command": "echo hi; echo oops >&2"})).await;
    assert!(!err, "{out}");
    assert!(out.contains("hi\n") && out.contains("oops\n") && out.ends_with("[exit code: 0]"));
}

#[tokio::test]
async fn several_steps_then_an_answer() {
    let h = Harness::new().await;
    h.write("a.txt", "one\n");
    h.server.push(Reply::tool_call("c1", "read_file", json!({"path": "a.txt"})));
    h.server.push(Reply::tool_call(
        "c2",
        "edit_file",
        json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
    ));
    h.server.push(Reply::tool_call("c3", "shell", json!({"command": "cat a.txt"})));
    h.server.push(Reply::text("changed it"));
    let mut engine = h.spawn(ApprovalMode::Full);
    let run = engine.turn("change one to two").await;
    assert_eq!(run.status, TurnStatus::Completed);
    engine.shutdown().await;
    assert_eq!(h.server.requests().len(), 4);
    assert!(h.tool_results_in_request(3).iter().any(|(id, c)| id == "c3" && c.contains("two")));
    let journal = reload_checked(&session_file(h.home.path()));
    assert_eq!(journal.entries().iter().filter(|e| e.kind() == "tool_result").count(), 3);
}

#[tokio::test]
async fn parallel_calls_get_results_in_call_order() {
    let h = Harness::new().await;
    h.write("a.txt", "A\n");
    h.write("b.txt", "B\n");
    h.server.push(Reply::tool_calls(vec![
        ToolCall::new("c_b", "read_file", json!({"path": "b.txt"})),
        ToolCall::new("c_a", "read_file", json!({"path": "a.txt"})),
        ToolCall::new("c_l", "list_dir", json!({"path": "."})),
    ]));
    h.server.push(Reply::text("read both"));
    let mut engine = h.spawn(ApprovalMode::Ask);
    let run = engine.turn("read them").await;
    assert_eq!(run.status, TurnStatus::Completed);
    let started: Vec<&str> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallStarted { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    // All three start before any finishes: they ran as one concurrent batch.
    let first_finish =
        run.events.iter().position(|e| matches!(e, Event::ToolCallFinished { .. })).unwrap();
    let last_start =
        run.events.iter().rposition(|e| matches!(e, Event::ToolCallStarted { .. })).unwrap();
    assert_eq!(started, ["c_b", "c_a", "c_l"]);
    assert!(last_start < first_finish);
    engine.shutdown().await;
    let ids: Vec<String> = h.tool_results_in_request(1).into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["c_b", "c_a", "c_l"]);
    let journal = reload_checked(&session_file(h.home.path()));
    assert_eq!(
        kinds(&journal),
        ["user", "assistant", "tool_result", "tool_result", "tool_result", "assistant"]
    );
}

#[tokio::test]
async fn a_capped_shell_output_journals_its_original_size() {
    let h = Harness::new().await;
    let command = "head -c 200000 /dev/zero | tr '\\0' z; echo";
    let (out, err) = one_call(&h, "shell", json!({ "command": command })).await;
    assert!(!err, "{out}");
    assert!(out.contains("bytes cut"), "the model read a capped output");
    let journal = reload_checked(&session_file(h.home.path()));
    let bytes: Vec<Option<u64>> = super::common::spine(&journal)
        .iter()
        .filter_map(|e| match &e.payload {
            Payload::ToolResult(r) => Some(r.bytes),
            _ => None,
        })
        .collect();
    // 200,000 'z', the newline of `echo`, then "[exit code: 0]".
    assert_eq!(bytes, [Some(200_001 + "[exit code: 0]".len() as u64)]);
    let line = std::fs::read_to_string(session_file(h.home.path())).unwrap();
    assert!(line.contains("\"bytes\":200015"), "the size is in the file");
}

/// A fork bomb in a shell call, under `[shell] max_processes = 40`: the call ends with an
/// error result that says why, the turn goes on, the next turn is answered, and the journal
/// stays whole. Without a writable pids cgroup the cap cannot exist, so the test reports the
/// skip (a failure under `CI=true`); the command refuses to start the bomb uncapped.
#[tokio::test]
async fn a_fork_bomb_fails_its_call_and_the_session_goes_on() {
    if !codewhale_engine::tools::cgroup::available() {
        codewhale_mcp::test_support::skip_without_capability("no writable pids cgroup here");
        return;
    }
    let h = Harness::new().await;
    std::fs::write(h.home.path().join("config.toml"), "[shell]\nmax_processes = 40\n").unwrap();
    let bomb = "grep -q codewhale-shell- /proc/self/cgroup || exit 97; :(){ :|:& };:";
    h.server.push(Reply::tool_call("c1", "shell", json!({ "command": bomb })));
    h.server.push(Reply::text("that failed"));
    h.server.push(Reply::text("still here"));
    let mut engine = h.spawn(ApprovalMode::Full);
    let run = engine.turn("run it").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    let second = engine.turn("are you there?").await;
    assert_eq!((second.status, second.text.as_str()), (TurnStatus::Completed, "still here"));
    engine.shutdown().await;
    let journal = reload_checked(&session_file(h.home.path()));
    assert_eq!(
        kinds(&journal),
        ["user", "assistant", "tool_result", "assistant", "user", "assistant"]
    );
    let (_, content, is_error) = results(&journal).remove(0);
    assert!(is_error, "{content}");
    assert!(!content.contains("[exit code: 97]"), "not capped: {content}");
    assert!(content.contains("reached the limit of 40 processes"), "{content}");
}

/// A reply with a hundred calls: the first 64 run, the rest are answered "not run", every call
/// gets its result (no orphan), and the turn goes on.
#[tokio::test]
async fn at_most_sixty_four_calls_of_one_reply_run() {
    let h = Harness::new().await;
    for k in 0..100 {
        h.write(&format!("f{k}.txt"), &format!("file {k}\n"));
    }
    let calls: Vec<ToolCall> = (0..100)
        .map(|k| ToolCall::new(format!("c{k}"), "read_file", json!({"path": format!("f{k}.txt")})))
        .collect();
    h.server.push(Reply::tool_calls(calls).with_usage(900, 2_000));
    h.server.push(Reply::text("done").with_usage(5_000, 5));
    let mut engine = h.spawn(ApprovalMode::Full);
    let run = engine.turn("read them all").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    let told = run.events.iter().any(|e| {
        matches!(e, Event::Notice { message, .. } if message.contains("100 tool calls in one reply"))
    });
    assert!(told, "the user is told");
    // How they ended travels as a value, not in the result's words.
    let not_run = run
        .events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::ToolCallFinished { end: codewhale_engine::protocol::CallEnd::NotRun, .. }
            )
        })
        .count();
    assert_eq!(not_run, 36);
    engine.shutdown().await;
    let sent = h.tool_results_in_request(1);
    assert_eq!(sent.len(), 100, "every call has its result");
    assert!(sent[63].1.contains("file 63"));
    assert!(sent[64].1.starts_with("not run: too many calls in one reply"), "{}", sent[64].1);
    assert!(sent[99].1.starts_with("not run"));
}

/// A command that plants a git hook, rewrites `.git/config` or writes Codewhale's workspace
/// config — however it is phrased — finds them put back, and the model and the user are told.
#[tokio::test]
async fn a_command_never_changes_git_hooks_git_config_or_the_workspace_config() {
    let commands = [
        ("printf '#!/bin/sh\\ntouch ~/owned\\n' > .git/hooks/pre-commit", ".git/hooks/pre-commit"),
        ("git config core.fsmonitor 'touch owned'", ".git/config"),
        (
            "mkdir -p .codewhale && cd .codewhale && echo 'model = \"x\"' > config.toml",
            ".codewhale/config.toml",
        ),
        ("ln -s /tmp/anything .git/hooks/post-checkout", ".git/hooks/post-checkout"),
    ];
    for (command, path) in commands {
        let h = Harness::new().await;
        let init =
            std::process::Command::new("git").arg("init").arg("-q").arg(h.ws.path()).status();
        assert!(init.unwrap().success());
        let config_before = std::fs::read(h.ws.path().join(".git/config")).unwrap();
        let (out, _) = one_call(&h, "shell", json!({"command": command})).await;
        assert!(out.contains(&format!("Codewhale put back {path}")), "{command}: {out}");
        assert_eq!(std::fs::read(h.ws.path().join(".git/config")).unwrap(), config_before);
        assert!(std::fs::symlink_metadata(h.ws.path().join(".git/hooks/pre-commit")).is_err());
        assert!(std::fs::symlink_metadata(h.ws.path().join(".git/hooks/post-checkout")).is_err());
        assert!(!h.ws.path().join(".codewhale/config.toml").exists());
    }
}

/// Two calls of one reply with the same id were journaled as they came, and every later turn
/// failed ("uses tool call id same twice"); the reply is now made consistent as it is
/// assembled: the second is renamed, both run, and the next turn goes on.
#[tokio::test]
async fn two_calls_with_one_id_are_renamed_and_the_session_goes_on() {
    let h = Harness::new().await;
    h.write("a.txt", "A\n");
    h.server.push(Reply::tool_calls(vec![
        ToolCall::new("same", "read_file", json!({"path": "a.txt"})),
        ToolCall::new("same", "list_dir", json!({"path": "."})),
    ]));
    h.server.push(Reply::text("read it"));
    h.server.push(Reply::text("still here"));
    let mut engine = h.spawn(ApprovalMode::Full);
    let run = engine.turn("look").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    let ids: Vec<String> = h.tool_results_in_request(1).into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["same", "same-2"]);
    let run = engine.turn("and now?").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    assert_eq!(run.text, "still here");
    engine.shutdown().await;
    reload_checked(&session_file(h.home.path()));
}
