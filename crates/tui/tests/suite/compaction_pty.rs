//! Compaction keeps working for the whole session, seen as a user sees it: the real binary in a
//! pseudo-terminal at `--context-window 16000`, a turn of 40 `read_file` calls that compacts in
//! its loop, then chat turns that each read a long log, so that every turn after the first starts
//! above the threshold — each of those must compact
//! (docs/compaction.md, *Triggers*: the limit is per turn, nothing else is).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use codewhale_provider::test_support::{Fault, MockServer, Reply};
use serde_json::json;

use super::pty::{journals, Pty, SUMMARY};

const WINDOW: u64 = 16_000;

fn compaction_records(home: &tempfile::TempDir) -> usize {
    let text = std::fs::read_to_string(journals(home).pop().unwrap()).unwrap();
    text.lines().filter(|l| l.contains("\"kind\":\"compaction\"")).count()
}

/// The session's log (the Codewhale home's `logs` folder), for a failure message.
fn log(home: &tempfile::TempDir) -> String {
    let dir = home.path().join("logs");
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_forty_call_loop_the_next_chat_turns_still_compact() {
    let server = MockServer::start().await.unwrap();
    let served = Arc::new(AtomicUsize::new(0));
    server.respond_with(move |r| {
        let body = r.body.to_string();
        // About four bytes a token, as the usage a server would report.
        let tokens = body.len() as u64 / 4;
        if tokens > WINDOW {
            return Reply::fault(Fault::overflow(WINDOW, tokens));
        }
        if body.contains("You are writing a handoff note") {
            return Reply::text(SUMMARY).with_usage(tokens, 200);
        }
        let last_is_result = r.body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .is_some_and(|m| m["role"] == "tool");
        let n = served.fetch_add(1, Ordering::SeqCst);
        if n < 40 {
            Reply::tool_call(format!("call-{n}"), "read_file", json!({"path": format!("f{n}.txt")}))
                .with_usage(tokens, 20)
        } else if last_is_result {
            Reply::text(format!("Answer number {n}.")).with_usage(tokens, 10)
        } else {
            // Each chat turn reads one long log first.
            Reply::tool_call(format!("call-{n}"), "read_file", json!({"path": "build.log"}))
                .with_usage(tokens, 20)
        }
    });
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for k in 0..40 {
        let text: String = (0..50)
            .map(|l| {
                format!("file {k:03} line {l:02}: item {k}-{l} has the value {}\n", k * 53 + l)
            })
            .collect();
        std::fs::write(ws.path().join(format!("f{k}.txt")), text).unwrap();
    }
    let log_text: String = (0..400)
        .map(|l| format!("step {l:03}: compiled crate number {l} in {} ms\n", l * 7))
        .collect();
    std::fs::write(ws.path().join("build.log"), log_text).unwrap();
    let base_url = server.openai_base_url();
    let args = [
        "--provider",
        "openai",
        "--model",
        "gpt-4.1",
        "--base-url",
        &base_url,
        "--context-window",
        "16000",
    ];
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.ask("read every file f0.txt to f39.txt in turn", "Answer number 40.").await;
    let mut records = compaction_records(&home);
    assert!(records >= 1, "the loop compacted:\n{}", pty.contents());
    // Each chat turn reads a log of about 4,000 tokens: the turn after it starts above the
    // 9,600-token threshold.
    for (k, answer) in
        ["Answer number 42.", "Answer number 44.", "Answer number 46."].iter().enumerate()
    {
        pty.ask(&format!("check the build log, step {k}"), answer).await;
        let now = compaction_records(&home);
        if k > 0 {
            assert!(now > records, "chat turn {k} did not compact; log:\n{}", log(&home));
        }
        records = now;
    }
    let screen = pty.contents();
    assert!(!screen.contains("start a new session"), "no advice to start over:\n{screen}");
    pty.send(b"\x04");
    let status = pty.wait_exit().await;
    assert!(status.success(), "exit status {status:?}; screen:\n{}", pty.contents());
}

/// `/compact` on a young chat answers at once — "nothing to compact" and why — and sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_on_a_young_chat_sends_nothing_and_says_why() {
    let server = MockServer::start().await.unwrap();
    for k in 0..3 {
        server.push(Reply::text(format!("Answer {k}.")));
    }
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let base_url = server.openai_base_url();
    let args = ["--provider", "openai", "--model", "gpt-4.1", "--base-url", &base_url];
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    for k in 0..3 {
        pty.ask(&format!("question {k}"), &format!("Answer {k}.")).await;
    }
    let sent = server.requests().len();
    pty.send(b"/compact\r");
    pty.wait_for("nothing to compact").await;
    pty.wait_for("would not make the conversation smaller").await;
    assert_eq!(server.requests().len(), sent, "no request was paid for");
    pty.send(b"\x04");
    let status = pty.wait_exit().await;
    assert!(status.success(), "exit status {status:?}; screen:\n{}", pty.contents());
}
