//! Wrapping styled lines to a width, so a cell's height is exactly the number of lines it
//! draws.
//!
//! The transcript never lets ratatui wrap: a cell wraps its own lines here and the height
//! cache stores `lines.len()`. Invariant: every returned line is at most `width` columns wide
//! (measured by [`text_width`], as it is drawn), and wrapping never drops a
//! character nor splits a grapheme. Words are broken at spaces; a word longer than the width
//! is split wherever the width runs out.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::text_width;

/// Wraps `line` to `width` columns (at least 1). An empty line stays one empty line.
pub fn wrap_line(line: &Line<'static>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    // Flatten to graphemes with their style, so spans may be split between any two.
    let chars: Vec<(&str, usize, Style)> = line
        .spans
        .iter()
        .flat_map(|span| {
            let style = line.style.patch(span.style);
            text_width::graphemes(&span.content).map(move |(g, w)| (g, w, style))
        })
        .collect();
    let mut out = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        let end = break_point(&chars[start..], width) + start;
        out.push(to_line(&chars[start..end]));
        start = end;
        // The space at which a line broke is not carried to the next line.
        if start < chars.len() && chars[start].0 == " " {
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

/// How many graphemes of `chars` fit on one line of `width` columns, preferring a break after
/// a space. Always at least one, so wrapping makes progress even on a too-wide glyph.
fn break_point(chars: &[(&str, usize, Style)], width: usize) -> usize {
    let mut used = 0;
    let mut last_space = None;
    for (i, &(c, w, _)) in chars.iter().enumerate() {
        if used + w > width {
            if c == " " {
                return i.max(1);
            }
            return match last_space {
                Some(s) if s > 0 => s,
                _ => i.max(1),
            };
        }
        used += w;
        if c == " " {
            last_space = Some(i + 1);
        }
    }
    chars.len()
}

fn to_line(chars: &[(&str, usize, Style)]) -> Line<'static> {
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
    fn an_empty_line_is_one_line() {
        assert_eq!(wrap_line(&Line::default(), 10).len(), 1);
    }
}
