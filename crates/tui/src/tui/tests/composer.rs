//! The composer on screen: wide text, pasted-text chips, the `@` picker, the big-message
//! question, and the keys around them (Esc, Enter on a partial command).

use std::sync::Arc;

use codewhale_protocol::{Event, Op, Source, TurnStatus};
use crossterm::event::{KeyCode, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::Harness;
use crate::tui::app::Lifecycle;
use crate::tui::event::{AppEvent, Effect};

#[test]
fn seventy_nine_wide_characters_wrap_at_a_hundred_columns_with_the_cursor_at_the_end() {
    let mut h = Harness::new();
    h.terminal = Terminal::new(TestBackend::new(100, 12)).unwrap();
    h.type_str(&"漢".repeat(79));
    let screen = h.screen();
    // 98 columns after the prompt hold 49 characters; the other 30 are on the next row.
    let rows: Vec<&str> = screen.lines().filter(|l| l.contains('漢')).collect();
    assert_eq!(rows.len(), 2, "{screen}");
    let cursor = h.terminal.get_cursor_position().unwrap();
    assert_eq!((cursor.x, cursor.y), (2 + 60, 10), "after the 79th character");
    insta::assert_snapshot!(screen);
}

#[test]
fn a_big_paste_is_a_chip_and_is_sent_in_full() {
    let mut h = Harness::new();
    h.type_str("why does this fail? ");
    let log: String = (0..300).map(|i| format!("error[E0{i:03}]: something broke\n")).collect();
    h.send(AppEvent::Input(crossterm::event::Event::Paste(log.clone())));
    insta::assert_snapshot!(h.screen());
    h.enter();
    assert_eq!(
        h.ops(),
        [Op::UserInput {
            text: format!("why does this fail? {log}"),
            attachments: Vec::new(),
            images: Vec::new()
        }]
    );
}

#[test]
fn a_message_larger_than_the_window_asks_first() {
    let mut h = Harness::new();
    h.usage(1_000, Source::Estimated);
    h.send(AppEvent::Input(crossterm::event::Event::Paste("word ".repeat(200_000))));
    h.enter();
    assert!(h.ops().is_empty(), "not sent without a yes");
    insta::assert_snapshot!(h.screen());
    h.key(KeyCode::Char('n'), KeyModifiers::NONE);
    assert!(h.ops().is_empty());
    assert!(!h.app.composer.is_empty(), "back in the composer");
    assert!(h.screen().contains("[pasted"), "as the chip it was, not its raw lines");
    h.enter();
    h.key(KeyCode::Char('y'), KeyModifiers::NONE);
    assert_eq!(h.ops().len(), 1);
}

#[test]
fn at_opens_the_file_picker_and_the_chosen_file_is_attached() {
    let mut h = Harness::new();
    h.type_str("look at @");
    assert!(h.effects().contains(&Effect::IndexFiles), "the index is built on first use");
    let files = ["Cargo.toml", "src/main.rs", "src/parser/lexer.rs", "src/parser/mod.rs"];
    h.send(AppEvent::FilesIndexed(Arc::new(files.map(str::to_owned).to_vec())));
    h.type_str("lex");
    insta::assert_snapshot!(h.screen());
    h.key(KeyCode::Tab, KeyModifiers::NONE);
    assert_eq!(h.app.composer.text(), "look at @src/parser/lexer.rs ");
    h.type_str("please");
    h.enter();
    assert_eq!(
        h.ops(),
        [Op::UserInput {
            text: "look at @src/parser/lexer.rs please".into(),
            attachments: vec!["src/parser/lexer.rs".into()],
            images: Vec::new(),
        }]
    );
    // A mention deleted before sending is not attached.
    h.engine(
        1,
        Event::TurnFinished {
            status: TurnStatus::Completed,
            text: String::new(),
            stats: Default::default(),
        },
    );
    h.type_str("@");
    h.type_str("mod");
    h.enter();
    h.key(KeyCode::Char('w'), KeyModifiers::CONTROL);
    h.type_str("never mind");
    h.enter();
    assert_eq!(
        h.ops()[1],
        Op::UserInput {
            text: "@src/parser/never mind".into(),
            attachments: vec![],
            images: Vec::new()
        }
    );
}

#[test]
fn enter_on_a_partial_command_completes_it_and_esc_closes_the_popup() {
    let mut h = Harness::new();
    h.type_str("/c");
    h.enter();
    assert!(h.ops().is_empty(), "/c does not run /compact");
    assert_eq!(h.app.composer.text(), "/compact ");
    h.app.composer.clear();
    h.type_str("/con");
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    assert!(!h.app.popup_open());
    h.type_str("t");
    assert!(h.app.popup_open(), "typing opens it again");
    h.app.composer.clear();
    h.type_str("/context");
    h.enter();
    assert_eq!(h.ops(), [Op::GetContext], "a complete name runs");
}

#[test]
fn up_walks_past_recalled_commands_without_opening_the_popup() {
    let mut h = Harness::new();
    h.app.composer = crate::tui::composer::Composer::with_history(vec![
        "explain the parser".into(),
        "/compact keep the parser notes".into(),
        "/quit".into(),
    ]);
    h.key(KeyCode::Up, KeyModifiers::NONE);
    assert_eq!(h.app.composer.text(), "/quit");
    assert!(!h.app.popup_open(), "a recalled command opens no popup");
    h.key(KeyCode::Up, KeyModifiers::NONE);
    h.key(KeyCode::Up, KeyModifiers::NONE);
    assert_eq!(h.app.composer.text(), "explain the parser", "Up keeps walking the history");
    h.key(KeyCode::Down, KeyModifiers::NONE);
    assert_eq!(h.app.composer.text(), "/compact keep the parser notes");
    h.type_str(" now");
    assert!(!h.app.popup_open(), "arguments typed after the name complete nothing");
    h.enter();
    assert_eq!(h.ops(), [Op::Compact { focus: Some("keep the parser notes now".into()) }]);
}

#[test]
fn esc_interrupts_a_turn_and_clears_a_draft_only_when_pressed_twice() {
    let mut h = Harness::new();
    h.type_str("go");
    h.enter();
    h.engine(1, Event::TurnStarted);
    h.type_str("a draft");
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(h.ops().last(), Some(&Op::Interrupt));
    assert_eq!(h.app.composer.text(), "a draft", "interrupting keeps the draft");
    h.engine(
        1,
        Event::TurnFinished {
            status: TurnStatus::Interrupted,
            text: String::new(),
            stats: Default::default(),
        },
    );
    assert_eq!(h.app.lifecycle(), &Lifecycle::Idle);
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    assert!(h.screen().contains("press Esc again to clear the draft"));
    assert_eq!(h.app.composer.text(), "a draft");
    h.key(KeyCode::Esc, KeyModifiers::NONE);
    assert!(h.app.composer.is_empty());
}

#[test]
fn ctrl_g_and_ctrl_z_are_effects_for_the_event_loop() {
    let mut h = Harness::new();
    h.type_str("draft");
    h.ctrl('g');
    assert_eq!(h.effects(), [Effect::EditDraft("draft".into())]);
    h.send(AppEvent::DraftEdited(Ok("edited in vim\n".into())));
    assert_eq!(h.app.composer.text(), "edited in vim");
    h.ctrl('z');
    assert_eq!(h.effects(), [Effect::Suspend]);
    h.send(AppEvent::SuspendUnavailable);
    assert!(h.screen().contains("Ctrl+Z cannot suspend here"));
}
