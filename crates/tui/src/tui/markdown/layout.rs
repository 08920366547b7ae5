//! Markdown lines at a width: prose wrapped with its item's (or quote's) indent on every
//! wrapped row, code and table rows cut at the width with a `›` mark, never wrapped.
//! Invariant: no returned line is wider than the width.

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use super::{render, Flow, MdLine};
use crate::tui::text_width;
use crate::tui::wrap::wrap_line;

/// `source` rendered and laid out at `width` columns.
pub fn render_at(source: &str, width: usize) -> Vec<Line<'static>> {
    lines_at(&render(source), width)
}

/// `lines` laid out at `width` columns.
pub fn lines_at(lines: &[MdLine], width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let mut out = Vec::new();
    for line in lines {
        match &line.flow {
            Flow::Clip => {
                let mut spans = line.lead.clone();
                spans.extend(line.body.iter().cloned());
                out.push(clip(spans, width));
            }
            Flow::Prose { cont } => {
                let lead_w = spans_width(&line.lead);
                let cont_w = spans_width(cont);
                let room = width.saturating_sub(lead_w.max(cont_w)).max(1);
                let rows = wrap_line(&Line::from(line.body.clone()), room);
                for (i, row) in rows.into_iter().enumerate() {
                    let mut spans = if i == 0 { line.lead.clone() } else { cont.clone() };
                    spans.extend(row.spans);
                    out.push(clip(spans, width));
                }
            }
        }
    }
    out
}

fn spans_width(spans: &[Span<'static>]) -> usize {
    spans.iter().map(|s| text_width::width(&s.content)).sum()
}

/// `spans` cut to `width` columns; a cut line ends with a dim `›`.
fn clip(spans: Vec<Span<'static>>, width: usize) -> Line<'static> {
    if spans_width(&spans) <= width {
        return Line::from(spans);
    }
    let keep = width.saturating_sub(1);
    let mut out = Vec::new();
    let mut used = 0;
    'spans: for span in spans {
        let mut text = String::new();
        for (g, w) in text_width::graphemes(&span.content) {
            if used + w > keep {
                out.push(Span::styled(text, span.style));
                break 'spans;
            }
            used += w;
            text.push_str(g);
        }
        out.push(Span::styled(text, span.style));
    }
    out.push(Span::styled("›", Style::new().fg(Color::DarkGray)));
    Line::from(out)
}
