//! Everyday habits end to end, in a pseudo-terminal with the real binary: `!CMD` output shown
//! unfolded (live and after a resume), `/export` to a file and to the clipboard, `-c` opening
//! the newest session, and `-p` in a terminal — with no prompt, and with one piped to it.

use codewhale_provider::test_support::{MockServer, Reply};
use serde_json::json;

use super::pty::{mock_args, Pty};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bang_output_is_unfolded_and_slash_export_writes_or_copies_the_conversation() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::text("Fifteen numbers."));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = mock_args(&server.openai_base_url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.send(b"!seq 101 115\r");
    // Its first ten lines under it; the rest (and the exit code line) behind the fold.
    pty.wait_for("more lines · Ctrl+O unfolds").await;
    let screen = pty.contents();
    assert!(screen.contains("│ 101") && screen.contains("│ 110"), "{screen}");
    assert!(!screen.contains("│ 111"), "{screen}");
    pty.wait_for("ready").await;
    pty.ask("what did it print?", "Fifteen numbers.").await;

    pty.send(b"/export chat.md\r");
    pty.wait_for("exported 2 messages").await;
    let md = std::fs::read_to_string(ws.path().join("chat.md")).unwrap();
    assert!(md.starts_with("# Codewhale session "), "{md}");
    assert!(md.contains("`! seq 101 115`") && md.contains("\n115\n"), "{md}");
    assert!(md.contains("## You\n\nwhat did it print?\n"), "{md}");
    assert!(md.contains("## Assistant\n\nFifteen numbers.\n"), "{md}");

    pty.send(b"/export\r");
    pty.wait_for("copied the conversation").await;
    pty.wait_for_bytes(b"\x1b]52;c;").await;
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());

    // Resumed: the same cell, unfolded the same way.
    let resume = [&["resume", "--last"][..], &args[..]].concat();
    let mut pty = Pty::spawn(&resume, &home, &ws);
    pty.wait_for("resumed session").await;
    pty.wait_for("more lines · Ctrl+O unfolds").await;
    assert!(pty.contents().contains("│ 110"), "{}", pty.contents());
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dash_c_opens_the_newest_session_and_dash_p_wants_a_prompt() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::text("Teal, noted."));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = mock_args(&server.openai_base_url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.ask("remember teal", "Teal, noted.").await;
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());

    let continued = [&["-c"][..], &args[..]].concat();
    let mut pty = Pty::spawn(&continued, &home, &ws);
    pty.wait_for("resumed session").await;
    pty.wait_for("Teal, noted.").await;
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());

    // A terminal on stdin is no prompt.
    let print = [&["-p"][..], &args[..]].concat();
    let mut pty = Pty::spawn(&print, &home, &ws);
    pty.wait_for("no prompt: give PROMPT or pipe one").await;
    assert_eq!(pty.wait_exit().await.exit_code(), 2);
}

/// A prompt piped to `-p` while stderr is still a terminal: the write the model asks for in
/// `ask` mode is refused without a question, since nobody is left to answer on stdin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_piped_prompt_asks_nothing_even_beside_a_terminal() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::tool_call("w", "write_file", json!({"path": "a.txt", "content": "a\n"})));
    server.push(Reply::text("Refused, as expected."));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let bin = env!("CARGO_BIN_EXE_codewhale");
    let mut args = vec!["-c", "printf 'write a.txt' | \"$0\" \"$@\"; echo \"exit=$?\"", bin];
    let mock = mock_args(&server.openai_base_url());
    args.extend(mock.iter().map(String::as_str));
    args.push("-p");
    let mut pty = Pty::spawn_program("sh", &args, &home, &ws, false, &[]);
    pty.wait_for("exit=").await;
    let screen = pty.contents();
    assert!(screen.contains("write_file a.txt · denied"), "{screen}");
    assert!(screen.contains("Refused, as expected.") && screen.contains("exit=0"), "{screen}");
    assert!(!screen.contains("allow write_file"), "nothing was asked:\n{screen}");
    assert!(!ws.path().join("a.txt").exists());
    let _ = pty.wait_exit().await;
}
