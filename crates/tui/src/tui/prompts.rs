//! Views about what the user is about to send: the history search (Ctrl+R) and the
//! confirmation before a message larger than the model's usable input.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::composer::thousands;
use super::views::{frame, is_ctrl_c, View, ViewAction, ViewKind};
use super::wrap::wrap_lines;

/// Matches listed at most.
const SHOWN: usize = 8;

/// Ctrl+R: an incremental search of the prompt history, newest match first. Typing narrows,
/// Ctrl+R or Up goes to an older match, Down to a newer one, Enter or Tab puts the match in
/// the composer, Esc leaves the draft as it was.
#[derive(Debug, Clone)]
pub struct HistorySearch {
    /// Newest first, without repeats.
    entries: Vec<String>,
    query: String,
    selected: usize,
}

impl HistorySearch {
    /// A search over `history` (oldest first, as the composer keeps it).
    pub fn new(history: &[String]) -> HistorySearch {
        let mut entries: Vec<String> = Vec::new();
        for text in history.iter().rev() {
            if !entries.contains(text) {
                entries.push(text.clone());
            }
        }
        HistorySearch { entries, query: String::new(), selected: 0 }
    }

    fn matches(&self) -> Vec<&str> {
        let query = self.query.to_lowercase();
        self.entries
            .iter()
            .filter(|e| e.to_lowercase().contains(&query))
            .map(String::as_str)
            .collect()
    }
}

impl View for HistorySearch {
    fn kind(&self) -> ViewKind {
        ViewKind::HistorySearch
    }

    fn desired_height(&self, _width: u16) -> u16 {
        u16::try_from(self.matches().len().clamp(1, SHOWN) + 3).unwrap_or(u16::MAX)
    }

    fn render(&self, area: Rect, buf: &mut Buffer) {
        let inner = frame("history search", area, buf);
        let dim = Style::new().fg(Color::DarkGray);
        let mut lines = vec![Line::from(vec![
            Span::styled("search: ", Style::new().fg(Color::Cyan)),
            Span::raw(self.query.clone()),
            Span::styled("▏", Style::new().fg(Color::Cyan)),
        ])];
        let matches = self.matches();
        if matches.is_empty() {
            lines.push(Line::styled("no earlier prompt matches", dim));
        }
        let first = self.selected.saturating_sub(SHOWN - 1);
        for (i, text) in matches.iter().enumerate().skip(first).take(SHOWN) {
            let one_line = text.replace('\n', " ⏎ ");
            let style = if i == self.selected {
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
            } else {
                Style::new()
            };
            let mark = if i == self.selected { "› " } else { "  " };
            lines.push(Line::styled(format!("{mark}{one_line}"), style));
        }
        lines.push(Line::styled("Enter use · Ctrl+R older · Esc cancel", dim));
        // One row per match: long prompts are clipped, not wrapped.
        Paragraph::new(lines).render(inner, buf);
    }

    fn handle_key(&mut self, key: KeyEvent) -> ViewAction {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let found = self.matches().len();
        match key.code {
            KeyCode::Esc => return ViewAction::Close,
            _ if is_ctrl_c(&key) => return ViewAction::Close,
            KeyCode::Char('g') if ctrl => return ViewAction::Close,
            KeyCode::Enter | KeyCode::Tab => {
                return match self.matches().get(self.selected) {
                    Some(text) => ViewAction::UseText((*text).to_owned()),
                    None => ViewAction::Close,
                };
            }
            KeyCode::Char('r') if ctrl => self.selected = (self.selected + 1).min(found.max(1) - 1),
            KeyCode::Up => self.selected = (self.selected + 1).min(found.max(1) - 1),
            KeyCode::Down => self.selected = self.selected.saturating_sub(1),
            KeyCode::Backspace => {
                self.query.pop();
                self.selected = 0;
            }
            KeyCode::Char(c) if !ctrl => {
                self.query.push(c);
                self.selected = 0;
            }
            _ => {}
        }
        ViewAction::Stay
    }
}

/// "This message is about N tokens; the model's usable input is M. Send it anyway?"
#[derive(Debug, Clone)]
pub struct ConfirmSend {
    pub text: String,
    pub tokens: u64,
    pub usable_input: u64,
}

impl ConfirmSend {
    fn body(&self) -> Vec<Line<'static>> {
        let key = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
        vec![
            Line::from(format!(
                "This message is about {} tokens; the model reads at most {} of input.",
                thousands(self.tokens),
                thousands(self.usable_input)
            )),
            Line::styled(
                "Sent as it is, it will be cut when the request is built or rejected by the \
                 provider. Attach the file with @ or paste less instead.",
                Style::new().fg(Color::DarkGray),
            ),
            Line::from(vec![
                Span::styled("y", key),
                Span::raw(" send anyway   "),
                Span::styled("n", key),
                Span::raw(" back to the composer"),
            ]),
        ]
    }
}

impl View for ConfirmSend {
    fn kind(&self) -> ViewKind {
        ViewKind::ConfirmSend
    }

    fn desired_height(&self, width: u16) -> u16 {
        let h = wrap_lines(&self.body(), usize::from(width).max(1)).len();
        u16::try_from(h + 1).unwrap_or(u16::MAX)
    }

    fn render(&self, area: Rect, buf: &mut Buffer) {
        let inner = frame("a very large message", area, buf);
        Paragraph::new(wrap_lines(&self.body(), usize::from(inner.width).max(1)))
            .render(inner, buf);
    }

    fn handle_key(&mut self, key: KeyEvent) -> ViewAction {
        match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => ViewAction::Send(self.text.clone()),
            KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc => {
                ViewAction::PutBack(self.text.clone())
            }
            _ if is_ctrl_c(&key) => ViewAction::PutBack(self.text.clone()),
            _ => ViewAction::Stay,
        }
    }
}
