//! The UI's one text-width model: how many terminal columns text takes, for the transcript,
//! the composer, markdown and the status line alike.
//!
//! Text is measured by grapheme cluster with `unicode-width`'s string width, as ratatui draws
//! it: a ZWJ emoji sequence or a flag is one glyph of two columns, and a combining mark adds
//! nothing to the letter it follows. A tab is [`TAB_WIDTH`] columns (drawn as that many
//! spaces); any other control character, and a bidi control, is one column, drawn as `�`
//! ([`drawn`], the rule of the `inert` module): no cell carries a character that steers the
//! terminal or reorders what is shown.
//! Invariant: everything that measures, wraps or cuts text goes through [`grapheme_width`],
//! so a line is as wide on screen as it was measured.

use std::borrow::Cow;

use unicode_segmentation::UnicodeSegmentation as _;
use unicode_width::UnicodeWidthStr as _;

/// Columns a tab takes.
pub const TAB_WIDTH: usize = 4;

/// Columns `grapheme` takes (one grapheme cluster).
pub fn grapheme_width(grapheme: &str) -> usize {
    if grapheme == "\t" {
        return TAB_WIDTH;
    }
    if grapheme.chars().any(not_drawn) {
        return 1;
    }
    grapheme.width()
}

/// Columns `text` takes.
pub fn width(text: &str) -> usize {
    text.graphemes(true).map(grapheme_width).sum()
}

/// The graphemes of `text` with the columns each takes.
pub fn graphemes(text: &str) -> impl Iterator<Item = (&str, usize)> {
    text.graphemes(true).map(|g| (g, grapheme_width(g)))
}

/// The longest prefix of `text` at most `columns` wide, cut between graphemes.
pub fn prefix(text: &str, columns: usize) -> &str {
    let mut used = 0;
    for (start, grapheme) in text.grapheme_indices(true) {
        used += grapheme_width(grapheme);
        if used > columns {
            return &text[..start];
        }
    }
    text
}

/// A character drawn as `�`: a control character (a tab aside) or a bidi control.
fn not_drawn(c: char) -> bool {
    c != '\t' && (c.is_control() || crate::inert::replaced(c))
}

/// `grapheme` as it is drawn: a tab as [`TAB_WIDTH`] spaces, another control character or a
/// bidi control as `�`, anything else as it is.
pub fn drawn(grapheme: &str) -> Cow<'_, str> {
    if grapheme == "\t" {
        Cow::Borrowed(&"        "[..TAB_WIDTH])
    } else if grapheme.chars().any(not_drawn) {
        Cow::Borrowed("\u{FFFD}")
    } else {
        Cow::Borrowed(grapheme)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graphemes_are_measured_as_they_are_drawn() {
        assert_eq!(width("abc"), 3);
        assert_eq!(width("日本"), 4);
        // A family emoji joined by ZWJs is one glyph of two columns, not three of two.
        assert_eq!(width("👨\u{200d}👩\u{200d}👧"), 2);
        assert_eq!(width("🇫🇷"), 2);
        assert_eq!(width("e\u{301}"), 1, "a combining accent adds nothing");
        assert_eq!(width("a\tb"), 2 + TAB_WIDTH);
        assert_eq!(width("a\u{7}b"), 3, "a control character is drawn as one column");
        assert_eq!(drawn("\u{1b}"), "\u{FFFD}");
        assert_eq!(width("a\u{202e}b"), 3, "a bidi control is drawn as one column");
        assert_eq!(drawn("\u{202e}"), "\u{FFFD}");
    }

    #[test]
    fn a_prefix_never_splits_a_grapheme_or_passes_its_width() {
        let text = "ab👨\u{200d}👩\u{200d}👧cd";
        assert_eq!(prefix(text, 2), "ab");
        assert_eq!(prefix(text, 3), "ab", "the emoji does not fit in one column");
        assert_eq!(prefix(text, 4), "ab👨\u{200d}👩\u{200d}👧");
        assert_eq!(prefix(text, 99), text);
        for columns in 0..8 {
            assert!(width(prefix(text, columns)) <= columns);
        }
    }

    #[test]
    fn what_is_drawn_is_as_wide_as_what_was_measured() {
        for g in ["\t", "\u{7}", "x", "日", "\r\n"] {
            assert_eq!(width(&drawn(g)), grapheme_width(g), "{g:?}");
        }
    }
}
