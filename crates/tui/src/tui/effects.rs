//! The event loop's side of the app's [`Effect`]s: each effect is carried out by one function
//! here, with what the loop owns (the terminal, the input stream, the engines, the channel
//! back to the app). Slow work (listing sessions, indexing files, importing, reading the
//! clipboard) runs off the UI task and comes back as an [`AppEvent`].
//!
//! Invariant: an effect that fails in a way the user should know of says so in the app (a
//! notice); only losing the terminal itself ends the loop with an error.

use std::path::PathBuf;

use anyhow::Context as _;
use codewhale_engine::Resume;
use crossterm::event::EventStream;
use tokio::sync::mpsc;

use super::cells::NoticeKind;
use super::engine_link::{open_session, Links};
use super::session_files::{import_session, session_rows};
use super::terminal::Tui;
use super::{
    clipboard, composer, editor, exporting, mentions, terminal, views, App, AppEvent, Effect,
    TuiParams,
};

/// The workspace-settings question and the session waiting on its answer.
#[derive(Default)]
pub(super) struct TrustState {
    /// The session the start-up question holds back until it is answered.
    pub(super) waiting: Option<Resume>,
    /// The question `/trust` asked during the session, and for which workspace.
    pub(super) asked_again: Option<(PathBuf, codewhale_engine::trust::Question)>,
}

/// What the loop lends an effect.
pub(super) struct Loop<'a> {
    pub(super) params: &'a TuiParams,
    pub(super) app: &'a mut App,
    pub(super) links: &'a mut Links,
    pub(super) terminal: &'a mut Tui,
    /// The terminal's input; taken (and so stopped) while someone else reads the terminal.
    pub(super) input: &'a mut Option<EventStream>,
    pub(super) app_tx: &'a mpsc::UnboundedSender<AppEvent>,
    pub(super) history_file: &'a PathBuf,
    pub(super) trust: &'a mut TrustState,
}

/// Whether the loop goes on after an effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    Continue,
    Exit,
}

impl Loop<'_> {
    /// Carries out `effect`.
    pub(super) async fn apply(&mut self, effect: Effect) -> anyhow::Result<Next> {
        match effect {
            Effect::Exit => return Ok(Next::Exit),
            Effect::OpenSession(resume) => self.open(resume),
            Effect::AskTrust => self.ask_trust(),
            Effect::Trust { trusted } if self.trust.asked_again.is_some() => {
                self.answer_again(trusted)
            }
            Effect::Trust { trusted } => self.answer_at_start(trusted),
            Effect::Copy(text) => self.copy(&text),
            Effect::PasteImage => self.paste_image(),
            Effect::MouseCapture(on) => {
                terminal::set_mouse_capture(on).context("cannot change mouse capture")?
            }
            Effect::Notify(bytes) => notify(&bytes),
            Effect::LoadSessions { all } => self.load_sessions(all),
            Effect::LoadImports(tool) => self.load_imports(tool),
            Effect::Import(path) => self.import(path),
            Effect::WriteExport { path, text, what } => self.write_export(path, text, what),
            Effect::NameKept { old, new } => self.name_kept(old, new),
            Effect::RememberPrompt(text) => self.remember_prompt(text),
            Effect::IndexFiles => self.index_files(),
            Effect::EditDraft(draft) => self.edit_draft(&draft)?,
            Effect::Suspend => self.suspend().await?,
        }
        Ok(Next::Continue)
    }

    fn workspace(&self) -> PathBuf {
        self.app.session.workspace.clone().unwrap_or_else(|| self.params.workspace.clone())
    }

    /// Runs `work` off the UI task and hands its result to the app.
    fn off_task(&self, work: impl FnOnce() -> AppEvent + Send + 'static) {
        let tx = self.app_tx.clone();
        tokio::task::spawn_blocking(move || {
            let _ = tx.send(work());
        });
    }

    fn open(&mut self, resume: Resume) {
        open_session(self.params, self.app, self.links, resume);
    }

    /// `/trust`: the workspace-settings question again, when there is one to ask.
    fn ask_trust(&mut self) {
        let workspace = self.workspace();
        match codewhale_engine::trust::question_again(&self.params.home, &workspace) {
            Ok(Some(q)) => {
                let view = views::TrustView::new(q.file.display().to_string(), q.settings.clone());
                self.app.views.push(view);
                self.trust.asked_again = Some((workspace, q));
            }
            Ok(None) => self.app.notice(
                NoticeKind::Info,
                "nothing to trust: this workspace's settings need no trust, or are trusted \
                 already",
            ),
            Err(e) => self.app.notice(NoticeKind::Error, e.to_string()),
        }
    }

    /// The answer to the question `/trust` asked.
    fn answer_again(&mut self, trusted: bool) {
        let Some((workspace, q)) = self.trust.asked_again.take() else { return };
        let said = match codewhale_engine::trust::answer(&self.params.home, &workspace, &q, trusted)
        {
            Err(e) => format!("cannot remember the answer in the Codewhale home: {e}"),
            Ok(()) if trusted => "trusted: the workspace's settings apply from the next session \
                                  (/new, or /resume this one after a restart)"
                .to_owned(),
            Ok(()) => "not trusted: its settings stay ignored; /trust asks again".to_owned(),
        };
        self.app.notice(NoticeKind::Info, said);
    }

    /// The answer to the question asked at start; the session that waited for it opens.
    fn answer_at_start(&mut self, trusted: bool) {
        let (home, workspace) = (&self.params.home, &self.params.workspace);
        // The answer is about the content the question showed.
        let remembered = match &self.params.trust {
            Some(q) => codewhale_engine::trust::answer(home, workspace, q, trusted),
            None => codewhale_engine::trust::decide(home, workspace, trusted),
        };
        if let Err(e) = remembered {
            self.app.handle(AppEvent::SessionOpenFailed(format!(
                "cannot remember the answer in the Codewhale home: {e}"
            )));
        }
        if let Some(resume) = self.trust.waiting.take() {
            self.open(resume);
        }
    }

    fn copy(&mut self, text: &str) {
        if let Err(e) = terminal::copy(text) {
            self.app.handle(AppEvent::SessionOpenFailed(format!(
                "cannot reach the clipboard through the terminal: {e}"
            )));
        }
    }

    fn paste_image(&self) {
        let home = self.params.home.clone();
        self.off_task(move || {
            let platform = clipboard::Platform::current();
            AppEvent::ClipboardImage(clipboard::paste_image(&platform, &home))
        });
    }

    fn load_sessions(&self, all: bool) {
        let params = self.params.clone();
        let current = self.app.session_id().to_owned();
        self.off_task(move || AppEvent::SessionsLoaded {
            all,
            result: session_rows(&params, all, &current),
        });
    }

    fn load_imports(&self, tool: codewhale_engine::offline::import::Tool) {
        let workspace = self.workspace();
        self.off_task(move || {
            let roots = codewhale_engine::offline::import::Roots::from_env();
            let result = codewhale_engine::offline::import::candidates(tool, &roots, &workspace);
            AppEvent::ImportsLoaded { tool, result }
        });
    }

    fn import(&self, path: PathBuf) {
        let home = self.params.home.clone();
        let workspace = self.workspace();
        self.off_task(move || AppEvent::Imported(import_session(&home, &workspace, &path)));
    }

    /// `/export FILE`: written off the UI task, relative to the workspace (`~` is the home).
    fn write_export(&self, path: String, text: String, what: String) {
        let workspace = self.workspace();
        let home_dir = std::env::var_os("HOME").map(PathBuf::from);
        self.off_task(move || {
            let path = exporting::export_path(&path, &workspace, home_dir.as_deref());
            AppEvent::Exported(exporting::write_export(&path, &text, &what))
        });
    }

    /// `/clear`'s kept conversation, named by the shortest prefix no other session shares.
    fn name_kept(&self, old: String, new: String) {
        let home = self.params.home.clone();
        self.off_task(move || {
            AppEvent::KeptNamed(codewhale_engine::offline::unique_prefix(
                &home,
                &old,
                &[new.as_str()],
            ))
        });
    }

    fn remember_prompt(&self, text: String) {
        let path = self.history_file.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = composer::prompt_history::append(&path, &text) {
                tracing::warn!(path = %path.display(), "cannot keep the prompt: {e}");
            }
        });
    }

    fn index_files(&self) {
        let root = self.workspace();
        self.off_task(move || AppEvent::FilesIndexed(std::sync::Arc::new(mentions::index(&root))));
    }

    /// Ctrl+G: the editor reads the terminal, so our reader must not race it for keys.
    fn edit_draft(&mut self, draft: &str) -> anyhow::Result<()> {
        drop(self.input.take());
        let editor = editor::command();
        let edited = terminal::handed_over(self.terminal, || editor::edit(&editor, draft))
            .context("cannot take the terminal back from the editor")?;
        *self.input = Some(EventStream::new());
        self.app.handle(AppEvent::DraftEdited(edited));
        Ok(())
    }

    /// Ctrl+Z: stop until `fg`, the terminal given back meanwhile.
    async fn suspend(&mut self) -> anyhow::Result<()> {
        drop(self.input.take());
        let suspended = terminal::suspend(self.terminal).await.context("cannot suspend")?;
        *self.input = Some(EventStream::new());
        self.terminal.autoresize().context("cannot resize")?;
        if !suspended {
            self.app.handle(AppEvent::SuspendUnavailable);
        }
        Ok(())
    }
}

/// A notification or the bell. Best effort: a terminal that cannot take it loses nothing.
fn notify(bytes: &str) {
    let mut out = std::io::stdout();
    let _ = std::io::Write::write_all(&mut out, bytes.as_bytes());
    let _ = std::io::Write::flush(&mut out);
}
