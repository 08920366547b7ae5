//! What a transcript cell is: the [`Cell`] trait every kind of cell implements, the fold
//! methods shared by folding cells, and the gutter they draw beside their lines.
//!
//! Owns no kind of cell: the kinds live in their own modules (`cells`, `tool_cell`, …) and
//! depend on this one, never the other way round; a caller looks a kind up by type
//! ([`Cell::content_mut`]).

use std::any::Any;

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::text_width;
use super::wrap::wrap_lines;

/// Any cell as `dyn Any`, for [`Cell::content_mut`]; implemented for every type.
pub trait AsAny {
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any> AsAny for T {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The fold methods of a cell that folds to one line: it keeps `expanded` and `focused` fields;
/// with a field named, its copyable text is that field. One definition for every such cell.
macro_rules! folding_cell {
    () => {
        fn set_expanded(&mut self, expanded: bool) -> bool {
            self.expanded = expanded;
            true
        }

        fn set_focused(&mut self, focused: bool) -> bool {
            self.focused = focused;
            true
        }

        fn foldable(&self) -> bool {
            true
        }

        fn is_expanded(&self) -> bool {
            self.expanded
        }
    };
    ($text:ident) => {
        folding_cell!();

        fn text(&self) -> String {
            self.$text.clone()
        }
    };
}
pub(crate) use folding_cell;

/// A drawable transcript entry.
pub trait Cell: std::fmt::Debug + Send + AsAny {
    /// The cell's lines wrapped to `width` columns.
    fn lines(&self, width: u16) -> Vec<Line<'static>>;

    /// The number of rows the cell takes at `width` (what the transcript caches).
    fn height(&self, width: u16) -> usize {
        self.lines(width).len()
    }

    /// Rows `skip..skip + take` at `width`: what a frame draws of a cell it does not cache
    /// (the streaming reply), so a cell that can copy only those rows overrides it.
    fn rows(&self, width: u16, skip: usize, take: usize) -> Vec<Line<'static>> {
        self.lines(width).into_iter().skip(skip).take(take).collect()
    }

    /// Shows or hides the details of a folded cell; false when the cell has none.
    fn set_expanded(&mut self, _expanded: bool) -> bool {
        false
    }

    /// What the cell shows, as a value of its own type, so a caller can find a cell of one
    /// kind (a tool call, for its result) without the trait naming every kind: the cell
    /// itself, or for a wrapper the cell it wraps.
    fn content_mut(&mut self) -> &mut dyn Any {
        self.as_any_mut()
    }

    /// Whether the cell folds (Ctrl+O): tool calls, thinking, compactions.
    fn foldable(&self) -> bool {
        false
    }

    /// Whether the cell is unfolded now.
    fn is_expanded(&self) -> bool {
        false
    }

    /// An assistant reply's markdown, for the copy key.
    fn reply_text(&self) -> Option<&str> {
        None
    }

    /// A tool call's title and whole output, for the pager (Ctrl+T).
    fn tool_output(&self) -> Option<(String, String)> {
        None
    }

    /// Marks the cell as the one Ctrl+O and Ctrl+T act on; false when it cannot be focused.
    fn set_focused(&mut self, _focused: bool) -> bool {
        false
    }

    /// The cell's text, for transcript search.
    fn text(&self) -> String {
        self.lines(u16::MAX)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Wraps `body` beside a gutter: `first` on the first line, `rest` on every other.
pub(crate) fn gutter(
    first: &str,
    rest: &str,
    style: Style,
    body: Vec<Line<'static>>,
    width: u16,
) -> Vec<Line<'static>> {
    let prefix = first;
    let pad = rest.to_owned();
    let inner = usize::from(width).saturating_sub(text_width::width(prefix)).max(1);
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
