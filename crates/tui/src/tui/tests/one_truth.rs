//! What the UI shows comes from engine events alone: the gauge follows every `Usage`, the
//! context report, anchors and history come as answers to ops, a `/compact` can be cancelled
//! and queues what is typed meanwhile, and opening a session never blocks the screen.

use codewhale_protocol::{
    AnchorInfo, CompactionTrigger, Event, Figure, HistoryItem, HistoryPage, NoticeLevel, Op, Source,
};
use crossterm::event::{KeyCode, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::Harness;
use crate::tui::app::{Lifecycle, HISTORY_PAGE};
use crate::tui::event::AppEvent;

fn usage(h: &mut Harness, id: u64, tokens: u64, source: Source, usable: u64, model: &str) {
    h.engine(
        id,
        Event::Usage {
            reported_input: None,
            output: None,
            pressure: Figure { tokens, source },
            usable_input: usable,
            threshold: usable * 4 / 5,
            window: usable + 16_384,
            window_unverified: model == "my-local-model",
            model: model.into(),
        },
    );
}

fn status(h: &mut Harness) -> String {
    h.screen().lines().last().unwrap_or_default().to_owned()
}

#[test]
fn the_gauge_follows_every_usage_event_with_its_label_and_model() {
    let mut h = Harness::new();
    // At open, before any reply: the engine's estimate, not "ctx —".
    usage(&mut h, 0, 12_000, Source::Estimated, 100_000, "gpt-test");
    let line = status(&mut h);
    assert!(line.contains("ctx 12% of 100k (estimated)"), "{line}");
    // After `/compact` (no reply in between): the engine's new figure.
    usage(&mut h, 3, 36_000, Source::Reported, 100_000, "gpt-test");
    assert!(status(&mut h).contains("ctx 36% of 100k (reported)"));
    // After `/model`: the new model's window and name, with the unverified label.
    h.type_str("/model my-local-model");
    h.enter();
    assert_eq!(h.ops(), [Op::SwitchModel { model: "my-local-model".into() }]);
    usage(&mut h, 1, 36_000, Source::Estimated, 24_000, "my-local-model");
    let line = status(&mut h);
    assert!(line.contains("my-local-model"), "{line}");
    assert!(line.contains("ctx 150% of 24k (estimated, window unverified)"), "{line}");
    insta::assert_snapshot!(h.screen());
}

#[test]
fn context_and_anchor_lists_are_answers_to_ops() {
    let mut h = Harness::new();
    h.type_str("/anchor list");
    h.enter();
    assert_eq!(h.ops(), [Op::ListAnchors]);
    let anchors = vec![
        AnchorInfo { index: 1, text: "Never push to main.".into(), in_view: true },
        AnchorInfo { index: 2, text: "Use rustls.".into(), in_view: false },
    ];
    h.engine(1, Event::Anchors { anchors: anchors.clone() });
    // The same list after an anchor change, unasked, is not shown again.
    h.engine(7, Event::Anchors { anchors });
    let screen = h.screen();
    assert_eq!(screen.matches("Never push to main.").count(), 1, "{screen}");
    insta::assert_snapshot!(screen);
    // During a turn, /context is answered when it ends (the engine defers it).
    h.type_str("go");
    h.enter();
    h.engine(2, Event::TurnStarted);
    h.type_str("/context");
    h.enter();
    assert_eq!(h.ops().last(), Some(&Op::GetContext));
    assert!(h.screen().contains("the context report follows when this ends"));
    h.engine(3, Event::ContextReport { report: Box::new(super::views::report()) });
    assert!(h.screen().contains("context"));
}

#[test]
fn a_manual_compaction_is_cancelled_with_ctrl_c_and_queues_what_is_typed() {
    let mut h = Harness::new();
    h.type_str("/compact");
    h.enter();
    assert_eq!(h.ops(), [Op::Compact { focus: None }]);
    // Busy at once, before the engine says it started.
    assert_eq!(h.app.lifecycle(), &Lifecycle::Compacting { in_turn: false });
    h.engine(1, Event::CompactionStarted { trigger: CompactionTrigger::Manual });
    assert!(status(&mut h).contains("compacting… · Ctrl+C cancels"));
    h.type_str("and then fix the tests");
    h.enter();
    assert_eq!(h.ops().len(), 1, "the message waits for the pass");
    let line = status(&mut h);
    assert!(line.contains("1 queued"), "{line}");
    insta::assert_snapshot!("compaction_with_a_queued_message", h.screen());
    h.ctrl('c');
    assert_eq!(h.ops()[1], Op::Interrupt);
    assert!(!h.app.keys.quit_armed, "Ctrl+C cancelled; it did not arm quitting");
    h.engine(1, Event::CompactionCancelled);
    assert_eq!(
        h.ops()[2],
        Op::UserInput {
            text: "and then fix the tests".into(),
            attachments: Vec::new(),
            images: Vec::new()
        }
    );
    let screen = h.screen();
    assert!(screen.contains("compaction cancelled"), "{screen}");
    assert_eq!(h.app.lifecycle(), &Lifecycle::Streaming { thinking: false });
}

#[test]
fn esc_cancels_a_compaction_too() {
    let mut h = Harness::new();
    h.type_str("/compact");
    h.enter();
    h.engine(1, Event::CompactionStarted { trigger: CompactionTrigger::Manual });
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(h.ops().last(), Some(&Op::Interrupt));
    h.engine(1, Event::CompactionCancelled);
    assert_eq!(h.app.lifecycle(), &Lifecycle::Idle);
}

#[test]
fn a_refused_compact_request_ends_the_compacting_state() {
    let mut h = Harness::new();
    h.type_str("/compact");
    h.enter();
    h.engine(
        1,
        Event::Error {
            kind: codewhale_protocol::ErrorKind::Busy,
            message: "a turn or a compaction is running".into(),
        },
    );
    assert_eq!(h.app.lifecycle(), &Lifecycle::Idle);
}

fn user(id: &str, text: &str) -> HistoryItem {
    HistoryItem::User { id: id.into(), text: text.into(), covered: false, images: Vec::new() }
}

#[test]
fn scrolling_to_the_top_asks_for_the_older_page_and_puts_it_above() {
    let mut h = Harness::new();
    let items = (10..40).map(|i| user(&format!("e{i}"), &format!("message {i}"))).collect();
    let page = HistoryPage { head: "e39".into(), items, older: Some("e10".into()), reset: true };
    h.engine(0, Event::History { page });
    for _ in 0..20 {
        // A frame is drawn between keys, as in the terminal: it records the viewport.
        h.screen();
        h.key(KeyCode::PageUp, KeyModifiers::NONE);
    }
    let asked: Vec<Op> =
        h.ops().into_iter().filter(|op| matches!(op, Op::GetHistory { .. })).collect();
    assert_eq!(
        asked,
        [Op::GetHistory { before: Some("e10".into()), limit: HISTORY_PAGE }],
        "asked once, not once per key"
    );
    let older = (0..10).map(|i| user(&format!("e{i}"), &format!("message {i}"))).collect();
    let id = h.ops().len() as u64;
    let page = HistoryPage { head: "e39".into(), items: older, older: None, reset: false };
    h.engine(id, Event::History { page });
    for _ in 0..20 {
        // A frame is drawn between keys, as in the terminal: it records the viewport.
        h.screen();
        h.key(KeyCode::PageUp, KeyModifiers::NONE);
    }
    let screen = h.screen();
    assert!(screen.contains("message 0"), "{screen}");
    let asked = h.ops().iter().filter(|op| matches!(op, Op::GetHistory { .. })).count();
    assert_eq!(asked, 1, "the beginning is shown: nothing more to ask");
}

#[test]
fn opening_a_large_session_shows_progress_and_keys_keep_working() {
    let mut h = Harness::new();
    h.send(AppEvent::SessionOpening(Some(1_288_490_189)));
    let line = status(&mut h);
    assert!(line.contains("opening session (1.2 GB)…"), "{line}");
    h.type_str("still typing");
    assert_eq!(h.app.composer.text(), "still typing");
    h.send(AppEvent::SessionOpenFailed("cannot open the session: it is locked".into()));
    let screen = h.screen();
    assert!(!screen.contains("opening session"), "{screen}");
    assert!(screen.contains("cannot open the session"), "{screen}");
}

#[test]
fn no_layout_underflows_on_tiny_terminals_with_a_modal_open() {
    let mut h = Harness::new();
    h.engine(0, Event::Notice { level: NoticeLevel::Info, message: "a notice to draw".into() });
    h.type_str("/help");
    h.enter();
    assert!(!h.app.views.is_empty());
    for height in 1..=6 {
        for width in [1, 5, 10, 11, 20, 80] {
            h.terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
            h.screen();
        }
    }
    h.engine(
        1,
        Event::ApprovalNeeded {
            call_id: "c".into(),
            name: "shell".into(),
            input: serde_json::json!({"command": "ls"}),
            reason: "runs a command".into(),
            offers: Vec::new(),
            diff: None,
        },
    );
    h.terminal = Terminal::new(TestBackend::new(40, 3)).unwrap();
    insta::assert_snapshot!("a_modal_on_a_three_row_terminal", h.screen());
}
