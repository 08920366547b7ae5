//! A titled list to choose from: grants (`/approval`), the MCP servers (`/mcp`), branch points,
//! models, what to copy.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::{is_ctrl_c, list, View, ViewAction, ViewKind, PICKER_ROWS};

/// One choice of a [`ChoiceView`].
#[derive(Debug, Clone)]
pub struct Choice {
    pub label: String,
    pub action: ViewAction,
}

/// A titled list to choose from with ↑↓ and Enter (grants, branch points, what to copy).
#[derive(Debug, Clone)]
pub struct ChoiceView {
    pub title: String,
    pub choices: Vec<Choice>,
    /// Said when the list is empty.
    pub empty: String,
    pub footer: String,
    /// [`ViewKind::Choice`] picks; [`ViewKind::Grants`] (`/approval`) revokes the chosen
    /// grant with `d` or Delete; both it and [`ViewKind::McpServers`] are reports Enter closes.
    kind: ViewKind,
    selected: usize,
}

impl ChoiceView {
    pub fn new(
        title: impl Into<String>,
        choices: Vec<Choice>,
        empty: &str,
        footer: &str,
    ) -> ChoiceView {
        ChoiceView {
            title: title.into(),
            choices,
            empty: empty.to_owned(),
            footer: footer.to_owned(),
            kind: ViewKind::Choice,
            selected: 0,
        }
    }

    /// The `/approval` list: `d` revokes, Enter closes.
    pub fn grants(mut self) -> ChoiceView {
        self.kind = ViewKind::Grants;
        self
    }

    /// The `/mcp` list: Enter closes.
    pub fn mcp_servers(mut self) -> ChoiceView {
        self.kind = ViewKind::McpServers;
        self
    }

    /// Starts on the last choice (the newest message, say).
    pub fn at_end(mut self) -> ChoiceView {
        self.selected = self.choices.len().saturating_sub(1);
        self
    }

    /// Starts on choice `index` (the model in use, say).
    pub fn selected(mut self, index: usize) -> ChoiceView {
        self.selected = index.min(self.choices.len().saturating_sub(1));
        self
    }
}

impl View for ChoiceView {
    fn kind(&self) -> ViewKind {
        self.kind
    }

    fn desired_height(&self, _width: u16) -> u16 {
        u16::try_from(self.choices.len().clamp(1, PICKER_ROWS) + 2).unwrap_or(u16::MAX)
    }

    fn render(&self, area: Rect, buf: &mut Buffer) {
        let labels: Vec<String> = self.choices.iter().map(|c| c.label.clone()).collect();
        list(&self.title, &labels, self.selected, &self.empty, &self.footer, area, buf);
    }

    fn handle_key(&mut self, key: KeyEvent) -> ViewAction {
        if is_ctrl_c(&key) {
            return ViewAction::Close;
        }
        match key.code {
            KeyCode::Esc => ViewAction::Close,
            KeyCode::Up => {
                self.selected = self.selected.saturating_sub(1);
                ViewAction::Stay
            }
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(self.choices.len().saturating_sub(1));
                ViewAction::Stay
            }
            KeyCode::PageUp | KeyCode::Home => {
                let step = if key.code == KeyCode::Home { usize::MAX } else { PICKER_ROWS };
                self.selected = self.selected.saturating_sub(step);
                ViewAction::Stay
            }
            KeyCode::PageDown | KeyCode::End => {
                let step = if key.code == KeyCode::End { usize::MAX } else { PICKER_ROWS };
                let last = self.choices.len().saturating_sub(1);
                self.selected = self.selected.saturating_add(step).min(last);
                ViewAction::Stay
            }
            KeyCode::Char('d') | KeyCode::Delete
                if self.kind == ViewKind::Grants && !self.choices.is_empty() =>
            {
                ViewAction::Revoke(self.selected + 1)
            }
            KeyCode::Enter if self.kind != ViewKind::Choice => ViewAction::Close,
            KeyCode::Enter => match self.choices.get(self.selected) {
                Some(choice) => choice.action.clone(),
                None => ViewAction::Close,
            },
            _ => ViewAction::Stay,
        }
    }
}
