//! The `codewhale` command: parses the command line and dispatches to a command. The binary
//! (`src/main.rs`) only calls [`main`]; the library exists so that benches can reach the
//! terminal UI's pure parts ([`tui`]).
//!
//! Only this crate prints to the terminal. Errors reach the user as one line on stderr with
//! exit code 1; usage errors exit 2 (clap's convention, docs/cli.md).
#[macro_use]
mod output;

mod cli;
mod commands;
mod export;
mod figures;
mod home;
mod inert;
mod logging;
mod report_text;
mod sandbox_helper;
pub mod tui;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command, ExecArgs, JournalCommand, McpCommand};

/// Runs the command line of the process and returns its exit code.
pub fn main() -> ExitCode {
    // The sandbox helper runs before anything else: it is started for every shell command,
    // and what it execs must inherit nothing of ours but the environment.
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|a| a == codewhale_engine::sandbox::HELPER_SUBCOMMAND) {
        return commands::sandbox::run(&args.collect::<Vec<_>>());
    }
    // Re-executed without the key variables (see `run`): take them from the pipe, while this
    // process has one thread.
    if let Err(err) = codewhale_engine::sandbox::keys::take_inherited() {
        errln!("codewhale: {err}; the provider key variables are unset");
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() { 2 } else { 0 };
            let _ = err.print();
            return ExitCode::from(code);
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            errln!("codewhale: {}", one_sentence(&err));
            ExitCode::from(1)
        }
    }
}

/// Checks the flags Claude Code users type (`-p`, `-c`) against the rest of the command line:
/// the exit code of a usage error (said on stderr), or `None` when they fit.
fn habits(cli: &Cli) -> Option<ExitCode> {
    let problem = if cli.print && cli.command.is_some() {
        Some(
            "-p runs one turn, as `exec` does, and takes no subcommand: a prompt that starts \
             with a subcommand's name goes after `--` (`codewhale -p -- PROMPT`)"
                .to_owned(),
        )
    } else if cli.continue_last && cli.command.is_some() {
        Some(
            "-c continues the newest session of this workspace and takes no subcommand: alone \
             it is `resume --last`, with -p `exec --last`"
                .to_owned(),
        )
    } else if !cli.print && (cli.json || !cli.image.is_empty()) {
        Some(
            "--json and --image before a subcommand go with -p: `codewhale -p --json PROMPT`, \
             or `codewhale exec --json PROMPT`"
                .to_owned(),
        )
    } else if !cli.print && cli.continue_last && !cli.prompt.is_empty() {
        Some(
            "-c alone opens the newest session in the terminal UI; to send a prompt to it \
             without the UI, add -p (`codewhale -c -p PROMPT`)"
                .to_owned(),
        )
    } else if !cli.print && !cli.prompt.is_empty() {
        let word = &cli.prompt[0];
        Some(format!(
            "unrecognized subcommand '{word}'; `codewhale --help` lists the subcommands, and \
             `codewhale -p PROMPT` runs one turn with a prompt"
        ))
    } else {
        None
    };
    problem.map(|p| {
        errln!("codewhale: {p}");
        ExitCode::from(2)
    })
}

/// The error and its causes as one line, each cause said once: many errors already name their
/// cause in their own message, and `{:#}` would repeat it.
fn one_sentence(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Some(code) = habits(&cli) {
        return Ok(code);
    }
    let home = home::resolve(cli.global.home.as_ref())?;
    hide_keys(&home, cli.workspace.as_deref());
    if cli.global.trust {
        let workspace = commands::workspace_dir(cli.workspace.as_deref())?;
        codewhale_engine::trust::decide(&home, &workspace, true).map_err(|e| {
            anyhow::anyhow!(
                "cannot remember that this workspace is trusted in {}: {e}",
                home.display()
            )
        })?;
    }
    if cli.print {
        // `-p [PROMPT]` is `exec [PROMPT]`; with `-c`, `exec --last [PROMPT]`.
        let args = ExecArgs {
            session: None,
            last: cli.continue_last,
            json: cli.json,
            image: cli.image.clone(),
            prompt: cli.prompt.clone(),
        };
        return commands::exec::run(&home, &cli.global, cli.workspace.as_deref(), args);
    }
    if cli.continue_last {
        return commands::resume::run(&cli.global, cli.workspace.as_deref(), None, true);
    }
    match cli.command {
        Some(Command::Exec(args)) => {
            commands::exec::run(&home, &cli.global, cli.workspace.as_deref(), args)
        }
        Some(Command::Sessions { json }) => commands::sessions::run(&home, json),
        Some(Command::SurvivalCheck { matrix }) => commands::survival_check::run(&matrix),
        Some(Command::Compact(args)) => {
            commands::compact::run(&home, &cli.global, cli.workspace.as_deref(), args)
        }
        Some(Command::Rewind(args)) => {
            commands::rewind::run(&home, &cli.global, cli.workspace.as_deref(), args)
        }
        Some(Command::Context(args)) => {
            commands::context::run(&home, &cli.global, cli.workspace.as_deref(), args)
        }
        Some(Command::Eval(args)) => commands::eval::run(&home, &cli.global, args),
        Some(Command::Import(args)) => {
            commands::import::run(&home, &cli.global, cli.workspace.as_deref(), args)
        }
        Some(Command::Anchor { command }) => {
            commands::anchor::run(cli.workspace.as_deref(), command)
        }
        Some(Command::Commands { json }) => {
            commands::extensions::run(&home, cli.workspace.as_deref(), json)
        }
        Some(Command::Mcp { command: McpCommand::List { json } }) => {
            commands::mcp::list(&home, &cli.global, cli.workspace.as_deref(), json)
        }
        Some(Command::Journal { command: JournalCommand::Check { file } }) => {
            commands::journal_check::run(&file)
        }
        Some(Command::Export(args)) => commands::export::run(&home, cli.workspace.as_deref(), args),
        Some(Command::Resume { session, last }) => {
            commands::resume::run(&cli.global, cli.workspace.as_deref(), session, last)
        }
        None => commands::interactive::run(&cli.global, cli.workspace.as_deref()),
    }
}

/// Re-executes this process without the provider's key variables in its environment (they
/// travel on a pipe), so that no command can read them from Codewhale's `/proc` entry
/// (docs/security.md, *No command can read a key*). Returns when there was nothing to hide
/// or the re-exec failed (then `/status` says the keys are readable).
fn hide_keys(home: &std::path::Path, workspace: Option<&std::path::Path>) {
    let Ok(workspace) = commands::workspace_dir(workspace) else { return };
    let names = codewhale_engine::key_variables(home, &workspace);
    // Returns only when nothing was re-executed.
    let _ = codewhale_engine::sandbox::keys::reexec_without(&names);
}

#[cfg(test)]
mod tests {
    use super::one_sentence;

    #[test]
    fn a_cause_already_in_the_message_is_not_said_again() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory");
        let inner = anyhow::Error::new(io).context("cannot read x: No such file or directory");
        let err = inner.context("cannot import x");
        assert_eq!(one_sentence(&err), "cannot import x: cannot read x: No such file or directory");
        let fresh = anyhow::anyhow!("disk is full").context("cannot write the journal");
        assert_eq!(one_sentence(&fresh), "cannot write the journal: disk is full");
    }
}
