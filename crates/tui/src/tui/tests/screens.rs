//! Every state of the screen people live in, at 80×24 and at 120×40: approvals with their diff,
//! running and finished tool calls, retries, thinking, markdown with tables and code, search,
//! the branch picker and the grants.

use std::time::Duration;

use codewhale_protocol::ApprovalMode;
use codewhale_protocol::{
    ApprovalOffer, ApprovalScope, CallEnd, Event, Op, TurnStats, TurnStatus, UserMessageInfo,
};
use crossterm::event::{KeyCode, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;

use super::Harness;
use crate::tui::event::{AppEvent, Effect};

/// Snapshots of the screen at both sizes.
fn both(h: &mut Harness, name: &str) {
    for (w, hgt) in [(80, 24), (120, 40)] {
        h.terminal = Terminal::new(TestBackend::new(w, hgt)).unwrap();
        insta::assert_snapshot!(format!("{name}_{w}x{hgt}"), h.screen());
    }
}

fn turn(h: &mut Harness, text: &str) {
    h.type_str(text);
    h.enter();
    h.engine(1, Event::TurnStarted);
}

#[test]
fn an_edit_waits_for_approval_with_its_diff() {
    let mut h = Harness::new();
    turn(&mut h, "rename the function");
    let diff = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n pub mod a;\n-pub fn old_name() {}\n+pub fn new_name() {}\n pub mod b;\n";
    h.engine(
        1,
        Event::ApprovalNeeded {
            call_id: "e1".into(),
            name: "edit_file".into(),
            input: json!({"path": "src/lib.rs", "old_string": "old_name", "new_string": "new_name"}),
            reason: "approval mode `ask` asks before `edit_file`".into(),
            offers: vec![ApprovalOffer {
                scope: ApprovalScope::Edits,
                label: "always for writes and edits inside the workspace".into(),
            }],
            diff: Some(diff.into()),
        },
    );
    both(&mut h, "approval_diff");
    h.type_str("a");
    assert_eq!(h.ops()[1], Op::Approve { call_id: "e1".into(), scope: ApprovalScope::Edits });
}

#[test]
fn a_running_command_shows_live_output_and_time_then_how_it_ended() {
    let mut h = Harness::new();
    turn(&mut h, "run the tests");
    h.engine(
        1,
        Event::ToolCallRequested {
            call_id: "s1".into(),
            name: "shell".into(),
            input: json!({"command": "cargo test"}),
        },
    );
    h.engine(1, Event::ToolCallStarted { call_id: "s1".into(), name: "shell".into() });
    let started = h.app.progress.clock;
    let live = "   Compiling parser v0.1.0\n\u{1b}[32m     Running\u{1b}[0m unittests\ntest lexer ... ok\ntest parser ... ok\n";
    h.engine(1, Event::ToolOutputDelta { call_id: "s1".into(), text: live.into() });
    h.send(AppEvent::Tick(started + Duration::from_secs(12)));
    both(&mut h, "running_tool");
    let output: String = (1..=60).map(|i| format!("test case_{i} ... ok\n")).collect::<String>()
        + "[exit code: 101]";
    h.engine(
        1,
        Event::ToolCallFinished {
            call_id: "s1".into(),
            name: "shell".into(),
            is_error: true,
            output,
            end: CallEnd::Failed,
            exit_code: Some(101),
            exit_code_in_output: true,
            reason: None,
            diff: None,
        },
    );
    h.ctrl('o');
    both(&mut h, "tool_output_head_and_tail");
    h.ctrl('t');
    assert!(h.screen().contains("test case_33 ... ok"), "the pager has all of it");
}

#[test]
fn a_retry_says_when_and_which_attempt() {
    let mut h = Harness::new();
    turn(&mut h, "hello");
    h.engine(
        1,
        Event::Retrying {
            attempt: 2,
            max_attempts: 5,
            wait_ms: 4_000,
            reason: "the server is overloaded (529)".into(),
        },
    );
    both(&mut h, "retrying");
    h.engine(1, Event::TextDelta { text: "Hi.".into() });
    let screen = h.screen();
    let status = screen.lines().last().unwrap_or_default();
    assert!(!status.contains("retrying in"), "a reply ends the countdown: {status}");
}

#[test]
fn thinking_tables_code_and_the_turn_figures() {
    let mut h = Harness::new();
    turn(&mut h, "compare the files");
    h.engine(1, Event::ThinkingDelta { text: "The user wants sizes. I will list them.".into() });
    let reply = "Here they are:\n\n| file | lines | note |\n|:--|--:|:-:|\n| lexer.rs | 120 | fast |\n| parser.rs | 1,480 | big |\n\n- a list item long enough to wrap onto a second row when the screen is only eighty columns wide\n\n```rust\nfn main() { println!(\"a line of code that is long enough to run past the edge of an eighty column screen\"); }\n```";
    h.engine(1, Event::TextDelta { text: reply.into() });
    let stats = TurnStats {
        elapsed_ms: 12_300,
        input_tokens: 45_200,
        output_tokens: 1_200,
        requests: 2,
        reported: true,
        cost_usd: Some(0.1000),
        compaction_cost_usd: Some(0.0),
    };
    h.engine(1, Event::TurnFinished { status: TurnStatus::Completed, text: String::new(), stats });
    both(&mut h, "markdown_reply");
    // Ctrl+O unfolds the thinking, the only foldable cell.
    h.ctrl('o');
    assert!(h.screen().contains("The user wants sizes."));
    // Ctrl+Y: the reply or its code block, to the clipboard.
    h.ctrl('y');
    h.key(KeyCode::Down, KeyModifiers::NONE);
    h.enter();
    let effects = h.effects();
    assert!(
        matches!(&effects[..], [Effect::Copy(code)] if code.starts_with("fn main()")),
        "{effects:?}"
    );
}

#[test]
fn search_branch_picker_and_grants() {
    let mut h = Harness::new();
    for i in 0..30 {
        h.engine(
            0,
            Event::Notice {
                level: codewhale_protocol::NoticeLevel::Info,
                message: format!("note number {i}"),
            },
        );
    }
    h.ctrl('f');
    h.type_str("number 7");
    both(&mut h, "search");
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    h.type_str("/rewind");
    h.enter();
    assert_eq!(h.ops().last(), Some(&Op::ListUserMessages));
    let id = h.ops().len() as u64;
    let message = |id: &str, preview: &str| UserMessageInfo {
        id: id.into(),
        preview: preview.into(),
        when: "2026-12-01T12:34:56.000Z".into(),
    };
    h.engine(
        id,
        Event::UserMessages {
            messages: vec![
                message("0193c0de-0000-7000-8000-0000000000a1", "fix the parser"),
                message("0193c0de-0000-7000-8000-0000000000b2", "now the docs"),
            ],
        },
    );
    both(&mut h, "rewind_picker");
    h.key(KeyCode::Up, KeyModifiers::NONE);
    h.enter();
    assert_eq!(
        h.ops().last(),
        Some(&Op::PreviewRestore { to: Some("0193c0de-0000-7000-8000-0000000000a1".into()) })
    );
    h.type_str("/approval");
    h.enter();
    let id = h.ops().len() as u64;
    let grants = vec![
        codewhale_protocol::Grant::Command("cargo fmt".to_owned()),
        codewhale_protocol::Grant::Prefix(vec!["cargo".to_owned(), "test".to_owned()]),
    ];
    let sandbox = codewhale_protocol::SandboxReport {
        mode: codewhale_engine::sandbox::SandboxMode::WorkspaceWrite,
        detail: "writable: /srv/ws1, /tmp; network on; Landlock ABI 6".to_owned(),
        structure: String::new(),
        keys: String::new(),
    };
    h.engine(id, Event::Grants { mode: ApprovalMode::Ask, grants, sandbox });
    both(&mut h, "grants");
    h.key(KeyCode::Down, KeyModifiers::NONE);
    h.type_str("d");
    assert_eq!(h.ops().last(), Some(&Op::RevokeGrant { index: 2 }));
}

#[test]
fn esc_on_the_start_up_picker_starts_a_new_session_and_the_current_one_is_marked() {
    let ops = super::Recorder::default();
    let mut app = crate::tui::App::new(Box::new(ops), "m");
    let row = |id: &str, current: bool| crate::tui::views::SessionRow {
        id: id.into(),
        updated: "2026-12-01 12:00".into(),
        entries: 4,
        cwd: "/w".into(),
        title: "a title".into(),
        current,
    };
    app.handle(AppEvent::SessionsLoaded {
        all: false,
        result: Ok(vec![row("aaaa1111", true), row("bbbb2222", false)]),
    });
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    let screen = terminal.backend().to_string();
    assert!(screen.contains("● aaaa1111"), "{screen}");
    assert!(screen.contains("Esc start a new session"), "{screen}");
    app.handle(AppEvent::Input(crossterm::event::Event::Key(crossterm::event::KeyEvent::new(
        KeyCode::Esc,
        KeyModifiers::NONE,
    ))));
    assert_eq!(app.take_effects(), [Effect::OpenSession(codewhale_engine::Resume::New)]);
}

#[test]
fn home_end_and_the_mouse_toggle() {
    let mut h = Harness::new();
    for i in 0..60 {
        h.engine(
            0,
            Event::Notice {
                level: codewhale_protocol::NoticeLevel::Info,
                message: format!("line {i}"),
            },
        );
    }
    h.screen();
    h.key(KeyCode::Home, KeyModifiers::NONE);
    let top = h.screen();
    assert!(top.contains("line 0") && top.contains("End follows"), "{top}");
    h.key(KeyCode::End, KeyModifiers::NONE);
    assert!(h.screen().contains("line 59"));
    // While typing, Home and End belong to the composer; Ctrl+Home goes to the top.
    h.type_str("draft");
    h.key(KeyCode::Home, KeyModifiers::CONTROL);
    assert!(h.screen().contains("line 0"));
    h.key(KeyCode::Char('m'), KeyModifiers::ALT);
    assert_eq!(h.effects(), [Effect::MouseCapture(true)]);
}

#[test]
fn ctrl_t_with_a_capsule_focused_shows_the_last_call_and_esc_lets_go() {
    use codewhale_protocol::{CompactionKind, CompactionTrigger};
    let mut h = Harness::new();
    turn(&mut h, "list the files");
    h.engine(
        1,
        Event::ToolCallRequested {
            call_id: "l1".into(),
            name: "list_dir".into(),
            input: json!({"path": "."}),
        },
    );
    h.engine(
        1,
        Event::ToolCallFinished {
            call_id: "l1".into(),
            name: "list_dir".into(),
            is_error: false,
            output: "Cargo.toml\nsrc/\nREADME.md".into(),
            end: CallEnd::Completed,
            exit_code: None,
            exit_code_in_output: false,
            reason: None,
            diff: None,
        },
    );
    h.engine(
        1,
        Event::CompactionFinished {
            id: "c".into(),
            trigger: CompactionTrigger::Auto,
            path: CompactionKind::Summary,
            tokens_before: 9_000,
            tokens_after: 3_000,
            covered: 4,
            retained: 1,
            note: "## Objective\nList the files.".into(),
            background: false,
        },
    );
    h.key(KeyCode::Up, KeyModifiers::ALT);
    h.ctrl('t');
    let screen = h.screen();
    assert!(!screen.contains("no tool output to show yet"), "{screen}");
    assert!(screen.contains("README.md"), "the last call's output: {screen}");
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    assert!(!h.app.transcript.has_focus(), "Esc lets go of the focus");
}

#[test]
fn a_write_approval_in_a_tiny_terminal_shows_its_path_and_diff() {
    let mut h = Harness::new();
    h.terminal = Terminal::new(TestBackend::new(40, 12)).unwrap();
    turn(&mut h, "write it");
    let diff =
        "--- a/notes/todo.md\n+++ b/notes/todo.md\n@@ -0,0 +1,2 @@\n+first line\n+second line\n";
    h.engine(
        1,
        Event::ApprovalNeeded {
            call_id: "w1".into(),
            name: "write_file".into(),
            input: json!({"path": "notes/todo.md", "content": "first line\nsecond line\n"}),
            reason: "approval mode `ask` asks before `write_file`".into(),
            offers: Vec::new(),
            diff: Some(diff.into()),
        },
    );
    let mut seen = h.screen();
    for _ in 0..6 {
        if seen.contains("+first line") {
            break;
        }
        h.key(KeyCode::Down, KeyModifiers::NONE);
        seen.push_str(&h.screen());
    }
    assert!(seen.contains("notes/todo.md"), "the path: {seen}");
    assert!(seen.contains("+first line"), "a diff line: {seen}");
}

/// A write waiting for approval on a 40×12 terminal: the path and the keys stay, and the diff
/// gets the rows the modal can spare — several of its lines, not one — scrollable.
#[test]
fn a_write_approval_at_40x12_shows_its_diff() {
    let mut h = Harness::new();
    turn(&mut h, "write the notes");
    let diff = "--- /dev/null\n+++ b/notes.md\n@@ -0,0 +1,6 @@\n+# Notes\n+first line\n+second line\n+third line\n+fourth line\n+fifth line\n";
    h.engine(
        1,
        Event::ApprovalNeeded {
            call_id: "w1".into(),
            name: "write_file".into(),
            input: json!({"path": "notes.md", "content": "# Notes\n"}),
            reason: "approval mode `ask` asks before `write_file`".into(),
            offers: vec![ApprovalOffer {
                scope: ApprovalScope::Edits,
                label: "always for writes and edits inside the workspace".into(),
            }],
            diff: Some(diff.into()),
        },
    );
    h.terminal = Terminal::new(TestBackend::new(40, 12)).unwrap();
    let screen = h.screen();
    insta::assert_snapshot!(screen);
    let shown = ["+# Notes", "+first line", "+second line", "+third line"];
    for line in shown {
        assert!(screen.contains(line), "{line:?} is on screen:\n{screen}");
    }
    assert!(screen.contains("notes.md") && screen.contains("y once"), "{screen}");
    // The rest is a scroll away.
    h.key(KeyCode::PageDown, KeyModifiers::NONE);
    assert!(h.screen().contains("+fifth line"), "{}", h.screen());
}
