//! What reaches the terminal is inert (docs/security.md, *What reaches the terminal*): text
//! the model wrote — or a command it ran printed — is shown with every character that could
//! steer the terminal or hide what is shown replaced by `�`: the C0 controls other than `\n`
//! and `\t` (ESC among them, so no OSC 52 clipboard write, no title, no `ESC c` reset), DEL,
//! the C1 controls (U+0080–U+009F) and the bidi controls U+202A–U+202E and U+2066–U+2069; a
//! carriage return becomes a newline, so `\r ESC[2K` cannot redraw a line as another.
//!
//! The one rule for every place text reaches the terminal: `exec`'s stdout when it is a
//! terminal and every line on stderr ([`crate::output`]), and every cell of the TUI (its width
//! model draws each such character as `�`, `tui::text_width::drawn`).

use std::borrow::Cow;

/// The character shown instead of one that is not inert.
pub const REPLACEMENT: char = '\u{FFFD}';

/// Whether `c` is shown as [`REPLACEMENT`] (module docs); `\r` is not, as it becomes a newline.
pub fn replaced(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` as the terminal may show it (module docs); borrowed when nothing changes.
pub fn text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c == '\r' || replaced(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                chars.next_if_eq(&'\n');
                out.push('\n');
            }
            c if replaced(c) => out.push(REPLACEMENT),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_are_shown_inert() {
        // OSC 52 (clipboard), OSC 0 (title), ESC c (reset), and a line redrawn by \r ESC[2K.
        let hostile = "a\u{1b}]52;c;ZWNobw==\u{7}b\u{1b}]0;title\u{7}\u{1b}c\
                       touch EVIL_RAN\r\u{1b}[2Kecho harmless";
        assert_eq!(
            text(hostile),
            "a\u{FFFD}]52;c;ZWNobw==\u{FFFD}b\u{FFFD}]0;title\u{FFFD}\u{FFFD}c\
             touch EVIL_RAN\n\u{FFFD}[2Kecho harmless"
        );
        assert_eq!(
            text("x\u{9b}31m\u{7f}y\u{202e}z\u{2066}"),
            "x\u{FFFD}31m\u{FFFD}y\u{FFFD}z\u{FFFD}"
        );
        assert_eq!(text("one\r\ntwo\tthree\n"), "one\ntwo\tthree\n");
        assert!(matches!(text("plain, ünïcode ✓\n\t"), Cow::Borrowed(_)));
        // Characters next to the ranges are left alone.
        assert_eq!(text("\u{a0}\u{2029}\u{206a}"), "\u{a0}\u{2029}\u{206a}");
    }
}
