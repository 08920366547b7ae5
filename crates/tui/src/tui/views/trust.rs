//! The trust prompt for a workspace's config file.

use std::cell::Cell;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::{frame, is_ctrl_c, View, ViewAction, ViewKind};
use crate::tui::wrap::wrap_lines;

/// "This workspace's config sets where your key goes or how much is allowed: trust it?" —
/// asked before the session opens, once per content of the file.
///
/// Invariant: `y` is taken only once every setting has been on screen. When they do not all
/// fit, the list scrolls (↑/↓, PgUp/PgDn) and says how many lines are below; nothing is
/// trusted unseen.
#[derive(Debug, Clone)]
pub struct TrustView {
    pub file: String,
    /// The settings that need trust, whole, as TOML lines.
    pub settings: Vec<String>,
    /// First settings row shown.
    scroll: usize,
    /// Settings rows that fit at the last draw, and whether the last one has been shown.
    rows: Cell<usize>,
    seen_all: Cell<bool>,
}

impl TrustView {
    pub fn new(file: String, settings: Vec<String>) -> TrustView {
        TrustView { file, settings, scroll: 0, rows: Cell::new(0), seen_all: Cell::new(false) }
    }

    fn settings_lines(&self, width: usize) -> Vec<Line<'static>> {
        let lines: Vec<Line<'static>> = self
            .settings
            .iter()
            .map(|s| Line::styled(format!("  {s}"), Style::new().add_modifier(Modifier::BOLD)))
            .collect();
        wrap_lines(&lines, width)
    }

    fn head(&self) -> Line<'static> {
        Line::from(format!("{} sets:", self.file))
    }

    fn foot(&self, below: usize) -> Vec<Line<'static>> {
        let key = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
        let dim = Style::new().fg(Color::DarkGray);
        let mut lines = Vec::new();
        if below > 0 {
            lines.push(Line::styled(
                format!(
                    "  ↓ {below} more lines: scroll with ↓ or PgDn to read them before answering"
                ),
                Style::new().fg(Color::Yellow),
            ));
        }
        lines.push(Line::styled(
            "These decide where your API key goes, how much the model may do without asking \
             and what is redacted. Trust them only if you trust whoever wrote this file.",
            dim,
        ));
        lines.push(Line::from(vec![
            Span::styled("y", key),
            Span::raw(" trust (remembered until the file changes)   "),
            Span::styled("n", key),
            Span::raw(" ignore these settings"),
        ]));
        lines
    }
}

impl View for TrustView {
    fn kind(&self) -> ViewKind {
        ViewKind::Trust
    }

    fn desired_height(&self, width: u16) -> u16 {
        let w = usize::from(width).max(1);
        let foot = wrap_lines(&self.foot(0), w).len();
        let h = 1 + self.settings_lines(w).len() + foot;
        u16::try_from(h + 1).unwrap_or(u16::MAX)
    }

    fn render(&self, area: Rect, buf: &mut Buffer) {
        let inner = frame("trust this workspace?", area, buf);
        let w = usize::from(inner.width).max(1);
        let settings = self.settings_lines(w);
        let height = usize::from(inner.height);
        // Room for the settings once the headline and the footer (with its "more" line when
        // the settings do not fit) are placed.
        let fits = 1 + settings.len() + wrap_lines(&self.foot(0), w).len() <= height;
        let foot_rows = wrap_lines(&self.foot(usize::from(!fits)), w).len();
        let rows = height.saturating_sub(1 + foot_rows).max(1);
        let first = self.scroll.min(settings.len().saturating_sub(rows));
        let shown: Vec<Line<'static>> = settings.iter().skip(first).take(rows).cloned().collect();
        let below = settings.len().saturating_sub(first + shown.len());
        self.rows.set(rows);
        if below == 0 {
            self.seen_all.set(true);
        }
        let mut lines = vec![self.head()];
        lines.extend(shown);
        lines.extend(wrap_lines(&self.foot(below), w));
        Paragraph::new(lines).render(inner, buf);
    }

    fn handle_key(&mut self, key: KeyEvent) -> ViewAction {
        let page = self.rows.get().max(1);
        match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') if self.seen_all.get() => {
                ViewAction::Trust { trusted: true }
            }
            KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc => {
                ViewAction::Trust { trusted: false }
            }
            KeyCode::Down => {
                self.scroll += 1;
                ViewAction::Stay
            }
            KeyCode::Up => {
                self.scroll = self.scroll.saturating_sub(1);
                ViewAction::Stay
            }
            KeyCode::PageDown | KeyCode::Char(' ') => {
                self.scroll += page;
                ViewAction::Stay
            }
            KeyCode::PageUp => {
                self.scroll = self.scroll.saturating_sub(page);
                ViewAction::Stay
            }
            _ if is_ctrl_c(&key) => ViewAction::Trust { trusted: false },
            _ => ViewAction::Stay,
        }
    }
}
