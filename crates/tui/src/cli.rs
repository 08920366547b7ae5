//! The command line of docs/cli.md: every subcommand and the GLOBAL flags.
//!
//! This module only describes the syntax (clap derive); `main` dispatches to `commands::*`.
//! GLOBAL flags are `global = true` so they are accepted before or after the subcommand.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Codewhale: a terminal chat client for coding models whose conversations never fall over
/// when they outgrow the context window.
#[derive(Debug, Parser)]
#[command(
    name = "codewhale",
    version,
    about = "A terminal chat client for coding models whose conversations never fall over when they \
             outgrow the context window.",
    long_about = None
)]
pub struct Cli {
    /// Workspace directory for a new interactive session (default: the current directory).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Run one turn without the terminal UI and print the answer: `-p PROMPT` is `exec
    /// PROMPT` (without PROMPT, or with `-`, a piped standard input is the prompt).
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    /// Continue the newest session of this workspace: alone, the terminal UI on it (`resume
    /// --last`); with -p, one more turn (`exec --last`).
    #[arg(short = 'c', long = "continue")]
    pub continue_last: bool,

    /// With -p: every engine event as one JSON line instead of the answer (`exec --json`).
    #[arg(long)]
    pub json: bool,

    /// With -p: send this image with the prompt (`exec --image`); repeat it for several.
    #[arg(long, value_name = "FILE")]
    pub image: Vec<PathBuf>,

    /// With -p: the prompt (several words are joined with spaces; `-` reads standard input).
    #[arg(value_name = "PROMPT", num_args = 0..)]
    pub prompt: Vec<String>,

    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Flags every subcommand accepts.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Provider wire format: `openai` (any OpenAI-compatible server) or `anthropic`.
    #[arg(long, global = true, value_name = "NAME")]
    pub provider: Option<ProviderChoice>,

    /// Model id, e.g. `gpt-4.1` or `claude-sonnet-4-5`.
    #[arg(long, global = true, value_name = "M")]
    pub model: Option<String>,

    /// Base URL of the provider's API (overrides OPENAI_BASE_URL / ANTHROPIC_BASE_URL).
    #[arg(long = "base-url", global = true, value_name = "URL")]
    pub base_url: Option<String>,

    /// Which tool calls run without asking: ask, auto-edit or full (Shift+Tab cycles them in
    /// the terminal UI). Where nobody can answer (`exec` without a terminal) a call that would
    /// ask is denied, and the model is told so.
    #[arg(long, global = true, value_name = "MODE")]
    pub approval: Option<ApprovalChoice>,

    /// Context window in tokens, overriding the model catalog.
    #[arg(long = "context-window", global = true, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub context_window: Option<u64>,

    /// Trust this workspace's .codewhale/config.toml (its provider, base_url, api_key_env,
    /// approval and shell settings), and remember that until the file changes.
    #[arg(long, global = true)]
    pub trust: bool,

    /// Codewhale's home directory (sessions, logs, config). Default: ~/.codewhale.
    #[arg(long, global = true, env = "CODEWHALE_HOME", value_name = "DIR")]
    pub home: Option<PathBuf>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one user turn (with its tool loop) without the terminal UI and print the answer.
    Exec(ExecArgs),
    /// List sessions, newest first: id, cwd, title, entries, updated.
    Sessions {
        /// Print one JSON object per session instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Work with journal files directly.
    Journal {
        #[command(subcommand)]
        command: JournalCommand,
    },
    /// Run a survival fixture matrix through the compaction survival contract.
    #[command(name = "survival-check")]
    SurvivalCheck {
        /// The matrix file (JSON, schema_version 2).
        matrix: PathBuf,
    },
    /// Compact a session now (the newest of this workspace unless --session is given).
    Compact(CompactArgs),
    /// Show what the next request of a session contains: tokens, compaction, last round.
    Context(ContextArgs),
    /// Move HEAD back to before an entry (conversation only by default), taking back the
    /// files tools changed since with --code or --both.
    Rewind(RewindArgs),
    /// Open the terminal UI on an existing session (a picker of this workspace's sessions
    /// when neither SESSION nor --last is given).
    Resume {
        /// The session's id (a unique prefix is enough).
        #[arg(value_name = "SESSION", conflicts_with = "last")]
        session: Option<String>,

        /// The newest session of this workspace.
        #[arg(long)]
        last: bool,
    },
    /// Bring a session from Claude Code or Codex CLI into Codewhale as a new session, to
    /// continue with `resume` or `exec --session`.
    Import(ImportArgs),
    /// Pinned notes that survive every compaction: the workspace's .codewhale/anchors.md.
    Anchor {
        #[command(subcommand)]
        command: AnchorCommand,
    },
    /// Measure what survives compaction on the built-in scenarios, with the configured
    /// model as the summarizer (and, unless --floor-only, as the one answering the probes).
    Eval(EvalArgs),
    /// The custom slash commands, skills and project instruction files found for this
    /// workspace, and where (home or workspace, shadowed, untrusted). Never contacts a provider.
    Commands {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write a session's conversation as the user saw it: messages, tool calls folded to a
    /// line, compactions with their notes (the newest session of this workspace unless
    /// --session is given).
    Export(ExportArgs),
    /// Model Context Protocol servers configured in config.toml.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
}

/// `codewhale mcp ...`
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start each configured server, then show its status (ready, failed and why) and tools.
    List {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// `codewhale anchor ...`
#[derive(Debug, Subcommand)]
pub enum AnchorCommand {
    /// Pin a note; every later checkpoint restates it verbatim.
    Add {
        /// The note (several words are joined with spaces).
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
    },
    /// List the anchors, numbered.
    List,
    /// Remove anchor N (as numbered by `list`).
    Rm {
        /// The anchor's number.
        n: usize,
    },
}

/// `codewhale journal ...`
#[derive(Debug, Subcommand)]
pub enum JournalCommand {
    /// Validate a journal: lines, DAG, HEAD, tool pairs. Never modifies the file.
    Check {
        /// The session file (`<session-id>.jsonl`).
        file: PathBuf,
    },
}

/// `codewhale compact [--session ID | --last] [--focus TEXT]`
#[derive(Debug, Clone, Args)]
pub struct CompactArgs {
    /// The session with this id (a unique prefix is enough).
    #[arg(long, value_name = "ID", conflicts_with = "last")]
    pub session: Option<String>,

    /// The newest session of this workspace (the default).
    #[arg(long)]
    pub last: bool,

    /// What the summary should focus on.
    #[arg(long, value_name = "TEXT")]
    pub focus: Option<String>,
}

/// `codewhale eval [--scenario NAME]... [--passes N] [--floor-only] [--json]`
#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    /// Run only this scenario (repeatable; default: all).
    #[arg(long, value_name = "NAME")]
    pub scenario: Vec<String>,

    /// Compaction passes per scenario, at its first marked points.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=10))]
    pub passes: u8,

    /// Score only what survives in the request and through recall; ask the model nothing
    /// beyond the summaries.
    #[arg(long)]
    pub floor_only: bool,

    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `codewhale rewind [--session ID | --last] --to ENTRY [--code | --both] [--force]`
#[derive(Debug, Clone, Args)]
pub struct RewindArgs {
    /// The session with this id (a unique prefix is enough).
    #[arg(long, value_name = "ID", conflicts_with = "last")]
    pub session: Option<String>,

    /// The newest session of this workspace (the default).
    #[arg(long)]
    pub last: bool,

    /// The entry to go back to before (an id or its unique prefix).
    #[arg(long, value_name = "ENTRY")]
    pub to: String,

    /// Take back only the files tools changed at or after ENTRY; HEAD stays.
    #[arg(long, conflicts_with = "both")]
    pub code: bool,

    /// Take back the conversation and the files.
    #[arg(long)]
    pub both: bool,

    /// Overwrite files changed by someone else since the tools wrote them.
    #[arg(long)]
    pub force: bool,
}

/// `codewhale context [--session ID | --last] [--json]`
#[derive(Debug, Clone, Args)]
pub struct ContextArgs {
    /// The session with this id, wherever its workspace is (a unique prefix is enough).
    #[arg(long, value_name = "ID", conflicts_with = "last")]
    pub session: Option<String>,

    /// The newest session of this workspace (the default).
    #[arg(long)]
    pub last: bool,

    /// Print one JSON object instead of the human-readable report.
    #[arg(long)]
    pub json: bool,
}

/// `codewhale exec [--session ID | --last] [--json] [--approval MODE] [PROMPT | -]`
#[derive(Debug, Clone, Args)]
pub struct ExecArgs {
    /// Continue the session with this id (a unique prefix is enough).
    #[arg(long, value_name = "ID", conflicts_with = "last")]
    pub session: Option<String>,

    /// Continue the newest session of this workspace.
    #[arg(long)]
    pub last: bool,

    /// Print every engine event as one JSON object per line instead of the final answer.
    #[arg(long)]
    pub json: bool,

    /// Send this image with the prompt (PNG, JPEG, GIF or WebP; over 2048 px a side it is
    /// scaled down, over 20 MB refused). Repeat it for several images.
    #[arg(long, value_name = "FILE")]
    pub image: Vec<PathBuf>,

    /// The prompt; several words are joined with spaces. Without it, or with `-`, a piped
    /// standard input is read as the prompt (at most 1 MiB); with it, standard input is never
    /// read for the prompt.
    #[arg(num_args = 0.., value_name = "PROMPT")]
    pub prompt: Vec<String>,
}

/// `codewhale export [--session ID | --last] [--format md|json] [-o FILE]`
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// The session with this id, wherever its workspace is (a unique prefix is enough).
    #[arg(long, value_name = "ID", conflicts_with = "last")]
    pub session: Option<String>,

    /// The newest session of this workspace (the default).
    #[arg(long)]
    pub last: bool,

    /// `md` (Markdown, the default) or `json` (one object: session, model, messages).
    #[arg(long, value_name = "FORMAT", default_value = "md")]
    pub format: ExportFormat,

    /// Write to FILE instead of standard output (an existing file is replaced).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `export --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// Markdown.
    Md,
    /// One JSON object.
    Json,
}

/// `codewhale import FILE [--json]` · `codewhale import --from claude|codex [--cwd DIR]
/// [--pick N | --latest] [--json]`
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The session file: a Claude Code `<uuid>.jsonl` (~/.claude/projects/...) or a Codex
    /// `rollout-*.jsonl` (~/.codex/sessions/...). Never modified.
    #[arg(value_name = "FILE", conflicts_with = "from", required_unless_present = "from")]
    pub file: Option<PathBuf>,

    /// List the sessions this tool stored for the workspace, newest first, and import one.
    #[arg(long, value_name = "TOOL")]
    pub from: Option<ImportFrom>,

    /// The workspace whose sessions are listed (default: the current directory).
    #[arg(long, value_name = "DIR", requires = "from")]
    pub cwd: Option<PathBuf>,

    /// Import session N of the list (1 is the newest).
    #[arg(long, value_name = "N", requires = "from", conflicts_with = "latest",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub pick: Option<u64>,

    /// Import the newest session of the list.
    #[arg(long, requires = "from")]
    pub latest: bool,

    /// Print one JSON object (the report, or the list when nothing is picked).
    #[arg(long)]
    pub json: bool,
}

/// `--provider`: the wire format the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderChoice {
    /// OpenAI Chat Completions (OpenAI and most other servers).
    Openai,
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI's Responses API (codex models; also Azure, xAI, OpenRouter).
    #[value(name = "openai-responses")]
    OpenaiResponses,
}

impl ProviderChoice {
    /// The spelling the configuration uses.
    pub fn name(self) -> &'static str {
        match self {
            ProviderChoice::Openai => "openai",
            ProviderChoice::Anthropic => "anthropic",
            ProviderChoice::OpenaiResponses => "openai-responses",
        }
    }
}

/// `--approval`: which tool calls run without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApprovalChoice {
    /// Planning: reads and read-only commands run; nothing in the workspace changes.
    Plan,
    /// Reads run on their own; writes and shell commands ask.
    Ask,
    /// Reads and writes inside the workspace run on their own; shell commands ask.
    AutoEdit,
    /// Everything runs without asking.
    Full,
}

impl From<ApprovalChoice> for codewhale_engine::ApprovalMode {
    fn from(choice: ApprovalChoice) -> Self {
        match choice {
            ApprovalChoice::Plan => codewhale_engine::ApprovalMode::Plan,
            ApprovalChoice::Ask => codewhale_engine::ApprovalMode::Ask,
            ApprovalChoice::AutoEdit => codewhale_engine::ApprovalMode::AutoEdit,
            ApprovalChoice::Full => codewhale_engine::ApprovalMode::Full,
        }
    }
}

/// `import --from`: the tool whose stored sessions are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFrom {
    /// Claude Code (`~/.claude/projects`).
    Claude,
    /// Codex CLI (`~/.codex/sessions`).
    Codex,
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use super::*;

    /// Every choice is spelled on the command line as the engine and the config file spell it.
    #[test]
    fn choices_are_spelled_as_the_engine_spells_them() {
        for choice in ApprovalChoice::value_variants() {
            let name = choice.to_possible_value().unwrap().get_name().to_owned();
            assert_eq!(codewhale_engine::ApprovalMode::from(*choice).as_str(), name);
        }
        for choice in ProviderChoice::value_variants() {
            assert_eq!(choice.to_possible_value().unwrap().get_name(), choice.name());
        }
    }
}
