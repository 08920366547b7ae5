//! Laying the composer's text out by display width: which graphemes go on which screen row,
//! and where the cursor is drawn.
//!
//! Pure functions over the text; nothing here knows about keys or terminals. A grapheme is the
//! unit of editing and drawing: a CJK character takes two columns, an emoji with modifiers or a
//! ZWJ sequence one grapheme of two, a letter with combining marks one of one. A tab is drawn
//! as [`TAB_WIDTH`] spaces, a pasted-text chip as its label, and a grapheme that would take no
//! column at all (a lone combining mark) on a dotted circle, so every grapheme has a cell the
//! cursor can sit on. Rows wrap at the last space that fits, else between graphemes.
//!
//! Invariants (checked by a property test): the rows of a line cover its bytes exactly once,
//! in order; no row is wider than the width unless it holds a single grapheme wider than the
//! width; the cursor is drawn at the column where the grapheme it edits starts.

use std::borrow::Cow;

use crate::tui::text_width;
use unicode_segmentation::UnicodeSegmentation as _;

/// Columns a tab takes.
pub use text_width::TAB_WIDTH;

/// How a grapheme is drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell<'a> {
    Text(Cow<'a, str>),
    /// A pasted-text chip, drawn as its label.
    Chip(String),
}

impl Cell<'_> {
    pub fn width(&self) -> usize {
        match self {
            Cell::Text(t) => text_width::width(t),
            Cell::Chip(label) => text_width::width(label),
        }
    }
}

/// How each grapheme is drawn: the composer maps chip characters to their labels.
pub trait Appearance {
    /// The label of the chip `c` stands for, if it is one.
    fn chip(&self, c: char) -> Option<String>;

    /// How `grapheme` is drawn.
    fn cell<'a>(&self, grapheme: &'a str) -> Cell<'a> {
        let mut chars = grapheme.chars();
        if let (Some(c), None) = (chars.next(), chars.next()) {
            if c == '\t' {
                return Cell::Text(Cow::Borrowed(&"        "[..TAB_WIDTH]));
            }
            if let Some(label) = self.chip(c) {
                return Cell::Chip(label);
            }
        }
        if text_width::grapheme_width(grapheme) == 0 {
            return Cell::Text(Cow::Owned(format!("◌{grapheme}")));
        }
        Cell::Text(Cow::Borrowed(grapheme))
    }
}

/// Plain text: no chips.
#[cfg(test)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Plain;

#[cfg(test)]
impl Appearance for Plain {
    fn chip(&self, _c: char) -> Option<String> {
        None
    }
}

/// One screen row: bytes `start..end` of line `line`, and what to draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub line: usize,
    pub start: usize,
    pub end: usize,
    /// The cells, in order, with the byte offset of each grapheme.
    pub cells: Vec<(usize, Cell<'static>)>,
    /// Columns used.
    pub width: usize,
}

/// The whole text laid out at a width, with the cursor's screen position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub rows: Vec<Row>,
    /// (row, column) where the cursor is drawn.
    pub cursor: (usize, usize),
}

/// Lays `lines` out in rows of at most `width` columns; `cursor` is (line, byte offset).
pub fn layout(
    lines: &[String],
    cursor: (usize, usize),
    width: usize,
    look: &dyn Appearance,
) -> Layout {
    let width = width.max(1);
    let mut rows = Vec::new();
    let mut at = (0, 0);
    for (index, line) in lines.iter().enumerate() {
        let first = rows.len();
        wrap_line(index, line, width, look, &mut rows);
        if index == cursor.0 {
            at = place_cursor(&mut rows, first, cursor.1, width);
        }
    }
    Layout { rows, cursor: at }
}

fn wrap_line(index: usize, line: &str, width: usize, look: &dyn Appearance, rows: &mut Vec<Row>) {
    let mut row = Row { line: index, start: 0, end: 0, cells: Vec::new(), width: 0 };
    for (offset, grapheme) in line.grapheme_indices(true) {
        let cell = owned(look.cell(grapheme));
        let w = cell.width();
        // (A row carried over from a break may still leave no room: break again.)
        while row.width + w > width && !row.cells.is_empty() {
            // Break after the last space of the row when there is one (not the first cell),
            // else before this grapheme.
            let space = row
                .cells
                .iter()
                .rposition(|(_, c)| matches!(c, Cell::Text(t) if t.trim().is_empty()))
                .filter(|&i| i > 0 && i + 1 < row.cells.len());
            let carried = match space {
                Some(i) => row.cells.split_off(i + 1),
                None => Vec::new(),
            };
            let next_start = carried.first().map_or(offset, |(o, _)| *o);
            row.end = next_start;
            row.width = row.cells.iter().map(|(_, c)| c.width()).sum();
            let carried_width = carried.iter().map(|(_, c)| c.width()).sum();
            rows.push(row);
            row = Row {
                line: index,
                start: next_start,
                end: next_start,
                cells: carried,
                width: carried_width,
            };
        }
        row.cells.push((offset, cell));
        row.width += w;
        row.end = offset + grapheme.len();
    }
    row.end = line.len();
    rows.push(row);
}

fn owned(cell: Cell<'_>) -> Cell<'static> {
    match cell {
        Cell::Text(t) => Cell::Text(Cow::Owned(t.into_owned())),
        Cell::Chip(label) => Cell::Chip(label),
    }
}

/// The screen position of byte `offset` of the line whose rows start at `first`; a cursor
/// after a full last row gets an empty row of its own.
fn place_cursor(rows: &mut Vec<Row>, first: usize, offset: usize, width: usize) -> (usize, usize) {
    for (r, row) in rows.iter().enumerate().skip(first) {
        if let Some(col) = column_in(row, offset) {
            return (r, col);
        }
    }
    let last = rows.len() - 1;
    let row = &rows[last];
    if row.width < width || row.cells.is_empty() {
        return (last, row.width);
    }
    let (line, end) = (row.line, row.end);
    rows.push(Row { line, start: end, end, cells: Vec::new(), width: 0 });
    (last + 1, 0)
}

/// The column of the grapheme starting at `offset` in `row`, if it is there.
fn column_in(row: &Row, offset: usize) -> Option<usize> {
    let mut col = 0;
    for (o, cell) in &row.cells {
        if *o == offset {
            return Some(col);
        }
        col += cell.width();
    }
    None
}

/// The byte offset in `row` closest to column `goal` (for Up/Down): the grapheme that covers
/// the column, or the end of the row.
pub fn offset_at_column(row: &Row, goal: usize) -> usize {
    let mut col = 0;
    for (o, cell) in &row.cells {
        let w = cell.width();
        if goal < col + w.max(1) {
            return *o;
        }
        col += w;
    }
    row.end
}

/// Byte offset of the grapheme boundary before `offset` in `text` (0 at the start).
pub fn prev_boundary(text: &str, offset: usize) -> usize {
    text[..offset].grapheme_indices(true).next_back().map_or(0, |(i, _)| i)
}

/// Byte offset of the grapheme boundary after `offset` in `text` (the length at the end).
pub fn next_boundary(text: &str, offset: usize) -> usize {
    text[offset..].graphemes(true).next().map_or(text.len(), |g| offset + g.len())
}

/// The start of the word before `offset`, skipping the spaces before it: what Ctrl+Left,
/// Alt+Backspace and Ctrl+W use. A word is a Unicode word (letters and digits) or a run of
/// punctuation.
pub fn word_start_before(text: &str, offset: usize) -> usize {
    let pieces: Vec<(usize, &str)> = text[..offset].split_word_bound_indices().collect();
    let mut i = pieces.len();
    while i > 0 && pieces[i - 1].1.trim().is_empty() {
        i -= 1;
    }
    if i == 0 {
        return 0;
    }
    i -= 1;
    if !is_wordish(pieces[i].1) {
        while i > 0 && is_punctuation(pieces[i - 1].1) {
            i -= 1;
        }
    }
    pieces[i].0
}

/// The end of the word after `offset`, skipping the spaces after it: what Ctrl+Right, Alt+D
/// and Ctrl+Delete use.
pub fn word_end_after(text: &str, offset: usize) -> usize {
    let mut pieces =
        text[offset..].split_word_bound_indices().skip_while(|(_, p)| p.trim().is_empty());
    let Some((o, first)) = pieces.next() else { return text.len() };
    let mut end = offset + o + first.len();
    if !is_wordish(first) {
        for (o, piece) in pieces.take_while(|(_, p)| is_punctuation(p)) {
            end = offset + o + piece.len();
        }
    }
    end
}

fn is_wordish(piece: &str) -> bool {
    piece.chars().any(char::is_alphanumeric)
}

fn is_punctuation(piece: &str) -> bool {
    !piece.trim().is_empty() && !is_wordish(piece)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.split('\n').map(str::to_owned).collect()
    }

    fn drawn(row: &Row) -> String {
        row.cells
            .iter()
            .map(|(_, c)| match c {
                Cell::Text(t) => t.to_string(),
                Cell::Chip(l) => l.clone(),
            })
            .collect()
    }

    #[test]
    fn wide_text_wraps_by_columns_and_the_cursor_follows() {
        let text = "漢".repeat(79);
        let l = layout(&lines(&text), (0, text.len()), 98, &Plain);
        // 49 characters fill 98 columns; the 79th ends the second row.
        assert_eq!(l.rows.len(), 2);
        assert_eq!(l.rows[0].width, 98);
        assert_eq!(l.rows[1].width, 60);
        assert_eq!(l.cursor, (1, 60));
        // A wide character never straddles the edge: at 5 columns, two per row.
        let l = layout(&lines("漢字漢字漢"), (0, 0), 5, &Plain);
        assert_eq!(l.rows.iter().map(|r| r.width).collect::<Vec<_>>(), [4, 4, 2]);
    }

    #[test]
    fn emoji_sequences_marks_and_tabs_are_one_cell_each() {
        let text = "a👩‍💻b👍🏽e\u{301}\tz";
        let l = layout(&lines(text), (0, 0), 80, &Plain);
        let cells: Vec<usize> = l.rows[0].cells.iter().map(|(_, c)| c.width()).collect();
        assert_eq!(cells, [1, 2, 1, 2, 1, TAB_WIDTH, 1]);
        // A lone combining mark still has a cell the cursor can sit on.
        let l = layout(&lines("\u{301}x"), (0, 2), 80, &Plain);
        assert_eq!(drawn(&l.rows[0]), "◌\u{301}x");
        assert_eq!(l.cursor, (0, 1));
    }

    #[test]
    fn rows_break_after_the_last_space_that_fits() {
        let l = layout(&lines("hello wide world"), (0, 0), 12, &Plain);
        let rows: Vec<String> = l.rows.iter().map(drawn).collect();
        assert_eq!(rows, ["hello wide ", "world"]);
        // A cursor at the end of a full row sits on a row of its own.
        let l = layout(&lines("abcd"), (0, 4), 4, &Plain);
        assert_eq!((l.rows.len(), l.cursor), (2, (1, 0)));
    }

    #[test]
    fn words_for_motions_and_deletions() {
        let t = "let x = foo_bar(1);  ";
        assert_eq!(word_start_before(t, t.len()), t.find(");").unwrap());
        assert_eq!(word_start_before(t, t.find('(').unwrap()), t.find("foo").unwrap());
        assert_eq!(word_end_after(t, 0), 3);
        assert_eq!(word_end_after(t, 3), 5);
        assert_eq!(word_end_after(t, t.len()), t.len());
        assert_eq!(word_start_before("漢字 カタカナ", "漢字 カタカナ".len()), "漢字 ".len());
    }

    fn piece() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "a",
            "b",
            " ",
            "漢",
            "字",
            "👩‍💻",
            "👍🏽",
            "e\u{301}",
            "\u{301}",
            "\t",
            "é",
            "🇫🇷",
            "x y",
        ])
    }

    proptest! {
        /// The rows cover each line exactly once, in order, within the width, and the cursor
        /// is drawn where the grapheme it edits starts.
        #[test]
        fn the_cursor_is_on_the_grapheme_it_edits(
            pieces in prop::collection::vec(piece(), 0..40),
            newline_at in prop::collection::vec(0usize..40, 0..3),
            width in 1usize..30,
            pick in 0usize..1000,
        ) {
            let mut text = String::new();
            for (i, p) in pieces.iter().enumerate() {
                if newline_at.contains(&i) {
                    text.push('\n');
                }
                text.push_str(p);
            }
            let lines = lines(&text);
            // A cursor on a grapheme boundary of some line.
            let line = pick % lines.len();
            let bounds: Vec<usize> = lines[line]
                .grapheme_indices(true)
                .map(|(i, _)| i)
                .chain(std::iter::once(lines[line].len()))
                .collect();
            let offset = bounds[pick % bounds.len()];
            let l = layout(&lines, (line, offset), width, &Plain);
            for (index, text) in lines.iter().enumerate() {
                let rows: Vec<&Row> = l.rows.iter().filter(|r| r.line == index).collect();
                let mut covered = String::new();
                for r in &rows {
                    prop_assert!(r.width <= width || r.cells.len() == 1, "{r:?}");
                    covered.push_str(&text[r.start..r.end]);
                }
                prop_assert_eq!(&covered, text);
            }
            let (row, col) = l.cursor;
            let drawn_row = &l.rows[row];
            prop_assert_eq!(drawn_row.line, line);
            prop_assert!(drawn_row.start <= offset && offset <= drawn_row.end);
            let before: usize = drawn_row
                .cells
                .iter()
                .take_while(|(o, _)| *o < offset)
                .map(|(_, c)| c.width())
                .sum();
            prop_assert_eq!(col, before);
            if let Some((o, _)) = drawn_row.cells.iter().find(|(o, _)| *o >= offset) {
                prop_assert_eq!(*o, offset, "the cursor starts a grapheme");
            }
        }
    }
}
