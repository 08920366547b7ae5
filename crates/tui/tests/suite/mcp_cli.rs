//! MCP from the command line: `codewhale mcp list` against a real Python `mcp` SDK server
//! (installed by `scripts/mcp-test-servers.sh`; skipped with a printed reason when missing),
//! and `exec` going on, with one warning line, when a server cannot start.

use codewhale_provider::test_support::{MockServer, Reply, TEST_API_KEY};
use serde_json::Value;

use codewhale_mcp::test_support::{python, test_server};

use super::cli::codewhale;

#[tokio::test]
async fn mcp_list_shows_each_server_its_status_and_tools() {
    let Some(python) = python() else { return };
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[mcp_servers.py]\ncommand = {python:?}\nargs = [{:?}, \"stdio\"]\nread_only_tools = [\"add\"]\n\
             [mcp_servers.gone]\ncommand = \"/nonexistent/server\"\n[mcp_servers.off]\ncommand = \"true\"\nenabled = false\n",
            test_server()
        ),
    )
    .unwrap();
    let out =
        codewhale(home.path(), ws.path()).args(["mcp", "list", "--json"]).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let servers = list["servers"].as_array().unwrap();
    let by_name = |name: &str| servers.iter().find(|s| s["name"] == name).unwrap().clone();
    assert_eq!(by_name("py")["status"], "ready");
    let tools = by_name("py")["tools"].as_array().unwrap().clone();
    let add = tools.iter().find(|t| t["name"] == "mcp__py__add").unwrap();
    assert_eq!(add["read_only"], true);
    assert_eq!(by_name("gone")["status"], "failed");
    assert!(by_name("gone")["reason"].as_str().unwrap().contains("cannot start"));
    assert_eq!(by_name("off")["status"], "disabled");
    let text = codewhale(home.path(), ws.path()).args(["mcp", "list"]).output().await.unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("py  ready, 6 tools") && text.contains("mcp__py__crash"), "{text}");
}

#[tokio::test]
async fn exec_warns_once_about_a_server_that_cannot_start_and_answers() {
    let server = MockServer::start().await.unwrap();
    server.push(Reply::text("hello there"));
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[mcp_servers.gone]\ncommand = \"/nonexistent/server\"\n",
    )
    .unwrap();
    // The mock server answers on this runtime: the binary is awaited, not blocked on.
    let out = codewhale(home.path(), ws.path())
        .args(["exec", "--provider", "openai", "--model", "gpt-4.1"])
        .args(["--base-url", &server.openai_base_url(), "hi"])
        .env("OPENAI_API_KEY", TEST_API_KEY)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hello there");
    assert_eq!(
        stderr.matches("warning: MCP server `gone` is not available").count(),
        1,
        "{stderr}"
    );
}
