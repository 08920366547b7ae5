//! The habits users bring from other agents, as the app shows them: `/export`, `/cost`,
//! `/exit`, the user's own `!CMD` unfolded, `/model` narrowing as you type, `/status` without
//! a price, and `/clear` naming the conversation it kept by a prefix nothing else shares.

use codewhale_protocol::{
    ApprovalMode, CallEnd, Event, Figure, HistoryItem, HistoryPage, ModelChoice, Op, SandboxMode,
    SandboxReport, Source, SpendReport, StatusReport, Transcript, WorkspaceTrust,
};
use crossterm::event::{KeyCode, KeyModifiers};

use super::Harness;
use crate::tui::event::{AppEvent, Effect};

fn status(spend: SpendReport) -> StatusReport {
    StatusReport {
        session: "0193c0de-0000-7000-8000-000000000001".into(),
        path: "sessions/s.jsonl".into(),
        workspace: "project".into(),
        model: "my-local-model".into(),
        context_window: 32_768,
        window_unverified: true,
        window_from: None,
        usable_input: 24_576,
        pressure: Figure { tokens: 1_000, source: Source::Estimated },
        approval: ApprovalMode::Ask,
        trust: WorkspaceTrust::NoSettings,
        sandbox: SandboxReport {
            mode: SandboxMode::WorkspaceWrite,
            detail: "writable: project".into(),
            structure: String::new(),
            keys: String::new(),
        },
        compactions: 0,
        spend,
    }
}

/// A model without a known price: tokens only, and no `$0.0000` above "no known price".
#[test]
fn status_and_cost_without_a_price_show_tokens_only() {
    let mut h = Harness::new();
    let unpriced = SpendReport {
        requests: 0,
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: Some(0.0),
        summary_requests: 0,
        summary_cost_usd: Some(0.0),
        session_cost_usd: 0.0,
        price: None,
        prices_read: None,
    };
    h.type_str("/status");
    h.enter();
    h.engine(1, Event::Status { status: Box::new(status(unpriced.clone())) });
    let screen = h.screen();
    assert!(screen.contains("no known price for this model: tokens only"), "{screen}");
    assert!(!screen.contains('$'), "no dollar figure without a price:\n{screen}");
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    // `/cost`: the same section alone.
    h.type_str("/cost");
    h.enter();
    assert_eq!(h.ops(), [Op::GetStatus, Op::GetStatus]);
    let priced = SpendReport {
        requests: 3,
        input_tokens: 24_300,
        output_tokens: 900,
        cost_usd: Some(0.0558),
        price: Some((2.0, 0.5, 8.0)),
        prices_read: Some("2026-12-04".into()),
        session_cost_usd: 1.234,
        ..unpriced
    };
    h.engine(2, Event::Status { status: Box::new(status(priced)) });
    insta::assert_snapshot!(h.screen());
}

#[test]
fn exit_leaves_like_quit() {
    let mut h = Harness::new();
    h.type_str("/exit");
    h.enter();
    assert_eq!(h.ops(), [Op::Shutdown]);
}

/// `/model`'s list narrows as the user types; Enter takes the best match; Esc clears the
/// filter before it closes the list; a window nobody knows reads `?`.
#[test]
fn the_model_list_filters_as_you_type() {
    let mut h = Harness::new();
    h.type_str("/model");
    h.enter();
    let models = [("gpt-5", 400_000), ("gpt-test", 128_000), ("claude-sonnet-4-5", 200_000)]
        .iter()
        .chain(&[("qwen2.5-coder:7b", 0)])
        .map(|(id, w)| ModelChoice {
            id: (*id).into(),
            context_window: *w,
            current: *id == "gpt-test",
            from_server: *w == 0,
        })
        .collect();
    h.engine(1, Event::Models { models });
    assert!(
        h.screen().contains("qwen2.5-coder:7b                 ? window  server"),
        "{}",
        h.screen()
    );
    h.type_str("sonn");
    insta::assert_snapshot!(h.screen());
    h.key(KeyCode::Backspace, KeyModifiers::NONE);
    h.type_str("x");
    assert!(h.screen().contains("nothing matches \"sonx\""), "{}", h.screen());
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    assert!(h.screen().contains("type to filter"), "Esc clears the filter first");
    h.type_str("coder");
    h.enter();
    assert_eq!(h.ops()[1], Op::SwitchModel { model: "qwen2.5-coder:7b".into() });
}

fn shell_output(lines: usize) -> String {
    (1..=lines).map(|i| format!("file_{i}.rs\n")).collect::<String>() + "[exit code: 0]"
}

/// `!ls` shows its output under it — the first 10 lines, the rest behind the fold — live and
/// after a resume alike.
#[test]
fn a_bang_command_shows_its_first_ten_lines_live_and_after_a_resume() {
    let mut h = Harness::new();
    h.type_str("!ls");
    h.enter();
    assert_eq!(h.ops(), [Op::UserShell { command: "ls".into() }]);
    h.engine(1, Event::UserShellStarted { call_id: "u1".into(), command: "ls".into() });
    h.engine(
        1,
        Event::UserShellFinished {
            call_id: "u1".into(),
            command: "ls".into(),
            output: shell_output(14),
            end: CallEnd::Completed,
            exit_code: Some(0),
        },
    );
    let live = h.screen();
    insta::assert_snapshot!(live);
    assert!(live.contains("file_10.rs") && !live.contains("file_11.rs"), "{live}");
    assert!(live.contains("… 5 more lines · Ctrl+O unfolds"), "{live}");
    // Ctrl+O shows the rest.
    h.ctrl('o');
    assert!(h.screen().contains("file_14.rs"), "{}", h.screen());
    // The same session resumed: the same cell.
    let mut again = Harness::new();
    let page = HistoryPage {
        head: "u1".into(),
        items: vec![HistoryItem::UserShell {
            id: "u1".into(),
            command: "ls".into(),
            output: shell_output(14),
            end: codewhale_protocol::CallEnd::Completed,
            exit_code: Some(0),
            covered: false,
        }],
        older: None,
        reset: true,
    };
    again.engine(0, Event::History { page });
    let resumed = again.screen();
    let cell = |s: &str| {
        s.lines().skip_while(|l| !l.contains("! ls")).take(12).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(cell(&resumed), cell(&live), "live:\n{live}\nresumed:\n{resumed}");
    // A short output shows whole, with nothing folded.
    let mut short = Harness::new();
    short.type_str("!pwd");
    short.enter();
    short.engine(1, Event::UserShellStarted { call_id: "u2".into(), command: "pwd".into() });
    short.engine(
        1,
        Event::UserShellFinished {
            call_id: "u2".into(),
            command: "pwd".into(),
            output: "/w/project\n[exit code: 0]".into(),
            end: CallEnd::Completed,
            exit_code: Some(0),
        },
    );
    let screen = short.screen();
    assert!(screen.contains("│ /w/project") && !screen.contains("lines …"), "{screen}");
}

fn transcript() -> Transcript {
    Transcript {
        session: "0193c0de-0000-7000-8000-000000000001".into(),
        model: "gpt-test".into(),
        items: vec![
            HistoryItem::User {
                id: "u1".into(),
                text: "hello".into(),
                covered: false,
                images: Vec::new(),
            },
            HistoryItem::Assistant {
                id: "a1".into(),
                text: "Hi.".into(),
                thinking: String::new(),
                covered: false,
            },
        ],
    }
}

/// `/export FILE` asks the engine for the conversation and writes it; `/export` alone copies
/// it through the terminal and says so.
#[test]
fn export_writes_the_file_named_or_copies() {
    let mut h = Harness::new();
    h.effects();
    h.type_str("/export notes/chat.md");
    h.enter();
    assert_eq!(h.ops(), [Op::GetTranscript]);
    h.engine(1, Event::Transcript { transcript: Box::new(transcript()) });
    let effects = h.effects();
    let [Effect::WriteExport { path, text, what }] = &effects[..] else { panic!("{effects:?}") };
    assert_eq!((path.as_str(), what.as_str()), ("notes/chat.md", "2 messages"));
    assert!(text.starts_with("# Codewhale session 0193c0de") && text.contains("\nHi.\n"), "{text}");
    h.send(AppEvent::Exported(Ok("exported 2 messages to /w/project/notes/chat.md".into())));
    assert!(h.screen().contains("exported 2 messages to /w/project/notes/chat.md"));

    h.type_str("/export");
    h.enter();
    h.engine(2, Event::Transcript { transcript: Box::new(transcript()) });
    let effects = h.effects();
    assert!(
        matches!(&effects[..], [Effect::Copy(text)] if text.contains("## You\n\nhello\n")),
        "{effects:?}"
    );
    insta::assert_snapshot!(h.screen());
}

/// `/clear`: the kept conversation is named by a prefix worked out against every session (the
/// new one shares the old one's first characters), said once the new one is open.
#[test]
fn clear_names_the_kept_conversation_by_a_prefix_only_it_has() {
    let mut h = Harness::new();
    h.effects();
    h.type_str("/clear");
    h.enter();
    assert_eq!(h.effects(), [Effect::OpenSession(codewhale_engine::Resume::New)]);
    h.engine(
        0,
        Event::SessionConfigured {
            session_id: "0193c0de-0000-7000-8000-000000000002".into(),
            model: "gpt-test".into(),
            path: "sessions/s2.jsonl".into(),
            resumed: false,
            workspace: "project".into(),
            approval: Default::default(),
            instructions: Vec::new(),
            commands: Vec::new(),
        },
    );
    assert_eq!(
        h.effects(),
        [Effect::NameKept {
            old: "0193c0de-0000-7000-8000-000000000001".into(),
            new: "0193c0de-0000-7000-8000-000000000002".into(),
        }]
    );
    assert!(!h.screen().contains("/resume 0193c0de "), "no ambiguous prefix:\n{}", h.screen());
    h.send(AppEvent::KeptNamed(Some("0193c0de-0000-7000-8000-000000000001".into())));
    let said = "the conversation 0193c0de-0000-7000-8000-000000000001 is kept: /resume \
                0193c0de-0000-7000-8000-000000000001 brings it back";
    assert!(h.app.transcript().find(said, None, true).is_some(), "{}", h.screen());
}
