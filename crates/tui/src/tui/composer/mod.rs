//! The composer: a multi-line text editor with history, pasted-text chips and the usual
//! shell-style keys.
//!
//! Owns the text being typed, the cursor, the prompt history (loaded by the caller; the app
//! asks the event loop to persist new entries) and the pastes behind chips. Keys: Enter
//! submits; Shift+Enter (where the terminal reports it), Alt+Enter or Ctrl+J insert a newline;
//! Left/Right move by grapheme, Ctrl/Alt+Left/Right (and Alt+B/F) by word; Up/Down move by
//! screen row and, on the first/last row, walk the history; Home/End and Ctrl+A/E go to the
//! start/end of the line; Backspace/Delete remove a grapheme, Alt+Backspace, Ctrl+Backspace
//! and Ctrl+W the word before the cursor, Alt+D and Ctrl+Delete the word after it; Ctrl+U/K
//! delete to the start/end of the line; Ctrl+X unfolds the chip before the cursor.
//!
//! A paste of more than [`CHIP_MIN_LINES`] lines or [`CHIP_MIN_BYTES`] bytes becomes a chip:
//! one character of a private-use range in the text, drawn as `[pasted 4,812 lines · 212 KB]`
//! and replaced by the pasted text when the message is sent.
//!
//! Invariants: `lines` is never empty; the cursor is a (line, byte offset) on a grapheme
//! boundary of that line; the text holds no control characters but tabs (newlines split
//! lines), and no chip characters except those of its own pastes.

pub mod layout;
pub mod prompt_history;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use layout::{Appearance, Layout};

/// A paste with more lines than this becomes a chip.
pub const CHIP_MIN_LINES: usize = 5;
/// A paste of more bytes than this becomes a chip.
pub const CHIP_MIN_BYTES: usize = 2_000;
/// Chip characters: Supplementary Private Use Area-B, which no font or text uses.
const CHIP_BASE: u32 = 0x10_0000;
const CHIP_END: u32 = 0x10_FFFD;

/// What a key did to the composer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComposerOutcome {
    /// The text or cursor changed (or nothing happened that needs more than a redraw).
    Edited,
    /// Enter: the text to submit, chips unfolded (the composer is now empty).
    Submit(String),
    /// The key means nothing to the composer.
    Ignored,
}

/// The editor state.
#[derive(Debug, Clone)]
pub struct Composer {
    lines: Vec<String>,
    row: usize,
    /// Cursor byte offset in `lines[row]`, on a grapheme boundary.
    col: usize,
    /// The column Up/Down aim for, kept while moving vertically.
    goal: Option<usize>,
    history: Vec<String>,
    /// Position while walking the history; `None` when editing a fresh message.
    browsing: Option<usize>,
    /// The unsent draft, restored when walking past the newest history entry.
    draft: Option<String>,
    /// The text is a history entry just recalled, not yet touched: a recalled `/command`
    /// opens no pop-up, so Up keeps walking the history until the user types.
    recalled: bool,
    /// The text behind each chip, by chip number.
    pastes: Vec<String>,
    /// The width the composer was last laid out at (for Up/Down by screen row).
    width: usize,
}

impl Default for Composer {
    fn default() -> Self {
        Composer {
            lines: vec![String::new()],
            row: 0,
            col: 0,
            goal: None,
            history: Vec::new(),
            browsing: None,
            draft: None,
            recalled: false,
            pastes: Vec::new(),
            width: 80,
        }
    }
}

/// Draws chips as their labels.
struct Chips<'a>(&'a [String]);

impl Appearance for Chips<'_> {
    fn chip(&self, c: char) -> Option<String> {
        let n = chip_number(c)?;
        self.0.get(n).map(|text| chip_label(text))
    }
}

fn chip_number(c: char) -> Option<usize> {
    let c = u32::from(c);
    (CHIP_BASE..=CHIP_END).contains(&c).then(|| (c - CHIP_BASE) as usize)
}

/// `[pasted 4,812 lines · 212 KB]`.
pub fn chip_label(text: &str) -> String {
    let lines = text.lines().count().max(1);
    let size = match text.len() {
        n if n < 1024 => format!("{n} B"),
        n if n < 1024 * 1024 => format!("{} KB", n.div_ceil(1024)),
        n => format!("{:.1} MB", n as f64 / (1024.0 * 1024.0)),
    };
    let unit = if lines == 1 { "line" } else { "lines" };
    format!("[pasted {} {unit} · {size}]", thousands(lines as u64))
}

/// `4812` as `4,812`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Text as the composer holds it: `\r\n` and `\r` become newlines, control characters other
/// than tabs and newlines are dropped, and characters of the chip range become U+FFFD.
fn sanitize(text: &str) -> String {
    text.replace("\r\n", "\n")
        .replace('\r', "\n")
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .map(|c| if chip_number(c).is_some() { '\u{FFFD}' } else { c })
        .collect()
}

impl Composer {
    /// A composer that recalls `history` (oldest first) with Up.
    pub fn with_history(history: Vec<String>) -> Composer {
        Composer { history, ..Composer::default() }
    }

    /// The whole text, chips unfolded: what would be sent.
    pub fn text(&self) -> String {
        self.unfold(&self.lines.join("\n"))
    }

    fn unfold(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            match chip_number(c).and_then(|n| self.pastes.get(n)) {
                Some(paste) => out.push_str(paste),
                None => out.push(c),
            }
        }
        out
    }

    /// The text as typed, chips folded into their labels (what the screen shows).
    #[cfg(test)]
    pub fn shown_text(&self) -> String {
        let look = Chips(&self.pastes);
        self.lines
            .join("\n")
            .chars()
            .map(|c| look.chip(c).unwrap_or_else(|| c.to_string()))
            .collect()
    }

    /// The current line up to the cursor (what a mention being typed ends).
    pub fn before_cursor(&self) -> &str {
        &self.lines[self.row][..self.col]
    }

    /// Replaces the `len` bytes before the cursor with `text` (a completed mention).
    pub fn replace_before_cursor(&mut self, len: usize, text: &str) {
        let start = self.col.saturating_sub(len);
        let start = self.lines[self.row].floor_char_boundary(start);
        self.lines[self.row].replace_range(start..self.col, "");
        self.col = start;
        self.insert_str(text);
    }

    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// The history, oldest first.
    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// Lays the text out at `width` columns (and remembers the width for Up/Down).
    pub fn layout(&mut self, width: usize) -> Layout {
        self.width = width.max(1);
        layout::layout(&self.lines, (self.row, self.col), self.width, &Chips(&self.pastes))
    }

    /// Replaces the text, cursor at the end.
    pub fn set_text(&mut self, text: &str) {
        self.lines = sanitize(text).split('\n').map(str::to_owned).collect();
        self.row = self.lines.len() - 1;
        self.col = self.lines[self.row].len();
        self.goal = None;
    }

    pub fn clear(&mut self) {
        self.set_text("");
        self.pastes.clear();
        self.browsing = None;
        self.draft = None;
        self.recalled = false;
    }

    /// Whether the text is a history entry just recalled and not yet edited.
    pub fn is_recalled(&self) -> bool {
        self.recalled
    }

    /// Inserts typed or pasted text at the cursor.
    pub fn insert_str(&mut self, text: &str) {
        let text = sanitize(text);
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                self.newline();
            }
            self.lines[self.row].insert_str(self.col, part);
            self.col += part.len();
        }
        self.goal = None;
    }

    /// A paste: a large one becomes a chip, a small one is inserted as typed.
    pub fn paste(&mut self, text: &str) {
        self.recalled = false;
        let text = sanitize(text);
        if text.lines().count() <= CHIP_MIN_LINES && text.len() <= CHIP_MIN_BYTES {
            self.insert_str(&text);
            return;
        }
        let n = self.pastes.len() as u32;
        match char::from_u32(CHIP_BASE + n).filter(|_| CHIP_BASE + n <= CHIP_END) {
            Some(chip) => {
                self.pastes.push(text);
                self.lines[self.row].insert(self.col, chip);
                self.col += chip.len_utf8();
                self.goal = None;
            }
            None => self.insert_str(&text),
        }
    }

    /// Unfolds the chip just before the cursor into its text (Ctrl+X).
    fn unfold_chip(&mut self) -> bool {
        let before = layout::prev_boundary(&self.lines[self.row], self.col);
        let chip = self.lines[self.row][before..self.col].chars().next();
        let Some(n) = chip.and_then(chip_number) else { return false };
        let Some(text) = self.pastes.get(n).cloned() else { return false };
        self.lines[self.row].replace_range(before..self.col, "");
        self.col = before;
        self.insert_str(&text);
        true
    }

    fn newline(&mut self) {
        let rest = self.lines[self.row].split_off(self.col);
        self.row += 1;
        self.lines.insert(self.row, rest);
        self.col = 0;
    }

    fn backspace(&mut self) {
        if self.col > 0 {
            let start = layout::prev_boundary(&self.lines[self.row], self.col);
            self.lines[self.row].replace_range(start..self.col, "");
            self.col = start;
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.lines[self.row].len();
            self.lines[self.row].push_str(&line);
        }
    }

    fn delete(&mut self) {
        let line = &mut self.lines[self.row];
        if self.col < line.len() {
            let end = layout::next_boundary(line, self.col);
            line.replace_range(self.col..end, "");
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
    }

    fn delete_word_back(&mut self) {
        if self.col == 0 {
            self.backspace();
            return;
        }
        let start = layout::word_start_before(&self.lines[self.row], self.col);
        self.lines[self.row].replace_range(start..self.col, "");
        self.col = start;
    }

    fn delete_word_forward(&mut self) {
        let line = &mut self.lines[self.row];
        if self.col == line.len() {
            self.delete();
            return;
        }
        let end = layout::word_end_after(line, self.col);
        line.replace_range(self.col..end, "");
    }

    fn left(&mut self) {
        if self.col > 0 {
            self.col = layout::prev_boundary(&self.lines[self.row], self.col);
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.lines[self.row].len();
        }
    }

    fn right(&mut self) {
        if self.col < self.lines[self.row].len() {
            self.col = layout::next_boundary(&self.lines[self.row], self.col);
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    fn word_left(&mut self) {
        if self.col == 0 {
            self.left();
        } else {
            self.col = layout::word_start_before(&self.lines[self.row], self.col);
        }
    }

    fn word_right(&mut self) {
        if self.col == self.lines[self.row].len() {
            self.right();
        } else {
            self.col = layout::word_end_after(&self.lines[self.row], self.col);
        }
    }

    /// Up/Down by screen row, aiming at the column the vertical move started from; `false`
    /// when the cursor is already on the first/last row.
    fn vertical(&mut self, up: bool) -> bool {
        let l = self.layout(self.width);
        let (row, col) = l.cursor;
        let target = if up { row.checked_sub(1) } else { Some(row + 1) };
        let Some(target) = target.filter(|&t| t < l.rows.len()) else { return false };
        let goal = *self.goal.get_or_insert(col);
        let r = &l.rows[target];
        self.row = r.line;
        self.col = layout::offset_at_column(r, goal);
        true
    }

    fn history_prev(&mut self) {
        if self.history.is_empty() {
            return;
        }
        let next = match self.browsing {
            None => {
                self.draft = Some(self.lines.join("\n"));
                self.history.len() - 1
            }
            Some(0) => return,
            Some(i) => i - 1,
        };
        self.browsing = Some(next);
        self.recalled = true;
        let text = self.history[next].clone();
        self.set_text(&text);
    }

    fn history_next(&mut self) {
        let Some(i) = self.browsing else { return };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            self.recalled = true;
            let text = self.history[i + 1].clone();
            self.set_text(&text);
        } else {
            self.browsing = None;
            self.recalled = false;
            let draft = self.draft.take().unwrap_or_default();
            self.set_text(&draft);
        }
    }

    /// Adds `text` to the history (not twice in a row).
    pub fn remember(&mut self, text: &str) {
        if !text.trim().is_empty() && self.history.last().map(String::as_str) != Some(text) {
            self.history.push(text.to_owned());
        }
    }

    /// Takes the text for sending (chips unfolded) and remembers it in the history.
    pub fn take_submission(&mut self) -> String {
        let text = self.text();
        self.remember(&text);
        self.clear();
        text
    }

    /// Handles one key.
    pub fn handle_key(&mut self, key: KeyEvent) -> ComposerOutcome {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let vertical = matches!(key.code, KeyCode::Up | KeyCode::Down);
        match key.code {
            KeyCode::Enter if shift || alt => self.newline(),
            KeyCode::Char('j') if ctrl => self.newline(),
            KeyCode::Enter => return ComposerOutcome::Submit(self.take_submission()),
            KeyCode::Char('a') if ctrl => self.col = 0,
            KeyCode::Char('e') if ctrl => self.col = self.lines[self.row].len(),
            KeyCode::Char('u') if ctrl => {
                self.lines[self.row].replace_range(..self.col, "");
                self.col = 0;
            }
            KeyCode::Char('k') if ctrl => self.lines[self.row].truncate(self.col),
            KeyCode::Char('w') | KeyCode::Char('h') if ctrl => self.delete_word_back(),
            KeyCode::Char('x') if ctrl => {
                if !self.unfold_chip() {
                    return ComposerOutcome::Ignored;
                }
            }
            KeyCode::Char('b') if alt => self.word_left(),
            KeyCode::Char('f') if alt => self.word_right(),
            KeyCode::Char('d') if alt => self.delete_word_forward(),
            KeyCode::Char(_) if ctrl || alt => return ComposerOutcome::Ignored,
            KeyCode::Char(c) => {
                let mut buf = [0u8; 4];
                self.insert_str(c.encode_utf8(&mut buf));
            }
            KeyCode::Tab => return ComposerOutcome::Ignored,
            KeyCode::Backspace if alt || ctrl => self.delete_word_back(),
            KeyCode::Backspace => self.backspace(),
            KeyCode::Delete if ctrl || alt => self.delete_word_forward(),
            KeyCode::Delete => self.delete(),
            KeyCode::Left if ctrl || alt => self.word_left(),
            KeyCode::Right if ctrl || alt => self.word_right(),
            KeyCode::Left => self.left(),
            KeyCode::Right => self.right(),
            KeyCode::Home => self.col = 0,
            KeyCode::End => self.col = self.lines[self.row].len(),
            KeyCode::Up => {
                if !self.vertical(true) {
                    self.history_prev();
                }
            }
            KeyCode::Down => {
                if !self.vertical(false) {
                    self.history_next();
                }
            }
            _ => return ComposerOutcome::Ignored,
        }
        if !vertical {
            self.goal = None;
            self.recalled = false;
        }
        ComposerOutcome::Edited
    }
}

#[cfg(test)]
mod tests;
