//! The transcript screen end to end: signals, approvals with grants, folding a tool cell while
//! reading, Home/End, and a resumed compacted session — the real binary in a pseudo-terminal
//! against the in-process mock provider.

use std::time::Duration;

use codewhale_provider::test_support::{MockServer, Reply};
use serde_json::json;
use tempfile::TempDir;

use super::pty::{journals, Pty, SUMMARY};

fn args(base_url: &str) -> Vec<String> {
    ["--provider", "openai", "--model", "gpt-4.1", "--base-url", base_url]
        .map(str::to_owned)
        .to_vec()
}

fn spawn(base_url: &str, home: &TempDir, ws: &TempDir) -> Pty {
    let args = args(base_url);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Pty::spawn(&args, home, ws)
}

/// Row `n` of the screen, as text.
fn row(pty: &Pty, n: usize) -> String {
    pty.contents().lines().nth(n).unwrap_or_default().to_owned()
}

async fn quit(pty: &mut Pty) {
    pty.send(b"\x04");
    let status = pty.wait_exit().await;
    assert!(status.success(), "exit status {status:?}; screen:\n{}", pty.contents());
}

async fn signal_restores_the_terminal(signal: &str) {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::text("Answered before the signal.").with_usage(900, 5));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut pty = spawn(&server.openai_base_url(), &home, &ws);
    pty.wait_for("ready").await;
    pty.send(b"a question\r");
    pty.wait_for("Answered before the signal.").await;
    pty.wait_for("ready").await;
    pty.send(b"half a thought");
    pty.wait_for("half a thought").await;
    assert!(pty.screen.lock().unwrap().screen().alternate_screen());

    let pid = pty.child.process_id().unwrap().to_string();
    let sent = std::process::Command::new("kill").args([signal, &pid]).status().unwrap();
    assert!(sent.success());
    let status = pty.wait_exit().await;
    assert!(status.success(), "{signal}: exit status {status:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let screen = pty.screen.lock().unwrap();
    assert!(!screen.screen().alternate_screen(), "{signal} left the alternate screen on");
    assert!(!screen.screen().hide_cursor(), "{signal} left the cursor hidden");
    drop(screen);
    // The session was saved whole: the journal holds the turn.
    let journal = std::fs::read_to_string(journals(&home).pop().unwrap()).unwrap();
    assert!(journal.contains("Answered before the signal."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_restores_the_terminal_and_keeps_the_session() {
    signal_restores_the_terminal("-TERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_restores_the_terminal_and_keeps_the_session() {
    signal_restores_the_terminal("-HUP").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_grant_covers_the_next_command_like_it_and_nothing_more() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::tool_call("c1", "shell", json!({"command": "git init first"})));
    server.push(Reply::text("The first repository is there.").with_usage(900, 5));
    server.push(Reply::tool_call("c2", "shell", json!({"command": "git init second"})));
    server.push(Reply::text("The second one too.").with_usage(950, 5));
    server.push(Reply::tool_call("c3", "shell", json!({"command": "git init third; touch x"})));
    server.push(Reply::text("Understood, I will not.").with_usage(990, 5));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // The replies report fixed prompt sizes: the mock stands for a hosted API, which never
    // cuts a prompt silently.
    std::fs::write(home.path().join("config.toml"), "[provider]\nhosted = true\n").unwrap();
    let mut pty = spawn(&server.openai_base_url(), &home, &ws);
    pty.wait_for("ready").await;

    pty.send(b"make a repository\r");
    pty.wait_for("approval needed").await;
    pty.wait_for("p always for commands").await;
    pty.send(b"p");
    pty.wait_for("The first repository is there.").await;
    assert!(ws.path().join("first/.git").is_dir());
    pty.wait_for("ready").await;

    // Covered by `git init …`: it runs without a question.
    pty.send(b"and another\r");
    pty.wait_for("The second one too.").await;
    assert!(ws.path().join("second/.git").is_dir());
    pty.wait_for("ready").await;

    // A compound command is covered only if every part is: `touch x` is not.
    pty.send(b"and a third\r");
    pty.wait_for("approval needed").await;
    pty.send(b"rnot today\r");
    pty.wait_for("Understood, I will not.").await;
    assert!(!ws.path().join("x").exists() && !ws.path().join("third").exists());
    let denial = server.last_request().unwrap().body.to_string();
    assert!(denial.contains("not today"), "the model reads the reason: {denial}");
    pty.wait_for("ready").await;

    // `/approval` lists the grant, and `d` revokes it.
    pty.send(b"/approval\r");
    pty.wait_for("always for commands starting with `git init").await;
    pty.send(b"d");
    pty.wait_for("no grants").await;
    pty.send(b"\x1b");
    tokio::time::sleep(Duration::from_millis(100)).await;
    quit(&mut pty).await;
}

/// A workspace file of 80 numbered lines, read by the model in the first turn, then a reply
/// long enough to scroll.
async fn a_read_and_a_long_reply(server: &MockServer, pty: &mut Pty, ws: &TempDir) {
    let numbers: String = (1..=80).map(|n| format!("number-{n:02}\n")).collect();
    std::fs::write(ws.path().join("numbers.txt"), numbers).unwrap();
    server.push(Reply::tool_call("c1", "read_file", json!({"path": "numbers.txt"})));
    server.push(Reply::text("I read the numbers.").with_usage(900, 5));
    let long: String = (1..=60).map(|n| format!("paragraph {n:02}\n\n")).collect();
    server.push(Reply::text(format!("{long}the end of the long reply")).with_usage(1_000, 300));
    pty.wait_for("ready").await;
    pty.send(b"read the numbers\r");
    pty.wait_for("I read the numbers.").await;
    pty.wait_for("ready").await;
    pty.send(b"now write a lot\r");
    pty.wait_for("the end of the long reply").await;
    pty.wait_for("ready").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn home_and_end_reach_the_first_and_the_last_rows() {
    let server = MockServer::start().await.unwrap();
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut pty = spawn(&server.openai_base_url(), &home, &ws);
    a_read_and_a_long_reply(&server, &mut pty, &ws).await;
    assert!(!pty.contents().contains("read the numbers"));

    pty.send(b"\x1b[H");
    pty.wait_for("read the numbers").await;
    pty.wait_for("scrolled, End follows").await;
    assert!(!pty.contents().contains("the end of the long reply"));
    pty.send(b"\x1b[F");
    pty.wait_for("the end of the long reply").await;
    assert!(!pty.contents().contains("read the numbers"));

    // While typing, Home and End move in the composer; Ctrl+Home/End still scroll.
    pty.send(b"draft");
    pty.wait_for("draft").await;
    pty.send(b"\x1b[1;5H");
    pty.wait_for("read the numbers").await;
    pty.send(b"\x1b[1;5F");
    pty.wait_for("the end of the long reply").await;
    assert!(pty.contents().contains("draft"), "the draft is kept");
    quit_with_draft(&mut pty).await;
}

async fn quit_with_draft(pty: &mut Pty) {
    // Ctrl+U empties the composer, then Ctrl+D leaves.
    pty.send(b"\x15");
    tokio::time::sleep(Duration::from_millis(100)).await;
    quit(pty).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfolding_a_tool_cell_keeps_the_rows_being_read() {
    let server = MockServer::start().await.unwrap();
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut pty = spawn(&server.openai_base_url(), &home, &ws);
    a_read_and_a_long_reply(&server, &mut pty, &ws).await;

    // Scroll up until the folded read is in sight, and remember what the top row shows.
    pty.scroll_to("read_file", b"\x1b[5~", 10).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let top = row(&pty, 0);
    assert!(!pty.contents().contains("number-01"), "folded:\n{}", pty.contents());

    // Ctrl+O unfolds the last foldable cell (the read) where it is.
    pty.send(b"\x0f");
    pty.wait_for("number-01").await;
    assert_eq!(row(&pty, 0), top, "unfolding moved the view:\n{}", pty.contents());
    pty.send(b"\x0f");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!pty.contents().contains("number-01"), "folded again:\n{}", pty.contents());
    assert_eq!(row(&pty, 0), top, "folding moved the view:\n{}", pty.contents());

    // Ctrl+T opens the whole output in a pager, Esc closes it.
    pty.send(b"\x14");
    pty.wait_for("number-01").await;
    pty.send(b"\x1b[F");
    pty.wait_for("number-80").await;
    pty.send(b"\x1b");
    tokio::time::sleep(Duration::from_millis(200)).await;
    quit(&mut pty).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_compacted_session_shows_its_earlier_turns_marked() {
    let server = MockServer::start().await.unwrap();
    for k in 0..3 {
        let prose = format!("{} end of answer {k}.", "the numbers add up nicely. ".repeat(200));
        server.push(Reply::text(prose).with_usage(1_500 + k * 1_500, 1_400));
    }
    server.push(Reply::text(SUMMARY).with_usage(3_000, 200));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let base_url = server.openai_base_url();
    let mut args = args(&base_url);
    args.extend(["--context-window".to_owned(), "100000".to_owned()]);
    let started: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn(&started, &home, &ws);
    pty.wait_for("ready").await;
    for k in 0..3 {
        pty.ask(&format!("question {k}"), &format!("end of answer {k}.")).await;
    }
    pty.send(b"/compact\r");
    pty.wait_for("(manual)").await;
    pty.wait_for("ready").await;
    quit(&mut pty).await;

    let mut resume = vec!["resume".to_owned(), "--last".to_owned()];
    resume.extend(args);
    let resume: Vec<&str> = resume.iter().map(String::as_str).collect();
    let mut again = Pty::spawn(&resume, &home, &ws);
    again.wait_for("resumed session").await;
    again.send(b"\x1b[H");
    again.wait_for("question 0").await;
    // What the model now reads only through the note is dimmed and marked as such.
    again.scroll_to("↑ dimmed", b"\x1b[6~", 20).await;
    again.wait_for("↑ dimmed: the model now reads these turns only through").await;
    quit(&mut again).await;
}
