//! `/rewind` and `/undo` in the real binary in a pseudo-terminal: a file `write_file` made is
//! taken back with the conversation (the message comes back in the composer), the branch left
//! is summarized in the background while the composer stays usable, and after the message is
//! sent again and the file rewritten, `/undo` takes the file back once more.

use codewhale_provider::test_support::{MockServer, Reply};
use serde_json::json;

use super::pty::Pty;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_both_and_undo_take_back_what_write_file_made() {
    let server = MockServer::start().await.unwrap();
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(home.path().join("config.toml"), "approval = \"full\"\n").unwrap();
    server.push_all([
        Reply::tool_call("w1", "write_file", json!({"path": "made.txt", "content": "v1\n"})),
        Reply::text("wrote it"),
        // The summary of the branch the rewind leaves, slow enough to be seen being written.
        Reply::text("Wrote made.txt with v1.").after(std::time::Duration::from_millis(1_500)),
        Reply::tool_call("w2", "write_file", json!({"path": "made.txt", "content": "v2\n"})),
        Reply::text("wrote it again"),
    ]);
    let base_url = server.openai_base_url();
    let args = ["--provider", "openai", "--model", "gpt-4.1", "--base-url", &base_url];
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("ready").await;
    pty.ask("make the file", "wrote it").await;
    let made = ws.path().join("made.txt");
    assert_eq!(std::fs::read_to_string(&made).unwrap(), "v1\n");

    // /rewind: the picker, then the question naming the file; b takes back both.
    pty.send(b"/rewind\r");
    pty.wait_for("Enter rewind here").await;
    pty.send(b"\r");
    pty.wait_for("rewind: what to take back").await;
    pty.wait_for("made.txt  removed").await;
    pty.send(b"b");
    pty.wait_for("restored 1 file").await;
    pty.wait_for("back in the composer").await;
    assert!(!made.exists(), "the new file is gone; screen:\n{}", pty.contents());
    // The summary is written in the background: the status line says so, and the composer
    // takes keys meanwhile.
    pty.wait_for("summarizing the branch you left").await;
    pty.send(b" again");
    pty.wait_for("make the file again").await;
    pty.wait_for("what was tried on a branch you left").await;
    assert!(pty.contents().contains("rewound to"), "the move's notice stays:\n{}", pty.contents());

    // The message is in the composer: Enter sends it again, from before it.
    pty.send(b"\r");
    pty.wait_for("wrote it again").await;
    pty.wait_for("ready").await;
    assert_eq!(std::fs::read_to_string(&made).unwrap(), "v2\n");
    let sent = server.last_request().unwrap().body["messages"].to_string();
    assert_eq!(sent.matches("make the file").count(), 1, "never glued twice: {sent}");
    assert!(sent.contains("What was tried on a branch you left: Wrote made.txt"), "{sent}");

    pty.send(b"/undo\r");
    pty.wait_for("undo: take back the last turn").await;
    pty.send(b"\r");
    pty.wait_for("before the last turn: made.txt").await;
    assert!(!made.exists(), "screen:\n{}", pty.contents());
    // /undo moves no HEAD: the turn stays on screen, and the restore is said once.
    let screen = pty.contents();
    assert!(screen.contains("wrote it again"), "the transcript stays:\n{screen}");
    assert_eq!(screen.matches("before the last turn: made.txt").count(), 1, "{screen}");
    // Twice is harmless.
    pty.send(b"/undo\r");
    pty.wait_for("nothing to undo").await;

    pty.send(b"\x04");
    let status = pty.wait_exit().await;
    assert!(status.success(), "exit status {status:?}; screen:\n{}", pty.contents());
}
