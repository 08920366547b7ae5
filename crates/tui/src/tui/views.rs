//! Modal views, drawn as a stack over the composer: tool approval, a scrollable text view
//! (`/context`, `/help`) and the session picker (`/resume`, `/sessions`).
//!
//! A view owns its keys while it is on top and answers each with a [`ViewAction`]; the app
//! turns actions into ops or effects and pops the view when the action says it is done. Views
//! never hold an engine handle. Invariant: every view can be left with Esc (an approval left
//! that way is a denial, so a turn never waits on a view that is gone).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use std::cell::Cell;

use codewhale_engine::protocol::ApprovalScope;

use super::wrap::wrap_lines;

/// What a key in a view asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViewAction {
    /// Handled; stay open.
    Stay,
    /// Close the view.
    Close,
    /// Answer an approval and close.
    Approve { call_id: String, scope: ApprovalScope },
    Deny {
        call_id: String,
        /// What the user said, for the model.
        reason: Option<String>,
    },
    /// Open this session and close.
    OpenSession { id: String },
    /// Import this session file of another tool and close.
    Import(std::path::PathBuf),
    /// Ctrl+C inside a view: interrupt the turn.
    Interrupt,
    /// The answer to "trust this workspace's config?", then open the session.
    Trust { trusted: bool },
    /// Put this text in the composer and close (a history search's choice, a message whose
    /// sending was declined).
    UseText(String),
    /// Put this declined message back in the composer as it was typed — a large paste as its
    /// chip again, not thousands of raw lines — and close.
    PutBack(String),
    /// Send this message (confirmed although it is larger than the window) and close.
    Send(String),
    /// Start a new session (Esc on the start-up picker) and close.
    NewSession,
    /// Take back grant `n` (1-based) and stay.
    Revoke(usize),
    /// Put this text on the clipboard and close.
    Copy(String),
    /// Move HEAD back to (`fork: false`) or start a new branch at (`fork: true`) entry `id`.
    Branch { id: String, fork: bool },
    /// Check out the branch whose tip is `id`.
    Checkout { id: String },
    /// Use this model from the next request on.
    SwitchModel(String),
    /// The answer to "what to take back?" of a rewind or fork to `to`.
    TakeBack { to: String, take: codewhale_engine::protocol::TakeBack, fork: bool, force: bool },
    /// The answer to `/undo`'s question.
    Undo { force: bool },
}

/// A modal view.
pub trait View: std::fmt::Debug + Send {
    /// Rows wanted at `width` (the app clamps to the screen).
    fn desired_height(&self, width: u16) -> u16;
    fn render(&self, area: Rect, buf: &mut Buffer);
    fn handle_key(&mut self, key: KeyEvent) -> ViewAction;
    /// The approval's call id, so an approval that the turn no longer waits for can be closed.
    fn approval_call(&self) -> Option<&str> {
        None
    }

    /// Whether this is the `/approval` list (replaced when the grants change).
    fn is_grants(&self) -> bool {
        false
    }

    /// Whether this is the `/mcp` list (replaced by a newer one).
    fn is_mcp(&self) -> bool {
        false
    }
}

pub(crate) fn frame(title: &str, area: Rect, buf: &mut Buffer) -> Rect {
    Clear.render(area, buf);
    let block = Block::default()
        .borders(Borders::TOP)
        .title(Span::styled(format!(" {title} "), Style::new().add_modifier(Modifier::BOLD)))
        .border_style(Style::new().fg(Color::Cyan));
    let inner = block.inner(area);
    block.render(area, buf);
    inner
}

pub(crate) fn is_ctrl_c(key: &KeyEvent) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c')
}

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
    /// `d` and Delete revoke the chosen grant (the `/approval` view).
    pub revocable: bool,
    /// The `/mcp` view: a report; Enter closes it.
    pub mcp: bool,
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
            revocable: false,
            mcp: false,
            selected: 0,
        }
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
    fn is_grants(&self) -> bool {
        self.revocable
    }

    fn is_mcp(&self) -> bool {
        self.mcp
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
            KeyCode::Char('d') | KeyCode::Delete if self.revocable && !self.choices.is_empty() => {
                ViewAction::Revoke(self.selected + 1)
            }
            KeyCode::Enter if self.revocable || self.mcp => ViewAction::Close,
            KeyCode::Enter => match self.choices.get(self.selected) {
                Some(choice) => choice.action.clone(),
                None => ViewAction::Close,
            },
            _ => ViewAction::Stay,
        }
    }
}

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

/// Rows of the picker list at most (it scrolls past that).
const PICKER_ROWS: usize = 12;

impl SessionPicker {
    pub fn new(title: impl Into<String>, rows: Vec<SessionRow>) -> SessionPicker {
        SessionPicker { title: title.into(), rows, selected: 0, startup: false }
    }
}

impl View for SessionPicker {
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

/// A titled list with one line per row, the selected one reversed, scrolled to keep it in
/// view, and a footer of keys.
fn list(
    title: &str,
    labels: &[String],
    selected: usize,
    empty: &str,
    footer: &str,
    area: Rect,
    buf: &mut Buffer,
) {
    let inner = frame(title, area, buf);
    if inner.height == 0 {
        return;
    }
    let rows = usize::from(inner.height - 1);
    let first = selected.saturating_sub(rows.saturating_sub(1));
    let mut lines: Vec<Line<'static>> = if labels.is_empty() {
        vec![Line::styled(empty.to_owned(), Style::new().fg(Color::DarkGray))]
    } else {
        labels
            .iter()
            .enumerate()
            .skip(first)
            .take(rows)
            .map(|(i, label)| {
                let style = if i == selected {
                    Style::new().add_modifier(Modifier::REVERSED)
                } else {
                    Style::default()
                };
                let text: String = label.chars().take(usize::from(inner.width)).collect();
                Line::styled(text, style)
            })
            .collect()
    };
    while lines.len() < rows {
        lines.push(Line::default());
    }
    // A list longer than the view says where it is, so what is below is never a surprise.
    let footer = if labels.len() > rows {
        format!("{footer} · {} of {} (↑/↓, PgUp/PgDn)", selected + 1, labels.len())
    } else {
        footer.to_owned()
    };
    lines.push(Line::styled(footer, Style::new().fg(Color::DarkGray)));
    Paragraph::new(lines).render(inner, buf);
}

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
