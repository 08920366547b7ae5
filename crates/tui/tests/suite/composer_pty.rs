//! The composer end to end in a pseudo-terminal: Shift+Enter in a terminal with the kitty
//! keyboard protocol, the prompt history across a restart, Ctrl+R, and Ctrl+Z with `fg`.

use std::time::{Duration, Instant};

use codewhale_provider::test_support::{MockServer, Reply};

use super::pty::{mock_args, Pty, WAIT};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shift_enter_inserts_a_newline_where_the_terminal_reports_it() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::text("Two lines received."));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = mock_args(&server.openai_base_url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn_in(&args, &home, &ws, true, &[]);
    pty.wait_for("ready").await;
    pty.send(b"first line");
    // Shift+Enter as the kitty keyboard protocol reports it.
    pty.send(b"\x1b[13;2u");
    pty.send(b"second line");
    pty.wait_for("  second line").await;
    assert!(pty.contents().contains("› first line"), "{}", pty.contents());
    assert!(server.requests().is_empty(), "Shift+Enter did not send");
    pty.send(b"\r");
    pty.wait_for("Two lines received.").await;
    let sent = server.last_request().unwrap().body["messages"].to_string();
    assert!(sent.contains("first line\\nsecond line"), "{sent}");
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_are_recalled_after_a_restart_with_up_and_ctrl_r() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::text("noted"));
    server.push(Reply::text("noted again"));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = mock_args(&server.openai_base_url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.send(b"explain the parser module\r");
    pty.wait_for("noted").await;
    pty.wait_for("ready").await;
    pty.send(b"run the tests\r");
    pty.wait_for("noted again").await;
    pty.wait_for("ready").await;
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());

    // A new session in the same workspace: Up walks the prompts of the last run.
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.send(b"\x1b[A");
    pty.wait_for("› run the tests").await;
    pty.send(b"\x1b[A");
    pty.wait_for("› explain the parser module").await;
    // Ctrl+C clears the draft; Ctrl+R searches.
    pty.send(b"\x03");
    pty.send(b"\x12");
    pty.wait_for("history search").await;
    pty.send(b"pars");
    pty.wait_for("› explain the parser module").await;
    pty.send(b"\r");
    let start = Instant::now();
    while pty.contents().contains("history search") {
        assert!(start.elapsed() < WAIT, "{}", pty.contents());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    pty.wait_for("› explain the parser module").await;
    assert_eq!(server.requests().len(), 2, "recalling sends nothing");
    pty.send(b"\x03\x04");
    assert!(pty.wait_exit().await.success());
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_z_gives_the_terminal_back_and_fg_restores_the_screen() {
    // Job control needs a shell: codewhale runs as its foreground job, as from a prompt; the
    // shell says when it stopped and, a moment later, brings it back with `fg`.
    let Some(bash) =
        ["/bin/bash", "/usr/bin/bash"].into_iter().find(|b| std::path::Path::new(b).exists())
    else {
        codewhale_mcp::test_support::skip_test("no bash for job control");
        return;
    };
    let server = MockServer::start().await.unwrap();
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let script = r#"set -m; "$0" "$@"; echo "JOB STOPPED"; sleep 1; fg %1"#;
    let mut args = vec!["-c", script, env!("CARGO_BIN_EXE_codewhale")];
    let mock = mock_args(&server.openai_base_url());
    args.extend(mock.iter().map(String::as_str));
    let mut pty = Pty::spawn_program(bash, &args, &home, &ws, false, &[]);
    pty.wait_for("ready").await;
    pty.send(b"a draft that survives");
    pty.wait_for("a draft that survives").await;
    pty.send(b"\x1a");
    // Stopped, with the terminal given back: the shell writes on the normal screen.
    pty.wait_for("JOB STOPPED").await;
    assert!(!pty.screen.lock().unwrap().screen().alternate_screen());
    // `fg`: the screen is taken back and redrawn, the draft intact.
    let start = Instant::now();
    while !pty.screen.lock().unwrap().screen().alternate_screen() {
        assert!(start.elapsed() < WAIT, "the screen was not taken back: {}", pty.contents());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    pty.wait_for("a draft that survives").await;
    pty.wait_for("ready").await;
    pty.send(b"\x03\x04");
    assert!(pty.wait_exit().await.success(), "{}", pty.contents());
}
