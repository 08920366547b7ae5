//! The slash commands: one enum, one table. Name, argument hint, description, whether the
//! command may run while a turn runs, and whether this version supports it are exhaustive
//! matches, so adding a command forces every decision. `/help`, completion and
//! `docs/commands.md` are all generated from here: `help.rs` holds the keys and `/help`'s
//! text, `docs_page.rs` the generator of `docs/commands.md`.

use codewhale_protocol::CustomCommandInfo;

#[cfg(test)]
mod docs_page;
mod help;

pub use help::{help_text, KEYS};

/// Every slash command, in table order (the order of `/help` and the completion popup).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumIter)]
pub enum SlashCommand {
    Compact,
    Context,
    Anchor,
    New,
    Clear,
    Resume,
    Sessions,
    Import,
    Fork,
    Checkout,
    Rewind,
    Undo,
    Diff,
    Init,
    Export,
    Model,
    Approval,
    Mcp,
    Status,
    Cost,
    Btw,
    Trust,
    Help,
    Quit,
    Exit,
}

/// Every command, in table order.
pub fn all() -> impl Iterator<Item = SlashCommand> {
    <SlashCommand as strum::IntoEnumIterator>::iter()
}

impl SlashCommand {
    /// The name typed after `/`.
    pub fn name(self) -> &'static str {
        match self {
            SlashCommand::Compact => "compact",
            SlashCommand::Context => "context",
            SlashCommand::Anchor => "anchor",
            SlashCommand::New => "new",
            SlashCommand::Clear => "clear",
            SlashCommand::Resume => "resume",
            SlashCommand::Sessions => "sessions",
            SlashCommand::Import => "import",
            SlashCommand::Fork => "fork",
            SlashCommand::Checkout => "checkout",
            SlashCommand::Rewind => "rewind",
            SlashCommand::Undo => "undo",
            SlashCommand::Diff => "diff",
            SlashCommand::Init => "init",
            SlashCommand::Export => "export",
            SlashCommand::Model => "model",
            SlashCommand::Approval => "approval",
            SlashCommand::Mcp => "mcp",
            SlashCommand::Status => "status",
            SlashCommand::Cost => "cost",
            SlashCommand::Btw => "btw",
            SlashCommand::Trust => "trust",
            SlashCommand::Help => "help",
            SlashCommand::Quit => "quit",
            SlashCommand::Exit => "exit",
        }
    }

    /// The arguments, as shown after the name.
    pub fn args(self) -> &'static str {
        match self {
            SlashCommand::Compact => "[focus]",
            SlashCommand::Anchor => "[add] <text> | list | rm <n>",
            SlashCommand::Resume => "[session-id]",
            SlashCommand::Import => "claude | codex",
            SlashCommand::Fork | SlashCommand::Rewind => "[entry-id]",
            SlashCommand::Checkout => "[entry-id]",
            SlashCommand::Model => "[model]",
            SlashCommand::Approval => "[plan | ask | auto-edit | full]",
            SlashCommand::Btw => "<question>",
            SlashCommand::Init => "[what else to cover]",
            SlashCommand::Export => "[file]",
            SlashCommand::Context
            | SlashCommand::Mcp
            | SlashCommand::Status
            | SlashCommand::Trust
            | SlashCommand::New
            | SlashCommand::Clear
            | SlashCommand::Sessions
            | SlashCommand::Undo
            | SlashCommand::Diff
            | SlashCommand::Help
            | SlashCommand::Cost
            | SlashCommand::Quit
            | SlashCommand::Exit => "",
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
            SlashCommand::Clear => {
                "Start a new conversation in this workspace with a clear screen; the current one is kept and /resume brings it back."
            }
            SlashCommand::Resume => {
                "Continue an earlier session of this workspace (a picker, or the given id)."
            }
            SlashCommand::Sessions => "Browse every session, newest first; Enter resumes one.",
            SlashCommand::Import => {
                "Import a Claude Code or Codex session of this workspace (a picker) and switch to it."
            }
            SlashCommand::Fork => {
                "Start a new branch at an earlier message (a picker, or an entry id or its unique prefix)."
            }
            SlashCommand::Checkout => "Switch to another branch (a picker of the branch tips, or an entry id, its unique prefix or the ending a picker shows).",
            SlashCommand::Rewind => {
                "Go back to an earlier message of this branch (a picker, or an entry id or its unique prefix), taking back the conversation, the code the tools changed since, or both; a message's text comes back in the composer."
            }
            SlashCommand::Undo => {
                "Take back the file changes of the last turn (a file changed by someone else since is overwritten only on a second yes)."
            }
            SlashCommand::Diff => {
                "Show what changed in the workspace since the session started (tracked and untracked files), as a scrollable colored diff; Esc closes it."
            }
            SlashCommand::Init => {
                "Ask the model to write the workspace's instruction file (AGENTS.md, or CLAUDE.md when that is the one read), or update it (through the usual approvals)."
            }
            SlashCommand::Approval => {
                "Show the approval mode, the sandbox mode and this session's \"always\" grants (d \
                 revokes one); with a mode, switch to it (Shift+Tab cycles them)."
            }
            SlashCommand::Mcp => {
                "Show the MCP servers: each one's status (starting, ready, failed and why) and its tools."
            }
            SlashCommand::Model => {
                "Use another model from the next request on (a picker of a local server's own models, then the catalog's, with their windows, `?` for one nobody knows; typing filters it; or a name)."
            }
            SlashCommand::Trust => {
                "Ask again whether to trust this workspace's .codewhale/config.toml (after a \"no\", say); its settings apply from the next session."
            }
            SlashCommand::Status => {
                "Show the session: model and window, approval mode, workspace trust, sandbox (and how .git and the keys are kept from commands), session id, compactions, and the tokens and cost spent."
            }
            SlashCommand::Export => {
                "Write the conversation as you saw it (messages, tool calls folded to a line, compactions with their notes) as Markdown to a file, or without one copy it to the clipboard (OSC 52)."
            }
            SlashCommand::Cost => {
                "Show what this session cost: this run's requests and tokens, and dollars where the model has a known price (the cost part of /status)."
            }
            SlashCommand::Btw => {
                "Ask a side question, answered from the conversation so far in an overlay; neither the question nor the answer joins what the model reads later, and its cost is shown."
            }
            SlashCommand::Help => "List the commands and keys.",
            SlashCommand::Quit => "Leave Codewhale (the session is saved as it goes).",
            SlashCommand::Exit => "Leave Codewhale, as /quit does.",
        }
    }

    /// Whether the command may run while a turn runs. The engine refuses most ops during a
    /// turn; the ones allowed here only read or leave.
    pub fn allowed_during_turn(self) -> bool {
        match self {
            SlashCommand::Context
            | SlashCommand::Approval
            | SlashCommand::Mcp
            | SlashCommand::Status
            | SlashCommand::Diff
            | SlashCommand::Help
            | SlashCommand::Cost
            | SlashCommand::Export
            | SlashCommand::Quit
            | SlashCommand::Exit => true,
            SlashCommand::Sessions
            | SlashCommand::Import
            | SlashCommand::Compact
            | SlashCommand::Anchor
            | SlashCommand::New
            | SlashCommand::Clear
            | SlashCommand::Init
            | SlashCommand::Resume
            | SlashCommand::Fork
            | SlashCommand::Checkout
            | SlashCommand::Rewind
            | SlashCommand::Undo
            | SlashCommand::Trust
            | SlashCommand::Btw
            | SlashCommand::Model => false,
        }
    }

    pub fn from_name(name: &str) -> Option<SlashCommand> {
        all().find(|c| c.name() == name)
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

/// The custom commands (docs/extending.md) offered in the popup and run by `/NAME`: those
/// that can run here and are not named like a built-in command (the built-in wins).
pub fn offered(custom: &[CustomCommandInfo]) -> impl Iterator<Item = &CustomCommandInfo> {
    custom.iter().filter(|c| SlashCommand::from_name(&c.name).is_none() && c.unavailable.is_none())
}

/// One row of the completion popup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion<'a> {
    Builtin(SlashCommand),
    Custom(&'a CustomCommandInfo),
}

impl Completion<'_> {
    pub fn name(&self) -> &str {
        match self {
            Completion::Builtin(c) => c.name(),
            Completion::Custom(c) => &c.name,
        }
    }

    /// `/name args` as the popup shows it.
    pub fn usage(&self) -> String {
        match self {
            Completion::Builtin(c) => c.usage(),
            Completion::Custom(c) => custom_usage(c),
        }
    }

    pub fn description(&self) -> String {
        match self {
            Completion::Builtin(c) => c.description().to_owned(),
            Completion::Custom(c) if c.description.is_empty() => {
                format!("(custom command, {})", c.source.name())
            }
            Completion::Custom(c) => format!("{} ({})", c.description, c.source.name()),
        }
    }

    /// Whether completing it leaves a space for arguments.
    pub fn takes_args(&self) -> bool {
        match self {
            Completion::Builtin(c) => !c.args().is_empty(),
            // Any custom command takes arguments: without a placeholder they are appended.
            Completion::Custom(_) => true,
        }
    }
}

fn custom_usage(c: &CustomCommandInfo) -> String {
    if c.argument_hint.is_empty() {
        format!("/{}", c.name)
    } else {
        format!("/{} {}", c.name, c.argument_hint)
    }
}

/// Commands whose name starts with what follows `/` in `text`, while the name is being typed
/// (no space yet): the built-ins in table order, then the custom commands offered.
pub fn completions<'a>(text: &str, custom: &'a [CustomCommandInfo]) -> Vec<Completion<'a>> {
    let Some(prefix) = text.strip_prefix('/') else { return Vec::new() };
    if prefix.contains(char::is_whitespace) || prefix.starts_with('/') {
        return Vec::new();
    }
    let builtin = all().filter(|c| c.name().starts_with(prefix)).map(Completion::Builtin);
    let custom = offered(custom).filter(|c| c.name.starts_with(prefix)).map(Completion::Custom);
    builtin.chain(custom).collect()
}

/// The notice for custom commands named like a built-in (said once when a session opens).
pub fn clashes(custom: &[CustomCommandInfo]) -> Option<String> {
    let names: Vec<String> = custom
        .iter()
        .filter(|c| SlashCommand::from_name(&c.name).is_some())
        .map(|c| format!("/{} ({})", c.name, c.source.name()))
        .collect();
    (!names.is_empty()).then(|| {
        format!(
            "custom command {} is named like a built-in command, which wins; rename its file to use it",
            names.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_in_the_table_once_and_parses_back() {
        for c in all() {
            assert_eq!(all().filter(|x| *x == c).count(), 1);
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
        let names = |text: &str, custom: &[CustomCommandInfo]| -> Vec<String> {
            completions(text, custom).iter().map(|c| c.name().to_owned()).collect()
        };
        assert_eq!(names("/c", &[]), ["compact", "context", "clear", "checkout", "cost"]);
        assert_eq!(names("/re", &[]), ["resume", "rewind"]);
        assert!(completions("/compact now", &[]).is_empty());
        assert!(completions("hi", &[]).is_empty());
        // Custom commands follow the built-ins; a clash or an untrusted one is not offered.
        let custom = |name: &str, unavailable: Option<&str>| CustomCommandInfo {
            name: name.into(),
            description: "d".into(),
            argument_hint: "[x]".into(),
            source: codewhale_protocol::ExtensionSource::Home,
            unavailable: unavailable.map(str::to_owned),
        };
        let found =
            [custom("review", None), custom("compact", None), custom("cleanup", Some("no"))];
        assert_eq!(names("/", &found).last().map(String::as_str), Some("review"));
        assert_eq!(names("/c", &found), ["compact", "context", "clear", "checkout", "cost"]);
        assert_eq!(completions("/rev", &found)[0].usage(), "/review [x]");
        assert!(clashes(&found).unwrap().contains("/compact (home)"));
        let help = help_text(true, &found);
        assert!(help.contains("/review [x]\n      d (home)"), "{help}");
        assert!(help.contains("/cleanup [x]\n      no"), "{help}");
    }
}
