//! A local server's window across processes, end to end: the real binary, the mock server
//! counting the requests of the server's own API, one home shared by every process.

use std::process::Output;

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
    async fn new() -> Setup {
        let server = MockServer::start().await.unwrap();
        server.respond_with(|_| Reply::text("Done.").with_usage(900, 2));
        Setup { server, home: tempfile::tempdir().unwrap(), ws: tempfile::tempdir().unwrap() }
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = super::cli::codewhale(self.home.path(), self.ws.path());
        cmd.args(args)
            .args(["--provider", "openai", "--model", "qwen-local"])
            .args(["--base-url", &self.server.openai_base_url()])
            .env("OPENAI_API_KEY", TEST_API_KEY);
        cmd
    }

    async fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().await.unwrap()
    }

    fn context(&self) -> Value {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_codewhale"))
            .current_dir(self.ws.path())
            .env("CODEWHALE_HOME", self.home.path())
            .env("HOME", self.home.path())
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .args(["context", "--last", "--json", "--base-url", &self.server.openai_base_url()])
            .output()
            .unwrap();
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// The windows `exec --json` reported, in order.
fn usage_windows(out: &Output) -> Vec<u64> {
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "usage")
        .map(|e| e["window"].as_u64().unwrap())
        .collect()
}

/// A request large enough to wait for the server's answer before it is sized.
fn long_prompt() -> String {
    "keep these notes in mind while you work on the module ".repeat(500)
}

/// Ten processes started together against one server send one round of requests between
/// them: the first to stamp the cache asks, the others read its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_processes_send_one_probe_round() {
    let s = Setup::new().await;
    s.server.serve_get("/props", json!({"default_generation_settings": {"n_ctx": 12_288}}));
    let runs: Vec<_> = (0..10)
        .map(|k| {
            let mut cmd = s.command(&["exec", &format!("say {k}")]);
            cmd.kill_on_drop(true);
            cmd.output()
        })
        .collect();
    for out in futures::future::join_all(runs).await {
        let out = out.unwrap();
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    }
    let probes = s.server.probes();
    for path in ["GET /api/version", "GET /props", "GET /api/v0/models"] {
        assert_eq!(probes.iter().filter(|p| *p == path).count(), 1, "{path}: {probes:?}");
    }
    assert_eq!(probes.len(), 3, "{probes:?}");
    let cache = std::fs::read_to_string(s.home.path().join("probe-cache.json")).unwrap();
    assert!(cache.contains("\"window\":12288"), "{cache}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(s.home.path().join("probe-cache.json")).unwrap();
        assert_eq!(mode.permissions().mode() & 0o777, 0o600);
    }
}

/// The window the server states is the one `exec --json` reports and the one `context`
/// reports after it, from the journal — and, for a session that never got the answer, from
/// the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_and_context_report_the_probed_window_alike() {
    let s = Setup::new().await;
    s.server.serve_get("/api/version", json!({"version": "0.12.0"}));
    s.server.serve_get(
        "/api/ps",
        json!({"models": [{"name": "qwen-local", "model": "qwen-local", "context_length": 8192}]}),
    );
    let out = s.run(&["exec", "--json", &long_prompt()]).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(usage_windows(&out).last(), Some(&8192), "{:?}", usage_windows(&out));
    let report = s.context();
    assert_eq!(report["context_window"], 8192);
    assert_eq!(report["window_source"], "probe:ollama-ps");
    // Within the minute: no request of the server's own API, the cached window at once.
    let asked = s.server.probes().len();
    let out = s.run(&["exec", "--last", "--json", "and now?"]).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(usage_windows(&out).iter().all(|w| *w == 8192), "{:?}", usage_windows(&out));
    assert_eq!(s.server.probes().len(), asked);
    assert_eq!(s.context()["context_window"], 8192);
}

/// A server that takes the connection and never answers the probe: the request goes out
/// anyway (a small one at once), the command ends, and the next one within the minute sends no
/// probe of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_the_probe_does_not_hold_exec() {
    let s = Setup::new().await;
    s.server.stall_probes();
    for prompt in ["hello".to_owned(), long_prompt()] {
        let out = s.run(&["exec", &prompt]).await;
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "Done.\n");
    }
    let probes = s.server.probes();
    assert_eq!(probes.len(), 3, "one round, never answered: {probes:?}");
    assert_eq!(s.server.requests().len(), 2);
}
