//! `codewhale anchor add TEXT | list | rm N`: the workspace's `.codewhale/anchors.md`.
//!
//! Never contacts a provider. The workspace is `-C DIR` when given, else the current directory.
//! A live session learns about a new anchor through the `AddAnchor` Op instead, which also
//! journals it so the model sees it at once; from the shell, the next checkpoint restates it.

use std::path::Path;
use std::process::ExitCode;

use codewhale_engine::offline::anchors::{self, ANCHORS_FILE};

use crate::cli::AnchorCommand;

/// Runs one anchor subcommand.
pub fn run(workspace: Option<&Path>, command: AnchorCommand) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace_dir(workspace)?;
    match command {
        AnchorCommand::Add { text } => {
            // Redacted by the engine: anchors are restated in every checkpoint.
            let n = anchors::add(&workspace, &text.join(" "))?;
            outln!("anchor {n} added to {ANCHORS_FILE}");
        }
        AnchorCommand::List => {
            let entries = anchors::list(&workspace)?;
            if entries.is_empty() {
                outln!("no anchors in {ANCHORS_FILE}; add one with `codewhale anchor add TEXT`");
            }
            for (i, entry) in entries.iter().enumerate() {
                let mut lines = entry.lines();
                outln!("{}. {}", i + 1, lines.next().unwrap_or_default());
                for line in lines {
                    outln!("   {line}");
                }
            }
        }
        AnchorCommand::Rm { n } => {
            let removed = anchors::remove(&workspace, n)?;
            let first = removed.lines().next().unwrap_or_default();
            outln!("removed anchor {n}: {first}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_list_rm_edit_the_workspace_file() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Some(dir.path());
        let add = |t: &str| run(ws, AnchorCommand::Add { text: vec![t.into()] }).unwrap();
        add("Never push to main.");
        add("Use rustls.");
        run(ws, AnchorCommand::List).unwrap();
        run(ws, AnchorCommand::Rm { n: 1 }).unwrap();
        let text = std::fs::read_to_string(dir.path().join(ANCHORS_FILE)).unwrap();
        assert_eq!(text, "Use rustls.\n");
        assert!(run(ws, AnchorCommand::Rm { n: 7 }).is_err());
    }
}
