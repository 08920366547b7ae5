//! `codewhale export [--session ID | --last] [--format md|json] [-o FILE]`: a session's
//! conversation as the user saw it (docs/cli.md), the same text `/export` writes. Never
//! contacts a provider and needs no API key: the engine's `offline::transcript` reads the file.
//!
//! Without `-o` the text goes to standard output (a reader that leaves early, `| head`, is
//! nobody's error); with it, FILE is written whole or not at all (a temporary file renamed
//! over it), so a failed export never leaves half a file behind, and readable by the user
//! alone, like the session it comes from.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use codewhale_engine::Resume;

use crate::cli::{ExportArgs, ExportFormat};
use crate::export::{self, Format};

/// Writes the conversation and returns the exit code.
pub fn run(home: &Path, workspace: Option<&Path>, args: ExportArgs) -> anyhow::Result<ExitCode> {
    let cwd = super::workspace_dir(workspace)?;
    let resume = match args.session {
        Some(id) => Resume::Id(id),
        None => Resume::Last,
    };
    let transcript = codewhale_engine::offline::transcript(home, &cwd, resume)?;
    let format = match args.format {
        ExportFormat::Md => Format::Markdown,
        ExportFormat::Json => Format::Json,
    };
    let text = export::render(&transcript, format);
    match args.output {
        Some(path) => {
            write_file(&path, &text)?;
            let n = export::message_count(&transcript);
            let s = if n == 1 { "" } else { "s" };
            errln!(
                "codewhale: exported {n} message{s} of session {} to {}",
                transcript.session,
                path.display()
            );
        }
        None => {
            let text = crate::output::for_stdout(&text);
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `text` to `path` whole (a temporary file beside it, renamed over it), readable by
/// the user alone like the session it comes from.
pub fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    let private = codewhale_engine::replace::PRIVATE;
    codewhale_engine::replace::replace_file(path, private, text.as_bytes())
        .with_context(|| format!("cannot write the export to {}", path.display()))
}
