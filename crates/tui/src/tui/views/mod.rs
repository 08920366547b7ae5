//! Modal views, drawn as a stack over the composer: tool approval, a scrollable text view
//! (`/context`, `/help`) and the session picker (`/resume`, `/sessions`).
//!
//! A view owns its keys while it is on top and answers each with a [`ViewAction`]; the app
//! turns actions into ops or effects and pops the view when the action says it is done. Views
//! never hold an engine handle. Invariant: every view can be left with Esc (an approval left
//! that way is a denial, so a turn never waits on a view that is gone).
//!
//! The views live beside this file, one per kind; [`ViewStack`] is the stack the app holds. It
//! finds views by [`ViewKind`], so replacing "the `/mcp` list" or closing "any approval" is one
//! call, not a query method per view.

mod choice;
mod sessions;
mod stack;
mod text;
mod trust;

pub use choice::{Choice, ChoiceView};
pub use sessions::{SessionPicker, SessionRow};
pub use stack::{ViewKind, ViewStack};
pub use text::TextView;
pub use trust::TrustView;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use codewhale_protocol::ApprovalScope;

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
    TakeBack { to: String, take: codewhale_protocol::TakeBack, fork: bool, force: bool },
    /// The answer to `/undo`'s question.
    Undo { force: bool },
    /// "Plan ready — start in …": switch to the mode and carry out the plan.
    CarryOutPlan(codewhale_protocol::ApprovalMode),
    /// Restore the files of the checked-out branch changed after entry `from`.
    RestoreBranchFiles { from: String, force: bool },
}

/// A modal view.
pub trait View: std::fmt::Debug + Send {
    /// Rows wanted at `width` (the app clamps to the screen).
    fn desired_height(&self, width: u16) -> u16;
    fn render(&self, area: Rect, buf: &mut Buffer);
    fn handle_key(&mut self, key: KeyEvent) -> ViewAction;
    /// What the view is, for the stack to find it.
    fn kind(&self) -> ViewKind;
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

/// Rows of the picker list at most (it scrolls past that).
pub(crate) const PICKER_ROWS: usize = 12;

/// A titled list with one line per row, the selected one reversed, scrolled to keep it in
/// view, and a footer of keys.
pub(crate) fn list(
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
                let text = super::text_width::prefix(label, usize::from(inner.width)).to_owned();
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
