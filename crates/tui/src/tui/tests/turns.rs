//! The conversation: streaming, tools, compaction, interrupts, notices.

use codewhale_protocol::{
    AnchorChange, CallEnd, CompactionKind, CompactionTrigger, ErrorKind, Event, NoticeLevel, Op,
    Source, TurnStatus,
};
use crossterm::event::{Event as TermEvent, KeyCode, KeyModifiers};
use serde_json::json;

use super::Harness;
use crate::tui::app::Lifecycle;
use crate::tui::event::{AppEvent, Effect};

#[test]
fn startup() {
    let mut h = Harness::new();
    insta::assert_snapshot!(h.screen());
}

#[test]
fn the_engine_names_the_workspace_anchors_are_read_from() {
    // A resumed session works in its own directory; `/anchor list` must read that one.
    let h = Harness::new();
    assert_eq!(h.app.session.workspace.as_deref(), Some(std::path::Path::new("project")));
}

#[test]
fn a_streaming_markdown_reply() {
    let mut h = Harness::new();
    h.type_str("explain the build");
    h.enter();
    assert_eq!(
        h.ops(),
        [Op::UserInput {
            text: "explain the build".into(),
            attachments: Vec::new(),
            images: Vec::new()
        }]
    );
    h.engine(1, Event::TurnStarted);
    h.engine(
        1,
        Event::TextDelta { text: "## Build\n\nRun `cargo build` then:\n\n- test\n- lint".into() },
    );
    assert_eq!(h.app.lifecycle(), &Lifecycle::Streaming { thinking: false });
    insta::assert_snapshot!(h.screen());
    h.engine(1, Event::TextDelta { text: "\n\n**Done.**".into() });
    h.usage(42_000, Source::Reported);
    h.engine(
        1,
        Event::TurnFinished {
            status: TurnStatus::Completed,
            text: String::new(),
            stats: Default::default(),
        },
    );
    assert_eq!(h.app.lifecycle(), &Lifecycle::Idle);
    insta::assert_snapshot!(h.screen());
}

#[test]
fn tool_calls_fold_and_unfold() {
    let mut h = Harness::new();
    h.type_str("read it");
    h.enter();
    h.engine(1, Event::TurnStarted);
    h.engine(1, Event::TextDelta { text: "Let me look.".into() });
    h.engine(
        1,
        Event::ToolCallRequested {
            call_id: "t1".into(),
            name: "read_file".into(),
            input: json!({"path": "src/main.rs"}),
        },
    );
    h.engine(1, Event::ToolCallStarted { call_id: "t1".into(), name: "read_file".into() });
    assert_eq!(h.app.lifecycle(), &Lifecycle::RunningTool { name: "read_file".into() });
    insta::assert_snapshot!("tool_running", h.screen());
    h.engine(
        1,
        Event::ToolCallFinished {
            call_id: "t1".into(),
            name: "read_file".into(),
            is_error: false,
            output: "fn main() {\n    println!(\"hi\");\n}".into(),
            end: CallEnd::Completed,
            exit_code: None,
            exit_code_in_output: false,
            reason: None,
            diff: None,
        },
    );
    h.engine(
        1,
        Event::ToolCallRequested {
            call_id: "t2".into(),
            name: "shell".into(),
            input: json!({"command": "cargo test"}),
        },
    );
    h.engine(
        1,
        Event::ToolCallFinished {
            call_id: "t2".into(),
            name: "shell".into(),
            is_error: true,
            output: "test failed\n[exit code: 101]".into(),
            end: CallEnd::Failed,
            exit_code: Some(101),
            exit_code_in_output: true,
            reason: None,
            diff: None,
        },
    );
    insta::assert_snapshot!("tool_folded", h.screen());
    h.ctrl('o');
    insta::assert_snapshot!("tool_expanded", h.screen());
}

#[test]
fn compaction_shows_progress_then_a_capsule() {
    let mut h = Harness::new();
    h.type_str("/compact keep the API notes");
    h.enter();
    assert_eq!(h.ops(), [Op::Compact { focus: Some("keep the API notes".into()) }]);
    h.engine(1, Event::CompactionStarted { trigger: CompactionTrigger::Manual });
    assert_eq!(h.app.lifecycle(), &Lifecycle::Compacting { in_turn: false });
    insta::assert_snapshot!("compacting", h.screen());
    // A pass of two requests says where it is.
    h.engine(1, Event::CompactionProgress { request: 1, of: 2, tokens: 172_000 });
    assert!(h.screen().contains("compacting… summary 1 of 2 · 172k tokens"), "{}", h.screen());
    h.engine(
        1,
        Event::CompactionFinished {
            id: "c".into(),
            trigger: CompactionTrigger::Manual,
            path: CompactionKind::Summary,
            tokens_before: 182_000,
            tokens_after: 9_000,
            covered: 48,
            retained: 3,
            note: "## Objective\nShip the parser.\n\n## Done\n- lexer".into(),
            background: false,
        },
    );
    h.usage(9_000, Source::Estimated);
    assert_eq!(h.app.lifecycle(), &Lifecycle::Idle);
    assert!(h.effects().is_empty(), "the note came with the event");
    insta::assert_snapshot!("compacted", h.screen());
    h.ctrl('o');
    insta::assert_snapshot!("compacted_expanded", h.screen());
    assert!(!h.screen().contains("summary 1 of 2"), "the progress ends with the pass");
}

#[test]
fn a_note_committed_while_idle_says_so_and_calls_nobody_back() {
    let mut h = Harness::new();
    // An unfocused terminal that takes notifications: still nobody to call back.
    h.app.screen.focused = false;
    h.app.screen.notify = Some(crate::tui::notify::Method::Bell);
    h.engine(0, Event::CompactionStarted { trigger: CompactionTrigger::Idle });
    h.engine(
        0,
        Event::CompactionFinished {
            id: "c".into(),
            trigger: CompactionTrigger::Idle,
            path: CompactionKind::Summary,
            tokens_before: 11_000,
            tokens_after: 4_000,
            covered: 20,
            retained: 2,
            note: "## Objective\nShip the parser.".into(),
            background: true,
        },
    );
    assert_eq!(h.app.lifecycle(), &Lifecycle::Idle);
    let screen = h.screen();
    assert!(screen.contains("11k → 4k tokens (auto, while idle) …"), "{screen}");
    assert!(!screen.contains("written in the background"), "{screen}");
    assert!(h.effects().is_empty(), "nobody waited for it");
}

#[test]
fn ctrl_c_interrupts_then_quits_on_the_second_press() {
    let mut h = Harness::new();
    h.type_str("long task");
    h.enter();
    h.engine(1, Event::TurnStarted);
    h.engine(1, Event::TextDelta { text: "Working on it".into() });
    h.ctrl('c');
    assert_eq!(h.ops().last(), Some(&Op::Interrupt));
    h.engine(
        1,
        Event::TurnFinished {
            status: TurnStatus::Interrupted,
            text: String::new(),
            stats: Default::default(),
        },
    );
    h.ctrl('c');
    insta::assert_snapshot!("quit_armed", h.screen());
    assert!(!h.ops().contains(&Op::Shutdown));
    h.ctrl('c');
    assert_eq!(h.ops().last(), Some(&Op::Shutdown));
    h.engine(9, Event::ShutdownComplete);
    assert_eq!(h.effects(), [Effect::Exit]);
}

#[test]
fn ctrl_c_clears_a_draft_and_ctrl_d_quits_only_when_empty() {
    let mut h = Harness::new();
    h.type_str("draft");
    h.ctrl('d');
    assert!(h.ops().is_empty());
    h.ctrl('c');
    assert!(h.app.composer.is_empty());
    assert!(h.ops().is_empty());
    h.ctrl('d');
    assert_eq!(h.ops(), [Op::Shutdown]);
}

#[test]
fn commands_are_refused_and_messages_queued_during_a_turn() {
    let mut h = Harness::new();
    h.type_str("go");
    h.enter();
    h.engine(1, Event::TurnStarted);
    h.type_str("/compact");
    h.enter();
    h.type_str("another message");
    h.enter();
    assert_eq!(h.ops().len(), 1, "neither reached the engine yet");
    assert!(h.app.composer.is_empty(), "the message is queued, not left in the composer");
    let line = h.screen();
    assert!(line.contains("⧗ queued another message"), "{line}");
    assert!(line.contains("1 queued, Ctrl+S sends now"), "{line}");
    h.engine(
        1,
        Event::Error { kind: ErrorKind::RateLimited, message: "rate limited; retry later".into() },
    );
    h.engine(
        1,
        Event::TurnFinished {
            status: TurnStatus::Failed,
            text: String::new(),
            stats: Default::default(),
        },
    );
    // The turn is over: the queued message goes out.
    assert_eq!(h.ops().len(), 2);
    assert_eq!(
        h.ops()[1],
        Op::UserInput {
            text: "another message".into(),
            attachments: Vec::new(),
            images: Vec::new()
        }
    );
    insta::assert_snapshot!(h.screen());
}

#[test]
fn ctrl_s_interrupts_the_turn_so_the_queued_message_goes_out_now() {
    let mut h = Harness::new();
    h.type_str("long job");
    h.enter();
    h.engine(1, Event::TurnStarted);
    h.ctrl('s');
    assert_eq!(h.ops().len(), 1, "nothing queued: Ctrl+S does nothing");
    h.type_str("stop and do this instead");
    h.enter();
    h.ctrl('s');
    assert_eq!(h.ops()[1], Op::Interrupt);
    h.engine(
        1,
        Event::TurnFinished {
            status: TurnStatus::Interrupted,
            text: String::new(),
            stats: Default::default(),
        },
    );
    assert_eq!(
        h.ops()[2],
        Op::UserInput {
            text: "stop and do this instead".into(),
            attachments: Vec::new(),
            images: Vec::new()
        }
    );
}

#[test]
fn a_message_the_engine_took_back_returns_to_the_composer() {
    let mut h = Harness::new();
    h.type_str("first try");
    h.enter();
    h.engine(1, Event::TurnStarted);
    h.engine(1, Event::MessageTakenBack { text: "first try".into() });
    h.engine(
        1,
        Event::TurnFinished {
            status: TurnStatus::Failed,
            text: String::new(),
            stats: Default::default(),
        },
    );
    assert_eq!(h.app.composer.text(), "first try");
    // With a draft in the composer, it goes to the history instead.
    h.app.composer.clear();
    h.type_str("draft");
    h.engine(2, Event::MessageTakenBack { text: "second try".into() });
    assert_eq!(h.app.composer.text(), "draft");
    assert_eq!(h.app.composer.history().last().map(String::as_str), Some("second try"));
}

#[test]
fn anchor_add_pins_what_follows_the_word_as_the_command_line_does() {
    let mut h = Harness::new();
    h.type_str("/anchor add never push to main");
    h.enter();
    h.type_str("/anchor add");
    h.enter();
    assert_eq!(h.ops(), [Op::AddAnchor { text: "never push to main".into() }]);
    assert!(h.screen().contains("usage: /anchor add <text>"), "a bare `add` pins nothing");
}

#[test]
fn anchors_and_notices() {
    let mut h = Harness::new();
    h.type_str("/anchor never push to main");
    h.enter();
    assert_eq!(h.ops(), [Op::AddAnchor { text: "never push to main".into() }]);
    let text = "never push to main".to_owned();
    let pinned = AnchorChange::Pinned { index: 1, text: text.clone() };
    h.engine(1, Event::AnchorChanged { change: pinned, message: "anchor 1 pinned".into() });
    h.type_str("/anchor rm 1");
    h.enter();
    assert_eq!(h.ops()[1], Op::RemoveAnchor { index: 1 });
    let removed = AnchorChange::Removed { index: 1, text };
    h.engine(2, Event::AnchorChanged { change: removed, message: "anchor 1 removed".into() });
    h.type_str("/bogus");
    h.enter();
    h.type_str("/rewind");
    h.enter();
    h.engine(
        0,
        Event::Notice {
            level: NoticeLevel::Warning,
            message: "the journal had a torn line".into(),
        },
    );
    insta::assert_snapshot!(h.screen());
}

#[test]
fn a_multiline_draft_grows_the_composer() {
    let mut h = Harness::new();
    h.type_str("first line");
    h.key(KeyCode::Enter, KeyModifiers::SHIFT);
    h.type_str("second line");
    h.send(AppEvent::Input(TermEvent::Paste("\npasted\ntext".into())));
    insta::assert_snapshot!(h.screen());
}
