//! Wrapping styled lines to a width, so a cell's height is exactly the number of lines it
//! draws.
//!
//! The transcript never lets ratatui wrap: a cell wraps its own lines here and the height
//! cache stores `lines.len()`. Invariant: every returned line is at most `width` columns wide
//! (by Unicode display width), and wrapping never drops a character. Words are broken at
//! spaces; a word longer than the width is split wherever the width runs out.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Wraps `line` to `width` columns (at least 1). An empty line stays one empty line.
pub fn wrap_line(line: &Line<'static>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    // Flatten to (char, style) so spans may be split anywhere.
    let chars: Vec<(char, Style)> = line
        .spans
        .iter()
        .flat_map(|span| {
            let style = line.style.patch(span.style);
            span.content.chars().map(move |c| (c, style))
        })
        .collect();
    let mut out = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        let end = break_point(&chars[start..], width) + start;
        out.push(to_line(&chars[start..end]));
        start = end;
        // The space at which a line broke is not carried to the next line.
        if start < chars.len() && chars[start].0 == ' ' {
            start += 1;
        }
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

/// Display width of a char; control characters count as one column because they are
/// replaced before drawing.
fn char_width(c: char) -> usize {
    if c == '\t' {
        return 4;
    }
    c.width().unwrap_or(1)
}

/// How many chars of `chars` fit on one line of `width` columns, preferring a break after a
/// space. Always at least one char, so wrapping makes progress even on a too-wide glyph.
fn break_point(chars: &[(char, Style)], width: usize) -> usize {
    let mut used = 0;
    let mut last_space = None;
    for (i, &(c, _)) in chars.iter().enumerate() {
        let w = char_width(c);
        if used + w > width {
            if c == ' ' {
                return i.max(1);
            }
            return match last_space {
                Some(s) if s > 0 => s,
                _ => i.max(1),
            };
        }
        used += w;
        if c == ' ' {
            last_space = Some(i + 1);
        }
    }
    chars.len()
}

fn to_line(chars: &[(char, Style)]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style = None;
    for &(c, s) in chars {
        if style != Some(s) {
            if let Some(prev) = style {
                spans.push(Span::styled(std::mem::take(&mut text), prev));
            }
            style = Some(s);
        }
        match c {
            '\t' => text.push_str("    "),
            c if c.is_control() => text.push(' '),
            c => text.push(c),
        }
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
    fn an_empty_line_is_one_line() {
        assert_eq!(wrap_line(&Line::default(), 10).len(), 1);
    }
}
