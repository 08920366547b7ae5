//! What to tell the user to do, in the words of the front end they are using.
//!
//! A message that suggests a command must suggest one that exists where it is shown: `/compact`
//! in the terminal UI, `codewhale compact --session ID` after `codewhale exec`. The engine knows
//! its front end from [`crate::EngineParams::front_end`] and phrases every suggestion through
//! [`Hints`].

use serde::{Deserialize, Serialize};

/// Who drives the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrontEnd {
    /// The interactive terminal UI: slash commands.
    #[default]
    Tui,
    /// One-shot commands (`codewhale exec`, `codewhale compact`): command lines.
    Cli,
}

/// Suggestions phrased for one front end and session.
#[derive(Debug, Clone)]
pub struct Hints {
    front_end: FrontEnd,
    session: String,
    /// ` --home DIR` when the user gave one (commands suggested must find the same home).
    home: String,
}

impl Hints {
    pub fn new(front_end: FrontEnd, session: &str) -> Hints {
        Hints { front_end, session: session.to_owned(), home: String::new() }
    }

    /// The same hints, repeating `--home DIR` in suggested command lines.
    /// The front end the hints are phrased for.
    pub fn front_end(&self) -> FrontEnd {
        self.front_end
    }

    pub fn with_home(mut self, home: Option<&std::path::Path>) -> Hints {
        self.home = home.map(|h| format!(" --home {}", h.display())).unwrap_or_default();
        self
    }

    /// How to compact this session now.
    pub fn compact(&self) -> String {
        match self.front_end {
            FrontEnd::Tui => "`/compact <focus>`".to_owned(),
            FrontEnd::Cli => format!("`codewhale compact --session {}{}`", self.session, self.home),
        }
    }

    /// How to compact this session now with a focus (a shorter note on what matters).
    pub fn compact_with_focus(&self) -> String {
        match self.front_end {
            FrontEnd::Tui => "`/compact <focus>`".to_owned(),
            FrontEnd::Cli => format!(
                "`codewhale compact --session {}{} --focus \"what matters now\"`",
                self.session, self.home
            ),
        }
    }

    /// How to remove a pinned anchor.
    pub fn anchor_rm(&self) -> &'static str {
        match self.front_end {
            FrontEnd::Tui => "`/anchor rm N`",
            FrontEnd::Cli => "`codewhale anchor rm N`",
        }
    }

    /// How to get a larger window.
    pub fn larger_window(&self) -> &'static str {
        match self.front_end {
            FrontEnd::Tui => "switch to a model with a larger window (`/model`)",
            FrontEnd::Cli => "use a model with a larger window (--model, or --context-window N)",
        }
    }

    /// How to continue from before a given entry.
    pub fn rewind(&self) -> String {
        match self.front_end {
            FrontEnd::Tui => "`/rewind` or `/fork` to an entry before it".to_owned(),
            FrontEnd::Cli => {
                format!(
                    "`codewhale resume {}{}` and `/rewind` to an entry before it",
                    self.session, self.home
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_exist_where_they_are_shown() {
        let tui = Hints::new(FrontEnd::Tui, "s-1");
        let cli = Hints::new(FrontEnd::Cli, "s-1");
        assert!(tui.compact().contains("/compact") && !tui.compact().contains("codewhale"));
        assert_eq!(cli.compact(), "`codewhale compact --session s-1`");
        assert!(cli.rewind().contains("codewhale resume s-1"));
        assert!(cli.compact_with_focus().contains("--session s-1 --focus"));
        assert_eq!(tui.compact_with_focus(), "`/compact <focus>`");
    }

    #[test]
    fn a_home_the_user_gave_is_repeated() {
        let cli = Hints::new(FrontEnd::Cli, "s-1").with_home(Some(std::path::Path::new("/tmp/h")));
        assert_eq!(cli.compact(), "`codewhale compact --session s-1 --home /tmp/h`");
        assert!(cli.rewind().contains("codewhale resume s-1 --home /tmp/h"));
    }
}
