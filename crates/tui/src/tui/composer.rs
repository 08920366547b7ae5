//! The composer: a multi-line text editor with history and the usual shell-style keys.
//!
//! Owns the text being typed, the cursor and the history of submitted messages. Keys: Enter
//! submits; Shift+Enter, Alt+Enter or Ctrl+J insert a newline (terminals differ in which
//! they report); Up/Down move between lines and, on the first/last line, walk the history;
//! Ctrl+A/E go to the start/end of the line, Ctrl+U/K delete to its start/end, Ctrl+W deletes
//! the word before the cursor; pasted text is inserted as is (newlines included).
//! Invariant: the cursor is always a valid (line, char) position of the text, and `lines` is
//! never empty.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a key did to the composer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComposerOutcome {
    /// The text or cursor changed (or nothing happened that needs more than a redraw).
    Edited,
    /// Enter: the text to submit (the composer is now empty).
    Submit(String),
    /// The key means nothing to the composer.
    Ignored,
}

/// The editor state.
#[derive(Debug, Clone)]
pub struct Composer {
    lines: Vec<String>,
    row: usize,
    /// Cursor column in chars (not bytes).
    col: usize,
    history: Vec<String>,
    /// Position while walking the history; `None` when editing a fresh message.
    browsing: Option<usize>,
    /// The unsent draft, restored when walking past the newest history entry.
    draft: Option<String>,
}

impl Default for Composer {
    fn default() -> Self {
        Composer {
            lines: vec![String::new()],
            row: 0,
            col: 0,
            history: Vec::new(),
            browsing: None,
            draft: None,
        }
    }
}

fn byte_at(s: &str, col: usize) -> usize {
    s.char_indices().nth(col).map_or(s.len(), |(i, _)| i)
}

impl Composer {
    /// The whole text.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// The cursor as (line, char column).
    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    /// Replaces the text, cursor at the end.
    pub fn set_text(&mut self, text: &str) {
        self.lines = text.split('\n').map(str::to_owned).collect();
        if self.lines.is_empty() {
            self.lines.push(String::new());
        }
        self.row = self.lines.len() - 1;
        self.col = self.lines[self.row].chars().count();
    }

    pub fn clear(&mut self) {
        self.set_text("");
        self.browsing = None;
        self.draft = None;
    }

    /// Inserts `text` at the cursor; `\r\n` and `\r` become newlines.
    pub fn insert_str(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                self.newline();
            }
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col);
            line.insert_str(at, part);
            self.col += part.chars().count();
        }
    }

    fn newline(&mut self) {
        let line = &mut self.lines[self.row];
        let rest = line.split_off(byte_at(line, self.col));
        self.row += 1;
        self.lines.insert(self.row, rest);
        self.col = 0;
    }

    fn backspace(&mut self) {
        if self.col > 0 {
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col - 1);
            line.remove(at);
            self.col -= 1;
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.lines[self.row].chars().count();
            self.lines[self.row].push_str(&line);
        }
    }

    fn delete(&mut self) {
        let len = self.lines[self.row].chars().count();
        if self.col < len {
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col);
            line.remove(at);
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
    }

    fn delete_word_back(&mut self) {
        let chars: Vec<char> = self.lines[self.row].chars().collect();
        let mut start = self.col;
        while start > 0 && chars[start - 1].is_whitespace() {
            start -= 1;
        }
        while start > 0 && !chars[start - 1].is_whitespace() {
            start -= 1;
        }
        let line = &mut self.lines[self.row];
        let (a, b) = (byte_at(line, start), byte_at(line, self.col));
        line.replace_range(a..b, "");
        self.col = start;
    }

    fn line_len(&self) -> usize {
        self.lines[self.row].chars().count()
    }

    fn history_prev(&mut self) {
        if self.history.is_empty() {
            return;
        }
        let next = match self.browsing {
            None => {
                self.draft = Some(self.text());
                self.history.len() - 1
            }
            Some(0) => return,
            Some(i) => i - 1,
        };
        self.browsing = Some(next);
        let text = self.history[next].clone();
        self.set_text(&text);
    }

    fn history_next(&mut self) {
        let Some(i) = self.browsing else { return };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            let text = self.history[i + 1].clone();
            self.set_text(&text);
        } else {
            self.browsing = None;
            let draft = self.draft.take().unwrap_or_default();
            self.set_text(&draft);
        }
    }

    /// Takes the text for sending and remembers it in the history.
    pub fn take_submission(&mut self) -> String {
        let text = self.text();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.clear();
        text
    }

    /// Handles one key.
    pub fn handle_key(&mut self, key: KeyEvent) -> ComposerOutcome {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Enter if shift || alt => self.newline(),
            KeyCode::Char('j') if ctrl => self.newline(),
            KeyCode::Enter => return ComposerOutcome::Submit(self.take_submission()),
            KeyCode::Char('a') if ctrl => self.col = 0,
            KeyCode::Char('e') if ctrl => self.col = self.line_len(),
            KeyCode::Char('u') if ctrl => {
                let line = &mut self.lines[self.row];
                let at = byte_at(line, self.col);
                line.replace_range(..at, "");
                self.col = 0;
            }
            KeyCode::Char('k') if ctrl => {
                let line = &mut self.lines[self.row];
                let at = byte_at(line, self.col);
                line.truncate(at);
            }
            KeyCode::Char('w') if ctrl => self.delete_word_back(),
            KeyCode::Backspace if alt || ctrl => self.delete_word_back(),
            KeyCode::Char(_) if ctrl || alt => return ComposerOutcome::Ignored,
            KeyCode::Char(c) => self.insert_str(&c.to_string()),
            KeyCode::Tab => return ComposerOutcome::Ignored,
            KeyCode::Backspace => self.backspace(),
            KeyCode::Delete => self.delete(),
            KeyCode::Left => {
                if self.col > 0 {
                    self.col -= 1;
                } else if self.row > 0 {
                    self.row -= 1;
                    self.col = self.line_len();
                }
            }
            KeyCode::Right => {
                if self.col < self.line_len() {
                    self.col += 1;
                } else if self.row + 1 < self.lines.len() {
                    self.row += 1;
                    self.col = 0;
                }
            }
            KeyCode::Home => self.col = 0,
            KeyCode::End => self.col = self.line_len(),
            KeyCode::Up if self.row == 0 => self.history_prev(),
            KeyCode::Up => {
                self.row -= 1;
                self.col = self.col.min(self.line_len());
            }
            KeyCode::Down if self.row + 1 == self.lines.len() => self.history_next(),
            KeyCode::Down => {
                self.row += 1;
                self.col = self.col.min(self.line_len());
            }
            _ => return ComposerOutcome::Ignored,
        }
        ComposerOutcome::Edited
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    fn typed(c: &mut Composer, text: &str) {
        for ch in text.chars() {
            c.handle_key(key(KeyCode::Char(ch)));
        }
    }

    #[test]
    fn enter_submits_and_shift_enter_breaks_the_line() {
        let mut c = Composer::default();
        typed(&mut c, "one");
        c.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
        typed(&mut c, "two");
        c.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
        typed(&mut c, "three");
        assert_eq!(c.lines().len(), 3);
        assert_eq!(
            c.handle_key(key(KeyCode::Enter)),
            ComposerOutcome::Submit("one\ntwo\nthree".into())
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
        assert_eq!(c.cursor(), (0, 0));
    }

    #[test]
    fn history_walks_on_the_first_and_last_line_and_keeps_the_draft() {
        let mut c = Composer::default();
        for m in ["first", "second"] {
            typed(&mut c, m);
            c.handle_key(key(KeyCode::Enter));
        }
        typed(&mut c, "draft");
        c.handle_key(key(KeyCode::Up));
        assert_eq!(c.text(), "second");
        c.handle_key(key(KeyCode::Up));
        assert_eq!(c.text(), "first");
        c.handle_key(key(KeyCode::Up));
        assert_eq!(c.text(), "first");
        c.handle_key(key(KeyCode::Down));
        c.handle_key(key(KeyCode::Down));
        assert_eq!(c.text(), "draft");
    }

    #[test]
    fn up_moves_between_lines_before_reaching_history() {
        let mut c = Composer::default();
        typed(&mut c, "old");
        c.handle_key(key(KeyCode::Enter));
        c.insert_str("a\nbb");
        c.handle_key(key(KeyCode::Up));
        assert_eq!((c.text().as_str(), c.cursor()), ("a\nbb", (0, 1)));
        c.handle_key(key(KeyCode::Up));
        assert_eq!(c.text(), "old");
    }

    #[test]
    fn paste_keeps_newlines_and_backspace_joins_lines() {
        let mut c = Composer::default();
        c.insert_str("x\r\ny");
        assert_eq!(c.lines(), ["x", "y"]);
        c.handle_key(key(KeyCode::Home));
        c.handle_key(key(KeyCode::Backspace));
        assert_eq!(c.text(), "xy");
        c.handle_key(key(KeyCode::Delete));
        assert_eq!(c.text(), "x");
    }
}
