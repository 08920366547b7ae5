//! Plan mode with the real binary (docs/configuration.md, *Plan mode*): in `exec`, the file
//! tools' writes are refused and a command that tries to write fails in the sandbox while one
//! that only looks runs; in the terminal UI, a plan presented in plan mode ends with "Plan
//! ready — start in: …", and Enter starts it in `ask` with "Carry out the plan.". Also `/btw`:
//! its answer in an overlay, Esc closes it.

use codewhale_provider::test_support::{MockServer, Reply, ToolCall, TEST_API_KEY};
use serde_json::json;

use super::pty::{mock_args, Pty};

/// Whether this kernel can confine; a skip is said on stderr.
fn landlock(test: &str) -> bool {
    let ok = codewhale_engine::sandbox::confine::abi().is_some();
    if !ok {
        eprintln!("skipped {test}: this kernel offers no Landlock, so nothing can be confined");
    }
    ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_in_plan_mode_refuses_writes_and_runs_commands_read_only() {
    if !landlock("exec_in_plan_mode_refuses_writes_and_runs_commands_read_only") {
        return;
    }
    let server = MockServer::start().await.unwrap();
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(ws.path().join("a.txt"), "old\n").unwrap();
    server.push(Reply::tool_calls(vec![
        ToolCall::new("w", "write_file", json!({"path": "x", "content": "x"})),
        ToolCall::new(
            "e",
            "edit_file",
            json!({"path": "a.txt", "old_string": "old", "new_string": "new"}),
        ),
        ToolCall::new("t", "shell", json!({"command": "touch x"})),
        ToolCall::new("l", "shell", json!({"command": "ls"})),
    ]));
    server.push(Reply::text("planned"));
    let out = super::cli::codewhale(home.path(), ws.path())
        .env("OPENAI_API_KEY", TEST_API_KEY)
        .arg("exec")
        .args(mock_args(&server.openai_base_url()))
        .args(["--approval", "plan", "plan the change"])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "planned");
    assert!(!ws.path().join("x").exists(), "{stderr}");
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "old\n");
    let body = &server.requests()[1].body;
    let result = |id: &str| -> String {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .unwrap_or_default()
    };
    for id in ["w", "e", "t"] {
        let text = result(id);
        assert!(text.contains("plan mode: the workspace is read-only"), "{id}: {text}");
    }
    let ls = result("l");
    assert!(ls.contains("a.txt") && !ls.contains("read-only"), "{ls}");
    // Told by a synthetic user text, not by the system prompt.
    let sent = body["messages"].to_string();
    assert!(sent.contains("Plan mode is on"), "{sent}");
    assert!(!body["messages"][0].to_string().contains("Plan mode"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_presented_in_plan_mode_offers_where_to_start() {
    let server = MockServer::start().await.unwrap();
    let plan = json!({"steps": [{"step": "Rename the parser", "status": "pending"}]});
    server.push(Reply::tool_call("p", "update_plan", plan));
    server.push(Reply::text("The plan is above."));
    server.push(Reply::text("Carrying it out now."));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut args = mock_args(&server.openai_base_url());
    args.extend(["--approval".to_owned(), "plan".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.wait_for("plan mode").await;
    pty.send(b"plan the rename\r");
    pty.wait_for("Plan ready").await;
    pty.wait_for("stay in plan").await;
    // Enter = ask.
    pty.send(b"\r");
    pty.wait_for("Carrying it out now.").await;
    pty.wait_for("ready").await;
    let sent = server.last_request().unwrap().body["messages"].to_string();
    assert!(sent.contains("Carry out the plan.") && sent.contains("Plan mode is off"), "{sent}");
    assert!(!pty.contents().contains("plan mode ·"), "ask now:\n{}", pty.contents());

    // Shift+Tab from ask goes to auto-edit, full, then plan again.
    for _ in 0..3 {
        pty.send(b"\x1b[Z");
    }
    pty.wait_for("plan mode").await;

    // A side question: answered in an overlay, Esc closes it.
    server.push(Reply::text("About 300 lines."));
    pty.send(b"/btw how long is the parser?\r");
    pty.wait_for("About 300 lines.").await;
    pty.wait_for("btw: how long is the parser?").await;
    pty.send(b"\x1b");
    let start = std::time::Instant::now();
    while pty.contents().contains("btw: how long") {
        assert!(start.elapsed() < super::pty::WAIT, "Esc closes it:\n{}", pty.contents());
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // The answer stays in the transcript, with its cost.
    assert!(pty.contents().contains("side question · not in the conversation"));
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
}
