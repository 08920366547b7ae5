//! `codewhale eval` from the command line: progress on stderr, the report on stdout (a table,
//! or one JSON object with `--json`), a clear error and exit 1 for an unknown scenario.

use codewhale_provider::test_support::{MockServer, Reply, TEST_API_KEY};
use serde_json::Value;

use super::support::text;

const BLAND: &str = "## Objective\nWork on the task.\n## User direction\nNone\n## Permissions \
and limits\nNone\n## Done\nNone\n## Changed files\nNone\n## Still running\nNone\n## Verification \
left\nNone\n## Open questions\nNone\n## Next action\nNone\n## Reference\nNone";

async fn eval(server: &MockServer, home: &std::path::Path, args: &[&str]) -> std::process::Output {
    let ws = tempfile::tempdir().unwrap();
    let mut cmd = super::cli::codewhale(home, ws.path());
    cmd.arg("eval")
        .args(["--provider", "openai", "--model", "gpt-4.1"])
        .args(["--base-url", &server.openai_base_url()])
        .args(args)
        .env("OPENAI_API_KEY", TEST_API_KEY);
    cmd.output().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floor_only_prints_progress_and_a_report() {
    let server = MockServer::start().await.unwrap();
    server.respond_with(|_| Reply::text(BLAND).with_usage(1_000, 120));
    let home = tempfile::tempdir().unwrap();
    let out =
        eval(&server, home.path(), &["--floor-only", "--scenario", "two-step-task", "--json"])
            .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("[1/1] two-step-task") && stderr.contains("pass 3"), "{stderr}");
    let report: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(report["scenarios"][0]["name"], "two-step-task");
    assert_eq!(report["categories"]["plan"]["in_view"]["hits"], 2);
    assert_eq!(server.requests().len(), 3, "only the three summary requests");
    // Every request counts, the summarizer's included.
    assert_eq!(
        (report["tokens_in"].as_u64(), report["tokens_out"].as_u64()),
        (Some(3_000), Some(360))
    );
    let table = eval(&server, home.path(), &["--floor-only", "--scenario", "two-step-task"]).await;
    let table = text(&table.stdout);
    assert!(table.starts_with("category") && table.contains("after pass 3"), "{table}");
    assert!(table.contains("in_view: the fact is in the next request"), "a legend: {table}");
    assert!(table.contains("3000 tokens in, 360 out"), "{table}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_scenario_is_one_clear_error() {
    let server = MockServer::start().await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let out = eval(&server, home.path(), &["--scenario", "nope"]).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("no built-in scenario named \"nope\"") && stderr.contains("two-step-task"),
        "{stderr}"
    );
    assert!(server.requests().is_empty());
}
