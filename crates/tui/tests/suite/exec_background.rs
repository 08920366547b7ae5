//! `codewhale exec` and the note written in the background (docs/compaction.md, *Background
//! compaction*): the real binary, killed with SIGKILL while the background summary request is in
//! flight.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use codewhale_provider::test_support::{MockServer, Reply, TEST_API_KEY};
use serde_json::{json, Value};

use super::support::text;

const SUMMARY: &str = "## Objective\nRead every file.\n## User direction\nNone\n## Permissions \
and limits\nNone\n## Done\nRead the first files.\n## Changed files\nNone\n## Still running\nNone\n\
## Verification left\nNone\n## Open questions\nNone\n## Next action\nRead the next file.\n\
## Reference\nNone";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_while_the_background_note_is_written_leaves_no_partial_record() {
    let server = MockServer::start().await.unwrap();
    let home = tempfile::tempdir().unwrap();
    // The mock reports a rough prompt size (bytes / 4): it stands for a hosted API, so no
    // reported count is taken for a silent cut that would wait for the note.
    std::fs::write(home.path().join("config.toml"), "[provider]\nhosted = true\n").unwrap();
    let ws = tempfile::tempdir().unwrap();
    for k in 0..40 {
        let body: String = (0..30)
            .map(|l| format!("file {k} line {l}: value {}-{l} is {}\n", k, k * 31 + l))
            .collect();
        std::fs::write(ws.path().join(format!("f{k}.txt")), body).unwrap();
    }
    // A tool loop that never ends by itself; the summary takes a minute to arrive.
    let count = AtomicUsize::new(0);
    server.respond_with(move |r| {
        let tokens = r.raw.len() as u64 / 4;
        if r.raw.contains("You are writing a handoff note") {
            return Reply::text(SUMMARY).with_usage(tokens, 200).after(Duration::from_secs(60));
        }
        let n = count.fetch_add(1, Ordering::SeqCst);
        Reply::tool_call(format!("c{n}"), "read_file", json!({"path": format!("f{}.txt", n % 40)}))
            .with_usage(tokens, 20)
    });
    let mut cmd = super::cli::codewhale(home.path(), ws.path());
    cmd.arg("exec")
        .args(["--provider", "openai", "--model", "gpt-4.1", "--approval", "full"])
        .args(["--base-url", &server.openai_base_url(), "--context-window", "20000"])
        .arg("read every file")
        .env("OPENAI_API_KEY", TEST_API_KEY)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    // Each request the mock receives is a marker: the summary request among them.
    let summary_sent = async {
        loop {
            let seen = server.requests().len();
            if server.requests().iter().any(|r| r.raw.contains("handoff note")) {
                return;
            }
            server.wait_for_requests(seen + 1).await;
        }
    };
    let sent = tokio::time::timeout(Duration::from_secs(30), summary_sent).await;
    assert!(sent.is_ok(), "no background summary request within 30 s");
    // The tool loop goes on while the note is being written: two more calls served, and six
    // in all (each request after the first follows a journaled result; one is the summary's).
    let at = server.requests().len();
    let want = (at + 2).max(7);
    let served = tokio::time::timeout(Duration::from_secs(30), server.wait_for_requests(want));
    assert!(served.await.is_ok(), "the tool loop stopped while the note was written");
    child.kill().await.unwrap();

    let sessions: Vec<_> = std::fs::read_dir(home.path().join("sessions"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(sessions.len(), 1);
    let journal = std::fs::read_to_string(&sessions[0]).unwrap();
    // The kill may land inside an append: only the last line may be torn.
    let lines: Vec<&str> = journal.lines().collect();
    let kinds: Vec<String> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| match serde_json::from_str::<Value>(l) {
            Ok(v) => Some(v["kind"].as_str().unwrap().to_owned()),
            Err(e) if i + 1 == lines.len() => {
                eprintln!("a torn last line (the kill came mid-append): {e}");
                None
            }
            Err(e) => panic!("line {} is not JSON: {e}", i + 1),
        })
        .collect();
    assert!(kinds.iter().filter(|k| *k == "tool_result").count() >= 5, "{kinds:?}");
    assert!(!kinds.iter().any(|k| k == "compaction"), "no record, not even a partial one");
    assert!(!journal.contains("handoff note"), "the note never reached the journal");
    let check = || async {
        super::cli::codewhale(home.path(), ws.path())
            .args(["journal", "check"])
            .arg(&sessions[0])
            .output()
            .await
            .unwrap()
    };
    let out = check().await;
    if !out.status.success() {
        // The kill landed between a tool call and its result: the one state a crash may leave
        // (docs/journal-format.md, *The view*), which the next run repairs before it sends
        // anything.
        let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
        let last_call = lines
            .iter()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["kind"] == "assistant")
            .unwrap();
        let id = last_call["id"].as_str().unwrap();
        assert!(
            said.contains(&format!("in assistant entry {id} has no tool result after it")),
            "{said}"
        );
        assert!(said.contains("1 problem found"), "{said}");
        server.respond_with(|r| {
            let tokens = r.raw.len() as u64 / 4;
            if r.raw.contains("You are writing a handoff note") {
                return Reply::text(SUMMARY).with_usage(tokens, 200);
            }
            Reply::text("Stopped.").with_usage(tokens, 5)
        });
        let resumed = super::cli::codewhale(home.path(), ws.path())
            .arg("exec")
            .args(["--provider", "openai", "--model", "gpt-4.1", "--approval", "full"])
            .args(["--base-url", &server.openai_base_url(), "--context-window", "20000"])
            .args(["--last", "stop here"])
            .env("OPENAI_API_KEY", TEST_API_KEY)
            .output()
            .await
            .unwrap();
        assert!(resumed.status.success(), "{}", text(&resumed.stderr));
        let journal = std::fs::read_to_string(&sessions[0]).unwrap();
        assert!(journal.contains("no result: the call was interrupted"));
        let out = check().await;
        assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    }
}
