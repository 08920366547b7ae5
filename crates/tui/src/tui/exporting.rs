//! `/export [FILE]`: the conversation as the user saw it, asked of the engine
//! ([`Op::GetTranscript`]), written as Markdown by the same builder as `codewhale export`
//! ([`crate::export`]) — to FILE, or without one onto the clipboard through the terminal
//! (OSC 52, as Ctrl+Y copies).
//!
//! The app does no I/O: writing the file is an [`Effect`] the event loop carries out, and its
//! outcome comes back as [`AppEvent::Exported`](super::event::AppEvent::Exported).

use codewhale_protocol::{Op, Transcript};

use super::app::{App, Pending};
use super::cells::NoticeKind;
use super::event::Effect;
use crate::export::{self, Format};

impl App {
    /// `/export [FILE]`: asks for the whole conversation.
    pub(crate) fn export(&mut self, args: String) {
        let file = Some(args).filter(|a| !a.is_empty());
        if let Some(id) = self.submit(Op::GetTranscript) {
            self.outbox.expect(id, Pending::Export { file });
            if self.lifecycle.busy() {
                self.notice(NoticeKind::Info, "the export follows when this ends");
            }
        }
    }

    /// The engine's transcript: written to the file `/export` named, or copied.
    pub(crate) fn on_transcript(&mut self, transcript: Transcript, pending: Option<Pending>) {
        if let Some(Pending::SubagentTranscript { title }) = pending {
            let text = export::render(&transcript, Format::Markdown);
            self.views.push(super::views::TextView::new(title, &text));
            return;
        }
        let Some(Pending::Export { file }) = pending else { return };
        let text = export::render(&transcript, Format::Markdown);
        let n = export::message_count(&transcript);
        let what = format!("{n} message{}", if n == 1 { "" } else { "s" });
        match file {
            Some(path) => self.effects.push(Effect::WriteExport { path, text, what }),
            None => {
                let size = crate::figures::size(text.len() as u64);
                self.effects.push(Effect::Copy(text));
                self.notice(
                    NoticeKind::Info,
                    format!(
                        "copied the conversation ({what}, {size} of Markdown) to the clipboard \
                         through the terminal (OSC 52); /export FILE writes it to a file instead"
                    ),
                );
            }
        }
    }

    /// The export was written (where, what), or why not.
    pub(crate) fn on_exported(&mut self, result: Result<String, String>) {
        match result {
            Ok(said) => self.notice(NoticeKind::Info, said),
            Err(e) => self.notice(NoticeKind::Error, e),
        }
    }
}

/// Where `/export FILE` writes: `~/` is the home directory, a relative path is inside the
/// session's workspace.
pub fn export_path(
    typed: &str,
    workspace: &std::path::Path,
    home_dir: Option<&std::path::Path>,
) -> std::path::PathBuf {
    let typed = typed.trim();
    if let (Some(rest), Some(home)) = (typed.strip_prefix("~/"), home_dir) {
        return home.join(rest);
    }
    let path = std::path::Path::new(typed);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        workspace.join(path)
    }
}

/// Writes the export to `path` (whole or not at all); the line that says where it went.
pub fn write_export(path: &std::path::Path, text: &str, what: &str) -> Result<String, String> {
    crate::commands::export::write_file(path, text)
        .map(|()| format!("exported {what} to {}", path.display()))
        .map_err(|e| format!("{e:#}; nothing was written"))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn a_typed_path_is_in_the_workspace_unless_absolute_or_under_home() {
        let ws = Path::new("/w/project");
        let home = Some(Path::new("/home/me"));
        assert_eq!(export_path("notes.md", ws, home), Path::new("/w/project/notes.md"));
        assert_eq!(export_path("/tmp/x.md", ws, home), Path::new("/tmp/x.md"));
        assert_eq!(export_path("~/x.md", ws, home), Path::new("/home/me/x.md"));
        assert_eq!(export_path("~/x.md", ws, None), Path::new("/w/project/~/x.md"));
    }

    #[test]
    fn a_failed_write_says_why_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no/such/dir/x.md");
        let err = write_export(&missing, "# hi\n", "1 message").unwrap_err();
        assert!(err.starts_with("cannot write the export to "), "{err}");
        assert!(err.ends_with("nothing was written"), "{err}");
        let ok = dir.path().join("x.md");
        assert_eq!(
            write_export(&ok, "# hi\n", "1 message").unwrap(),
            format!("exported 1 message to {}", ok.display())
        );
        assert_eq!(std::fs::read_to_string(&ok).unwrap(), "# hi\n");
    }
}
