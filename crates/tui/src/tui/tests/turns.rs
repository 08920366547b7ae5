//! The conversation: streaming, tools, compaction, interrupts, notices, history.

use codewhale_engine::protocol::{
    AnchorChange, CallEnd, CompactionKind, CompactionTrigger, ErrorKind, Event, HeadMove,
    HistoryItem, HistoryPage, NoticeLevel, Op, RestoreFile, RestoreState, Source, TakeBack,
    ToolOutcome, TurnStatus,
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
    assert_eq!(h.app.workspace.as_deref(), Some(std::path::Path::new("project")));
}

#[test]
fn a_streaming_markdown_reply() {
    let mut h = Harness::new();
    h.type_str("explain the build");
    h.enter();
    assert_eq!(
        h.ops(),
        [Op::UserInput { text: "explain the build".into(), attachments: Vec::new() }]
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
        Op::UserInput { text: "another message".into(), attachments: Vec::new() }
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
        Op::UserInput { text: "stop and do this instead".into(), attachments: Vec::new() }
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

#[test]
fn a_resumed_session_shows_its_history_first() {
    let mut h = Harness::new();
    h.engine(
        0,
        Event::SessionConfigured {
            session_id: "0193c0de-0000-7000-8000-000000000002".into(),
            model: "gpt-test".into(),
            path: "sessions/s2.jsonl".into(),
            resumed: true,
            workspace: "project".into(),
        },
    );
    let page = HistoryPage {
        head: "a9".into(),
        items: vec![
            HistoryItem::User { id: "u0".into(), text: "start the parser".into(), covered: true },
            HistoryItem::Compaction {
                id: "c".into(),
                trigger: CompactionTrigger::Auto,
                path: CompactionKind::Summary,
                covered_entries: 120,
                retained: 4,
                tokens_before: 182_000,
                tokens_after: 9_400,
                note: "## Objective\nShip it.".into(),
                background: false,
            },
            HistoryItem::User { id: "u1".into(), text: "where were we?".into(), covered: false },
            HistoryItem::Assistant {
                id: "a1".into(),
                text: "At the **parser**.".into(),
                thinking: String::new(),
                covered: false,
            },
            HistoryItem::Tool {
                id: "a1".into(),
                call_id: "c9".into(),
                name: "search".into(),
                input: json!({"pattern": "fn parse"}),
                result: Some(ToolOutcome {
                    is_error: false,
                    output: "src/parse.rs:1".into(),
                    end: CallEnd::Completed,
                    exit_code: None,
                    exit_code_in_output: false,
                    reason: None,
                }),
                covered: false,
            },
        ],
        older: None,
        reset: true,
    };
    h.engine(0, Event::History { page });
    h.engine(
        0,
        Event::Notice { level: NoticeLevel::Warning, message: "repaired a torn line".into() },
    );
    let screen = h.screen();
    assert!(screen.contains("resumed session 0193c0de"), "{screen}");
    assert!(screen.contains("repaired a torn line"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn a_head_move_shows_the_new_heads_conversation() {
    let mut h = Harness::new();
    h.type_str("old branch message");
    h.enter();
    h.engine(
        1,
        Event::TurnFinished {
            status: TurnStatus::Completed,
            text: String::new(),
            stats: Default::default(),
        },
    );
    h.type_str("/rewind 0193-e1");
    h.enter();
    // First what a restore would touch: no file, so the conversation moves without a question.
    assert_eq!(h.ops()[1], Op::PreviewRestore { to: Some("0193-e1".into()) });
    h.engine(2, Event::RestorePreview { to: Some("0193-e1".into()), files: Vec::new() });
    let take = Op::TakeBack {
        to: "0193-e1".into(),
        take: TakeBack::Conversation,
        fork: false,
        before: false,
        force: false,
    };
    assert_eq!(h.ops()[2], take);
    let page = HistoryPage {
        head: "0193-e1".into(),
        items: vec![HistoryItem::User {
            id: "0193-e1".into(),
            text: "the first question".into(),
            covered: false,
        }],
        older: None,
        reset: true,
    };
    h.engine(3, Event::History { page });
    let moved = Event::HeadMoved {
        how: HeadMove::Rewind,
        head: "0193-e1".into(),
        level: NoticeLevel::Info,
        message: "rewound to 0193-e1".into(),
    };
    h.engine(3, moved);
    assert!(h.effects().is_empty(), "the engine sends the page; nothing is read");
    h.engine(3, Event::ComposerText { text: "the second question".into() });
    let screen = h.screen();
    assert!(screen.contains("the first question"), "{screen}");
    assert!(screen.contains("rewound to 0193-e1"), "{screen}");
    assert!(!screen.contains("old branch message"), "{screen}");
    assert!(screen.contains("back in the composer"), "{screen}");
    assert_eq!(h.app.composer.text(), "the second question");
}

#[test]
fn rewind_asks_what_to_take_back_and_a_second_yes_for_outside_changes() {
    let mut h = Harness::new();
    h.type_str("/rewind 0193-e1");
    h.enter();
    let files = vec![
        RestoreFile { path: "src/a.rs".into(), state: RestoreState::Restore },
        RestoreFile { path: "notes.md".into(), state: RestoreState::ChangedElsewhere },
    ];
    h.engine(1, Event::RestorePreview { to: Some("0193-e1".into()), files });
    let screen = h.screen();
    assert!(screen.contains("rewind: what to take back"), "{screen}");
    assert!(screen.contains("src/a.rs  restored"), "{screen}");
    assert!(screen.contains("notes.md  changed by someone else since"), "{screen}");
    h.type_str("b");
    let screen = h.screen();
    assert!(screen.contains("y overwrite them too"), "{screen}");
    h.type_str("n");
    let take = Op::TakeBack {
        to: "0193-e1".into(),
        take: TakeBack::Both,
        fork: false,
        before: false,
        force: false,
    };
    assert_eq!(h.ops().last(), Some(&take));

    // /undo with nothing changed since says so without asking.
    h.type_str("/undo");
    h.enter();
    assert_eq!(h.ops().last(), Some(&Op::PreviewRestore { to: None }));
    let files = vec![RestoreFile { path: "src/a.rs".into(), state: RestoreState::Unchanged }];
    h.engine(3, Event::RestorePreview { to: None, files });
    assert!(h.screen().contains("nothing to undo"), "{}", h.screen());
    // With a change: Enter takes the files back.
    h.type_str("/undo");
    h.enter();
    let files = vec![RestoreFile { path: "src/a.rs".into(), state: RestoreState::Restore }];
    h.engine(4, Event::RestorePreview { to: None, files });
    assert!(h.screen().contains("undo: take back the last turn"), "{}", h.screen());
    h.enter();
    assert_eq!(h.ops().last(), Some(&Op::Undo { force: false }));
}

#[test]
fn a_branch_summary_is_a_foldable_cell() {
    let mut h = Harness::new();
    let page = HistoryPage {
        head: "s1".into(),
        items: vec![
            HistoryItem::User { id: "u1".into(), text: "fix the parser".into(), covered: false },
            HistoryItem::BranchSummary {
                id: "s1".into(),
                summary: "nom failed on nested groups".into(),
                covered: false,
            },
        ],
        older: None,
        reset: true,
    };
    h.engine(0, Event::History { page });
    let screen = h.screen();
    assert!(screen.contains("what was tried on a branch you left … Ctrl+O"), "{screen}");
    assert!(!screen.contains("nom failed"), "folded: {screen}");
    h.key(KeyCode::Char('o'), KeyModifiers::CONTROL);
    let screen = h.screen();
    assert!(screen.contains("nom failed on nested groups"), "unfolded: {screen}");
}

#[test]
fn an_edit_shows_its_diff_folded_under_the_call() {
    let mut h = Harness::new();
    h.type_str("fix it");
    h.enter();
    h.engine(1, Event::TurnStarted);
    let input = json!({"path": "a.rs", "old_string": "x = 1", "new_string": "x = 2"});
    h.engine(1, Event::ToolCallRequested { call_id: "e1".into(), name: "edit_file".into(), input });
    h.engine(1, Event::ToolCallStarted { call_id: "e1".into(), name: "edit_file".into() });
    let diff = "--- a/a.rs\n+++ b/a.rs\n@@ -1 +1 @@\n-let x = 1;\n+let x = 2;";
    h.engine(
        1,
        Event::ToolCallFinished {
            call_id: "e1".into(),
            name: "edit_file".into(),
            is_error: false,
            output: "1 replacement".into(),
            end: CallEnd::Completed,
            exit_code: None,
            exit_code_in_output: false,
            reason: None,
            diff: Some(diff.into()),
        },
    );
    let screen = h.screen();
    assert!(screen.contains("± a.rs: +1 −1 lines … Ctrl+O shows the diff"), "{screen}");
    h.ctrl('o');
    assert!(h.screen().contains("+let x = 2;"), "{}", h.screen());
}
