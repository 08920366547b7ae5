//! The session picker: `/resume`, `/sessions` and the start-up choice.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::{is_ctrl_c, list, View, ViewAction, ViewKind, PICKER_ROWS};

/// One session in the picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub id: String,
    pub updated: String,
    pub entries: u64,
    pub cwd: String,
    pub title: String,
    /// The session open now.
    pub current: bool,
}

/// Choose a session with ↑/↓ and Enter.
#[derive(Debug, Clone)]
pub struct SessionPicker {
    pub title: String,
    pub rows: Vec<SessionRow>,
    selected: usize,
    /// Shown at start-up with no session open: Esc starts a new one.
    pub startup: bool,
}

impl SessionPicker {
    pub fn new(title: impl Into<String>, rows: Vec<SessionRow>) -> SessionPicker {
        SessionPicker { title: title.into(), rows, selected: 0, startup: false }
    }
}

impl View for SessionPicker {
    fn kind(&self) -> ViewKind {
        ViewKind::Sessions
    }

    fn desired_height(&self, _width: u16) -> u16 {
        let rows = self.rows.len().clamp(1, PICKER_ROWS);
        u16::try_from(rows + 2).unwrap_or(u16::MAX)
    }

    fn render(&self, area: Rect, buf: &mut Buffer) {
        let labels: Vec<String> = self
            .rows
            .iter()
            .map(|r| {
                let short: String = r.id.chars().take(8).collect();
                let mark = if r.current { "●" } else { " " };
                format!("{mark} {short}  {}  {:>4}  {}  {}", r.updated, r.entries, r.title, r.cwd)
            })
            .collect();
        let footer = if self.startup {
            "Enter open · Esc start a new session"
        } else {
            "Enter open · Esc close · ● the session open now"
        };
        list(&self.title, &labels, self.selected, "no sessions yet", footer, area, buf);
    }

    fn handle_key(&mut self, key: KeyEvent) -> ViewAction {
        if is_ctrl_c(&key) {
            return ViewAction::Close;
        }
        match key.code {
            KeyCode::Esc if self.startup => ViewAction::NewSession,
            KeyCode::Esc => ViewAction::Close,
            KeyCode::Up => {
                self.selected = self.selected.saturating_sub(1);
                ViewAction::Stay
            }
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(self.rows.len().saturating_sub(1));
                ViewAction::Stay
            }
            KeyCode::Enter => match self.rows.get(self.selected) {
                Some(row) => ViewAction::OpenSession { id: row.id.clone() },
                None => ViewAction::Close,
            },
            _ => ViewAction::Stay,
        }
    }
}
