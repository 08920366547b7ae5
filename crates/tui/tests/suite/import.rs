//! `codewhale import` end to end: the real binary imports fixture sessions of Claude Code and
//! Codex, then continues them with `exec --session` against the in-process mock provider.

use std::path::{Path, PathBuf};
use std::process::Output;

use super::support::text;
use codewhale_provider::test_support::{MockServer, Reply, TEST_API_KEY};
use serde_json::Value;
use tempfile::TempDir;

struct Setup {
    server: MockServer,
    home: TempDir,
    ws: TempDir,
    /// Stands in for `~/.claude` and `~/.codex`.
    tools: TempDir,
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/import").join(name)
}

/// The texts of a request's user messages, in order.
fn user_texts(messages: &[serde_json::Value]) -> Vec<&str> {
    messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect()
}

impl Setup {
    async fn new() -> Setup {
        Setup {
            server: MockServer::start().await.unwrap(),
            home: tempfile::tempdir().unwrap(),
            ws: tempfile::tempdir().unwrap(),
            tools: tempfile::tempdir().unwrap(),
        }
    }

    fn ws(&self) -> String {
        std::fs::canonicalize(self.ws.path()).unwrap().display().to_string()
    }

    /// A fixture with its recorded workspace replaced by this test's, written under `dir`.
    fn source(&self, name: &str, dir: &Path, file: &str) -> PathBuf {
        let body = std::fs::read_to_string(fixture(name))
            .unwrap()
            .replace("/home/u/proj", &self.ws())
            .replace("/tmp/proj", &self.ws());
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(file);
        std::fs::write(&path, body).unwrap();
        path
    }

    fn command(&self) -> tokio::process::Command {
        let mut cmd = super::cli::codewhale(self.home.path(), self.ws.path());
        cmd.env("CLAUDE_CONFIG_DIR", self.tools.path().join("claude"))
            .env("CODEX_HOME", self.tools.path().join("codex"));
        cmd
    }

    async fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().await.unwrap()
    }

    async fn import_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["import", "--json"];
        all.extend_from_slice(args);
        let out = self.run(&all).await;
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
        serde_json::from_str(&text(&out.stdout)).unwrap()
    }
}

impl Setup {
    async fn exec(&self, session: &str, prompt: &str) -> Output {
        let base_url = self.server.openai_base_url();
        let mut cmd = self.command();
        cmd.args(["exec", "--provider", "openai", "--model", "gpt-4.1", "--base-url", &base_url])
            .args(["--session", session, prompt])
            .env("OPENAI_API_KEY", TEST_API_KEY);
        cmd.output().await.unwrap()
    }

    async fn exec_last(&self, prompt: &str) -> Output {
        let base_url = self.server.openai_base_url();
        let mut cmd = self.command();
        cmd.args(["exec", "--provider", "openai", "--model", "gpt-4.1", "--base-url", &base_url])
            .args(["--last", prompt])
            .env("OPENAI_API_KEY", TEST_API_KEY);
        cmd.output().await.unwrap()
    }
}

/// Every tool call of the request is answered by the tool messages right after it, and every
/// tool message answers such a call.
fn assert_pairs_whole(messages: &[Value]) {
    let mut pending: Vec<String> = Vec::new();
    for m in messages {
        match m["role"].as_str().unwrap() {
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap().to_owned();
                let at = pending.iter().position(|p| *p == id);
                assert!(at.is_some(), "orphaned tool result {id} in {messages:#?}");
                pending.retain(|p| *p != id);
            }
            role => {
                assert!(pending.is_empty(), "calls {pending:?} unanswered before a {role} message");
                if let Some(calls) = m["tool_calls"].as_array() {
                    pending.extend(calls.iter().map(|c| c["id"].as_str().unwrap().to_owned()));
                }
            }
        }
    }
    assert!(pending.is_empty(), "calls {pending:?} unanswered at the end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_claude_session_continues_with_its_summary_as_the_checkpoint() {
    let s = Setup::new().await;
    let source = s.source("claude/compact.jsonl", &s.tools.path().join("files"), "compact.jsonl");
    let before = std::fs::read(&source).unwrap();
    let report = s.import_json(&[source.to_str().unwrap()]).await;
    for key in [
        "session",
        "source",
        "entries_read",
        "entries_written",
        "pairs_repaired",
        "blocks_merged",
        "thinking_dropped",
        "summaries_imported",
        "view_tokens",
    ] {
        assert!(report.get(key).is_some(), "{key} missing from {report}");
    }
    assert_eq!(report["source"], "claude");
    assert_eq!(report["summaries_imported"], 1);
    assert_eq!(report["entries_read"], 13);
    assert_eq!(report["view_tokens_estimated"], false);
    assert!(report["view_tokens"].as_u64().unwrap() > 50, "{report}");
    assert_eq!(std::fs::read(&source).unwrap(), before, "the source is never modified");
    let id = report["session"].as_str().unwrap().to_owned();

    let listed = s.run(&["sessions", "--json"]).await;
    let listed: Value = serde_json::from_str(&text(&listed.stdout)).unwrap();
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["cwd"], s.ws().as_str());
    let check = s.run(&["journal", "check", report["path"].as_str().unwrap()]).await;
    assert!(check.status.success(), "{}{}", text(&check.stdout), text(&check.stderr));
    assert!(text(&check.stdout).contains("1 compaction"), "{}", text(&check.stdout));

    s.server.push(Reply::text("On it."));
    let out = s.exec(&id, "now run the tests").await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "On it.\n");
    let messages = s.server.requests()[0].body["messages"].as_array().unwrap().clone();
    assert_pairs_whole(&messages);
    let users = user_texts(&messages);
    assert_eq!(users.len(), 3, "{users:#?}");
    assert!(users[0].starts_with("Codewhale handoff note (imported from Claude Code)."));
    assert!(users[0].contains("Rename the crate `core` to `whale-core` and update Cargo.toml."));
    assert!(users[0].contains("<!-- codewhale.compaction-checkpoint.v1 -->"));
    assert_eq!(users[1..], ["also fix the imports in main.rs", "now run the tests"]);
    let all = serde_json::to_string(&messages).unwrap();
    assert!(!all.contains("rename the crate to whale-core"), "the covered part stays covered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_codex_rollout_continues_with_whole_tool_pairs() {
    let s = Setup::new().await;
    let source = s.source("codex/g2.jsonl", &s.tools.path().join("files"), "rollout.jsonl");
    let report = s.import_json(&[source.to_str().unwrap()]).await;
    assert_eq!(report["source"], "codex");
    assert_eq!(
        (report["pairs_repaired"].as_u64(), report["thinking_dropped"].as_u64()),
        (Some(2), Some(1))
    );
    let id = report["session"].as_str().unwrap().to_owned();
    s.server.push(Reply::text("Tests pass."));
    let out = s.exec(&id, "run them again").await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let messages = s.server.requests()[0].body["messages"].as_array().unwrap().clone();
    assert_pairs_whole(&messages);
    let users = user_texts(&messages);
    assert_eq!(users[0], "fix the build, it fails on main");
    assert_eq!(users[1], "thanks, now run the tests");
    // The result kept as text and the new prompt are consecutive user texts: one message.
    assert_eq!(users.len(), 3, "{users:#?}");
    assert!(users[2].starts_with("[Output of tool call call_ghost"), "{users:#?}");
    assert!(users[2].ends_with("\n\nrun them again"), "{users:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_lists_the_workspace_sessions_and_imports_only_the_one_named() {
    let s = Setup::new().await;
    let projects = s.tools.path().join("claude/projects");
    let dir = projects.join(codewhale_import_dir_name(&s.ws()));
    let old =
        s.source("claude/sidechain.jsonl", &dir, "11111111-1111-4111-8111-111111111111.jsonl");
    let new = s.source("claude/basic.jsonl", &dir, "22222222-2222-4222-8222-222222222222.jsonl");
    std::fs::File::options()
        .append(true)
        .open(&old)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .unwrap();
    // Another workspace's session, in a directory whose name collides: left out by its cwd.
    let body = std::fs::read_to_string(fixture("claude/torn.jsonl")).unwrap();
    std::fs::write(dir.join("33333333-3333-4333-8333-333333333333.jsonl"), body).unwrap();

    let listed = s.import_json(&["--from", "claude"]).await;
    let candidates = listed["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 2, "{listed}");
    assert_eq!(candidates[0]["path"], new.display().to_string());
    assert_eq!(candidates[0]["first_prompt"], "add a --json flag to the CLI");
    assert_eq!(candidates[1]["first_prompt"], "find where the config is loaded");
    assert!(!s.home.path().join("sessions").exists(), "listing imports nothing");

    let report = s.import_json(&["--from", "claude", "--pick", "2"]).await;
    assert_eq!(report["sidechain_lines"], 4);
    let report = s.import_json(&["--from", "claude", "--latest"]).await;
    assert_eq!(report["blocks_merged"], 4);

    let out = s.run(&["import", "--from", "claude", "--pick", "3"]).await;
    assert_eq!(out.status.code(), Some(2), "stderr: {}", text(&out.stderr));
    assert!(text(&out.stderr).contains("there is no session 3"), "{}", text(&out.stderr));

    let codex_dir = s.tools.path().join("codex/sessions/2025/10/29");
    s.source("codex/g3.jsonl", &codex_dir, "rollout-2025-10-29T00-59-38-019a2d7a.jsonl");
    let listed = s.import_json(&["--from", "codex"]).await;
    assert_eq!(listed["candidates"][0]["first_prompt"], "hello");
    let report = s.import_json(&["--from", "codex", "--cwd", &s.ws(), "--pick", "1"]).await;
    assert_eq!(report["source"], "codex");

    let empty = tempfile::tempdir().unwrap();
    let out = s.run(&["import", "--from", "codex", "--cwd", empty.path().to_str().unwrap()]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("stored no sessions for"), "{}", text(&out.stderr));
}

/// Claude Code's directory name for a workspace (as `codewhale-import` computes it).
fn codewhale_import_dir_name(ws: &str) -> String {
    ws.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_sources_and_usage_fail_with_one_sentence() {
    let s = Setup::new().await;
    let out = s.run(&["import"]).await;
    assert_eq!(out.status.code(), Some(2));
    let out = s.run(&["import", "/nowhere/x.jsonl"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.starts_with("codewhale: cannot import /nowhere/x.jsonl"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let other = s.tools.path().join("notes.jsonl");
    std::fs::write(&other, "{\"hello\":\"world\"}\n").unwrap();
    let out = s.run(&["import", other.to_str().unwrap()]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("neither a Claude Code session nor a Codex rollout"));
    assert!(!s.home.path().join("sessions").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_text_is_redacted_and_the_report_is_readable() {
    let s = Setup::new().await;
    let secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
    let body = std::fs::read_to_string(fixture("claude/sidechain.jsonl")).unwrap().replace(
        "find where the config is loaded",
        &format!("my key is {secret}, find the config"),
    );
    let source = s.tools.path().join("s.jsonl");
    std::fs::write(&source, body).unwrap();
    let out = s.run(&["import", source.to_str().unwrap()]).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for label in [
        "entries read",
        "tool pairs repaired",
        "blocks merged",
        "thinking dropped",
        "summaries imported",
        "view tokens",
        "sub-agent lines",
    ] {
        assert!(stdout.contains(label), "{label} missing from\n{stdout}");
    }
    let session = std::fs::read_dir(s.home.path().join("sessions"))
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let journal = std::fs::read_to_string(session.path()).unwrap();
    assert!(!journal.contains(secret));
    assert!(journal.contains("[REDACTED:openai-key:"), "{journal}");
}

/// A Claude Code session of `exchanges` long prompt/answer pairs, compacted by Claude Code
/// after the second, in `ws`.
fn long_claude_session(ws: &str, exchanges: usize) -> String {
    let mut lines = Vec::new();
    let mut parent = Value::Null;
    for k in 0..exchanges {
        let (u, a) = (format!("u{k}"), format!("a{k}"));
        lines.push(serde_json::json!({"type": "user", "uuid": u, "parentUuid": parent, "cwd": ws,
            "sessionId": "long", "message": {"role": "user", "content": format!("question {k}")}}));
        lines.push(serde_json::json!({"type": "assistant", "uuid": a, "parentUuid": u, "cwd": ws,
            "message": {"id": format!("msg_{k}"), "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": format!("answer {k}: {}", "lorem ipsum dolor ".repeat(400))}]}}));
        parent = Value::String(a.clone());
        if k == 1 {
            lines.push(serde_json::json!({"type": "system", "subtype": "compact_boundary", "uuid": "b",
                "parentUuid": null, "logicalParentUuid": a, "compactMetadata": {"trigger": "auto"}}));
            lines.push(serde_json::json!({"type": "user", "uuid": "s", "parentUuid": "b", "isCompactSummary": true,
                "message": {"role": "user", "content": "Summary from Claude Code: questions 0 and 1 were answered."}}));
            parent = Value::String("s".into());
        }
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_session_is_compacted_by_codewhale_own_pass() {
    let s = Setup::new().await;
    let source = s.tools.path().join("long.jsonl");
    std::fs::write(&source, long_claude_session(&s.ws(), 6)).unwrap();
    let report = s.import_json(&[source.to_str().unwrap()]).await;
    assert_eq!(report["summaries_imported"], 1);
    let id = report["session"].as_str().unwrap().to_owned();
    s.server.push(Reply::text(super::pty::SUMMARY));
    s.server.push(Reply::text("done").with_usage(2_000, 5));
    let base_url = s.server.openai_base_url();
    let mut cmd = s.command();
    cmd.args(["exec", "--provider", "openai", "--model", "gpt-4.1", "--base-url", &base_url])
        .args(["--context-window", "8192", "--session", &id, "one more"])
        .env("OPENAI_API_KEY", TEST_API_KEY);
    let out = cmd.output().await.unwrap();
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(text(&out.stderr).contains("codewhale: compacted (summary, "), "{}", text(&out.stderr));
    let requests = s.server.requests();
    let summarized = serde_json::to_string(&requests[0].body).unwrap();
    assert!(summarized.contains("Summary from Claude Code"), "the imported note is folded in");
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    assert_pairs_whole(&messages);
    let notes: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["content"].as_str())
        .filter(|c| c.starts_with("Codewhale handoff note"))
        .collect();
    assert_eq!(notes.len(), 1, "one checkpoint: {messages:#?}");
    let checkpoint = notes[0];
    assert!(!checkpoint.contains("(imported from"), "Codewhale's own note replaced it");
    assert!(checkpoint.contains("Keep the parser tests green."));
    let check = s.run(&["journal", "check", report["path"].as_str().unwrap()]).await;
    assert!(text(&check.stdout).contains("2 compactions"), "{}", text(&check.stdout));
}

/// An imported session belongs to the workspace it was imported into, whatever directory the
/// other tool worked in: `--last` there finds it. Importing the same file again says which
/// session came from it before, and the `--home` given is repeated in the suggested command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_belongs_to_its_workspace_and_a_second_import_names_the_first() {
    let s = Setup::new().await;
    // The fixture's own workspace (/home/u/proj) is not this test's.
    let source = fixture("claude/basic.jsonl");
    let first = s.import_json(&[source.to_str().unwrap()]).await;
    let id = first["session"].as_str().unwrap().to_owned();
    assert_eq!(first["earlier_imports"], serde_json::json!([]));
    let context = s.run(&["context", "--last", "--json"]).await;
    assert!(context.status.success(), "stderr: {}", text(&context.stderr));
    let report: Value = serde_json::from_str(&text(&context.stdout)).unwrap();
    assert_eq!(report["session"], id.as_str(), "`--last` in this workspace finds it");

    let home = s.home.path().display().to_string();
    let again = s.run(&["import", source.to_str().unwrap(), "--home", &home]).await;
    assert!(again.status.success(), "stderr: {}", text(&again.stderr));
    let out = text(&again.stdout);
    assert!(out.contains(&format!("this file was imported before, as session {id}")), "{out}");
    assert!(out.contains(&format!("--home {home}`")), "the hint repeats --home: {out}");
}

/// An import killed halfway (SIGKILL after a few entries, or after the last one is synced but
/// before it is renamed into place) leaves nothing `sessions` lists or `--last` picks; the same
/// import run again writes one complete session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_import_is_never_listed_and_the_next_one_completes() {
    let s = Setup::new().await;
    let source = s.source("claude/compact.jsonl", &s.tools.path().join("files"), "compact.jsonl");
    let source = source.to_str().unwrap();
    for at in ["import:entries", "import:closed"] {
        let mut cmd = s.command();
        cmd.args(["import", source]);
        super::support::kill_at(cmd, at).await;

        let out = s.run(&["sessions", "--json"]).await;
        assert!(out.status.success(), "{}", text(&out.stderr));
        let listed: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
        assert_eq!(listed.as_array().map(Vec::len), Some(0), "{at}: {listed}");
        let out = s.exec_last("go on").await;
        assert!(!out.status.success(), "{at}: a partial import is not resumed");
    }
    let report = s.import_json(&[source]).await;
    let id = report["session"].as_str().unwrap();
    let out = s.run(&["sessions", "--json"]).await;
    let listed: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["id"], id);
    let out = s
        .run(&["journal", "check", &format!("{}/sessions/{id}.jsonl", s.home.path().display())])
        .await;
    assert!(out.status.success(), "{}", text(&out.stdout));
}
