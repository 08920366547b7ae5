//! The habits users bring from other coding agents, in a pseudo-terminal with the real binary:
//! `--approval` and Shift+Tab for the approval mode.

use codewhale_provider::test_support::{MockServer, Reply};
use serde_json::json;

use super::pty::{mock_args, Pty};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_flag_and_shift_tab_set_the_mode_the_status_line_shows() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::tool_call("w", "write_file", json!({"path": "a.txt", "content": "a\n"})));
    server.push(Reply::text("Wrote a.txt."));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut args = mock_args(&server.openai_base_url());
    args.extend(["--approval", "auto-edit"].map(str::to_owned));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.wait_for("auto-edit ·").await;
    // auto-edit: the write runs without a question.
    pty.ask("write a.txt", "Wrote a.txt.").await;
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "a\n");
    assert!(!pty.contents().contains("Allow"), "nothing asked:\n{}", pty.contents());
    // Shift+Tab: full, plan, then ask (the default, which the status line does not name).
    pty.send(b"\x1b[Z");
    pty.wait_for("approval mode full").await;
    pty.wait_for("full ·").await;
    pty.send(b"\x1b[Z");
    pty.wait_for("approval mode plan").await;
    pty.wait_for("plan mode ·").await;
    pty.send(b"\x1b[Z");
    pty.wait_for("approval mode ask").await;
    pty.send(b"/approval auto-edit\r");
    pty.wait_for("approval mode auto-edit: edits inside").await;
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bang_runs_the_users_own_command_and_the_model_reads_it_next() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::text("It printed the greeting."));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = mock_args(&server.openai_base_url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // The default mode, ask: the user's own command is never asked about.
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.send(b"!echo hello-from-you > said.txt; cat said.txt\r");
    pty.wait_for("! echo hello-from-you").await;
    pty.wait_for("ready").await;
    assert_eq!(std::fs::read_to_string(ws.path().join("said.txt")).unwrap(), "hello-from-you\n");
    assert!(server.requests().is_empty(), "running it asks no model");
    pty.ask("what did it print?", "It printed the greeting.").await;
    let sent = server.requests()[0].body["messages"].to_string();
    assert!(sent.contains("hello-from-you") && sent.contains("what did it print?"), "{sent}");
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
}

/// The row of the screen that shows the `!` cell of `command`.
fn bang_row(pty: &Pty, command: &str) -> String {
    let screen = pty.contents();
    let row = screen.lines().find(|l| l.contains(command)).map(str::trim).map(str::to_owned);
    row.unwrap_or_else(|| panic!("no cell for {command}:\n{screen}"))
}

/// `!sleep 100` stopped with Ctrl+C reads "interrupted" while the session runs and after it is
/// resumed: the engine journals how it ended, and the page brings that back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_bang_command_reads_interrupted_live_and_after_a_resume() {
    let server = MockServer::start().await.unwrap();
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = mock_args(&server.openai_base_url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.send(b"!echo begun; sleep 100\r");
    pty.wait_for("begun").await;
    pty.send(b"\x03");
    pty.wait_for("interrupted").await;
    pty.wait_for("ready").await;
    let live = bang_row(&pty, "! echo begun");
    assert!(live.contains("interrupted"), "{live}");
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());

    let mut resumed: Vec<&str> = vec!["resume", "--last"];
    resumed.extend(&args);
    let mut pty = Pty::spawn(&resumed, &home, &ws);
    pty.wait_for("resumed session").await;
    pty.wait_for("! echo begun").await;
    assert_eq!(bang_row(&pty, "! echo begun"), live);
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_ends_while_the_terminal_is_unfocused_sends_osc_9() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::text("First answer."));
    server.push(Reply::text("Second answer."));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(home.path().join("config.toml"), "[tui]\nnotify = \"osc9\"\n").unwrap();
    let args = mock_args(&server.openai_base_url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    // The terminal reports that the user went to another window.
    pty.send(b"\x1b[O");
    pty.ask("first", "First answer.").await;
    let done = b"\x1b]9;Codewhale: the turn is done\x07";
    pty.wait_for_bytes(done).await;
    // Back in the window: no notification.
    pty.send(b"\x1b[I");
    pty.ask("second", "Second answer.").await;
    assert_eq!(pty.raw_count(done), 1, "only the turn that ended unseen called back");
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
}

fn git(ws: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(ws)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_diff_shows_the_workspace_changes_since_the_session_started() {
    let server = MockServer::start().await.unwrap();
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(ws.path().join("a.txt"), "one\n").unwrap();
    git(ws.path(), &["init", "-q"]);
    git(ws.path(), &["add", "."]);
    git(ws.path(), &["commit", "-qm", "start"]);
    // Changed before the session: not part of its diff.
    std::fs::write(ws.path().join("before.txt"), "already here\n").unwrap();
    let args = mock_args(&server.openai_base_url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.send(b"/diff\r");
    pty.wait_for("no changes since the worktree when the session started").await;
    pty.send(b"!echo two >> a.txt; echo fresh > new.txt\r");
    pty.wait_for("! echo two").await;
    pty.wait_for("ready").await;
    pty.send(b"/diff\r");
    pty.wait_for("2 files changed since").await;
    let screen = pty.contents();
    assert!(screen.contains("+two") && screen.contains("+fresh"), "{screen}");
    assert!(screen.contains("b/new.txt") && !screen.contains("before.txt"), "{screen}");
    pty.send(b"\x1b");
    let start = std::time::Instant::now();
    while pty.contents().contains("+fresh") {
        assert!(start.elapsed() < super::pty::WAIT, "Esc closes it:\n{}", pty.contents());
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_clear_starts_afresh_and_keeps_the_old_conversation() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::text("Remembered: blue."));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = mock_args(&server.openai_base_url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.ask("my color is blue", "Remembered: blue.").await;
    pty.send(b"/clear\r");
    pty.wait_for("is kept: /resume").await;
    let screen = pty.contents();
    assert!(!screen.contains("Remembered: blue."), "a clear screen:\n{screen}");
    let kept = super::pty::journals(&home)
        .iter()
        .filter(|j| std::fs::read_to_string(j).unwrap().contains("my color is blue"))
        .count();
    assert_eq!(kept, 1, "the old conversation is kept on disk");
    // The id offered brings back the old conversation, not the new one that shares its start.
    let said = screen.split("is kept: /resume").nth(1).unwrap();
    let prefix: String = said.trim_start().chars().take_while(|c| !c.is_whitespace()).collect();
    pty.send(format!("/resume {prefix}\r").as_bytes());
    pty.wait_for("resumed session").await;
    pty.wait_for("Remembered: blue.").await;
    assert!(!pty.contents().contains("already open"), "{}", pty.contents());
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_init_asks_the_model_to_write_agents_md() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::text("I would write AGENTS.md now."));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = mock_args(&server.openai_base_url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.send(b"/init mention the fuzz targets\r");
    pty.wait_for("I would write AGENTS.md now.").await;
    let sent = server.requests()[0].body["messages"].to_string();
    assert!(sent.contains("Write AGENTS.md at the root of this workspace"), "{sent}");
    assert!(sent.contains("Also: mention the fuzz targets"), "{sent}");
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
}
