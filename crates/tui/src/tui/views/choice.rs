//! A titled list to choose from: grants (`/approval`), the MCP servers (`/mcp`), branch points,
//! models, what to copy.
//!
//! A list given keys ([`ChoiceView::filter_by`], `/model`) narrows as the user types: each
//! key is matched fuzzily (nucleo, as the `@` picker does), the best matches first, Backspace
//! edits the filter and Esc clears it before it closes the list.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
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
    /// Index into `shown`.
    selected: usize,
    /// The choices on the list, best match first: all of them, in order, without a filter.
    shown: Vec<usize>,
    /// What typing narrows the list by, when it does.
    filter: Option<Filter>,
}

/// Type-to-filter: one key per choice and what was typed.
#[derive(Debug, Clone, Default)]
struct Filter {
    keys: Vec<String>,
    query: String,
}

impl ChoiceView {
    pub fn new(
        title: impl Into<String>,
        choices: Vec<Choice>,
        empty: &str,
        footer: &str,
    ) -> ChoiceView {
        let shown = (0..choices.len()).collect();
        ChoiceView {
            title: title.into(),
            choices,
            empty: empty.to_owned(),
            footer: footer.to_owned(),
            kind: ViewKind::Choice,
            selected: 0,
            shown,
            filter: None,
        }
    }

    /// Typing narrows the list to the choices whose key (one per choice, in order) matches.
    pub fn filter_by(mut self, keys: Vec<String>) -> ChoiceView {
        self.filter = Some(Filter { keys, query: String::new() });
        self
    }

    /// Shows the choices whose key matches what was typed, the best first, and selects the
    /// best.
    fn refilter(&mut self) {
        let Some(filter) = &self.filter else { return };
        self.selected = 0;
        if filter.query.is_empty() {
            self.shown = (0..self.choices.len()).collect();
            return;
        }
        let pattern = Pattern::parse(&filter.query, CaseMatching::Smart, Normalization::Smart);
        let mut matcher = Matcher::new(Config::DEFAULT);
        let mut buf = Vec::new();
        let mut scored: Vec<(u32, usize)> = filter
            .keys
            .iter()
            .enumerate()
            .take(self.choices.len())
            .filter_map(|(i, key)| {
                Some((pattern.score(Utf32Str::new(key, &mut buf), &mut matcher)?, i))
            })
            .collect();
        // Best first; equal scores keep the list's order.
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        self.shown = scored.into_iter().map(|(_, i)| i).collect();
    }

    /// The choice under the cursor.
    fn current(&self) -> Option<&Choice> {
        self.shown.get(self.selected).and_then(|&i| self.choices.get(i))
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
        self.selected = self.shown.len().saturating_sub(1);
        self
    }

    /// Starts on choice `index` (the model in use, say).
    pub fn selected(mut self, index: usize) -> ChoiceView {
        self.selected = index.min(self.shown.len().saturating_sub(1));
        self
    }
}

impl View for ChoiceView {
    fn kind(&self) -> ViewKind {
        self.kind
    }

    fn desired_height(&self, _width: u16) -> u16 {
        // The whole list's height, so the pane does not jump while a filter narrows it.
        u16::try_from(self.choices.len().clamp(1, PICKER_ROWS) + 2).unwrap_or(u16::MAX)
    }

    fn render(&self, area: Rect, buf: &mut Buffer) {
        let labels: Vec<String> = self
            .shown
            .iter()
            .filter_map(|&i| self.choices.get(i))
            .map(|c| c.label.clone())
            .collect();
        let (empty, footer) = match &self.filter {
            None => (self.empty.clone(), self.footer.clone()),
            Some(f) if f.query.is_empty() => {
                (self.empty.clone(), format!("type to filter · {}", self.footer))
            }
            Some(f) => (
                format!("nothing matches \"{}\"; Backspace edits the filter", f.query),
                format!("filter: {}▏ · Esc clears · {}", f.query, self.footer),
            ),
        };
        list(&self.title, &labels, self.selected, &empty, &footer, area, buf);
    }

    fn handle_key(&mut self, key: KeyEvent) -> ViewAction {
        if is_ctrl_c(&key) {
            return ViewAction::Close;
        }
        if let Some(filter) = self.filter.as_mut() {
            let typing = !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
            match key.code {
                KeyCode::Char(c) if typing => {
                    filter.query.push(c);
                    self.refilter();
                    return ViewAction::Stay;
                }
                KeyCode::Backspace => {
                    filter.query.pop();
                    self.refilter();
                    return ViewAction::Stay;
                }
                KeyCode::Esc if !filter.query.is_empty() => {
                    filter.query.clear();
                    self.refilter();
                    return ViewAction::Stay;
                }
                _ => {}
            }
        }
        match key.code {
            KeyCode::Esc => ViewAction::Close,
            KeyCode::Up => {
                self.selected = self.selected.saturating_sub(1);
                ViewAction::Stay
            }
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(self.shown.len().saturating_sub(1));
                ViewAction::Stay
            }
            KeyCode::PageUp | KeyCode::Home => {
                let step = if key.code == KeyCode::Home { usize::MAX } else { PICKER_ROWS };
                self.selected = self.selected.saturating_sub(step);
                ViewAction::Stay
            }
            KeyCode::PageDown | KeyCode::End => {
                let step = if key.code == KeyCode::End { usize::MAX } else { PICKER_ROWS };
                let last = self.shown.len().saturating_sub(1);
                self.selected = self.selected.saturating_add(step).min(last);
                ViewAction::Stay
            }
            KeyCode::Char('d') | KeyCode::Delete
                if self.kind == ViewKind::Grants && !self.choices.is_empty() =>
            {
                ViewAction::Revoke(self.shown.get(self.selected).map_or(1, |i| i + 1))
            }
            KeyCode::Enter if self.kind != ViewKind::Choice => ViewAction::Close,
            KeyCode::Enter => match self.current() {
                Some(choice) => choice.action.clone(),
                None => ViewAction::Close,
            },
            _ => ViewAction::Stay,
        }
    }
}
