//! The real MCP servers this workspace's tests start, as `scripts/mcp-test-servers.sh`
//! installs them (into `$CODEWHALE_MCP_TEST_DIR`, default `~/.cache/codewhale/mcp-test`).
//! Only built with the `test-support` feature. A helper that finds its server missing reports
//! the skip ([`skip_test`]: a failure under `CI=true`, a listed skip elsewhere) and returns
//! `None`.
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
    skip_test(&format!("{what} is not installed; run scripts/mcp-test-servers.sh"));
}

/// Reports that the running test cannot run here because `reason` (a missing prerequisite).
/// Under `CI=true` that fails the test: CI installs every prerequisite, so a missing one is a
/// broken run, not a pass. Elsewhere the test returns as skipped: the reason is printed, and
/// appended with the test's name to the file `CODEWHALE_SKIPPED` names (when set), which
/// `scripts/check.sh` lists at the end, so a skip is never counted silently as a pass.
// Failing the calling test is the point under CI=true; this module is only built for tests.
#[allow(clippy::panic)]
pub fn skip_test(reason: &str) {
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test} cannot run: {reason} (CI=true, so a missing prerequisite fails the run)");
    }
    record_skip(&test, reason);
}

/// Reports that the running test cannot run because the machine lacks `reason`, a capability
/// no script can install (a writable cgroup, a kernel feature): the test returns as skipped,
/// printed and listed like [`skip_test`]'s, under `CI=true` too.
pub fn skip_without_capability(reason: &str) {
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    record_skip(&test, reason);
}

fn record_skip(test: &str, reason: &str) {
    eprintln!("skipped: {test}: {reason}");
    if let Some(list) = std::env::var_os("CODEWHALE_SKIPPED") {
        use std::io::Write as _;
        let line = format!("{test}: {reason}\n");
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(list)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            eprintln!("cannot record the skip in CODEWHALE_SKIPPED: {e}");
        }
    }
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

/// `fixtures/mcp/big_server.cjs` (the TypeScript SDK, which writes a response's id after its
/// result): its command line and the `NODE_PATH` it needs to find the SDK.
pub fn typescript_server() -> Option<(Vec<String>, String)> {
    let modules = tools_dir().join("npm/node_modules");
    let node = std::process::Command::new("node").arg("--version").output().is_ok();
    if modules.join("@modelcontextprotocol/sdk/package.json").exists() && node {
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/mcp/big_server.cjs");
        Some((vec!["node".into(), script.display().to_string()], modules.display().to_string()))
    } else {
        skip("the MCP TypeScript SDK (or node)");
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
