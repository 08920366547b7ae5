//! `codewhale export` end to end: a real session — a tool call, a compaction, a turn after
//! it — written by the real binary against the mock server, then exported with no provider
//! and no key, as Markdown and as JSON.

use std::process::Output;

use super::pty::SUMMARY;
use super::support::text;
use codewhale_provider::test_support::{MockServer, Reply, TEST_API_KEY};
use serde_json::{json, Value};
use tempfile::TempDir;

struct Setup {
    server: MockServer,
    home: TempDir,
    ws: TempDir,
}

impl Setup {
    /// The mock reports fixed prompt sizes, as a hosted API would be trusted to: it stands for
    /// one, so no reported count is taken for a silent cut.
    async fn new() -> Setup {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.toml"), "[provider]\nhosted = true\n").unwrap();
        Setup { server: MockServer::start().await.unwrap(), home, ws: tempfile::tempdir().unwrap() }
    }

    /// `codewhale SUBCOMMAND ARGS` against the mock server, with a key.
    async fn with_model(&self, subcommand: &str, args: &[&str]) -> Output {
        let mut cmd = self.command();
        cmd.arg(subcommand)
            .args(["--provider", "openai", "--model", "gpt-4.1"])
            .args(["--base-url", &self.server.openai_base_url()])
            .args(args)
            .env("OPENAI_API_KEY", TEST_API_KEY);
        cmd.output().await.unwrap()
    }

    /// `codewhale export ARGS`: no key, no base URL.
    async fn export(&self, args: &[&str]) -> Output {
        self.command().arg("export").args(args).output().await.unwrap()
    }

    fn command(&self) -> tokio::process::Command {
        super::cli::codewhale(self.home.path(), self.ws.path())
    }

    /// A session of five turns, each with a shell call and a long answer, a compaction (the
    /// last two calls' turns are protected, so the first turns are covered) and a turn after.
    async fn compacted_session_with_a_tool_call(&self) {
        for k in 0..5 {
            let command = format!("echo made {k}");
            self.server.push(Reply::tool_call(
                format!("c{k}"),
                "shell",
                json!({"command": command}),
            ));
            let answer =
                format!("{} end {k}.", "the parser keeps every span it reads. ".repeat(300));
            self.server.push(Reply::text(answer).with_usage(1_000, 1_000));
            let last: &[&str] = if k == 0 { &[] } else { &["--last"] };
            let prompt = format!("question {k}");
            let out =
                self.with_model("exec", &[last, &["--approval", "full", &prompt]].concat()).await;
            assert!(out.status.success(), "stderr: {}", text(&out.stderr));
        }
        self.server.push(Reply::text(SUMMARY).with_usage(10_000, 500));
        let out = self.with_model("compact", &["--last"]).await;
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
        self.server.push(Reply::text("Still here after the note."));
        let out = self.with_model("exec", &["--last", "question 5"]).await;
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    }
}

/// The positions of `needles` in `hay`, which must all be there, in this order.
fn in_order(hay: &str, needles: &[&str]) {
    let mut from = 0;
    for needle in needles {
        let at = hay[from..].find(needle).unwrap_or_else(|| {
            panic!("{needle:?} missing after byte {from} of:\n{hay}");
        });
        from += at + needle.len();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_writes_a_compacted_session_with_its_tool_call_as_markdown_and_json() {
    let s = Setup::new().await;
    s.compacted_session_with_a_tool_call().await;
    let requests = s.server.requests().len();

    // Markdown on stdout: covered turns, the call folded to its line, the capsule with its
    // note where it happened, then the turn after it.
    let out = s.export(&[]).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let md = text(&out.stdout);
    assert!(md.starts_with("# Codewhale session "), "{md}");
    in_order(
        &md,
        &[
            "Model: `gpt-4.1`",
            "## You\n\nquestion 0\n",
            "## Assistant\n\n`✓ shell command=echo made 0 · ",
            "end 0.",
            "question 4",
            "end 4.",
            "> **⇣ compacted ",
            "> ## Objective\n> Keep the parser tests green.",
            "## You\n\nquestion 5\n",
            "## Assistant\n\nStill here after the note.\n",
        ],
    );

    // JSON to a file: one object, in transcript order.
    let file = s.ws.path().join("chat.json");
    let out = s.export(&["--format", "json", "-o", file.to_str().unwrap()]).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "the export went to the file");
    assert!(
        text(&out.stderr).contains("exported 12 messages of session "),
        "{}",
        text(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["model"], "gpt-4.1");
    assert!(md.contains(v["session"].as_str().unwrap()), "the same session");
    let messages = v["messages"].as_array().unwrap();
    let at = |pred: &dyn Fn(&Value) -> bool| messages.iter().position(pred).unwrap();
    let first = at(&|m| m["role"] == "user" && m["text"] == "question 0");
    let call = at(&|m| m["tool"] == "shell");
    let late_call = at(&|m| m["tool"] == "shell" && m["input"]["command"] == "echo made 4");
    let compaction = at(&|m| m.get("compaction").is_some());
    let after = at(&|m| m["role"] == "assistant" && m["text"] == "Still here after the note.");
    assert!(first < call && call < late_call && late_call < compaction && compaction < after);
    assert_eq!(messages[call]["input"], json!({"command": "echo made 0"}));
    assert!(messages[call]["result"].as_str().unwrap().contains("made 0"), "{v:#}");
    // The compaction keeps user messages verbatim and covers the rest of the early turns.
    assert_eq!(messages[call]["covered"], true, "the model reads it only through the note");
    assert!(messages[first].get("covered").is_none(), "{}", messages[first]);
    assert!(messages[compaction]["note"].as_str().unwrap().contains("Keep the parser tests green"));
    assert!(messages[compaction]["compaction"].as_str().unwrap().starts_with("compacted "));
    for m in messages {
        let shapes = [
            m.get("role").is_some() && m.get("text").is_some(),
            m.get("tool").is_some(),
            m.get("compaction").is_some(),
        ];
        assert_eq!(shapes.iter().filter(|s| **s).count(), 1, "one shape per message: {m}");
    }

    // By id, from anywhere.
    let id = v["session"].as_str().unwrap();
    let mut cmd = super::cli::codewhale(s.home.path(), s.home.path());
    let out =
        cmd.args(["export", "--session", &id[..13], "--format", "json"]).output().await.unwrap();
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let by_id: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(by_id, v);
    assert_eq!(s.server.requests().len(), requests, "exporting asks no model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_without_a_session_or_to_a_missing_folder_says_why() {
    let s = Setup::new().await;
    let out = s.export(&[]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("codewhale: no earlier session for "),
        "{}",
        text(&out.stderr)
    );
    s.server.push(Reply::text("Hi."));
    assert!(s.with_model("exec", &["hello"]).await.status.success());
    let out = s.export(&["-o", "no/such/folder/chat.md"]).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("codewhale: cannot write the export to no/such/folder/chat.md"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let out = s.export(&["--format", "html"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
