//! The real MCP servers this workspace's tests start, as `scripts/mcp-test-servers.sh`
//! installs them (into `$CODEWHALE_MCP_TEST_DIR`, default `~/.cache/codewhale/mcp-test`).
//! Only built with the `test-support` feature. A helper that finds its server missing prints
//! why the test is skipped and returns `None`.
#![allow(clippy::print_stderr)]

use std::path::PathBuf;

/// Where the servers are installed.
pub fn tools_dir() -> PathBuf {
    std::env::var_os("CODEWHALE_MCP_TEST_DIR").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/codewhale/mcp-test")
    })
}

fn skip(what: &str) {
    eprintln!("skipped: {what} is not installed; run scripts/mcp-test-servers.sh");
}

/// The Python interpreter that has the `mcp` SDK (checked once per process: a half-finished
/// install skips rather than fails).
pub fn python() -> Option<String> {
    static FOUND: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let found = FOUND.get_or_init(|| {
        let python = tools_dir().join("venv/bin/python");
        let usable = std::process::Command::new(&python)
            .args(["-c", "import mcp.server.mcpserver"])
            .output()
            .is_ok_and(|out| out.status.success());
        usable.then(|| python.display().to_string())
    });
    if found.is_none() {
        skip("the Python mcp SDK");
    }
    found.clone()
}

/// The command line of `@modelcontextprotocol/server-everything` over stdio.
pub fn everything() -> Option<Vec<String>> {
    let script =
        tools_dir().join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let node = std::process::Command::new("node").arg("--version").output().is_ok();
    if script.exists() && node {
        Some(vec!["node".into(), script.display().to_string(), "stdio".into()])
    } else {
        skip("@modelcontextprotocol/server-everything (or node)");
        None
    }
}

/// `fixtures/mcp/test_server.py`: add, echo, fail, crash and slow, over stdio or HTTP.
pub fn test_server() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/mcp/test_server.py")
        .display()
        .to_string()
}
