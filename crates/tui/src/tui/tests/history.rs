//! Snapshot tests of a session's past: a resumed session's history, HEAD moves, rewinds,
//! branch summaries and edits with their diffs.

use codewhale_protocol::{
    CallEnd, CompactionKind, CompactionTrigger, Event, HeadMove, HistoryItem, HistoryPage,
    NoticeLevel, Op, RestoreFile, RestoreState, TakeBack, ToolOutcome, TurnStatus,
};
use crossterm::event::{KeyCode, KeyModifiers};
use serde_json::json;

use super::Harness;

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
            approval: Default::default(),
            instructions: Vec::new(),
            commands: Vec::new(),
        },
    );
    let page = HistoryPage {
        head: "a9".into(),
        items: vec![
            HistoryItem::User {
                id: "u0".into(),
                text: "start the parser".into(),
                covered: true,
                images: Vec::new(),
            },
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
            HistoryItem::User {
                id: "u1".into(),
                text: "where were we?".into(),
                covered: false,
                images: Vec::new(),
            },
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
            images: Vec::new(),
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

/// A rewind keeps the transcript as the user saw it up to the point HEAD went back to — the
/// turn's footer and the notices included — and drops only what followed.
#[test]
fn a_rewind_keeps_what_came_before_the_point_and_drops_what_followed() {
    use codewhale_protocol::TurnStats;
    let mut h = Harness::new();
    for (k, (ask, answer)) in
        [("the first question", "first answer"), ("the second question", "second answer")]
            .into_iter()
            .enumerate()
    {
        h.type_str(ask);
        h.enter();
        let id = h.ops().len() as u64;
        h.engine(id, Event::TurnStarted);
        h.engine(id, Event::TextDelta { text: answer.into() });
        let stats = TurnStats { elapsed_ms: 1_200 + k as u64, requests: 1, ..TurnStats::default() };
        h.engine(
            id,
            Event::TurnFinished { status: TurnStatus::Completed, text: answer.into(), stats },
        );
        h.engine(
            id,
            Event::Notice { level: NoticeLevel::Info, message: format!("notice after turn {k}") },
        );
    }
    assert!(h.screen().contains("second answer"));
    h.type_str("/rewind 0193-e2");
    h.enter();
    let preview = h.ops().len() as u64;
    h.engine(preview, Event::RestorePreview { to: Some("0193-e2".into()), files: Vec::new() });
    let take = h.ops().len() as u64;
    let page = HistoryPage {
        head: "0193-a1".into(),
        items: vec![
            HistoryItem::User {
                id: "0193-e1".into(),
                text: "the first question".into(),
                covered: false,
                images: Vec::new(),
            },
            HistoryItem::Assistant {
                id: "0193-a1".into(),
                text: "first answer".into(),
                thinking: String::new(),
                covered: false,
            },
        ],
        older: None,
        reset: true,
    };
    h.engine(take, Event::History { page });
    let moved = Event::HeadMoved {
        how: HeadMove::Rewind,
        head: "0193-a1".into(),
        level: NoticeLevel::Info,
        message: "rewound to 0193-a1".into(),
    };
    h.engine(take, moved);
    let screen = h.screen();
    assert!(screen.contains("notice after turn 0"), "a notice before the point stays: {screen}");
    assert!(screen.contains("first answer") && screen.contains("rewound to 0193-a1"), "{screen}");
    assert!(!screen.contains("second answer"), "what followed goes: {screen}");
    assert!(!screen.contains("notice after turn 1"), "{screen}");
    assert_eq!(screen.matches("the first question").count(), 1, "not drawn twice: {screen}");
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
    // HEAD did not move: the transcript stays as it was (the notices above included), and the
    // restore is said once, under it.
    let before = h.screen();
    assert!(before.contains("nothing to undo"), "{before}");
    let undo = h.ops().len() as u64;
    let page = HistoryPage {
        head: "n1".into(),
        items: vec![HistoryItem::User {
            id: "u1".into(),
            text: "edit a".into(),
            covered: false,
            images: Vec::new(),
        }],
        older: None,
        reset: true,
    };
    h.engine(undo, Event::History { page });
    let restored = "restored 1 file to their content before the last turn: src/a.rs";
    h.engine(undo, Event::Notice { level: NoticeLevel::Info, message: restored.into() });
    let after = h.screen();
    assert!(after.contains("nothing to undo"), "the transcript stays: {after}");
    assert_eq!(after.matches("restored 1 file").count(), 1, "said once: {after}");
}

#[test]
fn a_branch_summary_is_a_foldable_cell() {
    let mut h = Harness::new();
    let page = HistoryPage {
        head: "s1".into(),
        items: vec![
            HistoryItem::User {
                id: "u1".into(),
                text: "fix the parser".into(),
                covered: false,
                images: Vec::new(),
            },
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

/// The screen row that shows the `!CMD` cell of `command`.
fn shell_row(screen: &str, command: &str) -> String {
    let row = screen.lines().find(|l| l.contains(command));
    row.unwrap_or_else(|| panic!("no cell for {command}:\n{screen}")).trim().to_owned()
}

/// An interrupted `!sleep 100` read "interrupted" live and "failed" after a resume (the page
/// left the UI to guess from the exit code). Both now come from the engine's `end`, through
/// one builder: the cell is the same.
#[test]
fn an_interrupted_user_command_reads_the_same_live_and_after_a_resume() {
    let output = "$ sleep 100\n[interrupted by the user]";
    let mut live = Harness::new();
    let started = Event::UserShellStarted { call_id: "u-1".into(), command: "sleep 100".into() };
    live.engine(1, started);
    live.engine(
        1,
        Event::UserShellFinished {
            call_id: "u-1".into(),
            command: "sleep 100".into(),
            output: output.into(),
            end: CallEnd::Interrupted,
            exit_code: Some(143),
        },
    );
    let live_row = shell_row(&live.screen(), "sleep 100");
    assert!(live_row.contains("interrupted"), "{live_row}");

    let mut resumed = Harness::new();
    let page = HistoryPage {
        head: "u-1".into(),
        items: vec![HistoryItem::UserShell {
            id: "u-1".into(),
            command: "sleep 100".into(),
            output: output.into(),
            end: CallEnd::Interrupted,
            exit_code: Some(143),
            covered: false,
        }],
        older: None,
        reset: true,
    };
    resumed.engine(0, Event::History { page });
    assert_eq!(shell_row(&resumed.screen(), "sleep 100"), live_row);
}
