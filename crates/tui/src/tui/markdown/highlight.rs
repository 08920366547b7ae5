//! Syntax highlighting of code blocks: tree-sitter's highlighter over the grammars of the
//! languages replies show most (Rust, Python, JavaScript, TypeScript, shell, JSON, Go, C), each
//! with the highlight query its grammar ships, coloured by one dark palette.
//!
//! Building the queries takes tens of milliseconds, so it never happens on the way to the first
//! frame: [`warm_up`] builds them on a background thread at start-up, and until they are ready
//! code is drawn plain (the next frame picks the colours up). Unknown languages stay plain, and
//! so does a block the highlighter gives up on. Only the foreground colour is set, so the
//! terminal's own background shows through. A block's lines come out exactly as
//! [`str::lines`] cuts them, so the caller can fall back line by line.

use std::sync::OnceLock;

use ratatui::style::{Color, Style};
use ratatui::text::Span;
use tree_sitter_highlight::{HighlightConfiguration, HighlightEvent, Highlighter};

/// The capture names the palette colours, most specific last (a capture `function.method`
/// takes the longest of these it starts with), and their colours (base16 "ocean", dark).
const PALETTE: &[(&str, Color)] = &[
    ("attribute", Color::Rgb(0xd0, 0x87, 0x70)),
    ("comment", Color::Rgb(0x65, 0x73, 0x7e)),
    ("constant", Color::Rgb(0xd0, 0x87, 0x70)),
    ("constant.builtin", Color::Rgb(0xd0, 0x87, 0x70)),
    ("constructor", Color::Rgb(0xeb, 0xcb, 0x8b)),
    ("embedded", Color::Rgb(0xc0, 0xc5, 0xce)),
    ("escape", Color::Rgb(0x96, 0xb5, 0xb4)),
    ("function", Color::Rgb(0x8f, 0xa1, 0xb3)),
    ("function.builtin", Color::Rgb(0x96, 0xb5, 0xb4)),
    ("function.macro", Color::Rgb(0x96, 0xb5, 0xb4)),
    ("keyword", Color::Rgb(0xb4, 0x8e, 0xad)),
    ("label", Color::Rgb(0xbf, 0x61, 0x6a)),
    ("module", Color::Rgb(0xeb, 0xcb, 0x8b)),
    ("number", Color::Rgb(0xd0, 0x87, 0x70)),
    ("operator", Color::Rgb(0xc0, 0xc5, 0xce)),
    ("property", Color::Rgb(0xbf, 0x61, 0x6a)),
    ("punctuation", Color::Rgb(0xc0, 0xc5, 0xce)),
    ("string", Color::Rgb(0xa3, 0xbe, 0x8c)),
    ("string.special", Color::Rgb(0x96, 0xb5, 0xb4)),
    ("tag", Color::Rgb(0xbf, 0x61, 0x6a)),
    ("type", Color::Rgb(0xeb, 0xcb, 0x8b)),
    ("type.builtin", Color::Rgb(0xeb, 0xcb, 0x8b)),
    ("variable.builtin", Color::Rgb(0xbf, 0x61, 0x6a)),
    ("variable.parameter", Color::Rgb(0xc0, 0xc5, 0xce)),
];

/// Text no capture names: the palette's foreground.
const PLAIN: Color = Color::Rgb(0xc0, 0xc5, 0xce);

/// One grammar: the fence tokens that name it and its configured highlighter.
struct Grammar {
    tokens: &'static [&'static str],
    config: HighlightConfiguration,
}

struct Assets {
    grammars: Vec<Grammar>,
}

static ASSETS: OnceLock<Assets> = OnceLock::new();

/// Starts building the grammars' queries on a background thread (once).
pub fn warm_up() {
    if ASSETS.get().is_none() {
        // A thread the OS refuses (a process table filled by a fork bomb) costs only the
        // colours: code blocks are drawn plain.
        let started = std::thread::Builder::new().spawn(|| {
            ASSETS.get_or_init(load);
        });
        if let Err(e) = started {
            tracing::debug!("cannot start loading the grammars in the background: {e}");
        }
    }
}

/// Whether the grammars have loaded (drawn code may need colouring again once they have).
pub fn ready() -> bool {
    ASSETS.get().is_some()
}

/// The grammars, each with its fence tokens and the queries it is highlighted by. A query
/// that does not build (a grammar and its query out of step) leaves that language plain.
fn load() -> Assets {
    use tree_sitter_javascript as js;
    use tree_sitter_typescript as ts;
    let jsx = format!("{}\n{}", js::JSX_HIGHLIGHT_QUERY, js::HIGHLIGHT_QUERY);
    // TypeScript's query adds to JavaScript's, and its own patterns must come first.
    let typescript = format!("{}\n{}", ts::HIGHLIGHTS_QUERY, js::HIGHLIGHT_QUERY);
    let tsx =
        format!("{}\n{}\n{}", ts::HIGHLIGHTS_QUERY, js::JSX_HIGHLIGHT_QUERY, js::HIGHLIGHT_QUERY);
    let table: Vec<(&'static [&'static str], tree_sitter::Language, &str, &str, &str)> = vec![
        (
            &["rust", "rs"],
            tree_sitter_rust::LANGUAGE.into(),
            "rust",
            tree_sitter_rust::HIGHLIGHTS_QUERY,
            "",
        ),
        (
            &["python", "py", "python3", "py3"],
            tree_sitter_python::LANGUAGE.into(),
            "python",
            tree_sitter_python::HIGHLIGHTS_QUERY,
            "",
        ),
        (
            &["javascript", "js", "jsx", "mjs", "cjs", "node"],
            js::LANGUAGE.into(),
            "javascript",
            &jsx,
            js::LOCALS_QUERY,
        ),
        (
            &["typescript", "ts", "mts", "cts"],
            ts::LANGUAGE_TYPESCRIPT.into(),
            "typescript",
            &typescript,
            js::LOCALS_QUERY,
        ),
        (&["tsx"], ts::LANGUAGE_TSX.into(), "tsx", &tsx, js::LOCALS_QUERY),
        (
            &["bash", "sh", "shell", "zsh", "ksh"],
            tree_sitter_bash::LANGUAGE.into(),
            "bash",
            tree_sitter_bash::HIGHLIGHT_QUERY,
            "",
        ),
        (
            &["json", "jsonc", "json5"],
            tree_sitter_json::LANGUAGE.into(),
            "json",
            tree_sitter_json::HIGHLIGHTS_QUERY,
            "",
        ),
        (
            &["go", "golang"],
            tree_sitter_go::LANGUAGE.into(),
            "go",
            tree_sitter_go::HIGHLIGHTS_QUERY,
            "",
        ),
        (&["c", "h"], tree_sitter_c::LANGUAGE.into(), "c", tree_sitter_c::HIGHLIGHT_QUERY, ""),
    ];
    let names: Vec<&str> = PALETTE.iter().map(|(name, _)| *name).collect();
    let grammars =
        table
            .into_iter()
            .filter_map(|(tokens, language, name, highlights, locals)| {
                match HighlightConfiguration::new(language, name, highlights, "", locals) {
                    Ok(mut config) => {
                        config.configure(&names);
                        Some(Grammar { tokens, config })
                    }
                    Err(e) => {
                        tracing::debug!("the {name} highlight query does not build: {e}");
                        None
                    }
                }
            })
            .collect();
    Assets { grammars }
}

/// The lines of `code` in `lang` as coloured spans, one per line of [`str::lines`]; `None`
/// while the grammars load, for an unknown language, or when highlighting fails.
pub fn highlight(lang: &str, code: &str) -> Option<Vec<Vec<Span<'static>>>> {
    let assets = ASSETS.get()?;
    let token = lang.split([',', ' ']).next().unwrap_or_default().trim().to_ascii_lowercase();
    if token.is_empty() {
        return None;
    }
    let grammar = assets.grammars.iter().find(|g| g.tokens.contains(&token.as_str()))?;
    let mut highlighter = Highlighter::new();
    let events =
        highlighter.highlight(&grammar.config, code.as_bytes(), None, None, |_| None).ok()?;
    let mut lines = Lines::default();
    let mut stack: Vec<Color> = Vec::new();
    for event in events {
        match event.ok()? {
            HighlightEvent::HighlightStart(h) => {
                stack.push(PALETTE.get(h.0).map_or(PLAIN, |(_, colour)| *colour));
            }
            HighlightEvent::HighlightEnd => {
                stack.pop();
            }
            HighlightEvent::Source { start, end } => {
                let colour = stack.last().copied().unwrap_or(PLAIN);
                lines.push(code.get(start..end)?, colour);
            }
        }
    }
    Some(lines.finish(code))
}

/// Coloured text gathered into lines as [`str::lines`] cuts them: at `\n`, a `\r` before it
/// dropped, no line after a final newline.
#[derive(Default)]
struct Lines {
    done: Vec<Vec<Span<'static>>>,
    open: Vec<Span<'static>>,
}

impl Lines {
    fn push(&mut self, text: &str, colour: Color) {
        let mut parts = text.split('\n').peekable();
        while let Some(part) = parts.next() {
            if !part.is_empty() {
                self.open.push(Span::styled(part.to_owned(), Style::new().fg(colour)));
            }
            if parts.peek().is_some() {
                self.end_line(true);
            }
        }
    }

    /// Closes the open line; at a newline, without the `\r` of a CRLF ending (which may have
    /// come in a span of its own).
    fn end_line(&mut self, at_newline: bool) {
        if let Some(last) = self.open.last_mut().filter(|_| at_newline) {
            if let Some(kept) = last.content.strip_suffix('\r').map(str::to_owned) {
                last.content = kept.into();
            }
        }
        self.open.retain(|s| !s.content.is_empty());
        self.done.push(std::mem::take(&mut self.open));
    }

    fn finish(mut self, code: &str) -> Vec<Vec<Span<'static>>> {
        if !code.is_empty() && !code.ends_with('\n') {
            self.end_line(false);
        }
        self.done
    }
}

#[cfg(test)]
pub fn ready_for_tests() {
    ASSETS.get_or_init(load);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &[Span<'static>]) -> String {
        line.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn known_languages_are_coloured_and_unknown_ones_are_not() {
        ready_for_tests();
        let lines = highlight("rust", "fn main() {\n    let x = 1;\n}").unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(text(&lines[0]), "fn main() {");
        assert!(lines[0].len() > 1, "more than one colour: {:?}", lines[0]);
        let keyword = lines[0].iter().find(|s| s.content == "fn").unwrap();
        assert_eq!(keyword.style.fg, Some(Color::Rgb(0xb4, 0x8e, 0xad)));
        assert!(highlight("no-such-language", "x").is_none());
        assert!(highlight("", "x").is_none());
    }

    #[test]
    fn every_grammar_builds_and_colours_its_language() {
        ready_for_tests();
        let samples = [
            ("python", "def f(x):\n    return 'a'\n"),
            ("js", "const a = () => 'x';\n"),
            ("jsx", "const a = <div className=\"x\" />;\n"),
            ("ts", "let a: number = 1;\n"),
            ("tsx", "const a: number = <b>1</b>;\n"),
            ("bash", "echo \"$HOME\" # home\n"),
            ("json", "{\"a\": [1, true]}\n"),
            ("go", "func main() { fmt.Println(\"x\") }\n"),
            ("c", "int main(void) { return 0; }\n"),
        ];
        assert_eq!(ASSETS.get().map(|a| a.grammars.len()), Some(9), "a query did not build");
        for (lang, code) in samples {
            let lines = highlight(lang, code).unwrap_or_else(|| panic!("{lang} not highlighted"));
            assert_eq!(lines.len(), code.lines().count(), "{lang}");
            let drawn: Vec<String> = lines.iter().map(|l| text(l)).collect();
            assert_eq!(drawn.join("\n"), code.trim_end(), "{lang}");
            let colours: std::collections::HashSet<_> =
                lines.iter().flatten().filter_map(|s| s.style.fg).collect();
            assert!(colours.len() > 1, "{lang}: one colour only: {lines:?}");
        }
    }

    #[test]
    fn lines_come_out_as_str_lines_cuts_them() {
        ready_for_tests();
        for code in ["", "\n", "a\n\nb", "x = 1\r\ny = 2\r\n", "s = '''a\nb'''\n", "z\r", "a\r\r\n"]
        {
            let lines = highlight("python", code).unwrap();
            let texts: Vec<String> = lines.iter().map(|l| text(l)).collect();
            let expected: Vec<&str> = code.lines().collect();
            assert_eq!(texts, expected, "{code:?}");
        }
    }
}
