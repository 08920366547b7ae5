use super::*;
use serde_json::json;

fn ctx(dir: &std::path::Path) -> ToolContext {
    ToolContext {
        workspace: std::fs::canonicalize(dir).unwrap(),
        background: Arc::new(BackgroundRegistry::new(dir.join(".bg"))),
        groups: Arc::default(),
        shell_env: Arc::default(),
        sandbox: None,
        cancel: CancellationToken::new(),
        files: None,
        guard: None,
        hidden_env: Arc::default(),
        git_writable: false,
        allow_protected: false,
    }
}

#[test]
fn the_fixed_tools_with_object_schemas() {
    let names: Vec<String> = specs(false, true).into_iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "read_file",
            "list_dir",
            "search",
            "write_file",
            "edit_file",
            "shell",
            "update_plan",
            "recall",
            "web_fetch"
        ]
    );
    // `[tools] web_fetch = false` removes it, and only it.
    let without: Vec<String> = specs(false, false).into_iter().map(|s| s.name).collect();
    assert_eq!(without, names[..names.len() - 1]);
    assert!(specs(false, true).iter().all(|s| s.input_schema["type"] == "object"));
}

/// In a window of 4,096 tokens (Ollama's default), Codewhale's own prefix — the compact system
/// prompt and the nine built-in tools, tersely described — takes at most 20 % of it, with the
/// same tool names and arguments.
#[test]
fn a_small_windows_prefix_is_a_fifth_of_it_at_most() {
    let prompt = crate::prompt::SystemPrompt::load(std::path::Path::new("/ws"), true);
    let terse = specs(true, true);
    let (counts, _) = crate::session::counts::system_counts(&prompt.text(), &terse, true);
    assert!(counts.total() <= 4_096 / 5, "{counts:?}");
    let full = crate::prompt::SystemPrompt::load(std::path::Path::new("/ws"), false);
    let (before, _) =
        crate::session::counts::system_counts(&full.text(), &specs(false, true), true);
    assert!(before.total() > counts.total() * 2, "{before:?} against {counts:?}");
    for (t, f) in terse.iter().zip(specs(false, true)) {
        assert_eq!(t.name, f.name);
        let keys = |s: &serde_json::Value| -> Vec<String> {
            s["properties"].as_object().map(|p| p.keys().cloned().collect()).unwrap_or_default()
        };
        assert_eq!(keys(&t.input_schema), keys(&f.input_schema), "{}", t.name);
        assert_eq!(t.input_schema["required"], f.input_schema["required"], "{}", t.name);
    }
}

#[tokio::test]
async fn bad_calls_are_error_results() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path());
    let out = execute(&c, "read_file", &json!({"file": "x"}), &|_| {}).await;
    assert!(out.is_error && out.content.contains("missing field `path`"), "{}", out.content);
    let out = execute(&c, "rm_rf", &json!({}), &|_| {}).await;
    assert!(out.is_error && out.content.contains("no tool named"));
    let out =
        execute(&c, "write_file", &json!("{\"path\":\"a\",\"content\":\"x\"}"), &|_| {}).await;
    assert!(!out.is_error, "{}", out.content);
}

#[tokio::test]
async fn capped_output_remembers_its_full_size() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path());
    // 200 matches of 300 characters each: the search listing is over the cap and is cut.
    let line = "y".repeat(400);
    std::fs::write(dir.path().join("big.txt"), format!("{line}\n").repeat(300)).unwrap();
    let out = execute(&c, "list_dir", &json!({"path": "."}), &|_| {}).await;
    assert_eq!(out.bytes, out.content.len() as u64, "an uncut output is its own size");
    let out = execute(&c, "search", &json!({"pattern": "y+"}), &|_| {}).await;
    assert!(out.content.contains("bytes cut"), "{}", out.content);
    assert!(out.bytes > 60_000 && out.bytes > out.content.len() as u64, "{}", out.bytes);
    let out =
        execute(&c, "shell", &json!({"command": "head -c 100000 /dev/zero | tr '\\0' a"}), &|_| {})
            .await;
    assert!(out.content.contains("bytes cut"), "{}", out.content);
    assert!(out.bytes > 100_000, "{} bytes", out.bytes);
    assert!(out.bytes > out.content.len() as u64);
}

#[test]
fn assessment_classifies_calls() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let none = Protected::default();
    let a = assess(&ws, &none, "read_file", &json!({"path": "/etc/hosts"}));
    let read = Assessment {
        effect: Some(Effect::Read),
        leaves_workspace: true,
        protected: false,
        protection: None,
        command: None,
        mcp: None,
        fetch: None,
    };
    assert_eq!(a, read);
    let a = assess(
        &ws,
        &none,
        "edit_file",
        &json!({"path": "a", "old_string": "x", "new_string": "y"}),
    );
    let write = Assessment {
        effect: Some(Effect::Write),
        leaves_workspace: false,
        protected: false,
        protection: None,
        command: None,
        mcp: None,
        fetch: None,
    };
    assert_eq!(a, write);
    assert!(assess(&ws, &none, "shell", &json!({"command": "ls"})).summary().is_some());
    assert!(assess(&ws, &none, "nope", &json!({})).is_read_only());
    // Instruction files, at any depth, and what git and Codewhale execute.
    let agents = assess(&ws, &none, "write_file", &json!({"path": "AGENTS.md", "content": "x"}));
    assert!(agents.protected);
    assert_eq!(agents.protection, Some(crate::protected::Protection::Instructions));
    for path in ["src/deep/CLAUDE.md", ".codewhale/instructions.md", ".codewhale/anchors.md"] {
        let nested = json!({"path": path, "content": "x"});
        assert!(assess(&ws, &none, "write_file", &nested).protected, "{path}");
    }
    assert!(!assess(&ws, &none, "read_file", &json!({"path": "AGENTS.md"})).protected);
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    for path in [".git/hooks/pre-commit", ".git/config", "./.git/../.git/hooks/post-checkout"] {
        let hook = assess(&ws, &none, "write_file", &json!({"path": path, "content": "x"}));
        assert!(hook.protected, "{path}");
    }
}

#[test]
fn writes_to_codewhales_own_config_are_protected() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let home = tempfile::tempdir().unwrap();
    let protected = Protected { home: Some(home.path().to_path_buf()) };
    let write = |path: &str| {
        assess(&ws, &protected, "write_file", &json!({"path": path, "content": "x"})).protected
    };
    assert!(write(".codewhale/config.toml"));
    assert!(write("./sub/../.codewhale/config.toml"));
    assert!(write(&home.path().join("config.toml").display().to_string()));
    assert!(write(&home.path().join("trust.json").display().to_string()));
    // Anchors are restated to every later model: anything under .codewhale/ asks.
    assert!(write(".codewhale/anchors.md"));
    assert!(!write("src/main.rs"));
    let read = assess(&ws, &protected, "read_file", &json!({"path": ".codewhale/config.toml"}));
    assert!(!read.protected, "reading is not changing");
    // A link to the config under another name is the config.
    std::fs::create_dir_all(ws.join(".codewhale")).unwrap();
    std::fs::write(ws.join(".codewhale/config.toml"), "").unwrap();
    std::os::unix::fs::symlink(ws.join(".codewhale/config.toml"), ws.join("innocent.toml"))
        .unwrap();
    assert!(write("innocent.toml"));
}

#[tokio::test]
async fn content_holding_a_redaction_marker_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path());
    let out = execute(
        &c,
        "write_file",
        &json!({"path": ".env", "content": "KEY=[REDACTED:openai-key:3f2a9c]\n"}),
        &|_| {},
    )
    .await;
    assert!(out.is_error && out.content.contains("redaction marker"), "{}", out.content);
    assert!(!dir.path().join(".env").exists());
}

#[test]
fn a_hardlink_in_the_workspace_asks_and_one_to_codewhales_config_is_protected() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let home = tempfile::tempdir().unwrap();
    let config = crate::config::user_file(home.path());
    std::fs::write(&config, "model = \"m\"\n").unwrap();
    std::fs::hard_link(&config, ws.join("innocent.toml")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("other.rs"), "").unwrap();
    std::fs::hard_link(outside.path().join("other.rs"), ws.join("lib.rs")).unwrap();
    let protected = Protected { home: Some(home.path().to_path_buf()) };
    let write = |p: &str| {
        assess(&ws, &protected, "write_file", &json!({"path": p, "content": "approval = \"full\""}))
    };
    let to_config = write("innocent.toml");
    assert!(to_config.protected && to_config.leaves_workspace, "{to_config:?}");
    let to_other = write("lib.rs");
    assert!(!to_other.protected && to_other.leaves_workspace, "{to_other:?}");
    let read = assess(&ws, &protected, "read_file", &json!({"path": "lib.rs"}));
    assert!(read.leaves_workspace, "{read:?}");
    let mut policy = crate::approval::Policy::new(crate::approval::ApprovalMode::AutoEdit);
    for a in [&to_config, &to_other] {
        assert_eq!(policy.decide(a.summary().unwrap()), crate::approval::Decision::Ask);
    }
    policy = crate::approval::Policy::new(crate::approval::ApprovalMode::Full);
    assert_eq!(policy.decide(to_config.summary().unwrap()), crate::approval::Decision::Ask);
    std::fs::write(ws.join("plain.rs"), "").unwrap();
    assert!(!write("plain.rs").leaves_workspace);
}

/// The schemas derived from the argument structs are the ones the model has always been sent
/// (recorded in `fixtures/tools/specs.json`), and every schema's properties parse back.
#[test]
fn the_derived_schemas_are_the_recorded_ones() {
    let recorded: Vec<ToolSpec> = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/tools/specs.json"
    )))
    .unwrap();
    // `web_fetch`'s schema is written by hand (docs/tools.md): the derived ones are the rest.
    let specs = specs(false, false);
    assert_eq!(specs.len(), recorded.len());
    for (now, then) in specs.iter().zip(&recorded) {
        assert_eq!(now, then, "{}", serde_json::to_string_pretty(&now.input_schema).unwrap());
    }
    // Extra keys a model adds are tolerated; a wrong tool name lists the tools.
    assert!(parse("read_file", &json!({"path": "a", "why": "x"})).is_ok());
    let err = parse("read", &json!({})).unwrap_err();
    assert!(
        err.ends_with("the tools are read_file, list_dir, search, write_file, edit_file and shell")
    );
}
