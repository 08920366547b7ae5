//! Terminal escape sequences in tool output: colours (SGR) become styles, everything else
//! (cursor moves, clears, titles, hyperlinks) is dropped, so output never prints as
//! `[31mred[0m` and never moves the UI's cursor. A carriage return starts a new line, and any
//! other control character is kept to be drawn as `�` (the `inert` module).

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// `text`'s lines with its colours as styles and every other escape sequence removed; `base`
/// is the style of uncoloured text.
pub fn lines(text: &str, base: Style) -> Vec<Line<'static>> {
    let mut style = base;
    // A carriage return is a new line (what reaches the terminal is inert): `\r ESC[2K` must
    // not redraw `touch EVIL_RAN` as `echo harmless`.
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    text.lines()
        .map(|line| {
            let mut spans = Vec::new();
            let mut current = String::new();
            let mut chars = line.chars().peekable();
            while let Some(c) = chars.next() {
                match c {
                    '\u{1b}' => match chars.peek() {
                        Some('[') => {
                            chars.next();
                            let mut params = String::new();
                            let mut end = None;
                            for p in chars.by_ref() {
                                if ('\u{40}'..='\u{7e}').contains(&p) {
                                    end = Some(p);
                                    break;
                                }
                                params.push(p);
                            }
                            if end == Some('m') {
                                if !current.is_empty() {
                                    spans.push(Span::styled(std::mem::take(&mut current), style));
                                }
                                style = apply(style, base, &params);
                            }
                        }
                        Some(']') => {
                            // OSC: up to BEL or ESC \.
                            chars.next();
                            while let Some(p) = chars.next() {
                                if p == '\u{7}'
                                    || p == '\u{1b}' && chars.next_if_eq(&'\\').is_some()
                                {
                                    break;
                                }
                            }
                        }
                        _ => {
                            chars.next();
                        }
                    },
                    '\t' => current.push_str("    "),
                    // Kept, to be drawn as `�` (`text_width::drawn`).
                    c => current.push(c),
                }
            }
            if !current.is_empty() {
                spans.push(Span::styled(current, style));
            }
            Line::from(spans)
        })
        .collect()
}

/// `text` without escape sequences (for search and the pager's plain text).
pub fn strip(text: &str) -> String {
    lines(text, Style::default())
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

fn apply(mut style: Style, base: Style, params: &str) -> Style {
    let codes: Vec<u16> = if params.is_empty() {
        vec![0]
    } else {
        params.split(';').map(|p| p.parse().unwrap_or(0)).collect()
    };
    let mut i = 0;
    while i < codes.len() {
        match codes[i] {
            0 => style = base,
            1 => style = style.add_modifier(Modifier::BOLD),
            2 => style = style.add_modifier(Modifier::DIM),
            3 => style = style.add_modifier(Modifier::ITALIC),
            4 => style = style.add_modifier(Modifier::UNDERLINED),
            7 => style = style.add_modifier(Modifier::REVERSED),
            22 => style = style.remove_modifier(Modifier::BOLD | Modifier::DIM),
            23 => style = style.remove_modifier(Modifier::ITALIC),
            24 => style = style.remove_modifier(Modifier::UNDERLINED),
            27 => style = style.remove_modifier(Modifier::REVERSED),
            n @ 30..=37 => style = style.fg(Color::Indexed((n - 30) as u8)),
            n @ 90..=97 => style = style.fg(Color::Indexed((n - 90 + 8) as u8)),
            39 => style.fg = base.fg,
            n @ 40..=47 => style = style.bg(Color::Indexed((n - 40) as u8)),
            n @ 100..=107 => style = style.bg(Color::Indexed((n - 100 + 8) as u8)),
            49 => style.bg = base.bg,
            n @ (38 | 48) => {
                let color = match codes.get(i + 1) {
                    Some(5) => {
                        let c = codes.get(i + 2).map(|c| Color::Indexed(*c as u8));
                        i += 2;
                        c
                    }
                    Some(2) => {
                        let rgb = (codes.get(i + 2), codes.get(i + 3), codes.get(i + 4));
                        i += 4;
                        match rgb {
                            (Some(r), Some(g), Some(b)) => {
                                Some(Color::Rgb(*r as u8, *g as u8, *b as u8))
                            }
                            _ => None,
                        }
                    }
                    _ => None,
                };
                if let Some(color) = color {
                    style = if n == 38 { style.fg(color) } else { style.bg(color) };
                }
            }
            _ => {}
        }
        i += 1;
    }
    style
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_become_styles_and_other_sequences_disappear() {
        let out =
            lines("\u{1b}[31mred\u{1b}[0m plain \u{1b}[1;38;5;208mbold\u{1b}[m", Style::default());
        let spans = &out[0].spans;
        assert_eq!(spans[0].content, "red");
        assert_eq!(spans[0].style.fg, Some(Color::Indexed(1)));
        assert_eq!(spans[1].content, " plain ");
        assert_eq!(spans[1].style, Style::default());
        assert_eq!(spans[2].style.fg, Some(Color::Indexed(208)));
        assert!(spans[2].style.add_modifier.contains(Modifier::BOLD));
        assert_eq!(
            strip("\u{1b}[2K\u{1b}[1Gprogress\u{1b}]0;title\u{7} 50%\r done\u{1b}]8;;http://x\u{1b}\\link"),
            "progress 50%\n donelink",
            "a carriage return is a new line: nothing printed before it is hidden"
        );
    }
}
