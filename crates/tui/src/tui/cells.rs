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

use codewhale_engine::protocol::{CompactionKind, CompactionTrigger};

use super::markdown;
use super::wrap::{wrap_line, wrap_lines};

/// A drawable transcript entry.
pub trait Cell: std::fmt::Debug + Send {
    /// The cell's lines wrapped to `width` columns.
    fn lines(&self, width: u16) -> Vec<Line<'static>>;

    /// The number of rows the cell takes at `width` (what the transcript caches).
    fn height(&self, width: u16) -> usize {
        self.lines(width).len()
    }

    /// Shows or hides the details of a folded cell; false when the cell has none.
    fn set_expanded(&mut self, _expanded: bool) -> bool {
        false
    }

    /// The tool call, when this cell is one (so a result can find its call).
    fn as_tool_mut(&mut self) -> Option<&mut ToolCell> {
        None
    }
}

/// Wraps `body` beside a prefix drawn on the first line (later lines are indented to match).
fn prefixed(
    prefix: &str,
    style: Style,
    body: Vec<Line<'static>>,
    width: u16,
) -> Vec<Line<'static>> {
    let pad = " ".repeat(prefix.chars().count());
    gutter(prefix, &pad, style, body, width)
}

/// Wraps `body` beside a gutter: `first` on the first line, `rest` on every other.
fn gutter(
    first: &str,
    rest: &str,
    style: Style,
    body: Vec<Line<'static>>,
    width: u16,
) -> Vec<Line<'static>> {
    let prefix = first;
    let pad = rest.to_owned();
    let inner = usize::from(width).saturating_sub(prefix.chars().count()).max(1);
    wrap_lines(&body, inner)
        .into_iter()
        .enumerate()
        .map(|(i, line)| {
            let lead = if i == 0 { prefix.to_owned() } else { pad.clone() };
            let mut spans = vec![Span::styled(lead, style)];
            spans.extend(line.spans);
            Line::from(spans)
        })
        .collect()
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

impl<C: Cell> Cell for Covered<C> {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let lines = self.inner.lines(width);
        if !self.covered {
            return lines;
        }
        let dim = Style::new().add_modifier(Modifier::DIM);
        lines.into_iter().map(|line| line.patch_style(dim)).collect()
    }

    fn set_expanded(&mut self, expanded: bool) -> bool {
        self.inner.set_expanded(expanded)
    }

    fn as_tool_mut(&mut self) -> Option<&mut ToolCell> {
        self.inner.as_tool_mut()
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

/// An assistant reply, rendered as markdown. The active (streaming) one grows by deltas.
#[derive(Debug, Clone, Default)]
pub struct AssistantCell {
    pub text: String,
    /// The reply stopped early (interrupt or error): said at the end so a partial answer is
    /// never mistaken for a complete one.
    pub cut_short: bool,
}

impl Cell for AssistantCell {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let mut body = markdown::render(&self.text);
        if self.cut_short {
            body.push(Line::styled("(reply cut short)", Style::new().fg(Color::DarkGray)));
        }
        let mut out = prefixed("• ", Style::new().fg(Color::Blue), body, width);
        out.push(Line::default());
        out
    }
}

/// Where a tool call is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolState {
    Requested,
    Running,
    Done { is_error: bool, output: String },
}

/// A tool call and, once it finished, its result; one line unless expanded.
#[derive(Debug, Clone)]
pub struct ToolCell {
    pub call_id: String,
    pub name: String,
    /// The call's arguments in one line (`path=src/main.rs`).
    pub summary: String,
    pub state: ToolState,
    pub expanded: bool,
}

/// How many output lines an expanded tool cell shows: enough to read, never a whole log.
const EXPANDED_OUTPUT_LINES: usize = 40;

impl ToolCell {
    /// A call the model just asked for.
    pub fn new(call_id: String, name: String, input: &serde_json::Value) -> ToolCell {
        ToolCell {
            call_id,
            name,
            summary: summarize_input(input),
            state: ToolState::Requested,
            expanded: false,
        }
    }
}

/// `{"path":"a.rs","limit":10}` as `path=a.rs limit=10`, strings unquoted, newlines shown as ⏎.
pub fn summarize_input(input: &serde_json::Value) -> String {
    match input {
        serde_json::Value::Object(map) => map
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                format!("{k}={}", v.replace('\n', "⏎"))
            })
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

impl Cell for ToolCell {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let (mark, mark_style, status) = match &self.state {
            ToolState::Requested => ("○", Style::new().fg(Color::DarkGray), "requested".to_owned()),
            ToolState::Running => ("◐", Style::new().fg(Color::Yellow), "running".to_owned()),
            ToolState::Done { is_error: false, output } => {
                ("✓", Style::new().fg(Color::Green), format!("{} lines", output.lines().count()))
            }
            ToolState::Done { is_error: true, output } => {
                let first = output.lines().next().unwrap_or("failed").to_owned();
                ("✗", Style::new().fg(Color::Red), first)
            }
        };
        let w = usize::from(width).max(1);
        let head = format!("{} {}", self.name, self.summary);
        let fold = if self.expanded { "" } else { " …" };
        let room = w.saturating_sub(status.chars().count() + 6).max(8);
        let head: String = if head.chars().count() > room {
            head.chars().take(room.saturating_sub(1)).chain(['…']).collect()
        } else {
            head
        };
        let line = Line::from(vec![
            Span::styled(format!("{mark} "), mark_style),
            Span::styled(head, Style::new().add_modifier(Modifier::BOLD)),
            Span::styled(format!(" · {status}"), Style::new().fg(Color::DarkGray)),
            Span::styled(fold.to_owned(), Style::new().fg(Color::DarkGray)),
        ]);
        let mut out = wrap_line(&line, w);
        if self.expanded {
            if let ToolState::Done { output, .. } = &self.state {
                let dim = Style::new().fg(Color::Gray);
                let total = output.lines().count();
                let body: Vec<Line<'static>> = output
                    .lines()
                    .take(EXPANDED_OUTPUT_LINES)
                    .map(|l| Line::styled(l.to_owned(), dim))
                    .collect();
                out.extend(gutter("  │ ", "  │ ", Style::new().fg(Color::DarkGray), body, width));
                if total > EXPANDED_OUTPUT_LINES {
                    let more = format!("  │ … {} more lines", total - EXPANDED_OUTPUT_LINES);
                    out.push(Line::styled(more, Style::new().fg(Color::DarkGray)));
                }
            }
        }
        out
    }

    fn set_expanded(&mut self, expanded: bool) -> bool {
        self.expanded = expanded;
        true
    }

    fn as_tool_mut(&mut self) -> Option<&mut ToolCell> {
        Some(self)
    }
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
}

/// A finished compaction: "compacted N messages · 182k → 9k tokens", expandable to the
/// checkpoint note and what it covers.
#[derive(Debug, Clone)]
pub struct CompactionCell {
    pub summary: CompactionSummary,
    /// The checkpoint note the model reads now.
    pub note: Option<String>,
    pub expanded: bool,
}

impl CompactionCell {
    pub fn new(summary: CompactionSummary, note: Option<String>) -> CompactionCell {
        CompactionCell { summary, note, expanded: false }
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

impl Cell for CompactionCell {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let c = &self.summary;
        let style = Style::new().fg(Color::Magenta);
        let what = match c.path {
            CompactionKind::PruneOnly => "pruned old tool output",
            _ => "compacted",
        };
        // The engine counts the covered segment in model-visible messages, not in turns.
        let unit = if c.covered == 1 { "message" } else { "messages" };
        let head = format!(
            "⇣ {what} {} {unit} · {} → {} tokens ({}){}",
            c.covered,
            short_tokens(c.tokens_before),
            short_tokens(c.tokens_after),
            c.trigger.as_str(),
            if self.expanded { "" } else { " …" }
        );
        let mut out = wrap_line(&Line::styled(head, style), usize::from(width));
        if self.expanded {
            let dim = Style::new().fg(Color::DarkGray);
            let mut details = vec![
                Line::from(format!("path: {}", c.path.as_str())),
                Line::from(format!("covered: {} messages, replaced by the note below", c.covered)),
                Line::from(format!("retained verbatim: {} user messages", c.retained)),
                Line::from("the journal keeps everything; /context shows the active compaction"),
                Line::default(),
            ];
            match &self.note {
                Some(note) => details.extend(markdown::render(note)),
                None => details.push(Line::styled("(no note)", dim)),
            }
            out.extend(gutter("  │ ", "  │ ", dim, details, width));
        }
        out.push(Line::default());
        out
    }

    fn set_expanded(&mut self, expanded: bool) -> bool {
        self.expanded = expanded;
        true
    }
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

    #[test]
    fn a_tool_cell_is_one_line_until_expanded() {
        let mut cell =
            ToolCell::new("c".into(), "read_file".into(), &serde_json::json!({"path": "a.rs"}));
        cell.state = ToolState::Done { is_error: false, output: "1\n2\n3".into() };
        assert_eq!(cell.height(80), 1);
        assert!(cell.set_expanded(true));
        assert_eq!(cell.height(80), 4);
    }
}
