//! Snapshot tests of every visible state: the app driven through its event channel with
//! scripted engine events and keys, drawn on a fixed-size `TestBackend`. Ops the app sends
//! are recorded and asserted on. Everything shown is scripted, so no id or path varies.

use std::sync::{Arc, Mutex};

use codewhale_engine::budget::{Figure, Source};
use codewhale_engine::compaction::report::{
    ActiveReport, AnchorsReport, ContextReport, CoversReport, LastRound, Tokens, ViewEntry,
};
use codewhale_engine::protocol::{
    ApprovalScope, Event, EventMsg, NoticeLevel, Op, SubmissionId, TurnStatus,
};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;
use tokio::sync::mpsc;

use super::app::{App, Lifecycle};
use super::event::{AppEvent, Effect, OpSink};
use super::views::SessionRow;

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Op>>>);

impl OpSink for Recorder {
    fn submit(&mut self, op: Op) -> Option<SubmissionId> {
        let mut ops = self.0.lock().unwrap();
        ops.push(op);
        Some(SubmissionId(ops.len() as u64))
    }
}

struct Harness {
    app: App,
    tx: mpsc::UnboundedSender<AppEvent>,
    rx: mpsc::UnboundedReceiver<AppEvent>,
    ops: Recorder,
    terminal: Terminal<TestBackend>,
}

impl Harness {
    fn new() -> Harness {
        let ops = Recorder::default();
        let (tx, rx) = mpsc::unbounded_channel();
        let terminal = Terminal::new(TestBackend::new(80, 20)).unwrap();
        let mut h =
            Harness { app: App::new(Box::new(ops.clone()), "gpt-test"), tx, rx, ops, terminal };
        h.engine(
            0,
            Event::SessionConfigured {
                session_id: "0193c0de-0000-7000-8000-000000000001".into(),
                model: "gpt-test".into(),
                path: "sessions/s.jsonl".into(),
                resumed: false,
            },
        );
        h
    }

    fn engine(&mut self, id: u64, event: Event) {
        self.tx.send(AppEvent::Engine(EventMsg { id: SubmissionId(id), event })).unwrap();
        self.pump();
    }

    fn send(&mut self, event: AppEvent) {
        self.tx.send(event).unwrap();
        self.pump();
    }

    fn key(&mut self, code: KeyCode, modifiers: KeyModifiers) {
        self.send(AppEvent::Input(TermEvent::Key(KeyEvent::new(code, modifiers))));
    }

    fn ctrl(&mut self, c: char) {
        self.key(KeyCode::Char(c), KeyModifiers::CONTROL);
    }

    fn type_str(&mut self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c), KeyModifiers::NONE);
        }
    }

    fn enter(&mut self) {
        self.key(KeyCode::Enter, KeyModifiers::NONE);
    }

    fn pump(&mut self) {
        while let Ok(event) = self.rx.try_recv() {
            self.app.handle(event);
        }
    }

    fn screen(&mut self) -> String {
        self.terminal.draw(|f| self.app.draw(f)).unwrap();
        self.terminal.backend().to_string()
    }

    fn ops(&self) -> Vec<Op> {
        self.ops.0.lock().unwrap().clone()
    }

    fn usage(&mut self, tokens: u64, source: Source) {
        self.engine(
            1,
            Event::Usage {
                reported_input: Some(tokens),
                output: Some(20),
                pressure: Figure { tokens, source },
                usable_input: 100_000,
                threshold: 80_000,
                window: 128_000,
                window_unverified: false,
            },
        );
    }
}

#[test]
fn startup() {
    let mut h = Harness::new();
    insta::assert_snapshot!(h.screen());
}

#[test]
fn a_streaming_markdown_reply() {
    let mut h = Harness::new();
    h.type_str("explain the build");
    h.enter();
    assert_eq!(h.ops(), [Op::UserInput { text: "explain the build".into() }]);
    h.engine(1, Event::TurnStarted);
    h.engine(
        1,
        Event::TextDelta { text: "## Build\n\nRun `cargo build` then:\n\n- test\n- lint".into() },
    );
    assert_eq!(h.app.lifecycle(), &Lifecycle::Streaming { thinking: false });
    insta::assert_snapshot!(h.screen());
    h.engine(1, Event::TextDelta { text: "\n\n**Done.**".into() });
    h.usage(42_000, Source::Reported);
    h.engine(1, Event::TurnFinished { status: TurnStatus::Completed, text: String::new() });
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
            output: "exit status 101".into(),
        },
    );
    insta::assert_snapshot!("tool_folded", h.screen());
    h.ctrl('o');
    insta::assert_snapshot!("tool_expanded", h.screen());
}

#[test]
fn approval_modal_answers_once_always_or_denies() {
    let mut h = Harness::new();
    h.type_str("fix it");
    h.enter();
    h.engine(1, Event::TurnStarted);
    let ask = |id: &str| Event::ApprovalNeeded {
        call_id: id.into(),
        name: "shell".into(),
        input: json!({"command": "rm -rf target"}),
        reason: "shell commands ask in approval mode `ask`".into(),
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
    h.type_str("n");
    assert_eq!(
        h.ops()[1..],
        [
            Op::Approve { call_id: "c1".into(), scope: ApprovalScope::Once },
            Op::Approve { call_id: "c2".into(), scope: ApprovalScope::Always },
            Op::Deny { call_id: "c3".into() },
        ]
    );
    assert!(h.app.views.is_empty());
}

#[test]
fn compaction_shows_progress_then_a_capsule() {
    let mut h = Harness::new();
    h.type_str("/compact keep the API notes");
    h.enter();
    assert_eq!(h.ops(), [Op::Compact { focus: Some("keep the API notes".into()) }]);
    h.engine(1, Event::CompactionStarted { trigger: "manual".into() });
    assert_eq!(h.app.lifecycle(), &Lifecycle::Compacting { in_turn: false });
    insta::assert_snapshot!("compacting", h.screen());
    h.engine(
        1,
        Event::CompactionFinished {
            id: "c".into(),
            path: "summary".into(),
            tokens_before: 182_000,
            tokens_after: 9_000,
            covered: 48,
            retained: 3,
        },
    );
    h.usage(9_000, Source::Estimated);
    assert_eq!(h.app.lifecycle(), &Lifecycle::Idle);
    assert_eq!(h.app.take_effects(), [Effect::LoadNote { id: "c".into() }]);
    insta::assert_snapshot!("compacted", h.screen());
    h.ctrl('o');
    h.send(AppEvent::NoteLoaded {
        id: "c".into(),
        note: Ok("## Objective\nShip the parser.\n\n## Done\n- lexer".into()),
    });
    insta::assert_snapshot!("compacted_expanded", h.screen());
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
    assert_eq!(h.app.take_effects(), [Effect::LoadContext]);
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

fn report() -> ContextReport {
    ContextReport {
        session: "0193c0de".into(),
        head: "e9".into(),
        model: "gpt-test".into(),
        context_window: 128_000,
        window_unverified: false,
        reserved_output: 16_384,
        usable_input: 111_616,
        threshold: 89_292,
        tokens: Tokens {
            total: 30_000,
            source: "reported".into(),
            system: 3_000,
            anchors: 100,
            checkpoint: 2_000,
            retained: 900,
            history: 14_000,
            tool_results: 10_000,
        },
        compaction: Some(ActiveReport {
            id: "c1".into(),
            path: "summary".into(),
            trigger: "auto".into(),
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
        view: vec![ViewEntry {
            id: "e5".into(),
            kind: "checkpoint".into(),
            role: "user".into(),
            tokens: 2_000,
        }],
    }
}

#[test]
fn context_report_view() {
    let mut h = Harness::new();
    h.terminal = Terminal::new(TestBackend::new(100, 36)).unwrap();
    h.send(AppEvent::ContextLoaded(Ok(Box::new(report()))));
    insta::assert_snapshot!(h.screen());
}

#[test]
fn session_picker_resumes_the_selected_session() {
    let mut h = Harness::new();
    h.type_str("/sessions");
    h.enter();
    assert_eq!(h.app.take_effects(), [Effect::LoadSessions { all: true }]);
    let row = |id: &str, title: &str| SessionRow {
        id: id.into(),
        updated: "2026-11-29 18:00".into(),
        entries: 12,
        cwd: "/work/project".into(),
        title: title.into(),
    };
    h.send(AppEvent::SessionsLoaded {
        all: true,
        result: Ok(vec![row("aaaa1111-x", "fix the parser"), row("bbbb2222-y", "add tests")]),
    });
    insta::assert_snapshot!(h.screen());
    h.key(KeyCode::Down, KeyModifiers::NONE);
    h.enter();
    assert_eq!(
        h.app.take_effects(),
        [Effect::OpenSession(codewhale_engine::session::Resume::Id("bbbb2222-y".into()))]
    );
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
    h.engine(1, Event::TurnFinished { status: TurnStatus::Interrupted, text: String::new() });
    h.ctrl('c');
    insta::assert_snapshot!("quit_armed", h.screen());
    assert!(!h.ops().contains(&Op::Shutdown));
    h.ctrl('c');
    assert_eq!(h.ops().last(), Some(&Op::Shutdown));
    h.engine(9, Event::ShutdownComplete);
    assert_eq!(h.app.take_effects(), [Effect::Exit]);
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
fn commands_that_need_an_idle_engine_are_refused_during_a_turn() {
    let mut h = Harness::new();
    h.type_str("go");
    h.enter();
    h.engine(1, Event::TurnStarted);
    h.type_str("/compact");
    h.enter();
    h.type_str("another message");
    h.enter();
    assert_eq!(h.ops().len(), 1, "neither reached the engine");
    assert_eq!(h.app.composer.text(), "another message", "the message is kept");
    h.engine(
        1,
        Event::Error { kind: "provider".into(), message: "rate limited; retry later".into() },
    );
    h.engine(1, Event::TurnFinished { status: TurnStatus::Failed, text: String::new() });
    insta::assert_snapshot!(h.screen());
}

#[test]
fn anchors_and_notices() {
    let mut h = Harness::new();
    h.type_str("/anchor never push to main");
    h.enter();
    assert_eq!(h.ops(), [Op::AddAnchor { text: "never push to main".into() }]);
    h.engine(1, Event::Notice { level: NoticeLevel::Info, message: "anchor 1 pinned".into() });
    h.type_str("/anchor rm 1");
    h.enter();
    assert_eq!(h.ops()[1], Op::RemoveAnchor { index: 1 });
    h.engine(2, Event::Notice { level: NoticeLevel::Info, message: "anchor 1 removed".into() });
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
    use super::cells::CompactionSummary;
    use super::history::HistoryItem;
    let mut h = Harness::new();
    h.engine(
        0,
        Event::Notice { level: NoticeLevel::Warning, message: "repaired a torn line".into() },
    );
    h.send(AppEvent::HistoryLoaded(Ok(vec![
        HistoryItem::Compaction {
            summary: CompactionSummary {
                id: "c".into(),
                trigger: "auto".into(),
                path: "summary".into(),
                covered: 120,
                retained: 4,
                tokens_before: 182_000,
                tokens_after: 9_400,
            },
            note: "## Objective\nShip it.".into(),
        },
        HistoryItem::User("where were we?".into()),
        HistoryItem::Assistant("At the **parser**.".into()),
        HistoryItem::Tool {
            call_id: "c9".into(),
            name: "search".into(),
            summary: "pattern=fn parse".into(),
            result: Some((false, "src/parse.rs:1".into())),
        },
    ])));
    insta::assert_snapshot!(h.screen());
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
        },
    );
    let screen = h.screen();
    assert!(screen.contains("y approve once"), "{screen}");
    assert!(screen.contains("path: big.txt"), "{screen}");
    assert!(screen.contains("more"), "{screen}");
}

#[test]
fn a_tiny_window_says_so_instead_of_drawing() {
    let mut h = Harness::new();
    h.terminal = Terminal::new(TestBackend::new(8, 2)).unwrap();
    insta::assert_snapshot!(h.screen());
}
