//! Calling the user back while they are in another window: when a turn ends, an approval waits
//! or a compaction finishes and the terminal is not focused (focus reports, DEC mode 1004), a
//! desktop notification (OSC 9, or OSC 777 where that is the terminal's dialect) or the bell.
//!
//! Pure: which method a setting and the environment give, and the bytes to write. The event
//! loop writes them; the app decides when (see `App::call_back`).

use codewhale_protocol::Notify;

/// How the terminal is asked to call the user back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `ESC ] 9 ; text BEL`: iTerm2, WezTerm, Ghostty, kitty, Windows Terminal, foot.
    Osc9,
    /// `ESC ] 777 ; notify ; title ; text BEL`: VTE terminals (GNOME Terminal, Tilix), rxvt.
    Osc777,
    /// `BEL`: every terminal; tmux and screen pass it on as a window alert.
    Bell,
}

/// The method for `setting` in this environment (`var` reads a variable); `None` when off.
pub fn method(setting: Notify, var: impl Fn(&str) -> Option<String>) -> Option<Method> {
    match setting {
        Notify::Off => None,
        Notify::Osc9 => Some(Method::Osc9),
        Notify::Bell => Some(Method::Bell),
        Notify::Auto => Some(detect(&var)),
    }
}

/// What `auto` picks: a terminal known to show OSC 9 or OSC 777 gets it; inside tmux or
/// screen, whose passthrough is off by default, and anywhere unknown, the bell.
fn detect(var: &dyn Fn(&str) -> Option<String>) -> Method {
    if var("TMUX").is_some() || var("STY").is_some() {
        return Method::Bell;
    }
    let program = var("TERM_PROGRAM").unwrap_or_default();
    let term = var("TERM").unwrap_or_default();
    let osc9_program = ["iTerm.app", "WezTerm", "ghostty"].contains(&program.as_str());
    if osc9_program
        || var("KITTY_WINDOW_ID").is_some()
        || var("WT_SESSION").is_some()
        || term.starts_with("foot")
    {
        Method::Osc9
    } else if var("VTE_VERSION").is_some() || term.contains("rxvt") {
        Method::Osc777
    } else {
        Method::Bell
    }
}

/// The bytes that ask for `text` to be shown. Control characters in `text` are dropped (a
/// stray BEL or ESC would end the sequence early) and it is kept short.
pub fn sequence(method: Method, text: &str) -> String {
    let clean: String = text.chars().filter(|c| !c.is_control()).take(200).collect();
    match method {
        Method::Osc9 => format!("\x1b]9;{clean}\x07"),
        Method::Osc777 => format!("\x1b]777;notify;Codewhale;{clean}\x07"),
        Method::Bell => "\x07".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn auto_picks_what_the_terminal_shows_and_the_bell_elsewhere() {
        assert_eq!(method(Notify::Auto, env(&[("TERM_PROGRAM", "WezTerm")])), Some(Method::Osc9));
        assert_eq!(method(Notify::Auto, env(&[("KITTY_WINDOW_ID", "1")])), Some(Method::Osc9));
        assert_eq!(method(Notify::Auto, env(&[("VTE_VERSION", "7600")])), Some(Method::Osc777));
        let tmux = env(&[("TMUX", "/tmp/tmux"), ("TERM_PROGRAM", "iTerm.app")]);
        assert_eq!(method(Notify::Auto, tmux), Some(Method::Bell));
        assert_eq!(method(Notify::Auto, env(&[("TERM", "xterm-256color")])), Some(Method::Bell));
        assert_eq!(method(Notify::Off, env(&[("TERM_PROGRAM", "WezTerm")])), None);
        assert_eq!(method(Notify::Osc9, env(&[])), Some(Method::Osc9));
        assert_eq!(method(Notify::Bell, env(&[("TERM_PROGRAM", "WezTerm")])), Some(Method::Bell));
    }

    #[test]
    fn a_sequence_cannot_be_ended_early_by_its_text() {
        assert_eq!(sequence(Method::Osc9, "done\x07\x1b]x"), "\x1b]9;done]x\x07");
        assert_eq!(sequence(Method::Osc777, "ok"), "\x1b]777;notify;Codewhale;ok\x07");
        assert_eq!(sequence(Method::Bell, "anything"), "\x07");
    }
}
