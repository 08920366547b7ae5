//! A titled, scrollable block of text: `/context`, `/help`, `/status`.

use std::cell::Cell;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

use super::{frame, is_ctrl_c, View, ViewAction, ViewKind};
use crate::tui::wrap::wrap_lines;

/// A titled, scrollable block of text (`/context`, `/help`).
#[derive(Debug, Clone)]
pub struct TextView {
    pub title: String,
    pub lines: Vec<Line<'static>>,
    scroll: usize,
    /// The furthest scroll the last frame allowed (so keys past the end do nothing, and the
    /// first key back moves at once).
    max_scroll: Cell<usize>,
}

impl TextView {
    pub fn new(title: impl Into<String>, text: &str) -> TextView {
        let lines = text.lines().map(|l| Line::from(l.to_owned())).collect();
        TextView::from_lines(title, lines)
    }

    pub fn from_lines(title: impl Into<String>, lines: Vec<Line<'static>>) -> TextView {
        TextView { title: title.into(), lines, scroll: 0, max_scroll: Cell::new(usize::MAX) }
    }

    fn scroll_to(&mut self, scroll: usize) {
        self.scroll = scroll.min(self.max_scroll.get());
    }
}

impl View for TextView {
    fn kind(&self) -> ViewKind {
        ViewKind::Text
    }

    fn desired_height(&self, width: u16) -> u16 {
        let h = wrap_lines(&self.lines, usize::from(width).max(1)).len() + 2;
        u16::try_from(h).unwrap_or(u16::MAX)
    }

    fn render(&self, area: Rect, buf: &mut Buffer) {
        let inner = frame(&self.title, area, buf);
        if inner.height == 0 {
            return;
        }
        let body_rows = usize::from(inner.height - 1);
        let lines = wrap_lines(&self.lines, usize::from(inner.width).max(1));
        self.max_scroll.set(lines.len().saturating_sub(body_rows));
        let scroll = self.scroll.min(self.max_scroll.get());
        let mut shown: Vec<Line<'static>> =
            lines.into_iter().skip(scroll).take(body_rows).collect();
        while shown.len() < body_rows {
            shown.push(Line::default());
        }
        shown.push(Line::styled(
            "Esc close · ↑↓ PgUp PgDn Home End scroll",
            Style::new().fg(Color::DarkGray),
        ));
        Paragraph::new(shown).render(inner, buf);
    }

    fn handle_key(&mut self, key: KeyEvent) -> ViewAction {
        if is_ctrl_c(&key) {
            return ViewAction::Close;
        }
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Enter => return ViewAction::Close,
            KeyCode::Up => self.scroll_to(self.scroll.saturating_sub(1)),
            KeyCode::Down => self.scroll_to(self.scroll + 1),
            KeyCode::PageUp => self.scroll_to(self.scroll.saturating_sub(10)),
            KeyCode::PageDown => self.scroll_to(self.scroll + 10),
            KeyCode::Home => self.scroll_to(0),
            KeyCode::End => self.scroll_to(usize::MAX),
            _ => {}
        }
        ViewAction::Stay
    }
}
