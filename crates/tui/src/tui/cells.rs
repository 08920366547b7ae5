//! The cells of the transcript: one per thing that happened (a user message, an assistant
//! reply, a tool call with its result, a notice, a compaction, an anchor).
//!
//! A cell knows how to draw itself at a width ([`Cell::lines`], already wrapped) and nothing
//! else: the transcript owns ordering, the height cache and scrolling. Invariant: `lines(w)`
//! is a pure function of the cell's state and `w`, so its length is the cell's height at
//! `w` and may be cached until the cell changes. Folded cells (tool calls, compactions) draw
//! one line until expanded.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use codewhale_protocol::{CompactionKind, CompactionTrigger};

use super::cell::folding_cell;
pub(crate) use super::cell::gutter;
pub use super::cell::Cell;
use super::markdown::{self, StreamedMarkdown};
use super::text_width;
use super::wrap::wrap_line;

/// Wraps `body` beside a prefix drawn on the first line (later lines are indented to match).
fn prefixed(
    prefix: &str,
    style: Style,
    body: Vec<Line<'static>>,
    width: u16,
) -> Vec<Line<'static>> {
    let pad = " ".repeat(text_width::width(prefix));
    gutter(prefix, &pad, style, body, width)
}

/// A cell of the conversation that the active compaction covers: drawn dimmed, since the
/// model reads it only through the checkpoint note. Uncovered, it draws as the cell it wraps.
#[derive(Debug)]
pub struct Covered<C> {
    inner: C,
    covered: bool,
}

impl<C: Cell> Covered<C> {
    pub fn new(inner: C, covered: bool) -> Covered<C> {
        Covered { inner, covered }
    }
}

impl<C: Cell + 'static> Cell for Covered<C> {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let lines = self.inner.lines(width);
        if !self.covered {
            return lines;
        }
        let dim = Style::new().add_modifier(Modifier::DIM);
        lines.into_iter().map(|line| line.patch_style(dim)).collect()
    }

    fn height(&self, width: u16) -> usize {
        self.inner.height(width)
    }

    fn set_expanded(&mut self, expanded: bool) -> bool {
        self.inner.set_expanded(expanded)
    }

    fn content_mut(&mut self) -> &mut dyn std::any::Any {
        self.inner.content_mut()
    }

    fn foldable(&self) -> bool {
        self.inner.foldable()
    }

    fn is_expanded(&self) -> bool {
        self.inner.is_expanded()
    }

    fn tool_output(&self) -> Option<(String, String)> {
        self.inner.tool_output()
    }

    fn set_focused(&mut self, focused: bool) -> bool {
        self.inner.set_focused(focused)
    }

    fn text(&self) -> String {
        self.inner.text()
    }
}

/// What the user typed.
#[derive(Debug, Clone)]
pub struct UserCell {
    pub text: String,
}

impl Cell for UserCell {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let style = Style::new().fg(Color::Green).add_modifier(Modifier::BOLD);
        let body: Vec<Line<'static>> =
            self.text.lines().map(|l| Line::from(l.to_owned())).collect();
        let mut out = prefixed("› ", style, body, width);
        out.push(Line::default());
        out
    }
}

/// An image a user message carries: `▣ shot.png 64×48 · 12 KB`.
#[derive(Debug, Clone)]
pub struct ImageCell {
    pub image: codewhale_protocol::ImageInfo,
}

impl ImageCell {
    /// The cell's one line of text.
    pub fn label(&self) -> String {
        format!("▣ {}", crate::figures::image(&self.image))
    }
}

impl Cell for ImageCell {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let style = Style::new().fg(Color::Cyan);
        let body = vec![Line::from(Span::styled(self.label(), style))];
        let mut out = prefixed("  ", Style::new(), body, width);
        out.push(Line::default());
        out
    }
}

/// An assistant reply, rendered as markdown. The active (streaming) one grows by deltas, and
/// costs only what each delta changed: finished blocks keep their lines ([`StreamedMarkdown`]).
#[derive(Debug, Clone, Default)]
pub struct AssistantCell {
    md: StreamedMarkdown,
    /// The reply stopped early (interrupt or error): said at the end so a partial answer is
    /// never mistaken for a complete one.
    pub cut_short: bool,
}

/// The reply's gutter: a bullet on the first row, an indent on the others.
const GUTTER: usize = 2;

impl AssistantCell {
    pub fn new(text: impl Into<String>) -> AssistantCell {
        AssistantCell { md: StreamedMarkdown::new(text), cut_short: false }
    }

    /// The markdown so far.
    pub fn source(&self) -> &str {
        self.md.source()
    }

    /// Appends streamed text.
    pub fn push_str(&mut self, text: &str) {
        self.md.push_str(text);
    }

    /// Row `i` of the cell, given the body's rows from `i` on (`body` yields them in order).
    fn row(
        &self,
        i: usize,
        body_rows: usize,
        body: &mut impl Iterator<Item = Line<'static>>,
    ) -> Line<'static> {
        let gutter = Style::new().fg(Color::Blue);
        let cut = usize::from(self.cut_short);
        if i < body_rows + cut {
            let line = if i < body_rows {
                body.next().unwrap_or_default()
            } else {
                Line::styled("(reply cut short)", Style::new().fg(Color::DarkGray))
            };
            let lead = if i == 0 { "• " } else { "  " };
            let mut spans = vec![Span::styled(lead, gutter)];
            spans.extend(line.spans);
            Line::from(spans)
        } else {
            Line::default()
        }
    }
}

impl Cell for AssistantCell {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        self.rows(width, 0, usize::MAX)
    }

    fn height(&self, width: u16) -> usize {
        let inner = usize::from(width).saturating_sub(GUTTER).max(1);
        self.md.height(inner) + usize::from(self.cut_short) + 1
    }

    fn rows(&self, width: u16, skip: usize, take: usize) -> Vec<Line<'static>> {
        let inner = usize::from(width).saturating_sub(GUTTER).max(1);
        let body_rows = self.md.height(inner);
        let total = body_rows + usize::from(self.cut_short) + 1;
        let end = skip.saturating_add(take).min(total);
        let mut body = self.md.rows(inner, skip, end.saturating_sub(skip)).into_iter();
        (skip..end).map(|i| self.row(i, body_rows, &mut body)).collect()
    }

    fn text(&self) -> String {
        self.md.source().to_owned()
    }

    fn reply_text(&self) -> Option<&str> {
        Some(self.md.source())
    }
}

/// What the model showed of its reasoning: folded to one line, unfolded with Ctrl+O.
#[derive(Debug, Clone, Default)]
pub struct ThinkingCell {
    pub text: String,
    pub expanded: bool,
    pub focused: bool,
}

impl Cell for ThinkingCell {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let dim = Style::new().fg(Color::DarkGray).add_modifier(Modifier::ITALIC);
        let words = self.text.split_whitespace().count();
        let mark = if self.focused {
            Style::new().fg(Color::DarkGray).add_modifier(Modifier::REVERSED)
        } else {
            Style::new().fg(Color::DarkGray)
        };
        let fold = if self.expanded { "" } else { " … Ctrl+O shows it" };
        let head = Line::from(vec![
            Span::styled("∴ ", mark),
            Span::styled(format!("thought ({words} words){fold}"), dim),
        ]);
        let mut out = wrap_line(&head, usize::from(width));
        if self.expanded {
            let body = self.text.lines().map(|l| Line::styled(l.to_owned(), dim)).collect();
            out.extend(gutter("  ┆ ", "  ┆ ", Style::new().fg(Color::DarkGray), body, width));
        }
        out
    }

    folding_cell!(text);
}

/// How serious a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    Info,
    Warning,
    Error,
}

/// A line from the engine or the UI itself: command output, a warning, an error.
#[derive(Debug, Clone)]
pub struct NoticeCell {
    pub kind: NoticeKind,
    pub text: String,
}

impl Cell for NoticeCell {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let (prefix, style) = match self.kind {
            NoticeKind::Info => ("· ", Style::new().fg(Color::DarkGray)),
            NoticeKind::Warning => ("! ", Style::new().fg(Color::Yellow)),
            NoticeKind::Error => ("✗ ", Style::new().fg(Color::Red)),
        };
        let body = self.text.lines().map(|l| Line::styled(l.to_owned(), style)).collect();
        prefixed(prefix, style, body, width)
    }
}

/// A side question (`/btw`) and its answer: shown where it was asked, never read by the model.
#[derive(Debug, Clone, PartialEq)]
pub struct SideCell {
    pub question: String,
    pub answer: String,
    pub model: String,
    /// What it cost; `None` when the model's price is unknown.
    pub cost_usd: Option<f64>,
}

impl SideCell {
    /// The line under the answer: that it was kept apart, by which model, at what cost.
    pub fn footer(&self) -> String {
        let cost = match self.cost_usd {
            Some(usd) => crate::figures::dollars(usd),
            None => "cost unknown".to_owned(),
        };
        format!("side question · not in the conversation · {} · {cost}", self.model)
    }
}

impl Cell for SideCell {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let dim = Style::new().fg(Color::DarkGray);
        let head = Style::new().fg(Color::Magenta);
        let question = vec![Line::styled(format!("/btw {}", self.question), head)];
        let mut out = prefixed("? ", head, question, width);
        let body = self.answer.lines().map(|l| Line::from(l.to_owned())).collect();
        out.extend(gutter("  ┆ ", "  ┆ ", dim, body, width));
        out.extend(prefixed("  ", dim, vec![Line::styled(self.footer(), dim)], width));
        out
    }
}

/// What a finished compaction did, as the engine reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionSummary {
    /// The compaction record's entry id.
    pub id: String,
    pub trigger: CompactionTrigger,
    pub path: CompactionKind,
    /// Model-visible messages in the covered segment.
    pub covered: u64,
    /// User messages kept verbatim.
    pub retained: u64,
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// The note was written in the background before the threshold.
    pub background: bool,
}

/// A finished compaction: "compacted N messages · 182k → 9k tokens", expandable to the
/// checkpoint note and what it covers.
#[derive(Debug, Clone)]
pub struct CompactionCell {
    pub summary: CompactionSummary,
    /// The checkpoint note the model reads now.
    pub note: Option<String>,
    pub expanded: bool,
    pub focused: bool,
}

impl CompactionCell {
    pub fn new(summary: CompactionSummary, note: Option<String>) -> CompactionCell {
        CompactionCell { summary, note, expanded: false, focused: false }
    }
}

/// `182_000` as `182k`, `9_400` as `9.4k`, small numbers as they are.
pub fn short_tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=9_999 => {
            let tenths = (n + 50) / 100;
            if tenths.is_multiple_of(10) {
                format!("{}k", tenths / 10)
            } else {
                format!("{}.{}k", tenths / 10, tenths % 10)
            }
        }
        _ => format!("{}k", (n + 500) / 1000),
    }
}

impl CompactionSummary {
    /// The capsule's line: "⇣ compacted 12 messages · 182k → 9k tokens (manual)".
    pub fn headline(&self) -> String {
        let c = self;
        // A prune-only or bounding pass covers nothing new (its `covered` is the earlier note's
        // segment): it says what it did, without a count.
        let what = match c.path {
            CompactionKind::PruneOnly => "shortened long outputs".to_owned(),
            // The engine counts the covered segment in model-visible messages, not in turns.
            _ if c.covered == 1 => "compacted 1 message".to_owned(),
            _ => format!("compacted {} messages", c.covered),
        };
        let trigger = match c.trigger {
            CompactionTrigger::Idle => "auto, while idle",
            other => other.as_str(),
        };
        let written = if c.background && c.trigger != CompactionTrigger::Idle {
            ", written in the background"
        } else {
            ""
        };
        format!(
            "⇣ {what} · {} → {} tokens ({trigger}{written})",
            short_tokens(c.tokens_before),
            short_tokens(c.tokens_after),
        )
    }
}

impl Cell for CompactionCell {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let c = &self.summary;
        let style = Style::new().fg(Color::Magenta);
        let style = if self.focused { style.add_modifier(Modifier::REVERSED) } else { style };
        let head = format!("{}{}", c.headline(), if self.expanded { "" } else { " …" });
        let mut out = wrap_line(&Line::styled(head, style), usize::from(width));
        if self.expanded {
            let dim = Style::new().fg(Color::DarkGray);
            let mut details = vec![
                Line::from(format!("path: {}", c.path.as_str())),
                Line::from(format!("covered: {} messages, replaced by the note below", c.covered)),
                Line::from(format!("retained verbatim: {} user messages", c.retained)),
                Line::from("the dimmed messages above are what the model now reads as this note"),
                Line::from("the journal keeps everything; /context shows the active compaction"),
                Line::default(),
            ];
            match &self.note {
                Some(note) => {
                    let inner = usize::from(width).saturating_sub(4).max(1);
                    details.extend(markdown::render_at(note, inner))
                }
                None => details.push(Line::styled("(no note)", dim)),
            }
            out.extend(gutter("  │ ", "  │ ", dim, details, width));
        }
        out.push(Line::default());
        out
    }

    folding_cell!();
}

/// A note the user pinned with `/anchor`.
#[derive(Debug, Clone)]
pub struct AnchorCell {
    pub text: String,
}

impl Cell for AnchorCell {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let style = Style::new().fg(Color::Yellow);
        let body = self.text.lines().map(|l| Line::from(l.to_owned())).collect();
        let mut out = prefixed("⚑ ", style, body, width);
        out.push(Line::default());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_are_short() {
        assert_eq!(short_tokens(182_000), "182k");
        assert_eq!(short_tokens(9_000), "9k");
        assert_eq!(short_tokens(9_400), "9.4k");
        assert_eq!(short_tokens(512), "512");
    }
}
