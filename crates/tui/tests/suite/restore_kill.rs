//! A rewind or `/undo` killed with SIGKILL at each of its steps (the process is stopped at a
//! named point, `CODEWHALE_PAUSE_AT`, then killed): the next open of the session completes
//! it and says so, and the same command run again leaves every file back and the journal with
//! one account of the restore.

use codewhale_provider::test_support::{MockServer, Reply, ToolCall, TEST_API_KEY};
use serde_json::{json, Value};

use super::pty::Pty;
use super::support::{text, write_in};

const PAUSE: &str = codewhale_engine::pause_point::VAR;

struct Made {
    server: MockServer,
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
    user: String,
}

impl Made {
    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let base = self.server.openai_base_url();
        let mut cmd = super::cli::codewhale(self.home.path(), self.ws.path());
        cmd.args(args)
            .args(["--provider", "openai", "--model", "gpt-4.1", "--base-url", &base])
            .env("OPENAI_API_KEY", TEST_API_KEY);
        cmd
    }

    fn read(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.ws.path().join(name)).ok()
    }

    fn lines(&self) -> Vec<Value> {
        let journal = super::pty::journals(&self.home).remove(0);
        std::fs::read_to_string(journal)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// A session whose one turn made a.txt, edited b.txt and rewrote c.txt.
async fn made() -> Made {
    let server = MockServer::start().await.unwrap();
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_in(ws.path(), "b.txt", "old b\n");
    write_in(ws.path(), "c.txt", "old c\n");
    server.push_all([
        Reply::tool_calls(vec![
            ToolCall::new("w", "write_file", json!({"path": "a.txt", "content": "new a\n"})),
            ToolCall::new(
                "e",
                "edit_file",
                json!({"path": "b.txt", "old_string": "old", "new_string": "new"}),
            ),
            ToolCall::new("c", "write_file", json!({"path": "c.txt", "content": "new c\n"})),
        ]),
        Reply::text("changed them"),
        // The summary of the branch a rewind leaves.
        Reply::text("Made a.txt, edited b.txt and c.txt."),
        Reply::text("Made a.txt, edited b.txt and c.txt."),
    ]);
    let mut made = Made { server, home, ws, user: String::new() };
    let out = made.command(&["exec", "--approval", "full", "change the files"]).output().await;
    let out = out.unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(made.read("c.txt").as_deref(), Some("new c\n"));
    let lines = made.lines();
    let user = lines.iter().find(|l| l["kind"] == "user").unwrap()["id"].as_str().unwrap();
    made.user = user.to_owned();
    made
}

/// Runs `args` until it reaches the pause point `at`, then kills it with SIGKILL.
async fn kill_at(made: &Made, args: &[&str], at: &str) {
    super::support::kill_at(made.command(args), at).await;
}

fn restores(lines: &[Value]) -> usize {
    lines.iter().filter(|l| l["kind"] == "system" && l["payload"]["restore_id"].is_string()).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_killed_at_any_step_is_completed_by_the_same_command() {
    for at in ["restore:intent", "restore:head", "restore:file", "restore:files"] {
        let made = made().await;
        let rewind = ["rewind", "--last", "--to", made.user.as_str(), "--both"];
        kill_at(&made, &rewind, at).await;
        if at == "restore:file" {
            // Killed between two files: the first is back, the others are not.
            assert_eq!(made.read("a.txt"), None, "{at}");
            assert_eq!(made.read("b.txt").as_deref(), Some("new b\n"), "{at}");
        }

        let out = made.command(&rewind).output().await.unwrap();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{at}: {stdout}{stderr}");
        assert!(
            stderr.contains("a rewind was interrupted before it finished and has been completed"),
            "{at}: {stderr}"
        );
        assert_eq!(made.read("a.txt"), None, "{at}: the new file is removed");
        assert_eq!(made.read("b.txt").as_deref(), Some("old b\n"), "{at}");
        assert_eq!(made.read("c.txt").as_deref(), Some("old c\n"), "{at}");
        let lines = made.lines();
        assert_eq!(restores(&lines), 1, "{at}: one account of the restore");
        let told = lines.iter().any(|l| {
            l["kind"] == "user"
                && l["payload"].to_string().contains("The user took files back to their content")
        });
        assert!(told, "{at}: the model is told");
        let intent = super::pty::journals(&made.home)[0].with_extension("files");
        assert!(!intent.join("restore-intent.json").exists(), "{at}: the intent is gone");

        // The view the next request carries holds none of the turn rewound.
        let out = made.command(&["context", "--last", "--json"]).output().await.unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let kinds: Vec<&str> =
            report["view"].as_array().unwrap().iter().filter_map(|v| v["kind"].as_str()).collect();
        assert!(!kinds.contains(&"tool_result"), "{at}: {kinds:?}");
        let out = made
            .command(&["journal", "check", &super::pty::journals(&made.home)[0].to_string_lossy()])
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{at}: {}", text(&out.stdout));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undo_killed_between_files_is_completed_when_the_session_opens_again() {
    let made = made().await;
    made.server.push(Reply::text("fine"));
    let base = made.server.openai_base_url();
    let args =
        ["resume", "--last", "--provider", "openai", "--model", "gpt-4.1", "--base-url", &base];
    let mut pty = Pty::spawn_in(&args, &made.home, &made.ws, false, &[(PAUSE, "restore:file")]);
    pty.wait_for("ready").await;
    pty.send(b"/undo\r");
    pty.wait_for("undo: take back the last turn").await;
    pty.send(b"\r");
    pty.wait_for_bytes(b"paused at restore:file").await;
    let pid = pty.child.process_id().unwrap().to_string();
    assert!(std::process::Command::new("kill").args(["-9", &pid]).status().unwrap().success());
    let _ = pty.wait_exit().await;
    assert_eq!(made.read("a.txt"), None);
    assert_eq!(made.read("b.txt").as_deref(), Some("new b\n"), "killed after the first file");

    // Any open of the session finishes it: here an exec turn, which says so on stderr.
    let out = made.command(&["exec", "--last", "go on"]).output().await.unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("an undo was interrupted before it finished and has been completed"),
        "{stderr}"
    );
    assert_eq!(made.read("b.txt").as_deref(), Some("old b\n"));
    assert_eq!(made.read("c.txt").as_deref(), Some("old c\n"));
    assert_eq!(restores(&made.lines()), 1);
    // The model read the note before the new message.
    let sent = made.server.last_request().unwrap().body["messages"].to_string();
    assert!(
        sent.contains("The user took files back to their content before the last turn"),
        "{sent}"
    );
}
