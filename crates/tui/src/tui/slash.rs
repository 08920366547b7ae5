//! The slash commands: one enum, one table. Name, argument hint, description, whether the
//! command may run while a turn runs, and whether this version supports it are exhaustive
//! matches, so adding a command forces every decision. `/help`, completion and
//! `docs/commands.md` are all generated from here.

/// Every slash command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlashCommand {
    Compact,
    Context,
    Anchor,
    New,
    Resume,
    Sessions,
    Fork,
    Checkout,
    Rewind,
    Model,
    Help,
    Quit,
}

/// In table order (the order of `/help` and the completion popup).
pub const ALL: [SlashCommand; 12] = [
    SlashCommand::Compact,
    SlashCommand::Context,
    SlashCommand::Anchor,
    SlashCommand::New,
    SlashCommand::Resume,
    SlashCommand::Sessions,
    SlashCommand::Fork,
    SlashCommand::Checkout,
    SlashCommand::Rewind,
    SlashCommand::Model,
    SlashCommand::Help,
    SlashCommand::Quit,
];

impl SlashCommand {
    /// The name typed after `/`.
    pub fn name(self) -> &'static str {
        match self {
            SlashCommand::Compact => "compact",
            SlashCommand::Context => "context",
            SlashCommand::Anchor => "anchor",
            SlashCommand::New => "new",
            SlashCommand::Resume => "resume",
            SlashCommand::Sessions => "sessions",
            SlashCommand::Fork => "fork",
            SlashCommand::Checkout => "checkout",
            SlashCommand::Rewind => "rewind",
            SlashCommand::Model => "model",
            SlashCommand::Help => "help",
            SlashCommand::Quit => "quit",
        }
    }

    /// The arguments, as shown after the name.
    pub fn args(self) -> &'static str {
        match self {
            SlashCommand::Compact => "[focus]",
            SlashCommand::Anchor => "<text> | list | rm <n>",
            SlashCommand::Resume => "[session-id]",
            SlashCommand::Fork | SlashCommand::Checkout | SlashCommand::Rewind => "<entry-id>",
            SlashCommand::Model => "<model>",
            SlashCommand::Context
            | SlashCommand::New
            | SlashCommand::Sessions
            | SlashCommand::Help
            | SlashCommand::Quit => "",
        }
    }

    /// One sentence for `/help` and the docs.
    pub fn description(self) -> &'static str {
        match self {
            SlashCommand::Compact => {
                "Compact the conversation now, optionally telling the summary what to focus on."
            }
            SlashCommand::Context => {
                "Show what the next request contains: token breakdown, threshold, the active compaction, anchors."
            }
            SlashCommand::Anchor => {
                "Pin a note that every later checkpoint restates verbatim; `list` shows them, `rm N` removes one."
            }
            SlashCommand::New => "Start a new session in this workspace.",
            SlashCommand::Resume => {
                "Continue an earlier session of this workspace (a picker, or the given id)."
            }
            SlashCommand::Sessions => "Browse every session, newest first; Enter resumes one.",
            SlashCommand::Fork => "Start a new branch at an entry of the journal.",
            SlashCommand::Checkout => "Move HEAD to an entry of another branch.",
            SlashCommand::Rewind => "Move HEAD back to an earlier entry of this branch.",
            SlashCommand::Model => "Use another model from the next request on.",
            SlashCommand::Help => "List the commands and keys.",
            SlashCommand::Quit => "Leave Codewhale (the session is saved as it goes).",
        }
    }

    /// Whether the command may run while a turn runs. The engine refuses most ops during a
    /// turn; the ones allowed here only read or leave.
    pub fn allowed_during_turn(self) -> bool {
        match self {
            SlashCommand::Context | SlashCommand::Help | SlashCommand::Quit => true,
            SlashCommand::Sessions
            | SlashCommand::Compact
            | SlashCommand::Anchor
            | SlashCommand::New
            | SlashCommand::Resume
            | SlashCommand::Fork
            | SlashCommand::Checkout
            | SlashCommand::Rewind
            | SlashCommand::Model => false,
        }
    }

    pub fn from_name(name: &str) -> Option<SlashCommand> {
        ALL.into_iter().find(|c| c.name() == name)
    }

    /// `/name args` as shown in help.
    pub fn usage(self) -> String {
        if self.args().is_empty() {
            format!("/{}", self.name())
        } else {
            format!("/{} {}", self.name(), self.args())
        }
    }
}

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub command: SlashCommand,
    /// Everything after the name, trimmed.
    pub args: String,
}

/// Why a `/...` line is not a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCommand(pub String);

/// Parses a composer text. `None` when it is not a slash command at all (a message that
/// happens to start with `//` or `/ ` is sent as text).
pub fn parse(text: &str) -> Option<Result<Invocation, UnknownCommand>> {
    let rest = text.trim_start().strip_prefix('/')?;
    if rest.starts_with(['/', ' ']) || rest.is_empty() {
        return None;
    }
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    Some(match SlashCommand::from_name(name) {
        Some(command) => Ok(Invocation { command, args: args.trim().to_owned() }),
        None => Err(UnknownCommand(name.to_owned())),
    })
}

/// Commands whose name starts with what follows `/` in `text`, while the name is being typed
/// (no space yet).
pub fn completions(text: &str) -> Vec<SlashCommand> {
    let Some(prefix) = text.strip_prefix('/') else { return Vec::new() };
    if prefix.contains(char::is_whitespace) || prefix.starts_with('/') {
        return Vec::new();
    }
    ALL.into_iter().filter(|c| c.name().starts_with(prefix)).collect()
}

/// The keys, shown by `/help` and in the docs.
pub const KEYS: &[(&str, &str)] = &[
    ("Enter", "send the message (or run the command)"),
    ("Shift+Enter, Alt+Enter, Ctrl+J", "insert a newline"),
    ("Up / Down", "move between lines; on the first/last line, walk the history"),
    ("Ctrl+A / Ctrl+E", "start / end of the line"),
    ("Ctrl+U / Ctrl+K", "delete to the start / end of the line"),
    ("Ctrl+W", "delete the word before the cursor"),
    ("Tab", "complete a slash command"),
    ("PageUp / PageDown", "scroll the transcript; at the bottom it follows new output"),
    ("Ctrl+O", "unfold / fold tool calls and compactions"),
    (
        "Ctrl+C",
        "interrupt the running turn or compaction; clear the composer; twice on an empty \
         composer: quit",
    ),
    ("Ctrl+D", "quit (on an empty composer)"),
    ("y / a / n", "in an approval: approve once / always for this session / deny"),
    ("Esc", "close a view; interrupt the running turn or compaction"),
];

/// `/help`'s text.
pub fn help_text() -> String {
    let mut out = String::from("Commands:\n");
    for c in ALL {
        let busy = if c.allowed_during_turn() { "" } else { " (not while a turn runs)" };
        out.push_str(&format!("  {}\n      {}{busy}\n", c.usage(), c.description()));
    }
    out.push_str("Keys:\n");
    for (key, what) in KEYS {
        out.push_str(&format!("  {key}\n      {what}\n"));
    }
    out
}

/// The text of `docs/commands.md`.
#[cfg(test)]
pub fn commands_markdown() -> String {
    let mut out = String::from(
        "# Commands\n\n\
         Generated from the slash-command table of the terminal UI (`crates/tui/src/tui/slash.rs`);\n\
         a test keeps this file equal to it.\n\n\
         ## Slash commands\n\n\
         | command | what it does | while a turn runs |\n\
         |---|---|---|\n",
    );
    for c in ALL {
        let busy = if c.allowed_during_turn() { "yes" } else { "no" };
        let usage = c.usage().replace('|', "\\|");
        out.push_str(&format!("| `{usage}` | {} | {busy} |\n", c.description()));
    }
    out.push_str("\n## Keys\n\n| key | action |\n|---|---|\n");
    for (key, what) in KEYS {
        out.push_str(&format!("| {key} | {what} |\n"));
    }
    out.push_str(
        "\n## Behaviour\n\n\
         - `codewhale resume [SESSION | --last]` opens the terminal UI on an existing session; \
         without an argument it opens a picker of this workspace's sessions. A resumed session \
         shows its conversation at HEAD, newest last; scrolling to the top loads the page \
         before. What the active compaction covers is dimmed (the model reads it only through \
         the note), and the compaction's capsule sits where its note is. The session loads in \
         the background: a large one shows \"opening session (1.2 GB)…\" while keys keep \
         working, and `/resume` keeps the current session on screen until the next one is open.\n\
         - `/fork`, `/checkout` and `/rewind` take an entry id; `/context` lists the ids of the \
         entries in the current view.\n\
         - A compaction capsule reads \"compacted N messages · 182k → 9k tokens\": N counts the \
         model-visible messages the checkpoint replaced. Ctrl+O unfolds it to the note.\n\
         - `/compact` runs like a turn: the status line says \"compacting… · Ctrl+C cancels\"; \
         Ctrl+C or Esc cancels it and nothing is written; a message sent meanwhile is queued and \
         goes out when the pass ends.\n\
         - The status line's context gauge and `/context` show the same figures: the engine's \
         pressure as a percentage of usable input, labelled reported or estimated, with the \
         model and window requests use now (after `/model`, `/compact`, a HEAD move, an anchor \
         change and on resume, not only after a reply).\n\
         - `/anchor rm N` removes the pin from `.codewhale/anchors.md` and withdraws it from the \
         conversation: the next request leaves it out and tells the model once that it no \
         longer applies. `/anchor list` says which pins the model reads now.\n\
         - `/context` during a turn is answered when the turn ends.\n\
         - The UI does not capture the mouse, so the terminal's own text selection keeps \
         working; scroll with PageUp/PageDown.\n\
         - Quitting (Ctrl+C twice, Ctrl+D, `/quit`) asks the engine to sync the journal and \
         stop first; pressing Ctrl+C once more while it finishes leaves at once.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_in_the_table_once_and_parses_back() {
        for c in ALL {
            assert_eq!(ALL.iter().filter(|x| **x == c).count(), 1);
            assert_eq!(SlashCommand::from_name(c.name()), Some(c));
            assert_eq!(
                parse(&format!("/{} x y", c.name())),
                Some(Ok(Invocation { command: c, args: "x y".into() }))
            );
            assert!(!c.description().is_empty());
        }
    }

    #[test]
    fn text_that_is_not_a_command_is_sent_as_text() {
        assert_eq!(parse("hello /compact"), None);
        assert_eq!(parse("// comment"), None);
        assert_eq!(parse("/"), None);
        assert_eq!(parse("/bogus"), Some(Err(UnknownCommand("bogus".into()))));
    }

    #[test]
    fn completion_matches_prefixes_until_a_space() {
        assert_eq!(
            completions("/c"),
            [SlashCommand::Compact, SlashCommand::Context, SlashCommand::Checkout]
        );
        assert_eq!(completions("/re"), [SlashCommand::Resume, SlashCommand::Rewind]);
        assert!(completions("/compact now").is_empty());
        assert!(completions("hi").is_empty());
    }

    #[test]
    fn docs_commands_md_is_generated_from_the_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/commands.md");
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        if std::env::var_os("CODEWHALE_WRITE_DOCS").is_some() {
            std::fs::write(path, commands_markdown()).unwrap();
            return;
        }
        assert_eq!(
            on_disk,
            commands_markdown(),
            "run with CODEWHALE_WRITE_DOCS=1 to regenerate docs/commands.md"
        );
    }
}
