//! Wrapping styled lines to a width, so a cell's height is exactly the number of lines it
//! draws.
//!
//! The transcript never lets ratatui wrap: a cell wraps its own lines here and the height
//! cache stores `lines.len()`. Invariant: every returned line is at most `width` columns wide
//! (measured by [`text_width`], as it is drawn), and wrapping never drops a
//! character nor splits a grapheme. Words are broken at spaces by `textwrap`'s first-fit
//! algorithm over our own fragments (a word, its spaces); a word longer than the width is split
//! wherever the width runs out.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use textwrap::core::Fragment;
use textwrap::wrap_algorithms::wrap_first_fit;

use super::text_width;

/// Wraps `line` to `width` columns (at least 1). An empty line stays one empty line.
pub fn wrap_line(line: &Line<'static>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    // Flatten to graphemes with their style, so spans may be split between any two.
    let chars: Vec<Grapheme<'_>> = line
        .spans
        .iter()
        .flat_map(|span| {
            let style = line.style.patch(span.style);
            text_width::graphemes(&span.content).map(move |(g, w)| (g, w, style))
        })
        .collect();
    let pieces = pieces(&chars, width);
    let mut out = Vec::new();
    for row in wrap_first_fit(&pieces, &[width as f64]) {
        let (Some(first), Some(last)) = (row.first(), row.last()) else { continue };
        // The spaces after a row's last word stay on it as far as they fit; none is carried
        // to the next row.
        let used: usize = row.iter().map(|p| p.word + p.spaces).sum::<usize>() - last.spaces;
        let spaces = last.spaces.min(width.saturating_sub(used));
        out.push(to_line(&chars[first.start..last.word_end + spaces]));
    }
    if out.is_empty() {
        out.push(Line::default());
    }
    out
}

/// Wraps every line of `lines`.
pub fn wrap_lines(lines: &[Line<'static>], width: usize) -> Vec<Line<'static>> {
    lines.iter().flat_map(|l| wrap_line(l, width)).collect()
}

/// A grapheme, the columns it takes, and its style.
type Grapheme<'a> = (&'a str, usize, Style);

/// What a row may break after: a word (graphemes `start..word_end`, `word` columns) and the
/// spaces that follow it (`spaces` of them, one column each).
#[derive(Debug)]
struct Piece {
    start: usize,
    word_end: usize,
    word: usize,
    spaces: usize,
}

impl Fragment for Piece {
    fn width(&self) -> f64 {
        self.word as f64
    }

    fn whitespace_width(&self) -> f64 {
        self.spaces as f64
    }

    fn penalty_width(&self) -> f64 {
        0.0
    }
}

/// The words of `chars`, each with its following spaces; a word wider than `width` is cut
/// into pieces that fit (at least one grapheme each, so a too-wide glyph still makes progress).
fn pieces(chars: &[Grapheme<'_>], width: usize) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let mut start = i;
        let mut word = 0;
        while i < chars.len() && chars[i].0 != " " {
            if word > 0 && word + chars[i].1 > width {
                out.push(Piece { start, word_end: i, word, spaces: 0 });
                start = i;
                word = 0;
            }
            word += chars[i].1;
            i += 1;
        }
        let word_end = i;
        while i < chars.len() && chars[i].0 == " " {
            i += 1;
        }
        out.push(Piece { start, word_end, word, spaces: i - word_end });
    }
    out
}

fn to_line(chars: &[Grapheme<'_>]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style = None;
    for &(c, _, s) in chars {
        if style != Some(s) {
            if let Some(prev) = style {
                spans.push(Span::styled(std::mem::take(&mut text), prev));
            }
            style = Some(s);
        }
        text.push_str(&text_width::drawn(c));
    }
    if let Some(prev) = style {
        spans.push(Span::styled(text, prev));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn breaks_at_spaces_and_splits_long_words() {
        let line = Line::from("hello world abcdefghij");
        assert_eq!(plain(&wrap_line(&line, 8)), ["hello ", "world ", "abcdefgh", "ij"]);
    }

    #[test]
    fn keeps_every_char_and_respects_the_width() {
        let text = "a bb ccc dddd eeeee ffffff 日本語のテキスト";
        for width in 1..20 {
            let lines = wrap_line(&Line::from(text), width);
            for l in &lines {
                assert!(l.width() <= width.max(2), "{width}: {l:?}");
            }
            let joined: String = plain(&lines).concat();
            assert_eq!(joined.replace(' ', ""), text.replace(' ', ""));
        }
    }

    #[test]
    fn a_joined_emoji_is_one_glyph_and_a_tab_is_drawn_as_it_was_measured() {
        let family = "👨\u{200d}👩\u{200d}👧";
        let line = Line::from(format!("ab{family}{family}\tc"));
        // Measured per char, each family would take six columns; it takes two.
        assert_eq!(plain(&wrap_line(&line, 6)), [format!("ab{family}{family}"), "    c".into()]);
        // From the tab's width on, no glyph is wider than a line.
        for width in text_width::TAB_WIDTH..10 {
            for l in wrap_line(&line, width) {
                assert!(l.width() <= width, "{width}: {l:?}");
                let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
                assert!(!text.contains('\t'), "a tab is drawn as spaces");
            }
        }
    }

    #[test]
    fn indentation_stays_and_spaces_at_a_break_are_not_carried() {
        let code = Line::from("    let total = parts.iter().sum();");
        assert_eq!(plain(&wrap_line(&code, 20)), ["    let total = ", "parts.iter().sum();"]);
        assert_eq!(plain(&wrap_line(&Line::from("a   b"), 2)), ["a ", "b"]);
    }

    #[test]
    fn an_empty_line_is_one_line() {
        assert_eq!(wrap_line(&Line::default(), 10).len(), 1);
    }
}
