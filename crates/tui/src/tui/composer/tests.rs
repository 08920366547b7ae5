use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn with(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
    KeyEvent::new(code, modifiers)
}

fn typed(c: &mut Composer, text: &str) {
    for ch in text.chars() {
        c.handle_key(key(KeyCode::Char(ch)));
    }
}

/// The text with `|` where the cursor is.
fn at_cursor(c: &Composer) -> String {
    let mut lines = c.lines.clone();
    lines[c.row].insert(c.col, '|');
    lines.join("\n")
}

#[test]
fn enter_submits_and_shift_enter_breaks_the_line() {
    let mut c = Composer::default();
    typed(&mut c, "one");
    c.handle_key(with(KeyCode::Enter, KeyModifiers::SHIFT));
    typed(&mut c, "two");
    c.handle_key(with(KeyCode::Enter, KeyModifiers::ALT));
    typed(&mut c, "three");
    c.handle_key(ctrl('j'));
    assert_eq!(c.lines.len(), 4);
    assert_eq!(
        c.handle_key(key(KeyCode::Enter)),
        ComposerOutcome::Submit("one\ntwo\nthree\n".into())
    );
    assert!(c.is_empty());
}

#[test]
fn shell_habits_edit_the_line() {
    let mut c = Composer::default();
    typed(&mut c, "hello big world");
    c.handle_key(ctrl('w'));
    assert_eq!(c.text(), "hello big ");
    c.handle_key(ctrl('a'));
    c.handle_key(key(KeyCode::Right));
    c.handle_key(ctrl('k'));
    assert_eq!(c.text(), "h");
    c.handle_key(ctrl('e'));
    typed(&mut c, "éllo");
    c.handle_key(key(KeyCode::Left));
    c.handle_key(ctrl('u'));
    assert_eq!(c.text(), "o");
    assert_eq!(at_cursor(&c), "|o");
}

#[test]
fn word_motions_and_deletions() {
    let mut c = Composer::default();
    typed(&mut c, "cargo test --all  ");
    c.handle_key(with(KeyCode::Left, KeyModifiers::CONTROL));
    assert_eq!(at_cursor(&c), "cargo test --|all  ");
    c.handle_key(with(KeyCode::Left, KeyModifiers::ALT));
    assert_eq!(at_cursor(&c), "cargo test |--all  ");
    c.handle_key(with(KeyCode::Char('b'), KeyModifiers::ALT));
    assert_eq!(at_cursor(&c), "cargo |test --all  ");
    c.handle_key(with(KeyCode::Right, KeyModifiers::CONTROL));
    assert_eq!(at_cursor(&c), "cargo test| --all  ");
    c.handle_key(with(KeyCode::Backspace, KeyModifiers::ALT));
    assert_eq!(at_cursor(&c), "cargo | --all  ");
    c.handle_key(with(KeyCode::Char('d'), KeyModifiers::ALT));
    assert_eq!(at_cursor(&c), "cargo |all  ");
    c.handle_key(key(KeyCode::End));
    c.handle_key(with(KeyCode::Backspace, KeyModifiers::CONTROL));
    assert_eq!(at_cursor(&c), "cargo |");
    c.handle_key(key(KeyCode::Home));
    assert_eq!(at_cursor(&c), "|cargo ");
}

#[test]
fn left_right_and_backspace_move_by_grapheme() {
    let mut c = Composer::default();
    c.insert_str("a👩‍💻e\u{301}漢");
    c.handle_key(key(KeyCode::Left));
    assert_eq!(at_cursor(&c), "a👩‍💻e\u{301}|漢");
    c.handle_key(key(KeyCode::Left));
    assert_eq!(at_cursor(&c), "a👩‍💻|e\u{301}漢");
    c.handle_key(key(KeyCode::Backspace));
    assert_eq!(at_cursor(&c), "a|e\u{301}漢");
    c.handle_key(key(KeyCode::Delete));
    assert_eq!(at_cursor(&c), "a|漢");
}

#[test]
fn up_and_down_move_by_screen_row_before_reaching_history() {
    let mut c = Composer::default();
    typed(&mut c, "old");
    c.handle_key(key(KeyCode::Enter));
    c.insert_str(&"漢".repeat(25));
    c.layout(20);
    // 25 wide characters at 20 columns: rows of 10, 10 and 5; the cursor ends row 2 at 10.
    let w = "漢".len();
    c.handle_key(key(KeyCode::Up));
    assert_eq!(c.col, w * 15, "row 1, column 10");
    c.handle_key(key(KeyCode::Up));
    assert_eq!(c.col, w * 5, "row 0, column 10");
    c.handle_key(key(KeyCode::Down));
    c.handle_key(key(KeyCode::Down));
    assert_eq!(c.col, w * 25, "back to the end of the short last row");
    c.handle_key(key(KeyCode::Up));
    c.handle_key(key(KeyCode::Up));
    c.handle_key(key(KeyCode::Up));
    assert_eq!(c.text(), "old", "from the first row, Up walks the history");
}

#[test]
fn history_walks_on_the_first_and_last_row_and_keeps_the_draft() {
    let mut c = Composer::with_history(vec!["from an earlier run".into()]);
    for m in ["first", "second"] {
        typed(&mut c, m);
        c.handle_key(key(KeyCode::Enter));
    }
    typed(&mut c, "draft");
    c.handle_key(key(KeyCode::Up));
    assert_eq!(c.text(), "second");
    c.handle_key(key(KeyCode::Up));
    c.handle_key(key(KeyCode::Up));
    assert_eq!(c.text(), "from an earlier run");
    c.handle_key(key(KeyCode::Up));
    assert_eq!(c.text(), "from an earlier run");
    for _ in 0..3 {
        c.handle_key(key(KeyCode::Down));
    }
    assert_eq!(c.text(), "draft");
}

#[test]
fn a_recalled_entry_is_marked_until_the_user_types() {
    let mut c = Composer::with_history(vec!["/compact the tests".into(), "/quit".into()]);
    c.handle_key(key(KeyCode::Up));
    assert_eq!(c.text(), "/quit");
    assert!(c.is_recalled());
    c.handle_key(key(KeyCode::Up));
    assert_eq!(c.text(), "/compact the tests");
    assert!(c.is_recalled());
    c.handle_key(key(KeyCode::Char('!')));
    assert!(!c.is_recalled(), "typing makes it the user's text again");
    c.clear();
    assert!(!c.is_recalled());
}

#[test]
fn paste_keeps_newlines_and_backspace_joins_lines() {
    let mut c = Composer::default();
    c.paste("x\r\ny");
    assert_eq!(c.lines, ["x", "y"]);
    c.handle_key(key(KeyCode::Home));
    c.handle_key(key(KeyCode::Backspace));
    assert_eq!(c.text(), "xy");
    c.handle_key(key(KeyCode::Delete));
    assert_eq!(c.text(), "x");
}

#[test]
fn a_large_paste_is_a_chip_sent_in_full_and_unfolded_with_ctrl_x() {
    let mut c = Composer::default();
    typed(&mut c, "look: ");
    let log: String = (0..4_812).map(|i| format!("line {i}: something happened\n")).collect();
    c.paste(&log);
    typed(&mut c, " why?");
    let shown = c.shown_text();
    assert!(shown.starts_with("look: [pasted 4,812 lines · "), "{shown}");
    assert!(shown.ends_with(" KB] why?"), "{shown}");
    assert_eq!(c.text(), format!("look: {log} why?"));
    // One Backspace after the chip removes it whole.
    let mut removed = c.clone();
    for _ in 0.." why?".len() {
        removed.handle_key(key(KeyCode::Backspace));
    }
    removed.handle_key(key(KeyCode::Backspace));
    assert_eq!(removed.text(), "look: ");
    // Ctrl+X after the chip puts the pasted text in the composer.
    for _ in 0.." why?".len() {
        c.handle_key(key(KeyCode::Left));
    }
    assert_eq!(c.handle_key(ctrl('x')), ComposerOutcome::Edited);
    assert_eq!(c.lines.len(), 4_813);
    assert_eq!(c.take_submission(), format!("look: {log} why?"));
}

#[test]
fn control_characters_and_chip_lookalikes_never_enter_the_text() {
    let mut c = Composer::default();
    c.insert_str("a\u{1b}[31mb\u{7}\tc\u{100000}");
    assert_eq!(c.text(), "a[31mb\tc\u{FFFD}");
}

#[test]
fn chip_labels_read_as_people_count() {
    assert_eq!(chip_label("one line"), "[pasted 1 line · 8 B]");
    assert_eq!(chip_label(&"x\n".repeat(1_500)), "[pasted 1,500 lines · 3 KB]");
}
