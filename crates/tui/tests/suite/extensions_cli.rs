//! Custom slash commands from the shell, end to end (docs/extending.md): the real binary,
//! real files, the mock server. `exec "/NAME args"` runs a command found for the workspace;
//! an untrusted workspace's is refused with why and sends nothing; a path or a built-in name is
//! sent as written; `codewhale commands` lists what was found without a key.

use std::process::Output;

use super::support::{text, write_in};
use codewhale_provider::test_support::{MockServer, Reply, TEST_API_KEY};
use serde_json::Value;

async fn exec(
    server: &MockServer,
    home: &std::path::Path,
    ws: &std::path::Path,
    args: &[&str],
) -> Output {
    let mut cmd = super::cli::codewhale(home, ws);
    cmd.arg("exec")
        .args(["--provider", "openai", "--model", "gpt-4.1"])
        .args(["--base-url", &server.openai_base_url()])
        .args(args)
        .env("OPENAI_API_KEY", TEST_API_KEY);
    cmd.output().await.unwrap()
}

/// The text of the last user message of request `n`.
fn sent(server: &MockServer, n: usize) -> String {
    let body = &server.requests()[n].body;
    let messages = body["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &user["content"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_runs_a_custom_command_and_refuses_an_untrusted_one_with_why() {
    let server = MockServer::start().await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    write_in(
        home.path(),
        "commands/greet.md",
        "---\ndescription: Greet someone\nargument-hint: <name>\n---\nSay hello to $1 ($ARGUMENTS).",
    );
    write_in(ws.path(), ".codewhale/commands/deploy.md", "Deploy $1 to production.");
    write_in(ws.path(), ".codewhale/commands/broken.md", "---\ndescription ok\n---\nx");

    server.push(Reply::text("Hello, Bob."));
    let out = exec(&server, home.path(), ws.path(), &["/greet", "Bob", "'the builder'"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Hello, Bob.\n");
    assert_eq!(sent(&server, 0), "Say hello to Bob (Bob 'the builder').");

    // The workspace is not trusted: its command is refused, and nothing is sent.
    let out = exec(&server, home.path(), ws.path(), &["/deploy api"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("/deploy is a command of this workspace's .codewhale/commands/"),
        "{stderr}"
    );
    assert!(stderr.contains("not trusted"), "{stderr}");
    assert!(stderr.contains("broken.md:2: bad front matter"), "{stderr}");
    assert_eq!(server.requests().len(), 1);

    // A path, and a built-in command of the terminal UI, are sent as written.
    server.push(Reply::text("It is a path."));
    server.push(Reply::text("Not here."));
    let out = exec(&server, home.path(), ws.path(), &["/usr/bin/env is what?"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(sent(&server, 1), "/usr/bin/env is what?");
    let out = exec(&server, home.path(), ws.path(), &["/compact now"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(sent(&server, 2), "/compact now");

    // Trusted (`--trust`), the workspace's command runs.
    server.push(Reply::text("Deploying."));
    let out = exec(&server, home.path(), ws.path(), &["--trust", "/deploy api"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(sent(&server, 3), "Deploy api to production.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_lists_what_was_found_and_where_without_a_key() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    write_in(home.path(), "commands/review.md", "---\ndescription: Home review\n---\nReview.");
    write_in(home.path(), "commands/compact.md", "Mine.");
    write_in(ws.path(), ".codewhale/commands/review.md", "Team review.");
    write_in(ws.path(), ".codewhale/commands/git/pr.md", "---\nmodel: gpt-4.1-mini\n---\nPR.");
    write_in(ws.path(), ".claude/commands/old.md", "Old.");
    write_in(ws.path(), "CLAUDE.md", "Rules.");
    write_in(home.path(), "skills/pdf/SKILL.md", "---\ndescription: Fill PDF forms\n---\nBody");
    // A hook table is accepted (a broken one is named, never a refused config).
    write_in(
        home.path(),
        "config.toml",
        "[[hooks.PreToolUse]]\ncommand = \"./guard.sh\"\nmatcher = \"shell\"\n\n[[hooks.Stop]]\nmatcher = \"x\"\ncommand = \"y\"\n",
    );
    let listing = |trust: bool| {
        let mut cmd = super::cli::codewhale(home.path(), ws.path());
        cmd.args(["commands", "--json"]);
        if trust {
            cmd.arg("--trust");
        }
        async move { cmd.output().await.unwrap() }
    };
    let out = listing(false).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["trusted"], false);
    let status = |v: &Value, name: &str, source: &str| -> String {
        let found = v["commands"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name && c["source"] == source);
        found.map(|c| c["status"].as_str().unwrap().to_owned()).unwrap_or_default()
    };
    assert_eq!(status(&v, "review", "home"), "active");
    assert_eq!(status(&v, "review", "workspace"), "untrusted");
    assert_eq!(status(&v, "git:pr", "workspace"), "untrusted");
    assert_eq!(status(&v, "compact", "home"), "clash");
    assert_eq!(v["instructions"], serde_json::json!(["CLAUDE.md"]));
    assert_eq!(v["skills"][0]["name"], "pdf");
    assert_eq!(v["skills"][0]["status"], "active");
    assert_eq!(v["hooks"][0]["event"], "PreToolUse");
    assert_eq!(v["hooks"][0]["matcher"], "shell");
    assert_eq!(v["hooks"][0]["timeout_sec"], 60.0);
    let problems = v["problems"].to_string();
    assert!(problems.contains("config.toml:5: `matcher` applies to PreToolUse"), "{problems}");
    let claude = v["claude_commands"][0].as_str().unwrap();
    assert!(claude.ends_with(".claude/commands"), "{claude}");

    // `--trust` trusts the workspace (as everywhere): the workspace's command shadows the home one.
    let out = listing(true).await;
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["trusted"], true);
    assert_eq!(status(&v, "review", "home"), "shadowed");
    assert_eq!(status(&v, "review", "workspace"), "active");
    let pr = v["commands"].as_array().unwrap().iter().find(|c| c["name"] == "git:pr").unwrap();
    assert_eq!(pr["model"], "gpt-4.1-mini");

    // The text form says the same to a person.
    let mut cmd = super::cli::codewhale(home.path(), ws.path());
    let out = cmd.arg("commands").output().await.unwrap();
    let said = text(&out.stdout);
    assert!(said.contains("/review  (home) — shadowed"), "{said}");
    assert!(said.contains("holds Claude Code commands, which Codewhale does not read"), "{said}");
}

/// `exec` runs the user's hooks through the real sandbox: its turn's `Stop` and
/// `Notification`, a `PreToolUse` that refuses a shell call with its stderr as the result, and
/// none of them sees the API key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_runs_the_users_hooks_in_the_sandbox_without_the_key() {
    let server = MockServer::start().await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    write_in(
        home.path(),
        "config.toml",
        "approval = \"full\"\n\n\
         [[hooks.PreToolUse]]\nmatcher = \"shell\"\ncommand = \"\"\"\n\
         if grep -q 'rm -rf'; then echo 'no rm -rf here' >&2; exit 2; fi\"\"\"\n\n\
         [[hooks.Stop]]\ncommand = \"cat > stop.json; env > stop-env.txt\"\n\n\
         [[hooks.Notification]]\ncommand = \"cat > notification.json\"\n",
    );
    write_in(ws.path(), "keep/me.txt", "precious");
    server.push(Reply::tool_call("c1", "shell", serde_json::json!({"command": "rm -rf keep"})));
    server.push(Reply::text("Kept."));
    let out = exec(&server, home.path(), ws.path(), &["clean up"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(ws.path().join("keep/me.txt")).unwrap(), "precious");
    let results: Vec<String> = server.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(results, ["no rm -rf here"]);
    let read = |name: &str| std::fs::read_to_string(ws.path().join(name)).unwrap();
    let stop: Value = serde_json::from_str(&read("stop.json")).unwrap();
    assert_eq!(
        (stop["hook_event_name"].as_str(), stop["status"].as_str()),
        (Some("Stop"), Some("completed"))
    );
    let notified: Value = serde_json::from_str(&read("notification.json")).unwrap();
    assert_eq!(notified["hook_event_name"], "Notification");
    let env = read("stop-env.txt");
    assert!(!env.contains(TEST_API_KEY) && !env.contains("OPENAI_API_KEY="), "{env}");
}
