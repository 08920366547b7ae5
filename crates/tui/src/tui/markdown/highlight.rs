//! Syntax highlighting of code blocks (syntect, with its bundled grammars and a dark theme).
//!
//! Loading the grammars takes tens of milliseconds, so it never happens on the way to the
//! first frame: [`warm_up`] loads them on a background thread at start-up, and until they are
//! ready code is drawn plain (the next frame picks the colours up). Unknown languages stay
//! plain. Only the foreground colour is used, so the terminal's own background shows through.

use std::sync::OnceLock;

use ratatui::style::{Color, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{Theme, ThemeSet};
use syntect::parsing::SyntaxSet;

struct Assets {
    syntaxes: SyntaxSet,
    theme: Theme,
}

static ASSETS: OnceLock<Option<Assets>> = OnceLock::new();

/// Starts loading the grammars on a background thread (once).
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

fn load() -> Option<Assets> {
    let syntaxes = SyntaxSet::load_defaults_newlines();
    let mut themes = ThemeSet::load_defaults();
    let theme = themes.themes.remove("base16-ocean.dark")?;
    Some(Assets { syntaxes, theme })
}

/// The lines of `code` in `lang` as coloured spans; `None` while the grammars load, for an
/// unknown language, or when highlighting fails.
pub fn highlight(lang: &str, code: &str) -> Option<Vec<Vec<Span<'static>>>> {
    let assets = ASSETS.get()?.as_ref()?;
    let token = lang.split([',', ' ']).next().unwrap_or_default().trim();
    if token.is_empty() {
        return None;
    }
    let syntax = assets
        .syntaxes
        .find_syntax_by_token(token)
        .or_else(|| assets.syntaxes.find_syntax_by_extension(token))?;
    let mut lines = HighlightLines::new(syntax, &assets.theme);
    let mut out = Vec::new();
    for line in code.lines() {
        let line = format!("{line}\n");
        let ranges = lines.highlight_line(&line, &assets.syntaxes).ok()?;
        let spans = ranges
            .into_iter()
            .map(|(style, text)| {
                let c = style.foreground;
                let text = text.trim_end_matches('\n').to_owned();
                Span::styled(text, Style::new().fg(Color::Rgb(c.r, c.g, c.b)))
            })
            .filter(|s| !s.content.is_empty())
            .collect();
        out.push(spans);
    }
    Some(out)
}

#[cfg(test)]
pub fn ready_for_tests() {
    ASSETS.get_or_init(load);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_languages_are_coloured_and_unknown_ones_are_not() {
        ready_for_tests();
        let lines = highlight("rust", "fn main() {\n    let x = 1;\n}").unwrap();
        assert_eq!(lines.len(), 3);
        let first: String = lines[0].iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(first, "fn main() {");
        assert!(lines[0].len() > 1, "more than one colour: {:?}", lines[0]);
        assert!(highlight("no-such-language", "x").is_none());
        assert!(highlight("", "x").is_none());
    }
}
