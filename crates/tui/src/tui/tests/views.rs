//! Modal views, the completion popup and layout limits.

use codewhale_protocol::{ApprovalOffer, ApprovalScope, Event, Op};
use crossterm::event::{KeyCode, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;

use super::Harness;
use crate::tui::app::Lifecycle;
use crate::tui::event::{AppEvent, Effect};
use crate::tui::views::SessionRow;
use codewhale_protocol::report::{
    ActiveReport, AnchorsReport, ContextReport, CoversReport, LastRound, Tokens, ViewEntry,
};
use codewhale_protocol::{CompactionKind, CompactionTrigger, Source};

#[test]
fn approval_modal_answers_once_always_or_denies() {
    let mut h = Harness::new();
    h.type_str("fix it");
    h.enter();
    h.engine(1, Event::TurnStarted);
    let ask = |id: &str| Event::ApprovalNeeded {
        call_id: id.into(),
        name: "shell".into(),
        input: json!({"command": "cargo test --all"}),
        reason: "shell commands ask in approval mode `ask`".into(),
        offers: vec![
            ApprovalOffer {
                scope: ApprovalScope::Command,
                label: "always for the command `cargo test --all`".into(),
            },
            ApprovalOffer {
                scope: ApprovalScope::Prefix,
                label: "always for commands starting with `cargo test …`".into(),
            },
        ],
        diff: None,
    };
    h.engine(1, ask("c1"));
    assert_eq!(h.app.lifecycle(), &Lifecycle::AwaitingApproval);
    insta::assert_snapshot!(h.screen());
    h.type_str("x");
    assert_eq!(h.ops().len(), 1, "other keys do nothing in the approval view");
    h.type_str("y");
    h.engine(1, ask("c2"));
    h.type_str("a");
    h.engine(1, ask("c3"));
    h.type_str("p");
    h.engine(1, ask("c4"));
    h.type_str("n");
    h.engine(1, ask("c5"));
    h.type_str("r");
    h.type_str("use make instead");
    h.enter();
    assert_eq!(
        h.ops()[1..],
        [
            Op::Approve { call_id: "c1".into(), scope: ApprovalScope::Once },
            Op::Approve { call_id: "c2".into(), scope: ApprovalScope::Command },
            Op::Approve { call_id: "c3".into(), scope: ApprovalScope::Prefix },
            Op::Deny { call_id: "c4".into(), reason: None },
            Op::Deny { call_id: "c5".into(), reason: Some("use make instead".into()) },
        ]
    );
    assert!(h.app.views.is_empty());
}

/// After the sandbox refused a write, only `u` reruns the command unconfined; `y` (the key
/// of every other approval) does nothing, and `n` keeps the sandbox.
#[test]
fn a_refused_write_offers_an_unconfined_rerun_only_on_u() {
    let mut h = Harness::new();
    h.type_str("build it");
    h.enter();
    h.engine(1, Event::TurnStarted);
    let ask = |id: &str| Event::ApprovalNeeded {
        call_id: id.into(),
        name: "shell".into(),
        input: json!({"command": "make install"}),
        reason: "the sandbox refused writing to /usr/local/bin/tool; run it once more without \
                 the sandbox?"
            .into(),
        offers: vec![ApprovalOffer {
            scope: ApprovalScope::Unconfined,
            label: "rerun once without the sandbox".into(),
        }],
        diff: None,
    };
    h.engine(1, ask("c1"));
    insta::assert_snapshot!(h.screen());
    h.type_str("y");
    h.type_str("a");
    assert_eq!(h.ops().len(), 1, "neither y nor a lifts the sandbox");
    h.type_str("u");
    h.engine(1, ask("c2"));
    h.type_str("n");
    assert_eq!(
        h.ops()[1..],
        [
            Op::Approve { call_id: "c1".into(), scope: ApprovalScope::Unconfined },
            Op::Deny { call_id: "c2".into(), reason: None },
        ]
    );
}

/// After git was refused a write under the read-only `.git`, only `g` runs the command once
/// with `.git` writable; `y`, `u` and `a` do nothing.
#[test]
fn a_refused_git_write_offers_a_run_with_git_writable_only_on_g() {
    let mut h = Harness::new();
    h.type_str("commit it");
    h.enter();
    h.engine(1, Event::TurnStarted);
    h.engine(
        1,
        Event::ApprovalNeeded {
            call_id: "c1".into(),
            name: "shell".into(),
            input: json!({"command": "git commit -am wip"}),
            reason: "git could not write .git, which is read-only to the model's commands; run \
                     it once more with .git writable?"
                .into(),
            offers: vec![ApprovalOffer {
                scope: ApprovalScope::GitWritable,
                label: "run once with .git writable".into(),
            }],
            diff: None,
        },
    );
    assert!(h.screen().contains("g run once with .git writable"), "{}", h.screen());
    for key in ["y", "u", "a"] {
        h.type_str(key);
    }
    assert_eq!(h.ops().len(), 1, "no habitual key makes .git writable");
    h.type_str("g");
    assert_eq!(
        h.ops()[1..],
        [Op::Approve { call_id: "c1".into(), scope: ApprovalScope::GitWritable }]
    );
}

#[test]
fn the_slash_popup_completes_with_tab() {
    let mut h = Harness::new();
    h.type_str("/c");
    insta::assert_snapshot!(h.screen());
    h.key(KeyCode::Down, KeyModifiers::NONE);
    h.key(KeyCode::Tab, KeyModifiers::NONE);
    assert_eq!(h.app.composer.text(), "/context");
    h.enter();
    assert_eq!(h.ops(), [Op::GetContext]);
}

#[test]
fn help_is_a_view_closed_by_esc() {
    let mut h = Harness::new();
    h.type_str("/help");
    h.enter();
    insta::assert_snapshot!(h.screen());
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    assert!(h.app.views.is_empty());
}

pub(super) fn report() -> ContextReport {
    ContextReport {
        session: "0193c0de".into(),
        head: "e9".into(),
        model: "gpt-test".into(),
        context_window: 128_000,
        window_source: "catalog".to_owned(),
        window_unverified: false,
        reserved_output: 16_384,
        usable_input: 111_616,
        threshold: 89_292,
        tokens: Tokens {
            total: 30_000,
            source: Source::Reported,
            system: 1_000,
            tools: 2_000,
            anchors: 100,
            checkpoint: 2_000,
            retained: 900,
            history: 14_000,
            tool_results: 10_000,
            images: 0,
            left_out: 0,
        },
        compaction: Some(ActiveReport {
            id: "c1".into(),
            path: CompactionKind::Summary,
            trigger: CompactionTrigger::Auto,
            covers: Some(CoversReport { first: "e1".into(), last: "e4".into(), count: 40 }),
            retained: 2,
            tokens_before: Some(95_000),
            tokens_after: Some(12_000),
            model: Some("gpt-test".into()),
            when: "2026-11-29T18:00:00Z".into(),
        }),
        compactions: 1,
        last_round: LastRound { messages: 6, tool_results: 2, assistant_kept: 3 },
        anchors: AnchorsReport { count: 1, chars: 20, present: true },
        plan: None,
        background: None,
        view: vec![ViewEntry {
            id: "e5".into(),
            kind: "checkpoint".into(),
            role: "user".into(),
            tokens: 2_000,
        }],
        branches: Vec::new(),
        file_store_bytes: 0,
        skills: Default::default(),
    }
}

#[test]
fn context_report_view() {
    let mut h = Harness::new();
    h.terminal = Terminal::new(TestBackend::new(100, 36)).unwrap();
    h.type_str("/context");
    h.enter();
    assert_eq!(h.ops(), [Op::GetContext]);
    h.engine(1, Event::ContextReport { report: Box::new(report()) });
    insta::assert_snapshot!(h.screen());
}

#[test]
fn session_picker_resumes_the_selected_session() {
    let mut h = Harness::new();
    h.type_str("/sessions");
    h.enter();
    assert_eq!(h.effects(), [Effect::LoadSessions { all: true }]);
    let row = |id: &str, title: &str| SessionRow {
        id: id.into(),
        updated: "2026-11-29 18:00".into(),
        entries: 12,
        cwd: "/home/dev/project".into(),
        title: title.into(),
        current: id.starts_with("aaaa"),
    };
    h.send(AppEvent::SessionsLoaded {
        all: true,
        result: Ok(vec![row("aaaa1111-x", "fix the parser"), row("bbbb2222-y", "add tests")]),
    });
    insta::assert_snapshot!(h.screen());
    h.key(KeyCode::Down, KeyModifiers::NONE);
    h.enter();
    assert_eq!(
        h.effects(),
        [Effect::OpenSession(codewhale_engine::Resume::Id("bbbb2222-y".into()))]
    );
}

#[test]
fn import_picks_another_tools_session_and_switches_to_the_imported_one() {
    use codewhale_engine::offline::import::{Candidate, Tool};
    let mut h = Harness::new();
    h.type_str("/import gemini");
    h.enter();
    assert!(h.effects().is_empty(), "an unknown tool is a usage notice, not a lookup");
    h.type_str("/import codex");
    h.enter();
    assert_eq!(h.effects(), [Effect::LoadImports(Tool::Codex)]);
    let candidate = |path: &str, prompt: &str| Candidate {
        tool: Tool::Codex,
        path: path.into(),
        size: 20_480,
        modified: std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000),
        first_prompt: Some(prompt.into()),
    };
    h.send(AppEvent::ImportsLoaded {
        tool: Tool::Codex,
        result: vec![
            candidate("/c/rollout-b.jsonl", "fix the build"),
            candidate("/c/rollout-a.jsonl", "add tests"),
        ],
    });
    insta::assert_snapshot!(h.screen());
    h.key(KeyCode::Down, KeyModifiers::NONE);
    h.enter();
    assert_eq!(h.effects(), [Effect::Import("/c/rollout-a.jsonl".into())]);
    h.send(AppEvent::Imported(Ok(("0190-new".into(), "imported the Codex CLI session".into()))));
    assert_eq!(h.effects(), [Effect::OpenSession(codewhale_engine::Resume::Id("0190-new".into()))]);
    // The imported session opens in a fresh transcript: the report is shown there too.
    h.app.attach(Box::new(h.ops.clone()));
    let page = codewhale_protocol::HistoryPage {
        head: "e1".into(),
        items: Vec::new(),
        older: None,
        reset: true,
    };
    h.engine(0, Event::History { page });
    assert!(h.screen().contains("imported the Codex CLI session"), "{}", h.screen());
}

#[test]
fn a_huge_write_asks_with_its_arguments_clipped() {
    let mut h = Harness::new();
    h.type_str("write");
    h.enter();
    h.engine(1, Event::TurnStarted);
    let content = "line of the new file\n".repeat(500);
    h.engine(
        1,
        Event::ApprovalNeeded {
            call_id: "w".into(),
            name: "write_file".into(),
            input: json!({"path": "big.txt", "content": content}),
            reason: String::new(),
            offers: Vec::new(),
            diff: None,
        },
    );
    let screen = h.screen();
    assert!(screen.contains("y once"), "{screen}");
    assert!(screen.contains("write_file big.txt"), "the path is in sight: {screen}");
    assert!(screen.contains("↕ 14/97"), "the body scrolls: {screen}");
    for _ in 0..20 {
        h.key(KeyCode::PageDown, KeyModifiers::NONE);
    }
    let screen = h.screen();
    assert!(screen.contains("more characters"), "the end of the cut argument: {screen}");
    assert!(screen.contains("write_file big.txt") && screen.contains("y once"), "{screen}");
}

#[test]
fn a_tiny_window_says_so_instead_of_drawing() {
    let mut h = Harness::new();
    h.terminal = Terminal::new(TestBackend::new(8, 2)).unwrap();
    insta::assert_snapshot!(h.screen());
}

#[test]
fn ctrl_c_in_an_approval_interrupts_the_turn_and_closes_it() {
    let mut h = Harness::new();
    h.type_str("go");
    h.enter();
    h.engine(1, Event::TurnStarted);
    h.engine(
        1,
        Event::ApprovalNeeded {
            call_id: "c1".into(),
            name: "shell".into(),
            input: json!({"command": "make"}),
            reason: String::new(),
            offers: Vec::new(),
            diff: None,
        },
    );
    h.ctrl('c');
    assert_eq!(h.ops().last(), Some(&Op::Interrupt));
    assert!(h.app.views.is_empty());
}

/// Before a session opens in a workspace whose config needs trust, the question shows the file
/// and the lines it would change; `y` and `n` answer it (and then the session opens).
#[test]
fn the_trust_question_shows_the_settings_and_takes_an_answer() {
    for (key, trusted) in [('y', true), ('n', false)] {
        let mut h = Harness::new();
        h.app.views.push(crate::tui::views::TrustView::new(
            "project/.codewhale/config.toml".into(),
            vec!["base_url = \"http://elsewhere.invalid/v1\"".into()],
        ));
        let screen = h.screen();
        assert!(screen.contains("trust this workspace?"), "{screen}");
        assert!(screen.contains("project/.codewhale/config.toml sets:"), "{screen}");
        assert!(screen.contains("base_url = \"http://elsewhere.invalid/v1\""), "{screen}");
        h.type_str("x");
        assert_eq!(h.app.views.len(), 1, "other keys do not answer");
        h.type_str(&key.to_string());
        assert!(h.app.views.is_empty());
        assert_eq!(h.effects(), [Effect::Trust { trusted }]);
    }
}

/// Settings that do not fit on the screen are scrolled through; `y` is taken only once the last
/// one has been shown, so nothing is trusted unseen.
#[test]
fn a_long_trust_question_must_be_read_to_the_end_before_yes() {
    let mut h = Harness::new();
    let settings: Vec<String> = (0..80).map(|i| format!("env.VAR_{i} = \"value {i}\"")).collect();
    h.app
        .views
        .push(crate::tui::views::TrustView::new("project/.codewhale/config.toml".into(), settings));
    let screen = h.screen();
    assert!(screen.contains("env.VAR_0 ") && !screen.contains("env.VAR_79 "), "{screen}");
    assert!(screen.contains("more lines: scroll"), "{screen}");
    h.type_str("y");
    assert_eq!(h.app.views.len(), 1, "not answered before the end was shown");
    for _ in 0..10 {
        h.key(crossterm::event::KeyCode::PageDown, crossterm::event::KeyModifiers::NONE);
        let _ = h.screen();
    }
    let screen = h.screen();
    assert!(screen.contains("env.VAR_79 = \"value 79\""), "{screen}");
    assert!(!screen.contains("more lines"), "{screen}");
    h.type_str("y");
    assert!(h.app.views.is_empty());
    assert_eq!(h.effects(), [Effect::Trust { trusted: true }]);
}

#[test]
fn mcp_servers_view_shows_status_reasons_and_tools() {
    use codewhale_protocol::{McpServerInfo, McpStatus, McpToolInfo};
    let mut h = Harness::new();
    h.type_str("/mcp");
    h.enter();
    assert_eq!(h.ops(), [Op::ListMcpServers]);
    let tool = |name: &str, description: &str, read_only| McpToolInfo {
        name: name.into(),
        description: description.into(),
        read_only,
    };
    let servers = vec![
        McpServerInfo {
            name: "everything".into(),
            target: "node server-everything stdio".into(),
            status: McpStatus::Ready,
            reason: None,
            tools: vec![
                tool("mcp__everything__echo", "Echoes back the input", true),
                tool("mcp__everything__get-sum", "Returns the sum of two numbers", false),
            ],
            cached: false,
        },
        McpServerInfo {
            name: "github".into(),
            target: "npx -y @modelcontextprotocol/server-github".into(),
            status: McpStatus::Failed,
            reason: Some("did not finish starting within 10 s".into()),
            tools: Vec::new(),
            cached: false,
        },
    ];
    h.engine(1, Event::McpServers { servers });
    let screen = h.screen();
    assert!(screen.contains("everything · ready with 2 tools"), "{screen}");
    assert!(screen.contains("github · failed: did not finish starting within 10 s"), "{screen}");
    insta::assert_snapshot!(screen);
    h.key(KeyCode::Enter, KeyModifiers::NONE);
    assert!(!h.screen().contains("MCP servers"), "Enter closes the report");
}
