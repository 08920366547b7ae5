//! `codewhale rewind` end to end: a session made by `codewhale exec` whose tools wrote and
//! edited files, then the code and the conversation taken back from the command line — a file
//! someone else changed since is skipped (exit 1, named) unless `--force`.

use std::process::Output;

use codewhale_provider::test_support::{MockServer, Reply, TEST_API_KEY};
use serde_json::{json, Value};

use super::support::{text, write_in};

fn session_lines(home: &std::path::Path) -> (std::path::PathBuf, Vec<Value>) {
    let dir = home.join("sessions");
    let path = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let lines = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (path, lines)
}

/// The id of the session's first user message.
fn first_user_id(home: &std::path::Path) -> String {
    let (_, lines) = session_lines(home);
    let user = lines.iter().find(|l| l["kind"] == "user").unwrap();
    user["id"].as_str().unwrap().to_owned()
}

/// `codewhale ARGS` in `home` and `ws`, against the mock provider at `base`; the command is
/// built at once, so the run borrows nothing.
fn codewhale_at(
    home: &std::path::Path,
    ws: &std::path::Path,
    base: &str,
    args: Vec<&str>,
) -> impl std::future::Future<Output = Output> {
    let global = ["--provider", "openai", "--model", "gpt-4.1", "--base-url", base];
    let mut cmd = super::cli::codewhale(home, ws);
    cmd.args(args).args(global).env("OPENAI_API_KEY", TEST_API_KEY);
    async move { cmd.output().await.unwrap() }
}

/// A turn whose tools make a.txt and edit b.txt ("old b" → "new b"), then answer.
fn make_a_and_edit_b() -> [Reply; 2] {
    [
        Reply::tool_calls(vec![
            codewhale_provider::test_support::ToolCall::new(
                "w",
                "write_file",
                json!({"path": "a.txt", "content": "new a\n"}),
            ),
            codewhale_provider::test_support::ToolCall::new(
                "e",
                "edit_file",
                json!({"path": "b.txt", "old_string": "old", "new_string": "new"}),
            ),
        ]),
        Reply::text("changed both"),
    ]
}

#[tokio::test]
async fn rewind_takes_back_code_and_conversation_and_spares_outside_changes() {
    let server = MockServer::start().await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    write_in(ws.path(), "b.txt", "old b\n");
    server.push_all(make_a_and_edit_b());
    let base = server.openai_base_url();
    let run = |args: Vec<&str>| codewhale_at(home.path(), ws.path(), &base, args);
    let out: Output = run(vec!["exec", "--approval", "full", "change the files"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(ws.path().join("b.txt")).unwrap(), "new b\n");

    let (path, lines) = session_lines(home.path());
    let files: Vec<&Value> = lines.iter().filter_map(|l| l["payload"].get("files")).collect();
    assert_eq!(files.len(), 2, "each tool result records its file");
    let user = lines.iter().find(|l| l["kind"] == "user").unwrap()["id"].as_str().unwrap();
    let user = user.to_owned();

    // Someone else edits b.txt; the code rewind takes a.txt back, leaves b.txt and says so.
    write_in(ws.path(), "b.txt", "edited by hand\n");
    let out = run(vec!["rewind", "--last", "--to", &user, "--code"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(err.contains("b.txt") && err.contains("--force"), "{err}");
    assert!(text(&out.stdout).contains("restored 1 file"), "{}", text(&out.stdout));
    assert!(!ws.path().join("a.txt").exists(), "a new file is removed");
    assert_eq!(std::fs::read_to_string(ws.path().join("b.txt")).unwrap(), "edited by hand\n");

    // --both --force: b.txt is overwritten and HEAD goes before the message.
    let out = run(vec!["rewind", "--last", "--to", &user, "--both", "--force"]).await;
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(std::fs::read_to_string(ws.path().join("b.txt")).unwrap(), "old b\n");
    assert!(text(&out.stdout).contains("rewound to"), "{}", text(&out.stdout));

    let out = run(vec!["journal", "check", path.to_str().unwrap()]).await;
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!text(&out.stdout).contains("warning"), "{}", text(&out.stdout));

    // A bad entry is one clear sentence and exit 1, nothing changed.
    let out = run(vec!["rewind", "--last", "--to", "no-such-entry"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no entry no-such-entry"), "{}", text(&out.stderr));
}

#[tokio::test]
async fn rewind_both_takes_back_what_write_file_and_then_shell_changed() {
    if std::process::Command::new("git").arg("--version").output().is_err() {
        codewhale_mcp::test_support::skip_test("git is not installed");
        return;
    }
    let server = MockServer::start().await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let git =
        std::process::Command::new("git").current_dir(ws.path()).args(["init", "-q"]).status();
    assert!(git.unwrap().success());
    write_in(ws.path(), "keep.txt", "mine\n");
    server.push_all([
        Reply::tool_call("w", "write_file", json!({"path": "a.txt", "content": "v1\n"})),
        Reply::tool_call("s", "shell", json!({"command": "echo v2 > a.txt && echo v3 > keep.txt"})),
        Reply::text("done"),
    ]);
    let base = server.openai_base_url();
    let run = |args: Vec<&str>| codewhale_at(home.path(), ws.path(), &base, args);
    let out = run(vec!["exec", "--approval", "full", "change a"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "v2\n");
    let user = first_user_id(home.path());

    let out = run(vec!["rewind", "--last", "--to", &user, "--both"]).await;
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!ws.path().join("a.txt").exists(), "{}", text(&out.stdout));
    assert_eq!(std::fs::read_to_string(ws.path().join("keep.txt")).unwrap(), "mine\n");
    // The user's repository holds nothing of it.
    assert!(!ws.path().join(".git/index").exists());
}

/// `codewhale rewind` leaving a branch of two messages waits for its summary: written, it is
/// on HEAD and said on stdout; slower than `compaction.branch_summary_timeout_sec`, the rewind
/// still succeeds and says on stderr that there is none.
#[tokio::test]
async fn rewind_waits_for_the_branch_summary_and_says_when_there_is_none() {
    let server = MockServer::start().await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let base = server.openai_base_url();
    let run = |args: Vec<&str>| codewhale_at(home.path(), ws.path(), &base, args);
    let last_user = |lines: &[Value]| {
        let user = lines.iter().rev().find(|l| l["kind"] == "user").unwrap();
        user["id"].as_str().unwrap().to_owned()
    };
    // A tool call makes each branch worth a summary (a one-turn chat branch gets none).
    server.push(Reply::tool_call("r1", "read_file", json!({"path": "notes.txt"})));
    server.push(Reply::text("nom fails on nested groups"));
    let out = run(vec!["exec", "try nom"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (path, lines) = session_lines(home.path());

    server.push(Reply::text("Tried nom; it fails on nested groups."));
    let out = run(vec!["rewind", "--last", "--to", &last_user(&lines)]).await;
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("wrote a summary of the branch left"), "{said}");
    let (_, lines) = session_lines(home.path());
    let last = lines.last().unwrap();
    assert_eq!(last["kind"], "branch_summary", "{last}");
    assert_eq!(last["payload"]["summary"], "Tried nom; it fails on nested groups.");
    for field in ["branch_id", "parent_branch_id", "from", "tip"] {
        assert!(last["payload"].get(field).is_some(), "{field}: {last}");
    }
    let out = run(vec!["journal", "check", path.to_str().unwrap()]).await;
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!text(&out.stdout).contains("warning"), "{}", text(&out.stdout));

    // Another attempt on the new branch, left with a summarizer slower than the bound.
    server.push(Reply::tool_call("r2", "read_file", json!({"path": "notes.txt"})));
    server.push(Reply::text("pest works"));
    let out = run(vec!["exec", "--last", "try pest"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::fs::write(
        home.path().join("config.toml"),
        "[compaction]\nbranch_summary_timeout_sec = 0.5\n",
    )
    .unwrap();
    server.push(Reply::text("late").after(std::time::Duration::from_secs(10)));
    let (_, lines) = session_lines(home.path());
    let out = run(vec!["rewind", "--last", "--to", &last_user(&lines)]).await;
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("no summary of the branch left was written: it took longer than 0.5 s"),
        "{err}"
    );
    let (_, after) = session_lines(home.path());
    let summaries = after.iter().filter(|l| l["kind"] == "branch_summary").count();
    assert_eq!(summaries, 1, "none for the second branch");
}

/// A `--both` rewind leaves a file edited by hand since and says to run again with `--force`;
/// that rerun, after HEAD has moved, takes back exactly that file (docs/cli.md).
/// Without any provider configured, restoring files still works: only the branch summary
/// needs a model, and it is skipped with the reason.
#[tokio::test]
async fn the_force_a_rewind_advises_completes_it_and_no_provider_is_needed() {
    let server = MockServer::start().await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    write_in(ws.path(), "b.txt", "old b\n");
    server.push_all(make_a_and_edit_b());
    let base = server.openai_base_url();
    let run = |args: Vec<&str>| codewhale_at(home.path(), ws.path(), &base, args);
    let out = run(vec!["exec", "--approval", "full", "change the files"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let user = first_user_id(home.path());

    // No provider at all: no key, no base URL, nothing in the configuration.
    let offline = |args: Vec<&str>| {
        let mut cmd = super::cli::codewhale(home.path(), ws.path());
        cmd.args(args);
        async move { cmd.output().await.unwrap() }
    };
    write_in(ws.path(), "b.txt", "edited by hand\n");
    let out = offline(vec!["rewind", "--last", "--to", &user, "--both"]).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("restored 1 file") && stdout.contains("rewound to"), "{stdout}");
    assert!(stderr.contains("b.txt") && stderr.contains("--force"), "{stderr}");
    assert!(
        stderr.contains("no summary of the branch left was written: it needs a model, and no model provider is configured"),
        "{stderr}"
    );
    assert!(!stderr.contains("no tool changed"), "{stderr}");
    assert!(!ws.path().join("a.txt").exists());
    assert_eq!(std::fs::read_to_string(ws.path().join("b.txt")).unwrap(), "edited by hand\n");

    // The advice works: the same command with --force takes b.txt back, HEAD moved or not.
    let out = offline(vec!["rewind", "--last", "--to", &user, "--both", "--force"]).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("restored 1 file") && stdout.contains("b.txt"), "{stdout}");
    assert_eq!(std::fs::read_to_string(ws.path().join("b.txt")).unwrap(), "old b\n");

    // And again: nothing left to do, said plainly, exit 0.
    let out = offline(vec!["rewind", "--last", "--to", &user, "--code"]).await;
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(std::fs::read_to_string(ws.path().join("b.txt")).unwrap(), "old b\n");
}

/// Outside a git work tree a command's changes are not checkpointed: a rewind says so rather
/// than leaving them in place silently.
#[tokio::test]
async fn outside_git_a_rewind_names_the_commands_it_cannot_take_back() {
    let server = MockServer::start().await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    server.push_all([
        Reply::tool_call("s", "shell", json!({"command": "echo made > s.txt"})),
        Reply::text("made it"),
    ]);
    let base = server.openai_base_url();
    let run = |args: Vec<&str>| codewhale_at(home.path(), ws.path(), &base, args);
    let out = run(vec!["exec", "--approval", "full", "make s.txt"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(ws.path().join("s.txt").exists());
    let user = first_user_id(home.path());
    let out = run(vec!["rewind", "--last", "--to", &user, "--both"]).await;
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("1 command ran since then; what they changed cannot be taken back"),
        "{stdout}{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("git init"), "{stdout}");
}
