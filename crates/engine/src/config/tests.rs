use super::*;

fn err(text: &str) -> String {
    parse(Path::new("cfg.toml"), text).unwrap_err().to_string()
}

#[test]
fn mcp_servers_parse_in_codex_shape_and_errors_name_the_key() {
    let c = parse(
        Path::new("c.toml"),
        "[mcp_servers.github]\ncommand = \"npx\"\nargs = [\"-y\", \"server\"]\n\
         env = { TOKEN = \"t\" }\nstartup_timeout_sec = 20\ntool_timeout_ms = 1500\n\
         read_only_tools = [\"list_issues\"]\n[mcp_servers.web]\nurl = \"https://x.test/mcp\"\n\
         bearer_token_env_var = \"WEB_TOKEN\"\nenabled = false\n",
    )
    .unwrap();
    assert_eq!(c.mcp_servers.len(), 2);
    let github = &c.mcp_servers[0];
    assert_eq!(github.startup_timeout, std::time::Duration::from_secs(20));
    assert_eq!(github.tool_timeout, std::time::Duration::from_millis(1500));
    assert!(github.is_read_only("list_issues") && !github.is_read_only("create_issue"));
    assert!(!c.mcp_servers[1].enabled);
    let e = err("[mcp_servers.a]\ncommand = \"x\"\nurl = \"http://y\"\n");
    assert!(e.contains("cfg.toml:2: bad `mcp_servers.a.command`") && e.contains("not both"), "{e}");
    let e = err("[mcp_servers.a]\ncommand = \"x\"\ntimeout = 3\n");
    assert!(e.contains("unknown field `timeout`"), "{e}");
    let e = err("[mcp_servers.a]\nurl = \"ftp://y\"\n");
    assert!(e.contains("cfg.toml:2") && e.contains("not an http:// or https:// URL"), "{e}");
    let e = err("[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = 0\n");
    assert!(e.contains("cfg.toml:3") && e.contains("positive"), "{e}");
    let e = err("[mcp_servers.\"a b\"]\ncommand = \"x\"\n");
    assert!(e.contains("letters, digits"), "{e}");
}

#[test]
fn dotted_keys_mean_what_tables_mean() {
    let dotted = parse(
        Path::new("c.toml"),
        "mcp_servers.x.command = \"sh\"\nmcp_servers.x.args = [\"-c\", \"true\"]\n\
         shell.env.A = \"1\"\nredaction.patterns = [\"ACME-[0-9]{6}\"]\n",
    )
    .unwrap();
    assert_eq!(dotted.mcp_servers.len(), 1);
    assert_eq!(dotted.shell.env, [("A".to_owned(), "1".to_owned())]);
    assert_eq!(dotted.redaction.patterns, ["ACME-[0-9]{6}"]);
    let e = err("redaction.patterns = [\"[a-z]\"]\n");
    assert!(e.starts_with("cfg.toml:1: ") && e.contains("\"[a-z]\""), "{e}");
}

#[test]
fn an_oversized_or_special_config_file_is_not_read() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".codewhale")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", workspace_file(ws.path())).unwrap();
    let c = load(home.path(), ws.path(), &Overrides::default()).unwrap();
    assert_eq!(c.notices.len(), 1, "{:?}", c.notices);
    assert!(c.notices[0].contains("it is a device"), "{:?}", c.notices);
    std::fs::remove_file(workspace_file(ws.path())).unwrap();
    let big = format!("model = \"m\"\n{}", "# padding\n".repeat(MAX_CONFIG_BYTES / 10 + 1));
    std::fs::write(workspace_file(ws.path()), big).unwrap();
    let e = load(home.path(), ws.path(), &Overrides::default()).unwrap_err().to_string();
    assert!(e.contains("larger than 1 MiB"), "{e}");
}

#[test]
fn an_untrusted_workspace_starts_none_of_its_servers() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".codewhale")).unwrap();
    std::fs::write(
        ws.path().join(".codewhale/config.toml"),
        "[mcp_servers.evil]\ncommand = \"curl\"\n",
    )
    .unwrap();
    let c = load(home.path(), ws.path(), &Overrides::default()).unwrap();
    assert!(c.mcp_servers.is_empty());
    assert_eq!(c.untrusted.unwrap().keys, ["mcp_servers"]);
}

#[test]
fn an_untrusted_workspace_may_tighten_the_sandbox_but_not_loosen_it() {
    use crate::sandbox::SandboxMode;
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".codewhale")).unwrap();
    let load_ws = |text: &str| {
        std::fs::write(workspace_file(ws.path()), text).unwrap();
        load(home.path(), ws.path(), &Overrides::default()).unwrap()
    };
    let tight = load_ws("[sandbox]\nmode = \"read-only\"\nnetwork = false\n");
    assert_eq!(tight.sandbox.mode, Some(SandboxMode::ReadOnly));
    assert_eq!(tight.sandbox.network, Some(false));
    assert!(tight.untrusted.is_none());
    let loose = load_ws("[sandbox]\nmode = \"off\"\nwritable = [\"/\"]\nnetwork = true\n");
    assert_eq!(loose.sandbox, crate::sandbox::SandboxConfig::default());
    let keys = loose.untrusted.unwrap().keys;
    assert_eq!(keys, ["sandbox.mode", "sandbox.writable", "sandbox.network"]);
    // Leaving the namespaces or making .git writable puts what git runs within a command's
    // reach: an untrusted workspace may not; asking for the namespaces only tightens.
    let loose = load_ws("[sandbox]\nnamespaces = false\ngit_writable = true\n");
    assert_eq!(loose.sandbox, crate::sandbox::SandboxConfig::default());
    assert_eq!(loose.untrusted.unwrap().keys, ["sandbox.namespaces", "sandbox.git_writable"]);
    let tight = load_ws("[sandbox]\nnamespaces = true\n");
    assert_eq!(tight.sandbox.namespaces, Some(true));
    assert!(tight.untrusted.is_none());
    // Looser than the user's own choice is loosening too.
    std::fs::write(user_file(home.path()), "[sandbox]\nmode = \"read-only\"\n").unwrap();
    let back = load_ws("[sandbox]\nmode = \"workspace-write\"\n");
    assert_eq!(back.sandbox.mode, Some(SandboxMode::ReadOnly));
    assert_eq!(back.untrusted.unwrap().keys, ["sandbox.mode"]);
    let e = err("[sandbox]\nmode = \"strict\"\n");
    assert!(e.starts_with("cfg.toml:2: bad `sandbox.mode`") && e.contains("read-only"), "{e}");
    let e = err("[sandbox]\nwritable = \"/x\"\n");
    assert!(e.contains("sandbox.writable"), "{e}");
}

#[test]
fn a_full_file_parses() {
    let c = parse(
        Path::new("c.toml"),
        "provider = \"anthropic\"\nmodel = \"m\"\ncontext_window = 1000\napproval = \"auto-edit\"\n[compaction]\nthreshold = 0.7\n",
    )
    .unwrap();
    assert_eq!(c.provider, Some(ProviderKind::Anthropic));
    assert_eq!(c.context_window, Some(1000));
    assert_eq!(c.approval, Some(ApprovalMode::AutoEdit));
    assert_eq!(c.compaction.threshold, Some(0.7));
}

#[test]
fn the_provider_table_and_its_idle_timeout_parse_and_the_responses_wire_is_named() {
    let c = parse(Path::new("c.toml"), "[provider]\nidle_timeout_sec = 5\n").unwrap();
    assert_eq!(c.idle_timeout, Some(std::time::Duration::from_secs(5)));
    assert_eq!(c.provider, None);
    let c = parse(
        Path::new("c.toml"),
        "[provider]\nname = \"openai-responses\"\nidle_timeout_sec = 7.5\n",
    )
    .unwrap();
    assert_eq!(c.provider, Some(ProviderKind::OpenAiResponses));
    assert_eq!(c.idle_timeout, Some(std::time::Duration::from_millis(7500)));
    let c = parse(Path::new("c.toml"), "provider = \"openai\"\nidle_timeout_sec = 9\n").unwrap();
    assert_eq!(c.provider, Some(ProviderKind::OpenAi));
    assert_eq!(c.idle_timeout, Some(std::time::Duration::from_secs(9)));
    let e = err("[provider]\nidle_timeout_sec = 0\n");
    assert!(e.contains("positive number of seconds"), "{e}");
    let e = err("provider = \"gemini\"\n");
    assert!(e.contains("`openai-responses`"), "{e}");
    assert!(parse(Path::new("c.toml"), "[provider]\nidle = 3\n").is_err(), "unknown keys refused");
    let c = parse(Path::new("c.toml"), "[provider]\nhosted = true\n").unwrap();
    assert_eq!(c.hosted, Some(true));
    assert!(err("[provider]\nhosted = \"yes\"\n").contains("cfg.toml"));
    let c = parse(Path::new("c.toml"), "reasoning_effort = \"high\"\n").unwrap();
    assert_eq!(c.reasoning_effort.as_deref(), Some("high"));
    assert!(err("reasoning_effort = \"extreme\"\n").contains("must be one of"));
}

#[test]
fn branch_summary_keys_parse_and_a_bad_timeout_is_named() {
    let c = parse(
        Path::new("c.toml"),
        "[compaction]\nbranch_summaries = false\nbranch_summary_timeout_sec = 2.5\n",
    )
    .unwrap();
    assert_eq!(c.compaction.branch_summaries, Some(false));
    assert_eq!(c.compaction.branch_summary_timeout, Some(std::time::Duration::from_millis(2500)));
    let e = err("[compaction]\nbranch_summary_timeout_sec = 0\n");
    assert!(e.contains(":2: bad `compaction.branch_summary_timeout_sec`"), "{e}");
    assert!(e.contains("positive number of seconds"), "{e}");
}

#[test]
fn unknown_keys_name_file_line_and_key() {
    let e = err("model = \"m\"\nmodle = \"x\"\n");
    assert!(e.starts_with("cfg.toml:2: bad `modle`"), "{e}");
    let e = err("[compaction]\nthreshhold = 0.5\n");
    assert!(e.starts_with("cfg.toml:2: bad `compaction.threshhold`"), "{e}");
}

/// Found by the `config` fuzz target: an error at the end of a file that ends with a
/// newline named a line past the end.
#[test]
fn an_error_at_the_end_names_the_last_line() {
    let text = "_c=[\n\n\n\n[\n";
    let ConfigError::Invalid { line, .. } = parse(Path::new("c.toml"), text).unwrap_err() else {
        panic!("expected an invalid-file error")
    };
    assert!((1..=text.lines().count()).contains(&line), "line {line}");
}

#[test]
fn bad_values_name_file_line_and_key() {
    let e = err("\napproval = \"sometimes\"\n");
    assert!(e.starts_with("cfg.toml:2: bad `approval`"), "{e}");
    let e = err("[compaction]\nthreshold = 1.5\n");
    assert!(e.contains(":2: bad `compaction.threshold`") && e.contains("(0, 1]"), "{e}");
    let e = err("provider = \"gemini\"\n");
    assert!(e.contains(":1: bad `provider`"), "{e}");
    let e = err("server = \"llama\"\n");
    assert!(e.contains(":1: bad `server`") && e.contains("llama.cpp"), "{e}");
    let e = err("context_window = 0\n");
    assert!(e.contains(":1: bad `context_window`"), "{e}");
}

#[test]
fn workspace_overrides_user_and_flags_override_both() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(user_file(home.path()), "model = \"user\"\ncontext_window = 5\n").unwrap();
    std::fs::create_dir_all(ws.path().join(".codewhale")).unwrap();
    std::fs::write(workspace_file(ws.path()), "model = \"ws\"\n").unwrap();
    let c = load(home.path(), ws.path(), &Overrides::default()).unwrap();
    assert_eq!((c.model.as_deref(), c.context_window), (Some("ws"), Some(5)));
    let flags = Overrides { model: Some("flag".into()), ..Overrides::default() };
    let c = load(home.path(), ws.path(), &flags).unwrap();
    assert_eq!(c.model.as_deref(), Some("flag"));
}

#[test]
fn provider_comes_from_the_environment_when_not_named() {
    let none = Config::default().resolve_provider(&Env::default()).unwrap();
    assert!(none.is_none());
    let env = Env { anthropic_api_key: Some("k".into()), ..Env::default() };
    let p = Config::default().resolve_provider(&env).unwrap().unwrap();
    assert_eq!((p.kind, p.model.as_str()), (ProviderKind::Anthropic, "claude-sonnet-4-5"));
    let env = Env { openai_base_url: Some("http://127.0.0.1:9/v1".into()), ..Env::default() };
    let p = Config::default().resolve_provider(&env).unwrap().unwrap();
    assert_eq!((p.kind, p.base_url.as_str()), (ProviderKind::OpenAi, "http://127.0.0.1:9/v1"));
    let named = Config { provider: Some(ProviderKind::OpenAi), ..Config::default() };
    assert!(matches!(named.resolve_provider(&Env::default()), Err(ConfigError::MissingKey { .. })));
}
