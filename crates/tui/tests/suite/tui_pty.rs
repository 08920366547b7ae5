//! The terminal UI end to end: the real binary in a pseudo-terminal, keys typed as bytes, the
//! screen read back through a VT100 parser, the provider being the in-process mock server.

use codewhale_provider::test_support::{MockServer, Reply, TEST_API_KEY};
use serde_json::Value;

use super::pty::{journals, Pty, SUMMARY};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_reaches_the_mock_and_the_reply_the_screen_and_the_journal() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::text("Hello from the mock whale.").with_usage(1200, 6));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let base_url = server.openai_base_url();
    let args = ["--provider", "openai", "--model", "gpt-4.1", "--base-url", &base_url];
    let mut pty = Pty::spawn(&args, &home, &ws);

    pty.wait_for("new session").await;
    pty.wait_for("ready").await;
    assert!(
        pty.screen.lock().unwrap().screen().alternate_screen(),
        "the UI draws on the alternate screen"
    );
    pty.send(b"say hello");
    pty.wait_for("say hello").await;
    pty.send(b"\r");
    pty.wait_for("Hello from the mock whale.").await;
    pty.wait_for("% of").await;
    let screen = pty.contents();
    assert!(
        screen.contains("(reported)") || screen.contains("(estimated)"),
        "the gauge says where its figure came from:\n{screen}"
    );
    pty.wait_for("ready").await;

    pty.send(b"\x03");
    pty.wait_for("press Ctrl+C again to quit").await;
    pty.send(b"\x03");
    let status = pty.wait_exit().await;
    assert!(status.success(), "exit status {status:?}; screen:\n{}", pty.contents());
    // Everything it wrote, the terminal's restoration included, is on the screen.
    pty.wait_output_end().await;
    let alternate = pty.screen.lock().unwrap().screen().alternate_screen();
    assert!(!alternate, "the terminal is restored on exit");

    let request = server.last_request().unwrap();
    let messages = request.body["messages"].as_array().unwrap();
    assert!(messages.iter().any(|m| m["content"].to_string().contains("say hello")));

    let files = journals(&home);
    assert_eq!(files.len(), 1, "{files:?}");
    let lines: Vec<Value> = std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds[..3], ["header", "user", "assistant"], "{kinds:?}");
    assert!(lines[1]["payload"].to_string().contains("say hello"));
    assert!(lines[2]["payload"].to_string().contains("Hello from the mock whale."));
    let id = files[0].file_stem().unwrap().to_str().unwrap().to_owned();
    assert!(pty.contents().contains(&format!("codewhale resume {id}")), "{}", pty.contents());

    // Resuming shows the conversation so far; Ctrl+D on the empty composer leaves.
    let resume = ["resume", "--last", "--provider", "openai", "--model", "gpt-4.1"];
    let mut again = Pty::spawn(&resume, &home, &ws);
    again.wait_for("resumed session").await;
    again.wait_for("Hello from the mock whale.").await;
    assert!(again.contents().contains("say hello"), "{}", again.contents());
    // The gauge has the engine's figure at once, not "ctx —" until the next reply.
    again.wait_for("% of").await;
    again.send(b"\x04");
    let status = again.wait_exit().await;
    assert!(status.success(), "exit status {status:?}; screen:\n{}", again.contents());
    assert_eq!(journals(&home).len(), 1, "resuming opened the same session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_provider_the_setup_help_is_printed() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_codewhale"))
        .current_dir(ws.path())
        .env("CODEWHALE_HOME", home.path())
        .env("HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("No model provider is configured"));
    // The config file it names is the one this home reads.
    let config = home.path().join("config.toml").display().to_string();
    assert!(stderr.contains(&format!("or write {config}")), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quitting_a_session_with_no_message_prints_no_resume_hint() {
    let server = MockServer::start().await.unwrap();
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let base_url = server.openai_base_url();
    let args = ["--provider", "openai", "--model", "gpt-4.1", "--base-url", &base_url];
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
    pty.wait_output_end().await;
    let screen = pty.contents();
    assert!(!screen.contains("continue it with"), "a hint for a session not kept:\n{screen}");
    assert!(journals(&home).is_empty(), "nothing was written, so nothing is kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_call_waits_for_approval_and_runs_after_y() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::tool_call(
        "c1",
        "shell",
        serde_json::json!({"command": "echo approved > out.txt"}),
    ));
    server.push(Reply::text("The file is written.").with_usage(900, 5));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let base_url = server.openai_base_url();
    let args = ["--provider", "openai", "--model", "gpt-4.1", "--base-url", &base_url];
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.send(b"write the file\r");
    pty.wait_for("approval needed").await;
    pty.wait_for("y once").await;
    assert!(!ws.path().join("out.txt").exists(), "nothing runs before the answer");
    pty.send(b"y");
    pty.wait_for("The file is written.").await;
    assert_eq!(std::fs::read_to_string(ws.path().join("out.txt")).unwrap(), "approved\n");
    pty.wait_for("ready").await;
    pty.send(b"\x04");
    let status = pty.wait_exit().await;
    assert!(status.success(), "exit status {status:?}; screen:\n{}", pty.contents());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_interrupts_a_stalled_reply_and_the_session_stays_usable() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::text("Partial words arrive").hang_after(3));
    server.push(Reply::text("Second answer.").with_usage(700, 3));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let base_url = server.openai_base_url();
    let args = ["--provider", "openai", "--model", "gpt-4.1", "--base-url", &base_url];
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.send(b"start something long\r");
    // The reply has begun (its body is streaming, so dropping it is a disconnect the mock
    // counts): a Ctrl+C before the response's head would leave nothing to disconnect.
    pty.wait_for("Partial").await;
    pty.send(b"\x03");
    pty.wait_for("interrupted; the session keeps what was done").await;
    pty.wait_for("ready").await;
    // The interrupted reply's connection is closed: a marker with a deadline, never a hang.
    let closed = tokio::time::timeout(super::pty::WAIT, server.wait_for_disconnects(1)).await;
    assert!(closed.is_ok(), "the interrupted stream was never closed; screen:\n{}", pty.contents());

    pty.send(b"and now?\r");
    pty.wait_for("Second answer.").await;
    pty.wait_for("ready").await;
    pty.send(b"\x03");
    pty.wait_for("press Ctrl+C again to quit").await;
    pty.send(b"\x03");
    let status = pty.wait_exit().await;
    assert!(status.success(), "exit status {status:?}; screen:\n{}", pty.contents());
    let file = journals(&home).pop().unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains("start something long") && text.contains("Second answer."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_compact_shows_a_capsule_that_unfolds_to_the_note() {
    let server = MockServer::start().await.unwrap();
    for k in 0..3 {
        let prose = format!(
            "{} end of answer {k}.",
            "the parser reads tokens and builds trees. ".repeat(150)
        );
        server.push(Reply::text(prose).with_usage(2_000 + k * 2_000, 1_500));
    }
    server.push(Reply::text(SUMMARY).with_usage(3_000, 200));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let base_url = server.openai_base_url();
    let args = [
        "--provider",
        "openai",
        "--model",
        "gpt-4.1",
        "--base-url",
        &base_url,
        "--context-window",
        "20000",
    ];
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    for k in 0..3 {
        pty.ask(&format!("question {k}"), &format!("end of answer {k}.")).await;
    }
    pty.send(b"/compact\r");
    pty.wait_for("compacted").await;
    pty.wait_for("(manual)").await;
    pty.send(b"\x0f");
    // The unfolded note ends at the bottom; its start is a page or two up.
    pty.wait_for("src/lib.rs").await;
    pty.scroll_to("Keep the parser tests green.", b"\x1b[5~", 6).await;
    pty.wait_for("scrolled, End follows").await;
    pty.send(b"\x04");
    let status = pty.wait_exit().await;
    assert!(status.success(), "exit status {status:?}; screen:\n{}", pty.contents());
    let journal = std::fs::read_to_string(journals(&home).pop().unwrap()).unwrap();
    assert!(journal.contains("\"kind\":\"compaction\""));
}

#[test]
fn without_a_terminal_it_says_so_and_creates_no_session() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_codewhale"))
        .args(["--provider", "openai"])
        .current_dir(ws.path())
        .env("CODEWHALE_HOME", home.path())
        .env("OPENAI_API_KEY", TEST_API_KEY)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a terminal"));
    assert!(!home.path().join("sessions").exists());
}

/// 3,000 characters typed in one burst without bracketed paste (as tmux `paste-buffer` or an
/// ssh session delivers them), then Enter: the whole message is sent at once, without waiting
/// for another key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_unbracketed_burst_arrives_whole_and_its_enter_is_acted_on() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::text("Got all of it.").with_usage(1200, 6));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let base_url = server.openai_base_url();
    let args = ["--provider", "openai", "--model", "gpt-4.1", "--base-url", &base_url];
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    let burst: String = (0..3_000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let mut bytes = burst.clone().into_bytes();
    bytes.push(b'\r');
    pty.send(&bytes);
    pty.wait_for("Got all of it.").await;
    let request = server.last_request().unwrap();
    let sent = request.body["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(sent.as_str(), Some(burst.as_str()), "all 3,000 characters, then Enter");
    // The reply's text shows before its turn has ended; Ctrl+C then would interrupt, not quit.
    pty.wait_for(" ready").await;
    pty.send(b"\x03\x03");
    pty.wait_exit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_a_slash_compact_and_a_message_typed_meanwhile_waits_for_it() {
    let server = MockServer::start().await.unwrap();
    for k in 0..3 {
        let prose = format!("{} end of answer {k}.", "the lexer splits words. ".repeat(150));
        server.push(Reply::text(prose).with_usage(2_000 + k * 2_000, 1_500));
    }
    // The summarizer never answers: only a cancel ends the pass.
    server.push(Reply::text(SUMMARY).hang_after(1));
    server.push(Reply::text("Picked up after the cancel."));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let base_url = server.openai_base_url();
    let args = ["--provider", "openai", "--model", "gpt-4.1", "--base-url", &base_url];
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    for k in 0..3 {
        pty.ask(&format!("question {k}"), &format!("end of answer {k}.")).await;
    }
    pty.send(b"/compact\r");
    pty.wait_for("compacting… · Ctrl+C cancels").await;
    pty.send(b"what next?\r");
    pty.wait_for("1 queued").await;
    // Cancel while the summary request is in flight (one cancelled before it leaves sends
    // nothing, and the queued message would get the summarizer's reply).
    let start = std::time::Instant::now();
    while server.requests().len() < 4 {
        assert!(start.elapsed() < std::time::Duration::from_secs(20), "no summary request");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    pty.send(b"\x03");
    pty.wait_for("compaction cancelled").await;
    pty.wait_for("Picked up after the cancel.").await;
    pty.wait_for("ready").await;
    pty.send(b"\x04");
    let status = pty.wait_exit().await;
    assert!(status.success(), "exit status {status:?}; screen:\n{}", pty.contents());
    let journal = std::fs::read_to_string(journals(&home).pop().unwrap()).unwrap();
    assert!(!journal.contains("\"kind\":\"compaction\""), "a cancelled pass writes nothing");
    assert!(journal.contains("what next?"), "the queued message was sent");
}
