//! "What to take back?": the question `/rewind`, `/fork` and `/undo` ask when tools changed
//! files after the chosen point (docs/journal-format.md); and, after a `/checkout`, "restore
//! this branch's files?" when the disk does not hold what the checked-out branch gave them.
//!
//! It lists the files a code restore would touch and how, then offers the conversation, the
//! code or both (`/undo`: the code only). A file someone else changed since is listed as
//! such, and taking the code back then asks a second time whether to overwrite it; "no" still
//! restores the others. Esc leaves everything as it is.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use codewhale_protocol::{RestoreFile, RestoreState, TakeBack};

use super::views::{frame, is_ctrl_c, View, ViewAction, ViewKind};
use super::wrap::wrap_lines;

/// One file of the list: its path and what a code restore would do to it.
fn file_line(f: &RestoreFile, checkout: bool) -> Line<'static> {
    let dim = Style::new().fg(Color::DarkGray);
    let warn = Style::new().fg(Color::Yellow);
    let (what, style) = match f.state {
        RestoreState::Restore if checkout => ("written as this branch left it", Style::new()),
        RestoreState::Remove if checkout => ("removed (this branch removed it)", Style::new()),
        RestoreState::Restore => ("restored", Style::new()),
        RestoreState::Remove => ("removed (it did not exist then)", Style::new()),
        RestoreState::Unchanged => ("already as it was", dim),
        RestoreState::ChangedElsewhere => ("changed by someone else since", warn),
        RestoreState::Unavailable => ("cannot be restored (no checkpoint)", warn),
        RestoreState::Protected => ("protected: written back only with a yes", warn),
    };
    Line::from(vec![Span::raw(format!("  {}  ", f.path)), Span::styled(what.to_owned(), style)])
}

/// Where the answer goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreTarget {
    /// `/rewind` (`fork: false`) or `/fork` to entry `to`.
    Branch { to: String, fork: bool },
    /// `/undo`: the last turn's file changes.
    Undo,
    /// After a `/checkout`: the files the checked-out branch changed after entry `from`,
    /// brought to what it gave them.
    Checkout { from: String },
}

/// The question and its two steps.
#[derive(Debug, Clone)]
pub struct RestoreView {
    target: RestoreTarget,
    files: Vec<RestoreFile>,
    /// The chosen take-back, waiting for the second yes about files changed elsewhere.
    confirming: Option<TakeBack>,
}

impl RestoreView {
    pub fn new(target: RestoreTarget, files: Vec<RestoreFile>) -> RestoreView {
        RestoreView { target, files, confirming: None }
    }

    fn outside(&self) -> Vec<&str> {
        self.files
            .iter()
            .filter(|f| f.state == RestoreState::ChangedElsewhere)
            .map(|f| f.path.as_str())
            .collect()
    }

    fn protected(&self) -> Vec<&str> {
        self.files
            .iter()
            .filter(|f| f.state == RestoreState::Protected)
            .map(|f| f.path.as_str())
            .collect()
    }

    fn title(&self) -> &'static str {
        match &self.target {
            RestoreTarget::Branch { fork: true, .. } => "fork: what to take back",
            RestoreTarget::Branch { fork: false, .. } => "rewind: what to take back",
            RestoreTarget::Undo => "undo: take back the last turn's file changes",
            RestoreTarget::Checkout { .. } => "checkout: this branch's files",
        }
    }

    /// Only the code is at stake: one key answers (`/undo`, a checkout's files).
    fn code_only(&self) -> bool {
        matches!(self.target, RestoreTarget::Undo | RestoreTarget::Checkout { .. })
    }

    fn body(&self) -> Vec<Line<'static>> {
        let checkout = matches!(self.target, RestoreTarget::Checkout { .. });
        let mut lines = vec![Line::from(if checkout {
            "Files this branch's tools changed that the disk does not hold as the branch left them:"
        } else {
            "Files tools changed after that point:"
        })];
        lines.extend(self.files.iter().map(|f| file_line(f, checkout)));
        match self.confirming {
            Some(_) => lines.extend(self.second_question(checkout)),
            None => lines.push(self.keys(checkout)),
        }
        lines
    }

    /// The second question, about the files changed elsewhere or protected, and its keys.
    fn second_question(&self, checkout: bool) -> [Line<'static>; 2] {
        let key = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
        let warn = Style::new().fg(Color::Yellow);
        let outside = self.outside();
        let protected = self.protected();
        let mut asked = Vec::new();
        if !outside.is_empty() {
            asked.push(format!(
                "{} changed by someone else since: {}.",
                if outside.len() == 1 { "1 file was" } else { "some files were" },
                outside.join(", ")
            ));
        }
        if !protected.is_empty() {
            asked.push(format!(
                "Git, Codewhale or instruction files (run or read by them): {}.",
                protected.join(", ")
            ));
        }
        asked.push(if checkout {
            "Overwrite with this branch's content?".to_owned()
        } else {
            "Overwrite with the earlier content?".to_owned()
        });
        let question = Line::styled(asked.join(" "), warn);
        [
            question,
            Line::from(vec![
                Span::styled("y", key),
                Span::raw(" overwrite them too   "),
                Span::styled("n", key),
                Span::raw(" keep them, restore the rest   "),
                Span::styled("Esc", key),
                Span::raw(" cancel"),
            ]),
        ]
    }

    /// The keys of the first question: what can be taken back, and Esc.
    fn keys(&self, checkout: bool) -> Line<'static> {
        let key = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
        let mut keys = Vec::new();
        if checkout {
            keys.extend([Span::styled("Enter", key), Span::raw(" restore them   ")]);
        } else if self.code_only() {
            keys.extend([Span::styled("Enter", key), Span::raw(" take the files back   ")]);
        } else {
            keys.extend([
                Span::styled("c", key),
                Span::raw(" conversation only   "),
                Span::styled("k", key),
                Span::raw(" code only   "),
                Span::styled("b", key),
                Span::raw(" both   "),
            ]);
        }
        keys.extend([
            Span::styled("Esc", key),
            Span::raw(if checkout { " leave them" } else { " cancel" }),
        ]);
        Line::from(keys)
    }

    fn choose(&mut self, take: TakeBack) -> ViewAction {
        if take.code() && !(self.outside().is_empty() && self.protected().is_empty()) {
            self.confirming = Some(take);
            return ViewAction::Stay;
        }
        self.answer(take, false)
    }

    fn answer(&self, take: TakeBack, force: bool) -> ViewAction {
        match &self.target {
            RestoreTarget::Branch { to, fork } => {
                ViewAction::TakeBack { to: to.clone(), take, fork: *fork, force }
            }
            RestoreTarget::Undo => ViewAction::Undo { force },
            RestoreTarget::Checkout { from } => {
                ViewAction::RestoreBranchFiles { from: from.clone(), force }
            }
        }
    }
}

impl View for RestoreView {
    fn kind(&self) -> ViewKind {
        ViewKind::Restore
    }

    fn desired_height(&self, width: u16) -> u16 {
        let h = wrap_lines(&self.body(), usize::from(width).max(1)).len();
        u16::try_from(h + 1).unwrap_or(u16::MAX)
    }

    fn render(&self, area: Rect, buf: &mut Buffer) {
        let inner = frame(self.title(), area, buf);
        let lines = wrap_lines(&self.body(), usize::from(inner.width).max(1));
        // The keys are the last line: keep them on screen when the list is long.
        let skip = lines.len().saturating_sub(usize::from(inner.height));
        let shown: Vec<Line<'static>> = if skip > 0 {
            let keys = lines.len() - 1;
            lines[..keys].iter().skip(skip).chain(&lines[keys..]).cloned().collect()
        } else {
            lines
        };
        Paragraph::new(shown).render(inner, buf);
    }

    fn handle_key(&mut self, key: KeyEvent) -> ViewAction {
        if is_ctrl_c(&key) || key.code == KeyCode::Esc {
            return ViewAction::Close;
        }
        if let Some(take) = self.confirming {
            return match key.code {
                KeyCode::Char('y') | KeyCode::Char('Y') => self.answer(take, true),
                KeyCode::Char('n') | KeyCode::Char('N') => self.answer(take, false),
                _ => ViewAction::Stay,
            };
        }
        let undo = self.code_only();
        match key.code {
            KeyCode::Enter if undo => self.choose(TakeBack::Code),
            KeyCode::Char('c') | KeyCode::Char('C') if !undo => self.choose(TakeBack::Conversation),
            KeyCode::Char('k') | KeyCode::Char('K') if !undo => self.choose(TakeBack::Code),
            KeyCode::Char('b') | KeyCode::Char('B') if !undo => self.choose(TakeBack::Both),
            _ => ViewAction::Stay,
        }
    }
}
