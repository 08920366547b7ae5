//! Silent truncation across processes (docs/compaction.md, *Small local models*): a local server
//! on a random port keeps only the newest 3,000 tokens of a longer prompt and answers 200. Run as
//! 15 `codewhale exec --last` processes, one turn each, the cut is caught like the second
//! request of one interactive session (each process compares its reply with the last one the
//! journal holds): at most one request is cut, and the user is told once.

use std::process::Output;

use super::support::text;
use codewhale_provider::test_support::{MockServer, RecordedRequest, Reply, TEST_API_KEY};
use serde_json::{json, Value};
use tempfile::TempDir;

/// What the server keeps of a prompt.
const KEPT: u64 = 3_000;
/// A model the catalog does not know, as local ones are.
const MODEL: &str = "qwen2.5-coder:7b";

/// The server's own count of a request: a token for every four bytes of its body.
fn body_tokens(r: &RecordedRequest) -> u64 {
    r.raw.len() as u64 / 4
}

struct Local {
    server: MockServer,
    home: TempDir,
    ws: TempDir,
}

impl Local {
    /// A server that keeps the newest [`KEPT`] tokens of a longer prompt and reports what it
    /// kept, answering each turn with about 100 tokens.
    async fn new() -> Local {
        let server = MockServer::start().await.unwrap();
        server.respond_with(|r| {
            let kept = body_tokens(r).min(KEPT);
            let answer = format!("answer: {}", "the span parser keeps offsets ".repeat(16));
            Reply::text(answer).with_usage(kept, 100)
        });
        let home = tempfile::tempdir().unwrap();
        // The turns' sizes are set against the fixed prefix of the six workspace tools and the
        // session's own two, so that the first request past the cut loses more than half a
        // turn's growth (a smaller cut reads as a turn that grew little, and is caught one
        // request later). `web_fetch`'s schema shifts every request by a quarter of a turn.
        std::fs::write(home.path().join("config.toml"), "[tools]\nweb_fetch = false\n").unwrap();
        Local { server, home, ws: tempfile::tempdir().unwrap() }
    }

    async fn exec(&self, args: &[&str]) -> Output {
        let mut cmd = super::cli::codewhale(self.home.path(), self.ws.path());
        cmd.arg("exec")
            .args(["--provider", "openai", "--model", MODEL])
            .args(["--base-url", &self.server.openai_base_url()])
            .args(args)
            .env("OPENAI_API_KEY", TEST_API_KEY);
        cmd.output().await.unwrap()
    }

    /// 15 one-turn processes of about 200 tokens each (`after_first` runs once the first has
    /// ended); their stderr, and the last one's `--json` events.
    async fn fifteen_turns(&self, after_first: impl Fn()) -> (String, Vec<Value>) {
        let mut stderr = String::new();
        let mut last = Vec::new();
        for k in 0..15 {
            let prompt =
                format!("question {k}: {}", "why does the span parser keep offsets ".repeat(12));
            let mut args: Vec<&str> = if k == 0 { vec![] } else { vec!["--last"] };
            if k == 14 {
                args.push("--json");
            }
            args.push(&prompt);
            let out = self.exec(&args).await;
            assert!(out.status.success(), "turn {k}: {}", text(&out.stderr));
            stderr.push_str(&text(&out.stderr));
            if k == 0 {
                after_first();
            }
            if k == 14 {
                last =
                    text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            }
        }
        (stderr, last)
    }

    /// Requests the server cut (longer than it keeps).
    fn cuts(&self) -> usize {
        self.server.requests().iter().filter(|r| body_tokens(r) > KEPT).count()
    }

    /// `codewhale context --last --json`.
    async fn context(&self, model: Option<&str>) -> Value {
        let mut cmd = super::cli::codewhale(self.home.path(), self.ws.path());
        cmd.args(["context", "--last", "--json"]);
        if let Some(model) = model {
            cmd.args(["--model", model]);
        }
        let out = cmd.output().await.unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// The window of the last `usage` event of `events`.
fn window_used(events: &[Value]) -> u64 {
    events.iter().rev().find(|e| e["type"] == "usage").and_then(|e| e["window"].as_u64()).unwrap()
}

fn told(stderr: &str) -> usize {
    stderr.matches("the server kept only part of the prompt").count()
}

/// A server that states no window: the window learned is the count it reported, journaled, so
/// every later process (and `codewhale context`, also with `--model` naming the session's own
/// model) uses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_states_no_window_is_caught_across_exec_processes() {
    let local = Local::new().await;
    let (stderr, last) = local.fifteen_turns(|| {}).await;
    assert_eq!(told(&stderr), 1, "said once: {stderr}");
    assert!(local.cuts() <= 1, "{} requests cut", local.cuts());
    assert_eq!(window_used(&last), KEPT, "{last:?}");
    for model in [None, Some(MODEL)] {
        let report = local.context(model).await;
        assert_eq!(report["context_window"], KEPT, "{model:?}: {report}");
        assert_eq!(report["window_source"], "truncation", "{model:?}");
    }
    // Another model ends the learned window.
    let other = local.context(Some("gpt-4.1")).await;
    assert_ne!(other["context_window"], KEPT);
}

/// An Ollama-like server that lists the model on `/api/ps` only once a request loaded it: the
/// window it states wins over the count it reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_states_its_window_once_loaded_gives_the_window_used() {
    let local = Local::new().await;
    local.server.serve_get("/api/version", json!({"version": "0.12.6"}));
    local.server.serve_get("/api/ps", json!({"models": []}));
    let loaded = json!({"models": [{"name": MODEL, "model": MODEL, "context_length": KEPT}]});
    let (stderr, last) =
        local.fifteen_turns(|| local.server.serve_get("/api/ps", loaded.clone())).await;
    assert!(told(&stderr) <= 1, "said at most once: {stderr}");
    assert!(local.cuts() <= 1, "{} requests cut", local.cuts());
    assert_eq!(window_used(&last), KEPT, "the stated window: {last:?}");
    // Nothing was POSTed to learn it but the turns themselves.
    let posts = local.server.requests().len();
    assert!(posts >= 15, "{posts}");
}
