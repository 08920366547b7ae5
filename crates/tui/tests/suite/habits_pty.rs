//! Terminal habits end to end, in a pseudo-terminal: a reply stays one cell when a notice
//! arrives while it streams, Up walks the prompt history past a recalled `/command`, and a
//! message a killed run left without a reply comes back in the composer, never merged.

use std::time::{Duration, Instant};

use codewhale_provider::test_support::{MockServer, Reply};

use super::pty::{mock_args, Pty, WAIT};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_while_a_reply_streams_goes_above_it_and_the_reply_stays_whole() {
    let server = MockServer::start().await.unwrap();
    let mut reply = Reply::text("word-0 ");
    for k in 1..16 {
        reply = reply.then_text(format!("word-{k} "));
    }
    server.push(reply.slow(Duration::from_millis(120)));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = mock_args(&server.openai_base_url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.send(b"count for me\r");
    pty.wait_for("word-2").await;
    pty.send(b"/compact\r");
    pty.wait_for("is not available while a turn runs").await;
    pty.wait_for("word-15").await;
    pty.wait_for("ready").await;
    let screen = pty.contents();
    let notice = screen.find("is not available while a turn runs").unwrap();
    let (first, last) = (screen.find("word-0").unwrap(), screen.find("word-15").unwrap());
    assert!(notice < first, "the notice sits above the reply:\n{screen}");
    assert!(!screen[first..last].contains("not available"), "nothing splits the reply:\n{screen}");
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_walks_the_history_past_a_recalled_command_without_a_popup() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::text("Parsed."));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = mock_args(&server.openai_base_url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.ask("explain the parser", "Parsed.").await;
    pty.send(b"/quit\r");
    assert!(pty.wait_exit().await.success());

    // A new session of the same workspace: the history holds both, `/quit` newest.
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.send(b"\x1b[A");
    pty.wait_for("› /quit").await;
    // A popup would be drawn in the frame that shows the recalled text.
    pty.wait_frame_end().await;
    assert!(
        !pty.contents().contains("Leave Codewhale"),
        "a recalled command opens no popup:\n{}",
        pty.contents()
    );
    pty.send(b"\x1b[A");
    pty.wait_for("› explain the parser").await;
    pty.send(b"\x03");
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_a_killed_run_left_unanswered_comes_back_in_the_composer() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::text("never arrives").hang_after(0));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = mock_args(&server.openai_base_url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.send(b"long reply please\r");
    let start = Instant::now();
    while server.requests().is_empty() {
        assert!(start.elapsed() < WAIT, "the request was never sent");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // A crash, not a hangup: SIGKILL leaves no time to take the message back.
    let pid = pty.child.process_id().unwrap().to_string();
    assert!(std::process::Command::new("kill").args(["-9", &pid]).status().unwrap().success());
    let _ = pty.wait_exit().await;

    server.push(Reply::text("On its own."));
    let resume = [&["resume", "--last"][..], &args[..]].concat();
    let mut pty = Pty::spawn(&resume, &home, &ws);
    pty.wait_for("the message got no reply, so it is back in the composer").await;
    pty.wait_for("› long reply please").await;
    // Cleared, and another message sent instead: the old one is not glued to it.
    pty.send(b"\x03");
    pty.ask("branch message", "On its own.").await;
    let sent = server.last_request().unwrap().body["messages"].to_string();
    assert!(sent.contains("branch message") && !sent.contains("long reply please"), "{sent}");
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
}

/// A "no" to the trust question is not final: `/trust` asks it again in the session, and a yes
/// is remembered for the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_trust_asks_again_after_a_no() {
    let server = MockServer::start().await.unwrap();
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::create_dir_all(ws.path().join(".codewhale")).unwrap();
    std::fs::write(ws.path().join(".codewhale/config.toml"), "approval = \"full\"\n").unwrap();
    let args = mock_args(&server.openai_base_url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("trust this workspace?").await;
    pty.send(b"n");
    pty.wait_for("ready").await;
    pty.send(b"/trust\r");
    pty.wait_for("trust this workspace?").await;
    // `y` counts once the question has been drawn whole; a loaded machine may draw it late.
    let answered = "trusted: the workspace's settings apply from the next session";
    for _ in 0..20 {
        if pty.contents().contains(answered) {
            break;
        }
        if pty.contents().contains("trust this workspace?") {
            pty.send(b"y");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    pty.wait_for(answered).await;
    let again = codewhale_engine::trust::question_again(home.path(), ws.path()).unwrap();
    assert!(again.is_none(), "the yes is remembered: {again:?}");
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
}
