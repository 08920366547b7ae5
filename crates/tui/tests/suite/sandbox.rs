//! The sandbox under attack, on this machine's kernel: the real binary runs shell commands the
//! mock model asks for through its own hidden `sandbox-exec` helper, and every way out of the
//! workspace is tried. Directories meant to be outside every writable root are plain temp dirs:
//! the codewhale under test is given a temp dir of its own (`TMPDIR`, see `cli::child_tmp`),
//! so the one the sandbox leaves writable holds none of them.
//! Without Landlock the tests say so and skip; under `CI=true` they fail instead when the
//! kernel claims Landlock (`/sys/kernel/security/lsm`) but it cannot be used.

use std::path::Path;
use std::process::Output;

use codewhale_provider::test_support::{MockServer, Reply, TEST_API_KEY};
use serde_json::{json, Value};
use tempfile::TempDir;

use super::pty::Pty;

/// Whether this kernel can confine; a skip is said on stderr.
fn landlock(test: &str) -> bool {
    if codewhale_engine::sandbox::confine::abi().is_some() {
        return true;
    }
    let claimed = std::fs::read_to_string("/sys/kernel/security/lsm")
        .is_ok_and(|lsm| lsm.split(',').any(|m| m.trim() == "landlock"));
    assert!(
        !(claimed && std::env::var("CI").is_ok_and(|v| v == "true")),
        "{test}: the kernel lists Landlock in /sys/kernel/security/lsm, but no ruleset can be \
         created"
    );
    eprintln!("skipped {test}: this kernel offers no Landlock, so nothing can be confined");
    false
}

/// A directory outside the workspace and outside the temp dir codewhale is given.
fn outside() -> TempDir {
    tempfile::tempdir().unwrap()
}

struct Setup {
    server: MockServer,
    /// Codewhale's home, outside every writable root.
    home: TempDir,
    /// The user's `$HOME`, outside every writable root too.
    user_home: TempDir,
    ws: TempDir,
}

impl Setup {
    async fn new() -> Setup {
        Setup {
            server: MockServer::start().await.unwrap(),
            home: outside(),
            user_home: outside(),
            ws: tempfile::tempdir().unwrap(),
        }
    }

    /// `codewhale exec --json --approval full` with one shell call of `command`.
    async fn run_shell(&self, command: &str) -> Output {
        self.run_tool("shell", json!({ "command": command })).await
    }

    /// `codewhale exec --json --approval full` with one call of `tool`.
    async fn run_tool(&self, tool: &str, input: Value) -> Output {
        self.server.push(Reply::tool_call("c1", tool, input));
        self.server.push(Reply::text("done"));
        let mut cmd = super::cli::codewhale(self.home.path(), self.ws.path());
        cmd.env("HOME", self.user_home.path())
            .env("OPENAI_API_KEY", TEST_API_KEY)
            .env_remove("CARGO_TARGET_DIR")
            .arg("exec")
            .args(["--provider", "openai", "--model", "gpt-4.1"])
            .args(["--base-url", &self.server.openai_base_url()])
            .args(["--json", "--approval", "full", "run it"]);
        cmd.output().await.unwrap()
    }
}

/// The shell result the model read, from `--json` events.
fn shell_result(out: &Output) -> (String, bool) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let finished = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "tool_call_finished")
        .unwrap_or_else(|| {
            panic!("no tool result; stderr: {}", String::from_utf8_lossy(&out.stderr))
        });
    (finished["output"].as_str().unwrap().to_owned(), finished["is_error"] == true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_outside_the_workspace_are_refused_however_they_are_tried() {
    if !landlock("writes_outside_the_workspace_are_refused_however_they_are_tried") {
        return;
    }
    let s = Setup::new().await;
    let out = outside();
    let o = std::fs::canonicalize(out.path()).unwrap();
    std::fs::write(o.join("target.txt"), "original\n").unwrap();
    let etc = format!("/etc/codewhale-sandbox-{}", std::process::id());
    // The temp dir codewhale was given stays writable.
    let tmp_file = super::cli::child_tmp(s.home.path()).join("codewhale-sandbox.txt");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // The home is named in pieces: a command naming it outright asks first (and is denied
    // without a terminal); the sandbox must stop the one that hides it.
    let (home_dir, home_name) = (s.home.path().parent().unwrap(), s.home.path().file_name());
    let (o, user) = (o.display(), s.user_home.path().display());
    let (home_dir, home_name) = (home_dir.display(), home_name.unwrap().to_string_lossy());
    let script = format!(
        "echo in > inside.txt\n\
         echo tmp > \"$TMPDIR\"/codewhale-sandbox.txt\n\
         (exec 3<>/dev/tcp/127.0.0.1/{port}) && echo tcp-open\n\
         echo x > {o}/direct.txt\n\
         echo x > \"$HOME\"/home.txt; echo x > {user}/home2.txt\n\
         n={home_name}; echo x > {home_dir}/\"$n\"/config.toml\n\
         echo x > {etc}\n\
         ln -s {o} link && echo x > link/through-symlink.txt\n\
         ln {o}/target.txt hard && echo x >> hard\n\
         bash -c 'echo x > {o}/child.txt'\n\
         setsid -f bash -c 'echo x > {o}/grandchild.txt'; sleep 0.5\n\
         echo x > {o}/last.txt\n",
    );
    let result = s.run_shell(&script).await;
    let (text, is_error) = shell_result(&result);
    let ws = s.ws.path();
    assert_eq!(
        std::fs::read_to_string(ws.join("inside.txt")).ok().as_deref(),
        Some("in\n"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(&tmp_file).unwrap(), "tmp\n", "{text}");
    let _ = std::fs::remove_file(&tmp_file);
    assert!(text.contains("tcp-open"), "the network stays open by default: {text}");
    let o = std::fs::canonicalize(out.path()).unwrap();
    for name in ["direct.txt", "through-symlink.txt", "child.txt", "grandchild.txt", "last.txt"] {
        assert!(!o.join(name).exists(), "{name} was written outside: {text}");
    }
    assert!(!s.user_home.path().join("home.txt").exists(), "{text}");
    assert!(!s.user_home.path().join("home2.txt").exists(), "{text}");
    assert!(!s.home.path().join("config.toml").exists(), "Codewhale's home: {text}");
    assert!(!Path::new(&etc).exists(), "{text}");
    let _ = std::fs::remove_file(&etc);
    assert!(!ws.join("hard").exists(), "a hardlink to a file outside: {text}");
    assert_eq!(std::fs::read_to_string(o.join("target.txt")).unwrap(), "original\n");
    // The failed command says which write the sandbox refused.
    assert!(is_error, "{text}");
    assert!(text.contains("[sandbox: refused writing to "), "{text}");
    assert!(text.contains(&o.join("direct.txt").display().to_string()), "{text}");
}

/// `full` means no approvals, never "outside the sandbox": `write_file` and `edit_file` obey
/// the same writable set as commands — absolute paths, `../..` and symlinks out of the
/// workspace are refused with the shell's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_tools_obey_the_sandbox_even_under_full_approval() {
    if !landlock("the_file_tools_obey_the_sandbox_even_under_full_approval") {
        return;
    }
    let s = Setup::new().await;
    let out = outside();
    let o = std::fs::canonicalize(out.path()).unwrap();
    std::fs::write(o.join("target.txt"), "original\n").unwrap();
    std::os::unix::fs::symlink(&o, s.ws.path().join("link")).unwrap();
    let depth = s.ws.path().components().count();
    let up = "../".repeat(depth) + &o.display().to_string()[1..];
    let attempts = [
        ("write_file", json!({"path": o.join("direct.txt"), "content": "x"}), "direct.txt"),
        ("write_file", json!({"path": format!("{up}/up.txt"), "content": "x"}), "up.txt"),
        ("write_file", json!({"path": "link/through.txt", "content": "x"}), "through.txt"),
        (
            "edit_file",
            json!({"path": o.join("target.txt"), "old_string": "original", "new_string": "owned"}),
            "target.txt",
        ),
    ];
    for (tool, input, name) in attempts {
        let (text, is_error) = shell_result(&s.run_tool(tool, input.clone()).await);
        assert!(is_error && text.contains("[sandbox: refused writing to "), "{input}: {text}");
        assert!(text.contains(name), "{text}");
    }
    for name in ["direct.txt", "up.txt", "through.txt"] {
        assert!(!o.join(name).exists(), "{name} was written outside the workspace");
    }
    assert_eq!(std::fs::read_to_string(o.join("target.txt")).unwrap(), "original\n");
    // Inside the workspace it writes as always.
    let (text, is_error) =
        shell_result(&s.run_tool("write_file", json!({"path": "in.txt", "content": "x"})).await);
    assert!(!is_error, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_network_off_a_tcp_connect_to_a_local_listener_fails() {
    if !landlock("with_network_off_a_tcp_connect_to_a_local_listener_fails") {
        return;
    }
    if codewhale_engine::sandbox::confine::abi() < Some(codewhale_engine::sandbox::NETWORK_ABI) {
        eprintln!("skipped: denying TCP needs Landlock ABI 4 (Linux 6.7)");
        return;
    }
    let s = Setup::new().await;
    std::fs::write(s.home.path().join("config.toml"), "[sandbox]\nnetwork = false\n").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "(exec 3<>/dev/tcp/127.0.0.1/{port}) && echo tcp-open || echo tcp-refused\n\
         python3 -c 'import socket; socket.socket().bind((\"127.0.0.1\", 0))' 2>/dev/null \
         && echo bind-open || echo bind-refused"
    );
    let (text, _) = shell_result(&s.run_shell(&script).await);
    assert!(text.contains("tcp-refused") && !text.contains("tcp-open"), "{text}");
    // Listening is denied too (checked where python3 can try it).
    if python() {
        assert!(text.contains("bind-refused"), "{text}");
    }
}

fn python() -> bool {
    std::process::Command::new("python3").arg("--version").output().is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cargo_builds_a_small_crate_in_the_workspace_confined() {
    if !landlock("cargo_builds_a_small_crate_in_the_workspace_confined") {
        return;
    }
    let s = Setup::new().await;
    let ws = s.ws.path();
    std::fs::write(
        ws.join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::create_dir(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/main.rs"), "fn main() { println!(\"hello from tiny\"); }\n")
        .unwrap();
    // The real `$HOME` (and its ~/.cargo and ~/.rustup) stays as it is, read-only inside.
    let real_home = std::env::var("HOME").unwrap_or_default();
    s.server.push(Reply::tool_call(
        "c1",
        "shell",
        json!({"command": "cargo build --offline --quiet 2>&1 && ./target/debug/tiny"}),
    ));
    s.server.push(Reply::text("built"));
    let mut cmd = super::cli::codewhale(s.home.path(), ws);
    cmd.env("HOME", &real_home)
        .env("OPENAI_API_KEY", TEST_API_KEY)
        .env_remove("CARGO_TARGET_DIR")
        .arg("exec")
        .args(["--provider", "openai", "--model", "gpt-4.1"])
        .args(["--base-url", &s.server.openai_base_url()])
        .args(["--json", "--approval", "full", "build it"]);
    let (text, is_error) = shell_result(&cmd.output().await.unwrap());
    assert!(!is_error && text.contains("hello from tiny"), "{text}");
    assert!(ws.join("target/debug/tiny").exists());
}

/// In `ask` with a terminal, a command the sandbox refused is offered once more without the
/// sandbox; only `u` reruns it, and the model reads that it was rerun.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_write_is_rerun_unconfined_after_u() {
    if !landlock("a_refused_write_is_rerun_unconfined_after_u") {
        return;
    }
    let server = MockServer::start().await.unwrap();
    let (home, ws, out) = (outside(), tempfile::tempdir().unwrap(), outside());
    let target = std::fs::canonicalize(out.path()).unwrap().join("rerun.txt");
    let command = format!("echo made > {}", target.display());
    server.push(Reply::tool_call("c1", "shell", json!({ "command": command })));
    server.push(Reply::text("Written after all."));
    let base_url = server.openai_base_url();
    let args = [
        "exec",
        "--provider",
        "openai",
        "--model",
        "gpt-4.1",
        "--base-url",
        &base_url,
        "--approval",
        "ask",
        "write it",
    ];
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("[y]es").await;
    pty.send(b"y\r");
    pty.wait_for("[u] rerun once without the sandbox").await;
    assert!(pty.contents().contains("the sandbox refused writing to"), "{}", pty.contents());
    assert!(!target.exists(), "the confined run wrote nothing");
    pty.send(b"u\r");
    pty.wait_for("Written after all.").await;
    let status = pty.wait_exit().await;
    assert!(status.success(), "{status:?}; screen:\n{}", pty.contents());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "made\n");
    let journal = super::pty::journals(&home).pop().unwrap();
    let text = std::fs::read_to_string(journal).unwrap();
    assert!(text.contains("the user allowed this one rerun without the sandbox"), "{text}");
}

/// An MCP stdio server runs unconfined unless its table sets `sandbox = true`; then it starts
/// through the helper, works, and cannot write outside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_with_sandbox_true_starts_confined() {
    if !landlock("an_mcp_server_with_sandbox_true_starts_confined") {
        return;
    }
    let Some(python) = codewhale_mcp::test_support::python() else { return };
    let (home, ws, out) = (outside(), tempfile::tempdir().unwrap(), outside());
    let o = std::fs::canonicalize(out.path()).unwrap();
    let start = |file: &str| {
        let script = format!(
            "echo x > {}/{file}; exec {python} {} stdio",
            o.display(),
            codewhale_mcp::test_support::test_server()
        );
        // Python starts slowly on a busy machine: the default 10 s is not always enough.
        format!("command = \"bash\"\nargs = [\"-c\", {script:?}]\nstartup_timeout_sec = 60\n")
    };
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[mcp_servers.boxed]\n{}sandbox = true\n[mcp_servers.free]\n{}",
            start("boxed.txt"),
            start("free.txt")
        ),
    )
    .unwrap();
    let out = super::cli::codewhale(home.path(), ws.path())
        .args(["mcp", "list", "--json"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let status = |name: &str| {
        list["servers"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap()["status"]
            .clone()
    };
    assert_eq!((status("boxed"), status("free")), (json!("ready"), json!("ready")), "{list}");
    assert!(!o.join("boxed.txt").exists(), "the confined server wrote outside");
    assert!(o.join("free.txt").exists(), "servers without sandbox = true run as before");
}

/// A command that names Codewhale's own settings asks in every mode; a "yes" to that question
/// runs the one call unconfined (the sandbox would refuse exactly that write).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_yes_to_the_question_before_a_command_naming_the_home_runs_it_unconfined() {
    if !landlock("a_yes_to_the_question_before_a_command_naming_the_home_runs_it_unconfined") {
        return;
    }
    let server = MockServer::start().await.unwrap();
    let (home, ws) = (outside(), tempfile::tempdir().unwrap());
    let note = std::fs::canonicalize(home.path()).unwrap().join("note.txt");
    let command = format!("echo kept > {}", note.display());
    server.push(Reply::tool_call("c1", "shell", json!({ "command": command })));
    server.push(Reply::text("Noted."));
    let base_url = server.openai_base_url();
    let args = [
        "exec",
        "--provider",
        "openai",
        "--model",
        "gpt-4.1",
        "--base-url",
        &base_url,
        "--approval",
        "full",
        "note it",
    ];
    let mut pty = Pty::spawn(&args, &home, &ws);
    pty.wait_for("[y]es").await;
    assert!(pty.contents().contains("Codewhale's own configuration"), "{}", pty.contents());
    pty.send(b"y\r");
    pty.wait_for("Noted.").await;
    let status = pty.wait_exit().await;
    assert!(status.success(), "{status:?}; screen:\n{}", pty.contents());
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "kept\n");
}
