//! The slash commands: one enum, one table. Name, argument hint, description, whether the
//! command may run while a turn runs, and whether this version supports it are exhaustive
//! matches, so adding a command forces every decision. `/help`, completion and
//! `docs/commands.md` are all generated from here.

use codewhale_protocol::CustomCommandInfo;

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

/// The row of [`KEYS`] that needs keyboard enhancement.
const SHIFT_ENTER: &str = "Shift+Enter, Alt+Enter, Ctrl+J";

/// The keys, shown by `/help` and in the docs.
pub const KEYS: &[(&str, &str)] = &[
    ("Enter", "send the message (or run the command); while a turn runs, queue it"),
    (
        SHIFT_ENTER,
        "insert a newline (Shift+Enter where the terminal reports it: kitty, WezTerm, foot, \
         Ghostty, iTerm2 and others with the kitty keyboard protocol)",
    ),
    ("Left / Right", "move by character (a whole emoji or accented letter)"),
    ("Ctrl+Left / Ctrl+Right, Alt+Left / Alt+Right, Alt+B / Alt+F", "move by word"),
    ("Up / Down", "move between rows; on the first/last row, walk the history"),
    ("Home / End, Ctrl+A / Ctrl+E", "start / end of the line"),
    ("Ctrl+U / Ctrl+K", "delete to the start / end of the line"),
    ("Ctrl+W, Alt+Backspace, Ctrl+Backspace", "delete the word before the cursor"),
    ("Alt+D, Ctrl+Delete", "delete the word after the cursor"),
    ("Ctrl+R", "search the prompt history (kept per workspace across sessions)"),
    ("Ctrl+G", "edit the draft in $VISUAL / $EDITOR"),
    ("Ctrl+X", "unfold the pasted-text chip before the cursor into its text"),
    (
        "@",
        "mention a workspace file: pick it, and its content goes with the message (an image — \
         .png, .jpg, .gif, .webp — goes as an image)",
    ),
    (
        "Ctrl+V",
        "attach the image on the clipboard (wl-paste, xclip or pngpaste); pasting an image \
         file's path attaches it too",
    ),
    (
        "! (first)",
        "run the rest of the line as your own shell command: no approval, in the sandbox; its \
         output shows as a cell, its first 10 lines unfolded (Ctrl+O shows the rest), and the \
         model reads it with your next message",
    ),
    ("Tab", "complete a slash command or an @ file"),
    ("PageUp / PageDown", "scroll the transcript; at the top it loads earlier messages"),
    (
        "Home / End (Ctrl+Home / Ctrl+End while typing)",
        "jump to the start of the conversation / back to the newest row",
    ),
    (
        "Alt+M",
        "capture the mouse so the wheel scrolls the transcript; again to give the terminal its \
         selection back (off at start; with it off most terminals send the wheel as Up/Down, \
         which walks the prompt history)",
    ),
    ("Ctrl+F", "search the transcript: Enter or Up for an older match, Down for a newer one"),
    ("Alt+Up / Alt+Down", "focus an earlier / later tool call, compaction or thinking cell"),
    ("Ctrl+O", "unfold / fold the focused (or last) cell, keeping what you read in place"),
    ("Alt+O", "unfold / fold every cell"),
    ("Ctrl+T", "open the focused (or last) tool call's whole output in a pager (a subagent's: its conversation)"),
    ("Ctrl+Y", "copy the last reply or one of its code blocks to the clipboard (OSC 52)"),
    (
        "Esc",
        "close a pop-up or view; interrupt the running turn or compaction; twice on a draft: \
         clear it; twice on an empty composer: pick an earlier message to edit and send again \
         (Enter forks before it, its text in the composer)",
    ),
    (
        "Ctrl+C",
        "interrupt the running turn or compaction; clear the composer; twice on an empty \
         composer: quit",
    ),
    ("Ctrl+S", "with messages queued: interrupt the turn so they are sent now"),
    (
        "Shift+Tab",
        "cycle the approval mode: plan → ask → auto-edit → full (shown in the status line; applies from \
         the next tool call, also while a turn runs)",
    ),
    ("Ctrl+Z", "suspend (back with `fg`)"),
    ("Ctrl+D", "quit (on an empty composer)"),
    (
        "y / a / p / n / r",
        "in an approval: once / always for this exact command (or for edits in the workspace) / \
         always for commands starting with the program and subcommand shown / deny / deny with \
         a reason the model reads",
    ),
    (
        "u",
        "after the sandbox refused a command a write: run that one call again without the \
         sandbox (n, Esc or r keep the refused result; y does nothing there)",
    ),
];

/// `/help`'s text; without keyboard enhancement the terminal cannot tell Shift+Enter from
/// Enter, so the newline keys listed are the ones that work. The custom commands found for
/// the workspace follow the built-ins, an untrusted workspace's with why they do not run.
pub fn help_text(keyboard_enhanced: bool, custom: &[CustomCommandInfo]) -> String {
    let mut out = String::from("Commands:\n");
    for c in all() {
        let busy = if c.allowed_during_turn() { "" } else { " (not while a turn runs)" };
        out.push_str(&format!("  {}\n      {}{busy}\n", c.usage(), c.description()));
    }
    if !custom.is_empty() {
        out.push_str("Custom commands (codewhale commands lists where each comes from):\n");
        for c in custom {
            let what = match (&c.unavailable, SlashCommand::from_name(&c.name)) {
                (_, Some(_)) => "named like a built-in command, which wins".to_owned(),
                (Some(why), None) => why.clone(),
                (None, None) => Completion::Custom(c).description(),
            };
            out.push_str(&format!("  {}\n      {what}\n", custom_usage(c)));
        }
    }
    out.push_str("Keys:\n");
    for (key, what) in KEYS {
        let (key, what) = if *key == SHIFT_ENTER && !keyboard_enhanced {
            (
                "Alt+Enter, Ctrl+J",
                "insert a newline (this terminal reports Shift+Enter as Enter, so it sends)",
            )
        } else {
            (*key, *what)
        };
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
    for c in all() {
        let busy = if c.allowed_during_turn() { "yes" } else { "no" };
        let usage = c.usage().replace('|', "\\|");
        out.push_str(&format!("| `{usage}` | {} | {busy} |\n", c.description()));
    }
    out.push_str(
        "\nCustom slash commands — Markdown prompts in `$CODEWHALE_HOME/commands/` and a \
         trusted workspace's `.codewhale/commands/` ([extending.md](extending.md)) — join the \
         popup after these, with their description and where they come from, and `/help` lists \
         them; `/NAME args` sends the body with `$ARGUMENTS` and `$1`…`$9` filled in (queued \
         like a message while a turn runs). One named like a built-in is said once and the \
         built-in runs; an untrusted workspace's is not offered, and typing it says why.\n",
    );
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
         - `/fork` and `/rewind` without an argument open a picker of the earlier messages \
         with previews; `/fork`, `/checkout` and `/rewind` also take an entry id or a unique \
         prefix of it (`/context` lists the ids in the current view). The notice of a HEAD \
         move stays in the transcript, and so does everything shown before the point HEAD went \
         back to (turn footers, diffs, notices); only what followed it goes. `/undo` moves no \
         HEAD: the transcript stays whole and the restore is said once under it.\n\
         - Going back to a user message with `/fork` or `/rewind` moves HEAD to before it and \
         puts its text back in the composer for editing; it is never merged into the next \
         prompt. When tools changed files after that point, a question lists them and asks \
         what to take back: the conversation (c), the code (k) or both (b). A file someone \
         else changed since (its content is neither what a tool wrote nor what it found) is \
         overwritten only on a second yes. `/undo` takes back the last turn's file changes the \
         same way. Each restore is noted in the transcript and told to the model; restoring \
         twice changes nothing. `write_file` and `edit_file` are always checkpointed; a \
         `shell` command's edits are too when the workspace is a git work tree (snapshots of \
         the worktree before and after the command, `.gitignore` honoured, kept in \
         Codewhale's own store, never in the repository). Outside git, a command's edits \
         cannot be taken back: they read as changed by someone else, and a restore over them says \
         so.\n\
         - From the shell, `codewhale rewind [--session ID | --last] --to ENTRY [--code | \
         --both] [--force]` moves HEAD back to before ENTRY (the conversation, by default), \
         with `--code` takes back only the files tools changed from ENTRY on (HEAD stays), with \
         `--both` both. It prints what it did; a file changed by someone else since is left as \
         it is and named on stderr with exit code 1, unless `--force` overwrites it; the same \
         command run again with `--force` takes back exactly those files, even though HEAD has \
         already moved. It needs no model provider: without one, files and HEAD are restored \
         and only the branch summary is skipped, with the reason on stderr. A rewind killed \
         halfway is completed by the next open of the session (the same command, `resume`, \
         `exec --last`), which says so. When the \
         rewind leaves a branch worth a summary (below), it waits for that branch's summary \
         (at most `compaction.branch_summary_timeout_sec`, default 60 s) and says whether one \
         was written; none (a timeout, a provider error) is said on stderr and does not change \
         the exit code.\n\
         - Leaving a branch that holds a tool call or more than one user turn (a rewind, a \
         fork, a checkout, an Esc Esc edit) has the summarizer write a short account of what \
         was tried there, in the background; a one-turn chat branch (one message and its \
         reply, no tool call) is simply dropped: the \
         status line says \"summarizing the branch you left…\" and keys keep working. The model \
         on the new branch reads it, and the transcript shows it as a folded cell (Ctrl+O \
         unfolds it); a message sent meanwhile waits for it. A provider error, an empty or \
         over-long reply or the timeout writes none, and a notice says why.\n\
         - `/checkout` of a branch whose files a code rewind took back (the disk does not hold \
         what the branch's tools last wrote) names those files in its notice and offers to \
         restore them: Enter restores, Esc leaves them; a file changed by someone else since \
         is overwritten only on a second yes.\n\
         - Plan mode (`--approval plan`, `/approval plan`, Shift+Tab: plan → ask → auto-edit → \
         full): the status line says `plan mode`; the model reads and runs commands with the \
         workspace read-only, and its writes are refused. When it presents a plan \
         (`update_plan`) and ends its turn, \"Plan ready — start in: auto-edit / ask / stay in \
         plan\" opens with `ask` selected: Enter switches to the mode chosen and sends \"Carry \
         out the plan.\" as the next turn; \"stay in plan\" or Esc sends nothing.\n\
         - `/btw QUESTION` answers a side question from the conversation so far, with the \
         session's model, in an overlay (Esc closes it) and as a cell in the transcript with \
         its cost; neither the question nor the answer joins what the model reads later, and \
         a resumed session shows it where it was asked.\n\
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
         - A message sent while a turn runs is queued (shown above the prompt) and sent when \
         the turn ends; Ctrl+S interrupts the turn to send it at once.\n\
         - A message the model never answered (the request failed, or was interrupted before \
         the reply began) is taken back: it returns to the composer and is not merged into the \
         next prompt. A message the last run journaled and never got a reply to (a crash, a \
         kill) is set aside the same way when the session is opened again (a `head` record of \
         reason `unanswered`); `codewhale exec` then says so on stderr.\n\
         - The gauge, `/context`, `codewhale context` and the compaction capsule read one \
         breakdown and agree to the token, rounded the same way.\n\
         - Up walks the prompt history; a recalled `/command` opens no pop-up, so Up goes on \
         walking until you type. A notice that arrives while a reply streams goes above the \
         reply, which stays one cell (Ctrl+Y copies it whole).\n\
         - `/anchor X` and `/anchor add X` both pin X; in a request a pinned note is a labelled \
         text block of its own.\n\
         - A paste of more than 5 lines or 2,000 bytes shows as a chip such as \
         `[pasted 4,812 lines · 212 KB]` and is sent in full; Backspace removes it, Ctrl+X \
         unfolds it. A message larger than the model's usable input asks before it is sent.\n\
         - `@` opens a fuzzy picker of the workspace's files (honouring `.gitignore`); the \
         chosen file's content is attached to the message as a separate entry the model reads \
         with it, which compaction may later prune like tool output.\n\
         - Prompts are kept per workspace in `$CODEWHALE_HOME/history/` (at most 1,000; \
         nothing that looks like a secret, nothing over 16 KB).\n\
         - The UI does not capture the mouse at start, so the terminal's own text selection \
         keeps working; Alt+M turns capture on for wheel scrolling (and off again). With it \
         off, most terminals turn the wheel into Up/Down on the alternate screen, which walks \
         the prompt history instead of scrolling.\n\
         - Approvals: `y` once; `a` always for this exact command (for a write or edit: every \
         edit inside the workspace); `p` always for commands that start with the program and \
         subcommand shown (`cargo test …`), offered only where it means something; `n` deny, \
         `r` deny with a reason the model reads. A compound command, pipe or redirection is \
         covered only if every part is; no grant covers Codewhale's own settings. Writes and \
         edits show their diff (scroll with Up/Down, PageUp/PageDown); the path and the keys \
         stay visible at any height; on a small terminal the reason line goes and the keys \
         shrink to a word each before the diff drops below six rows, and the diff's \
         `---`/`+++` lines, which repeat the path, are not shown. `/approval` lists the grants and shows the sandbox mode; \
         `d` revokes one. When the sandbox refused a command a write, the same view asks \
         whether to rerun it once without the sandbox: only `u` does.\n\
         - Tool calls show live output and elapsed time while they run; when folded, how they \
         ended (exit code, denied, interrupted, failed); unfolded, the first and last 20 lines \
         with the count left out. ANSI colours in output are drawn, never printed raw.\n\
         - Each turn ends with its time and, where the provider reports them, tokens in and \
         out. Retries show in the status line (\"retrying in 4 s · attempt 2/5\").\n\
         - SIGTERM, SIGHUP and a crash restore the terminal; the session is saved first.\n\
         - Quitting (Ctrl+C twice, Ctrl+D, `/quit`) asks the engine to sync the journal and \
         stop first; pressing Ctrl+C once more while it finishes leaves at once.\n\
         - When the model sets its plan (`update_plan`), the transcript shows it as a cell (✓ \
         done, ▸ in progress, · pending) and the status line shows `plan 2/5` (steps done of \
         all); the plan follows HEAD across forks, checkouts and resumes. The model's `recall` \
         calls show like any tool call; neither tool ever asks for approval.\n\
         - `!CMD` runs your own command (no approval, the session's sandbox). Its cell shows the \
         first 10 lines of the output under it, and \"… N more lines\" when there are more: \
         Ctrl+O unfolds the rest (head and tail), Ctrl+T opens all of it — live, and the same \
         after a resume.\n\
         - `/export FILE` writes the conversation as you saw it to FILE as Markdown: each \
         message under `## You` or `## Assistant`, each tool call folded to the line its cell \
         shows (✓ shell command=cargo test · 12 lines), your `!CMD` with its output, each \
         compaction as a quote of its capsule line and its note, where it happened, and the \
         turns it covers before it; reasoning the model showed is left out. A relative FILE is \
         inside the workspace, `~/` is your home; FILE is replaced whole (written beside it, \
         then renamed), readable by you alone. Without FILE the same text goes to the \
         clipboard through the terminal (OSC 52, as Ctrl+Y copies; a terminal that caps OSC 52 \
         may keep less of a long conversation: `/export FILE` has all of it). \
         During a turn the export follows when the turn ends. `codewhale export` writes the \
         same text from the shell, or JSON.\n\
         - `/cost` shows `/status`'s cost lines alone: this run's requests and tokens, and the \
         session's cost. A model without a known price shows tokens only — no dollar figure, \
         not even `$0.0000` — with where to add a price (`[pricing]` in config.toml). `/exit` \
         is `/quit`.\n\
         - `/model` without a name lists the models; typing narrows the list (fuzzy, best \
         match first), Backspace edits the filter, Esc clears it and a second Esc closes the \
         list. A window neither the catalog nor the server states (the session only guesses \
         it) shows as `?`.\n\
         - `/context` says where the window came from: `window 8192 (from Ollama's /api/ps)`, \
         `(learned from an overflow)`, `(from the model catalog)`, `(configured)`, or \
         `(unverified: a guess, …)`; `codewhale context` says the same.\n\
         - `/clear` names the conversation it kept by the shortest prefix of its id that no \
         other session shares (ids of one moment share their first characters), so `/resume \
         PREFIX` brings that one back.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_the_newline_keys_that_work_in_this_terminal() {
        assert!(help_text(true, &[]).contains("Shift+Enter, Alt+Enter, Ctrl+J"));
        let plain = help_text(false, &[]);
        assert!(!plain.contains("Shift+Enter,"));
        assert!(plain.contains("Alt+Enter, Ctrl+J"));
    }

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
