//! Markdown tables: cells collected while parsing, then drawn with aligned columns (by display
//! width, honouring the `:--:` alignments) and a rule under the header.

use pulldown_cmark::{Alignment, Event, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;

use crate::tui::text_width;

const RULE: Style = Style::new().fg(Color::DarkGray);

/// A table being parsed.
#[derive(Debug, Default)]
pub struct Table {
    aligns: Vec<Alignment>,
    head: Vec<Vec<Span<'static>>>,
    rows: Vec<Vec<Vec<Span<'static>>>>,
    row: Vec<Vec<Span<'static>>>,
    cell: Vec<Span<'static>>,
    in_head: bool,
}

impl Table {
    pub fn new(aligns: Vec<Alignment>) -> Table {
        Table { aligns, ..Table::default() }
    }

    /// Takes the events inside the table; `false` for the table's own end (and anything the
    /// renderer handles itself).
    pub fn event(&mut self, event: &Event<'_>, style: Style) -> bool {
        match event {
            Event::Start(Tag::TableHead) => self.in_head = true,
            Event::End(TagEnd::TableHead) => {
                self.in_head = false;
                self.head = std::mem::take(&mut self.row);
            }
            Event::Start(Tag::TableRow) => self.row.clear(),
            Event::End(TagEnd::TableRow) => self.rows.push(std::mem::take(&mut self.row)),
            Event::Start(Tag::TableCell) => self.cell.clear(),
            Event::End(TagEnd::TableCell) => self.row.push(std::mem::take(&mut self.cell)),
            Event::Text(t) | Event::Code(t) => {
                let style = if self.in_head { style.add_modifier(Modifier::BOLD) } else { style };
                self.cell.push(Span::styled(t.to_string(), style));
            }
            Event::SoftBreak | Event::HardBreak => self.cell.push(Span::raw(" ")),
            Event::End(TagEnd::Table) => return false,
            // Emphasis and links inside cells keep their text, not their style.
            _ => {}
        }
        true
    }

    /// The header, the rule and the rows, each as one line of spans.
    pub fn rows(&self) -> Vec<Vec<Span<'static>>> {
        let columns = self.rows.iter().map(Vec::len).chain([self.head.len()]).max().unwrap_or(0);
        let width = |cell: &[Span<'static>]| {
            cell.iter().map(|s| text_width::width(&s.content)).sum::<usize>()
        };
        let mut widths = vec![0usize; columns];
        for row in std::iter::once(&self.head).chain(&self.rows) {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(width(cell));
            }
        }
        let line = |row: &[Vec<Span<'static>>]| {
            let mut spans: Vec<Span<'static>> = Vec::new();
            for (i, w) in widths.iter().enumerate() {
                if i > 0 {
                    spans.push(Span::styled(" │ ", RULE));
                }
                let cell = row.get(i).map(Vec::as_slice).unwrap_or_default();
                let pad = w.saturating_sub(width(cell));
                let (left, right) = match self.aligns.get(i) {
                    Some(Alignment::Right) => (pad, 0),
                    Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                    _ => (0, pad),
                };
                spans.push(Span::raw(" ".repeat(left)));
                spans.extend(cell.iter().cloned());
                spans.push(Span::raw(" ".repeat(right)));
            }
            spans
        };
        let mut out = Vec::new();
        if !self.head.is_empty() {
            out.push(line(&self.head));
            let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
            out.push(vec![Span::styled(rule.join("─┼─"), RULE)]);
        }
        out.extend(self.rows.iter().map(|r| line(r)));
        out
    }
}
