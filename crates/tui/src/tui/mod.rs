//! The interactive terminal UI (docs/commands.md).
//!
//! One `select!` loop ([`run`]) over three sources — engine events, terminal input, results of
//! effects — feeding one [`App`], plus draws scheduled by the coalescing [`FrameRequester`]. The
//! app is plain state: it sends [`Op`](codewhale_protocol::Op) values through an [`OpSink`]
//! and asks the loop for I/O with [`Effect`]s, so tests drive it without a terminal or an engine.
//! The UI never opens a session file and never calls a provider: everything it shows about the
//! session (history pages, the context report, the anchors, the gauge) comes from engine events.
//! Sessions open off the UI task
//! ([`Engine::spawn_opening`](codewhale_engine::Engine::spawn_opening)): keys and redraws keep
//! working while a large one loads, and the session on screen stays until the new one is open.
//!
//! Modules: [`app`] (state, keys), `engine_events` (following the engine), `engine_link` (the
//! engines followed, one on screen and one opening), `slash_dispatch`
//! (running commands), `render` (drawing), [`cells`]/[`transcript`] (the conversation),
//! [`composer`], [`slash`] (the command table), [`views`] (modal views), [`frame`],
//! [`terminal`] (raw mode and its restoration).

pub mod ansi;
pub mod app;
pub mod approval_view;
mod branch_cell;
pub mod cell;
pub mod cells;
pub mod clipboard;
pub mod composer;
pub mod diff_cell;
pub mod editor;
mod engine_events;
mod engine_link;
pub mod event;
mod exporting;
pub mod frame;
mod keys;
pub mod markdown;
pub mod mentions;
pub mod notify;
pub mod page_cells;
pub mod plan_cell;
pub mod prompts;
mod render;
mod restore_view;
mod session_files;
pub mod slash;
mod slash_dispatch;
mod status;
pub mod terminal;
pub mod text_width;
pub mod tool_cell;
pub mod transcript;
pub mod views;
pub mod wrap;

#[cfg(test)]
mod tests;

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use codewhale_engine::{Overrides, Resume};
use crossterm::event::{Event as TermEvent, EventStream};
use futures::StreamExt as _;
use tokio::sync::mpsc;

pub use app::App;
use engine_link::{next_event, open_session, opening_event, spawn_engine, Links};
pub use event::{AppEvent, Effect, NoSession, OpSink};
pub use frame::{FrameKind, FrameRequester};
use session_files::{import_session, session_rows};

/// How often the screen is redrawn while something counts time (a running call, a retry).
const TICK: Duration = Duration::from_millis(500);
/// How long a SIGTERM or SIGHUP waits for the engine to save before leaving anyway.
const SIGNAL_GRACE: Duration = Duration::from_secs(3);

/// What the interactive session starts with.
#[derive(Debug, Clone)]
pub struct TuiParams {
    pub home: PathBuf,
    pub workspace: PathBuf,
    pub overrides: Overrides,
    /// The session to open; `None` opens the session picker first (`codewhale resume`).
    pub resume: Option<Resume>,
    /// The workspace's config needs the user's trust first: asked before the session opens.
    pub trust: Option<codewhale_engine::trust::Question>,
    /// The `--home` the user gave, if any: suggested commands repeat it.
    pub home_hint: Option<PathBuf>,
    /// `[tui] notify`: how to call the user back while the terminal is not focused.
    pub notify: codewhale_protocol::Notify,
}

/// How the session ended, for the line printed after the terminal is restored.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The session that was open last, if any.
    pub session_id: Option<String>,
}

/// Runs the UI until the user quits. The caller checks the configuration and the session to resume
/// first ([`Engine::preflight`](codewhale_engine::Engine::preflight)), so such an error is a normal
/// one-line error; the session itself loads off the UI task.
pub async fn run(params: TuiParams) -> anyhow::Result<Outcome> {
    // Checked before the engine creates a session file that nobody could then use.
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        anyhow::bail!(
            "the interactive UI needs a terminal; run `codewhale exec PROMPT` for one turn without one"
        );
    }
    // Code-block colours load beside the first frames, never before them.
    markdown::highlight::warm_up();
    // With a trust question pending, the session opens only once it is answered.
    let mut waiting_for_trust = params.trust.as_ref().and(params.resume.clone());
    // The question `/trust` asked during the session, and for which workspace.
    let mut asked_again: Option<(std::path::PathBuf, codewhale_engine::trust::Question)> = None;
    let mut links = Links::default();
    if let (None, Some(resume)) = (&params.trust, params.resume.clone()) {
        links.current = Some(spawn_engine(&params, resume));
    }
    terminal::install_panic_hook();
    let (mut terminal, guard, keyboard_enhanced) =
        terminal::enter().context("cannot set up the terminal")?;
    let history_file = composer::prompt_history::file_for(&params.home, &params.workspace);
    let sink: Box<dyn OpSink> = match &links.current {
        Some(l) => Box::new(l.handle.clone()),
        None => Box::new(NoSession),
    };
    let mut app = App::new(sink, params.overrides.model.clone().unwrap_or_default());
    app.screen.keyboard_enhanced = keyboard_enhanced;
    app.screen.notify = notify::method(params.notify, |k| std::env::var(k).ok());
    match composer::prompt_history::load(&history_file) {
        Ok(entries) => app.composer = composer::Composer::with_history(entries),
        Err(e) => {
            tracing::warn!(path = %history_file.display(), "cannot read the prompt history: {e}")
        }
    }
    if let Some(q) = &params.trust {
        app.views.push(views::TrustView::new(q.file.display().to_string(), q.settings.clone()));
    } else if links.current.is_none() {
        let result = session_rows(&params, false, "");
        app.handle(AppEvent::SessionsLoaded { all: false, result });
    }
    let (frames, mut draws) = FrameRequester::spawn();
    let (app_tx, mut app_rx) = mpsc::unbounded_channel::<AppEvent>();
    let mut input = EventStream::new();
    let mut ticker = tokio::time::interval(TICK);
    let mut signals = terminal::Signals::new().context("cannot listen for signals")?;
    // Set when SIGTERM or SIGHUP arrived: leave by then even if the engine does not answer.
    let mut leave_by: Option<tokio::time::Instant> = None;
    frames.request();
    loop {
        let deadline = async {
            match leave_by {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        // Biased: a key (and a due frame) goes before the engine's next delta, so input is
        // never queued behind streamed output.
        let event = tokio::select! {
            biased;
            () = signals.next() => {
                // Killed or the terminal went away: save, restore the terminal, leave.
                tracing::info!("terminated by a signal; saving and leaving");
                leave_by = Some(tokio::time::Instant::now() + SIGNAL_GRACE);
                app.quit();
                AppEvent::Tick(std::time::Instant::now())
            }
            () = deadline => break,
            term = input.next() => match term {
                Some(Ok(ev)) => AppEvent::Input(ev),
                Some(Err(err)) => return Err(err).context("cannot read the terminal"),
                None => break,
            },
            Some(()) = draws.recv() => {
                // Draws that queued up while the loop was busy are one draw.
                while draws.try_recv().is_ok() {}
                terminal::draw(&mut terminal, |f| app.draw(f)).context("cannot draw the terminal")?;
                continue;
            }
            _ = ticker.tick(), if app.animating() => AppEvent::Tick(std::time::Instant::now()),
            msg = next_event(&mut links.current) => match msg {
                Some(msg) => AppEvent::Engine(msg),
                None => {
                    links.current = None;
                    AppEvent::EngineGone
                }
            },
            msg = next_event(&mut links.opening) => match opening_event(&mut links, &mut app, msg) {
                Some(event) => event,
                None => {
                    frames.request();
                    continue;
                }
            },
            Some(ev) = app_rx.recv() => ev,
        };
        // Output from the engine is drawn within the stream budget (~30 frames a second);
        // everything else is the user's doing and is drawn at once.
        let kind = match event {
            AppEvent::Engine(_) => FrameKind::Stream,
            _ => FrameKind::Input,
        };
        if matches!(event, AppEvent::Input(TermEvent::Resize(..))) {
            terminal.autoresize().context("cannot resize")?;
        }
        app.handle(event);
        let mut exit = false;
        for effect in app.take_effects() {
            match effect {
                Effect::Exit => exit = true,
                Effect::OpenSession(resume) => open_session(&params, &mut app, &mut links, resume),
                Effect::AskTrust => {
                    let workspace =
                        app.session.workspace.clone().unwrap_or_else(|| params.workspace.clone());
                    match codewhale_engine::trust::question_again(&params.home, &workspace) {
                        Ok(Some(q)) => {
                            app.views.push(views::TrustView::new(
                                q.file.display().to_string(),
                                q.settings.clone(),
                            ));
                            asked_again = Some((workspace, q));
                        }
                        Ok(None) => app.notice(
                            cells::NoticeKind::Info,
                            "nothing to trust: this workspace's settings need no trust, or are \
                             trusted already",
                        ),
                        Err(e) => app.notice(cells::NoticeKind::Error, e.to_string()),
                    }
                }
                Effect::Trust { trusted } if asked_again.is_some() => {
                    let Some((workspace, q)) = asked_again.take() else { continue };
                    let said = match codewhale_engine::trust::answer(
                        &params.home,
                        &workspace,
                        &q,
                        trusted,
                    ) {
                        Err(e) => format!("cannot remember the answer in the Codewhale home: {e}"),
                        Ok(()) if trusted => {
                            "trusted: the workspace's settings apply from the next \
                                              session (/new, or /resume this one after a restart)"
                                .to_owned()
                        }
                        Ok(()) => {
                            "not trusted: its settings stay ignored; /trust asks again".to_owned()
                        }
                    };
                    app.notice(cells::NoticeKind::Info, said);
                }
                Effect::Trust { trusted } => {
                    // The answer is about the content the question showed.
                    let remembered = match &params.trust {
                        Some(q) => codewhale_engine::trust::answer(
                            &params.home,
                            &params.workspace,
                            q,
                            trusted,
                        ),
                        None => codewhale_engine::trust::decide(
                            &params.home,
                            &params.workspace,
                            trusted,
                        ),
                    };
                    if let Err(e) = remembered {
                        app.handle(AppEvent::SessionOpenFailed(format!(
                            "cannot remember the answer in the Codewhale home: {e}"
                        )));
                    }
                    if let Some(resume) = waiting_for_trust.take() {
                        open_session(&params, &mut app, &mut links, resume);
                    }
                }
                Effect::Copy(text) => {
                    if let Err(e) = terminal::copy(&text) {
                        app.handle(AppEvent::SessionOpenFailed(format!(
                            "cannot reach the clipboard through the terminal: {e}"
                        )));
                    }
                }
                Effect::PasteImage => {
                    let tx = app_tx.clone();
                    let home = params.home.clone();
                    tokio::task::spawn_blocking(move || {
                        let platform = clipboard::Platform::current();
                        let _ = tx.send(AppEvent::ClipboardImage(clipboard::paste_image(
                            &platform, &home,
                        )));
                    });
                }
                Effect::MouseCapture(on) => {
                    terminal::set_mouse_capture(on).context("cannot change mouse capture")?
                }
                Effect::Notify(bytes) => {
                    // Best effort: a terminal that cannot take it loses nothing.
                    let mut out = std::io::stdout();
                    let _ = std::io::Write::write_all(&mut out, bytes.as_bytes());
                    let _ = std::io::Write::flush(&mut out);
                }
                Effect::LoadSessions { all } => {
                    let tx = app_tx.clone();
                    let params = params.clone();
                    let current = app.session_id().to_owned();
                    tokio::task::spawn_blocking(move || {
                        let result = session_rows(&params, all, &current);
                        let _ = tx.send(AppEvent::SessionsLoaded { all, result });
                    });
                }
                Effect::WriteExport { path, text, what } => {
                    let tx = app_tx.clone();
                    let workspace =
                        app.session.workspace.clone().unwrap_or_else(|| params.workspace.clone());
                    let home_dir = std::env::var_os("HOME").map(PathBuf::from);
                    tokio::task::spawn_blocking(move || {
                        let path = exporting::export_path(&path, &workspace, home_dir.as_deref());
                        let _ = tx
                            .send(AppEvent::Exported(exporting::write_export(&path, &text, &what)));
                    });
                }
                Effect::NameKept { old, new } => {
                    let tx = app_tx.clone();
                    let home = params.home.clone();
                    tokio::task::spawn_blocking(move || {
                        let prefix =
                            codewhale_engine::offline::unique_prefix(&home, &old, &[new.as_str()]);
                        let _ = tx.send(AppEvent::KeptNamed(prefix));
                    });
                }
                Effect::LoadImports(tool) => {
                    let tx = app_tx.clone();
                    let workspace =
                        app.session.workspace.clone().unwrap_or_else(|| params.workspace.clone());
                    tokio::task::spawn_blocking(move || {
                        let roots = codewhale_engine::offline::import::Roots::from_env();
                        let result =
                            codewhale_engine::offline::import::candidates(tool, &roots, &workspace);
                        let _ = tx.send(AppEvent::ImportsLoaded { tool, result });
                    });
                }
                Effect::Import(path) => {
                    let tx = app_tx.clone();
                    let home = params.home.clone();
                    let workspace =
                        app.session.workspace.clone().unwrap_or_else(|| params.workspace.clone());
                    tokio::task::spawn_blocking(move || {
                        let result = import_session(&home, &workspace, &path);
                        let _ = tx.send(AppEvent::Imported(result));
                    });
                }
                Effect::RememberPrompt(text) => {
                    let path = history_file.clone();
                    tokio::task::spawn_blocking(move || {
                        if let Err(e) = composer::prompt_history::append(&path, &text) {
                            tracing::warn!(path = %path.display(), "cannot keep the prompt: {e}");
                        }
                    });
                }
                Effect::IndexFiles => {
                    let tx = app_tx.clone();
                    let root =
                        app.session.workspace.clone().unwrap_or_else(|| params.workspace.clone());
                    tokio::task::spawn_blocking(move || {
                        let files = std::sync::Arc::new(mentions::index(&root));
                        let _ = tx.send(AppEvent::FilesIndexed(files));
                    });
                }
                Effect::EditDraft(draft) => {
                    // The editor reads the terminal: our reader must not race it for keys.
                    drop(input);
                    let editor = editor::command();
                    let edited =
                        terminal::handed_over(&mut terminal, || editor::edit(&editor, &draft))
                            .context("cannot take the terminal back from the editor")?;
                    input = EventStream::new();
                    app.handle(AppEvent::DraftEdited(edited));
                }
                Effect::Suspend => {
                    drop(input);
                    let suspended =
                        terminal::suspend(&mut terminal).await.context("cannot suspend")?;
                    input = EventStream::new();
                    terminal.autoresize().context("cannot resize")?;
                    if !suspended {
                        app.handle(AppEvent::SuspendUnavailable);
                    }
                }
            }
        }
        if exit {
            break;
        }
        frames.request_kind(kind);
    }
    drop(terminal);
    drop(guard);
    let id = app.session_id().to_owned();
    Ok(Outcome { session_id: (!id.is_empty()).then_some(id) })
}
