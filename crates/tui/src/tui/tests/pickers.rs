//! The pickers and reports a Codex or Claude Code user reaches for: `/status`, `/model`
//! without a name, `/checkout` without an id.

use codewhale_protocol::ApprovalMode;
use codewhale_protocol::SandboxMode;
use codewhale_protocol::{
    BranchInfo, Event, Figure, ModelChoice, Op, SandboxReport, Source, SpendReport, StatusReport,
    WorkspaceTrust,
};
use crossterm::event::{KeyCode, KeyModifiers};

use super::Harness;

#[test]
fn status_shows_the_session_at_a_glance() {
    let mut h = Harness::new();
    h.type_str("/status");
    h.enter();
    assert_eq!(h.ops(), [Op::GetStatus]);
    let status = StatusReport {
        session: "0193c0de-0000-7000-8000-000000000001".into(),
        path: "sessions/s.jsonl".into(),
        workspace: "project".into(),
        model: "gpt-test".into(),
        context_window: 128_000,
        window_unverified: false,
        window_from: None,
        usable_input: 111_616,
        pressure: Figure { tokens: 12_000, source: Source::Reported },
        approval: ApprovalMode::AutoEdit,
        trust: WorkspaceTrust::Untrusted { ignored: vec!["shell.env".into()] },
        sandbox: SandboxReport {
            mode: SandboxMode::WorkspaceWrite,
            detail: "writable: project, /tmp; network on".into(),
            structure:
                "sandbox: Landlock only; .git guarded by put-back (CODEWHALE_SANDBOX=fallback)"
                    .into(),
            keys: "keys: readable by commands (no PID namespace)".into(),
        },
        compactions: 2,
        spend: SpendReport {
            requests: 3,
            input_tokens: 24_300,
            output_tokens: 900,
            cost_usd: Some(0.0558),
            summary_requests: 1,
            summary_cost_usd: Some(0.0123),
            session_cost_usd: 1.234,
            price: Some((2.0, 0.5, 8.0)),
            prices_read: Some("2026-12-04".into()),
        },
    };
    h.engine(1, Event::Status { status: Box::new(status) });
    insta::assert_snapshot!(h.screen());
}

#[test]
fn model_without_a_name_picks_from_the_catalog_starting_at_the_current_one() {
    let mut h = Harness::new();
    h.type_str("/model");
    h.enter();
    assert_eq!(h.ops(), [Op::ListModels]);
    let models = ["gpt-5", "gpt-test", "claude-sonnet-4-5"]
        .iter()
        .zip([400_000, 128_000, 200_000])
        .map(|(id, w)| ModelChoice {
            id: (*id).into(),
            context_window: w,
            current: *id == "gpt-test",
            from_server: false,
        })
        .collect();
    h.engine(1, Event::Models { models });
    insta::assert_snapshot!(h.screen());
    h.key(KeyCode::Down, KeyModifiers::NONE);
    h.enter();
    assert_eq!(h.ops()[1], Op::SwitchModel { model: "claude-sonnet-4-5".into() });
}

/// A local server's own models come first, marked, the one in use marked "(now)"; a window
/// nobody knows is shown as such, never as 0.
#[test]
fn model_lists_the_local_servers_own_models_first() {
    let mut h = Harness::new();
    h.type_str("/model");
    h.enter();
    let choice = |id: &str, w: u64, current: bool, from_server: bool| ModelChoice {
        id: id.into(),
        context_window: w,
        current,
        from_server,
    };
    let models = vec![
        choice("qwen2.5-coder:7b", 4_096, true, true),
        choice("llama3.2:3b", 0, false, true),
        choice("gpt-5", 400_000, false, false),
    ];
    h.engine(1, Event::Models { models });
    let screen = h.screen();
    assert!(screen.contains("this server's models, then the catalog's"), "{screen}");
    let line = |id: &str| screen.lines().find(|l| l.contains(id)).unwrap_or_default().to_owned();
    assert!(
        line("qwen2.5-coder:7b").contains("(now)") && line("qwen2.5-coder:7b").contains("server")
    );
    assert!(line("llama3.2:3b").contains("? window"), "{}", line("llama3.2:3b"));
    assert!(!line("gpt-5").contains("server"));
}

#[test]
fn checkout_without_an_id_lists_the_branch_tips() {
    let mut h = Harness::new();
    h.type_str("/checkout");
    h.enter();
    assert_eq!(h.ops(), [Op::ListBranches]);
    let tip = |id: &str, preview: &str, when: &str, current: bool| BranchInfo {
        tip: id.into(),
        preview: preview.into(),
        when: when.into(),
        current,
    };
    let branches = vec![
        tip("0193c0de-0000-7000-8000-00000000a1b2", "model: done", "2026-12-01T10:05:00Z", true),
        tip("0193c0de-0000-7000-8000-00000000c3d4", "you: try", "2026-12-01T09:55:00Z", false),
    ];
    h.engine(1, Event::Branches { branches });
    insta::assert_snapshot!(h.screen());
    h.key(KeyCode::Down, KeyModifiers::NONE);
    h.enter();
    assert_eq!(h.ops()[1], Op::Checkout { to: "0193c0de-0000-7000-8000-00000000c3d4".into() });
}

#[test]
fn a_list_longer_than_its_view_says_where_it_is_and_pages() {
    use crate::tui::views::{Choice, ChoiceView, ViewAction};
    let mut h = Harness::new();
    let choices =
        (1..=13).map(|i| Choice { label: format!("tool_{i}"), action: ViewAction::Stay }).collect();
    h.app.views.push(ChoiceView::new("mcp", choices, "none", "Esc close"));
    assert!(h.screen().contains("Esc close · 1 of 13"), "{}", h.screen());
    h.key(KeyCode::Down, KeyModifiers::NONE);
    assert!(h.screen().contains("2 of 13"), "{}", h.screen());
    h.key(KeyCode::End, KeyModifiers::NONE);
    let screen = h.screen();
    assert!(screen.contains("13 of 13") && screen.contains("tool_13"), "{screen}");
    h.key(KeyCode::PageUp, KeyModifiers::NONE);
    assert!(h.screen().contains("1 of 13"), "{}", h.screen());
}

#[test]
fn esc_twice_on_an_empty_composer_walks_back_through_the_messages_to_edit_one() {
    let mut h = Harness::new();
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    assert!(h.screen().contains("press Esc again to edit an earlier message"));
    assert!(h.ops().is_empty());
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(h.ops(), [Op::ListUserMessages]);
    let messages = vec![codewhale_protocol::UserMessageInfo {
        id: "0193c0de-0000-7000-8000-0000000000u1".into(),
        preview: "explain the parser".into(),
        when: "2026-12-01T10:00:00Z".into(),
    }];
    h.engine(1, Event::UserMessages { messages });
    assert!(h.screen().contains("fork: start a new branch at a message"), "{}", h.screen());
}

#[test]
fn esc_twice_on_an_empty_session_says_so_and_the_composer_keeps_the_keys() {
    let mut h = Harness::new();
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    h.engine(1, Event::UserMessages { messages: Vec::new() });
    let screen = h.screen();
    assert!(screen.contains("no message to fork at yet"), "{screen}");
    assert!(!screen.contains("fork: start a new branch"), "no empty picker: {screen}");
    h.type_str("hello");
    assert!(h.screen().contains("› hello"), "typed text reaches the composer: {}", h.screen());
}

#[test]
fn small_honest_words_a_one_line_block_a_cut_short_turn_and_the_mouse() {
    use codewhale_protocol::{TurnStats, TurnStatus};
    let mut h = Harness::new();
    h.type_str("go");
    h.enter();
    h.engine(1, Event::TurnStarted);
    h.engine(1, Event::TextDelta { text: "Run:\n\n```sh\ncargo test\n```".into() });
    // Cut short before any usage came: not blamed on the provider's counts.
    let stats = TurnStats { elapsed_ms: 900, requests: 1, ..TurnStats::default() };
    h.engine(
        1,
        Event::TurnFinished { status: TurnStatus::Interrupted, text: String::new(), stats },
    );
    let screen = h.screen();
    assert!(screen.contains("cut short before the provider reported token counts"), "{screen}");
    assert!(!screen.contains("did not report"), "{screen}");
    h.ctrl('y');
    assert!(h.screen().contains("sh block, 1 line: cargo test"), "{}", h.screen());
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    h.key(KeyCode::Char('m'), KeyModifiers::ALT);
    let screen = h.screen();
    assert!(screen.contains("mouse captured: the wheel scrolls the transcript"), "{screen}");
    assert!(screen.contains("mouse · "), "the status line shows it: {screen}");
    h.key(KeyCode::Char('m'), KeyModifiers::ALT);
    assert!(h.screen().contains("mouse released"), "{}", h.screen());
}
