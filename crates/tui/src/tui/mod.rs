//! The interactive terminal UI (DESIGN §7).
//!
//! One `select!` loop ([`run`]) over three sources — engine events, terminal input, results of
//! effects — feeding one [`App`], plus draws scheduled by the coalescing [`FrameRequester`].
//! The app is plain state: it sends [`Op`] values through an
//! [`OpSink`] and asks the loop for I/O with [`Effect`]s, so tests drive it without a
//! terminal or an engine. The UI never writes the journal and never calls a provider: the
//! engine does both; the UI only reads reports the engine builds (`/context`, the session
//! list, the anchors file).
//!
//! Modules: [`app`] (state, keys), `engine_events` (following the engine), `slash_dispatch`
//! (running commands), `render` (drawing), [`cells`]/[`transcript`] (the conversation),
//! [`composer`], [`slash`] (the command table), [`views`] (modal views), [`frame`],
//! [`terminal`] (raw mode and its restoration).

pub mod app;
pub mod cells;
pub mod composer;
mod engine_events;
pub mod event;
pub mod frame;
pub mod history;
pub mod markdown;
mod render;
pub mod slash;
mod slash_dispatch;
pub mod terminal;
pub mod transcript;
pub mod views;
pub mod wrap;

#[cfg(test)]
mod tests;

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use codewhale_engine::compaction::report::{context_report, ReportParams};
use codewhale_engine::config::{Env, Overrides};
use codewhale_engine::protocol::{Event, Op};
use codewhale_engine::session::Resume;
use codewhale_engine::{Engine, EngineHandle, EngineParams, EventReceiver};
use crossterm::event::{Event as TermEvent, EventStream};
use futures::StreamExt as _;
use tokio::sync::mpsc;

pub use app::App;
pub use event::{AppEvent, Effect, NoSession, OpSink};
pub use frame::FrameRequester;
use views::SessionRow;

/// How long leaving waits for the engine to sync the journal and stop.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

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
}

/// How the session ended, for the line printed after the terminal is restored.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The session that was open last, if any.
    pub session_id: Option<String>,
}

/// A running engine: its handle and its events.
struct Link {
    handle: EngineHandle,
    events: EventReceiver,
}

fn spawn_engine(params: &TuiParams, resume: Resume) -> Result<Link, codewhale_engine::EngineError> {
    let (handle, events) = Engine::spawn(EngineParams {
        home: params.home.clone(),
        workspace: params.workspace.clone(),
        overrides: params.overrides.clone(),
        env: Env::from_process(),
        resume,
        interactive: true,
        retry: None,
        front_end: codewhale_engine::FrontEnd::Tui,
    })?;
    Ok(Link { handle, events })
}

/// Runs the UI until the user quits. The engine is started before the terminal is taken
/// over, so a configuration or session error is printed as a normal one-line error.
pub async fn run(params: TuiParams) -> anyhow::Result<Outcome> {
    // Checked before the engine creates a session file that nobody could then use.
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        anyhow::bail!(
            "the interactive UI needs a terminal; run `codewhale exec PROMPT` for one turn without one"
        );
    }
    // With a trust question pending, the session opens only once it is answered.
    let mut waiting_for_trust = params.trust.as_ref().and(params.resume.clone());
    let mut link = match (&params.trust, params.resume.clone()) {
        (None, Some(resume)) => Some(spawn_engine(&params, resume)?),
        _ => None,
    };
    terminal::install_panic_hook();
    let (mut terminal, guard) = terminal::enter().context("cannot set up the terminal")?;
    let sink: Box<dyn OpSink> = match &link {
        Some(l) => Box::new(l.handle.clone()),
        None => Box::new(NoSession),
    };
    let mut app = App::new(sink, params.overrides.model.clone().unwrap_or_default());
    if let Some(q) = &params.trust {
        app.views.push(Box::new(views::TrustView {
            file: q.file.display().to_string(),
            settings: q.settings.clone(),
        }));
    } else if link.is_none() {
        app.handle(AppEvent::SessionsLoaded { all: false, result: list_sessions(&params, false) });
    }
    let (frames, mut draws) = FrameRequester::spawn();
    let (app_tx, mut app_rx) = mpsc::unbounded_channel::<AppEvent>();
    let mut input = EventStream::new();
    frames.request();
    loop {
        let event = tokio::select! {
            msg = next_engine_event(&mut link) => match msg {
                Some(msg) => AppEvent::Engine(msg),
                None => {
                    link = None;
                    AppEvent::EngineGone
                }
            },
            term = input.next() => match term {
                Some(Ok(ev)) => AppEvent::Input(ev),
                Some(Err(err)) => return Err(err).context("cannot read the terminal"),
                None => break,
            },
            Some(ev) = app_rx.recv() => ev,
            Some(()) = draws.recv() => {
                terminal.draw(|f| app.draw(f)).context("cannot draw the terminal")?;
                continue;
            }
        };
        if matches!(event, AppEvent::Input(TermEvent::Resize(..))) {
            terminal.autoresize().context("cannot resize")?;
        }
        app.handle(event);
        let mut exit = false;
        for effect in app.take_effects() {
            match effect {
                Effect::Exit => exit = true,
                Effect::OpenSession(resume) => {
                    switch_session(&params, &mut app, &mut link, resume, &app_tx).await
                }
                Effect::Trust { trusted } => {
                    if let Err(e) =
                        codewhale_engine::trust::decide(&params.home, &params.workspace, trusted)
                    {
                        let _ = app_tx.send(AppEvent::SessionOpenFailed(format!(
                            "cannot remember the answer in the Codewhale home: {e}"
                        )));
                    }
                    if let Some(resume) = waiting_for_trust.take() {
                        switch_session(&params, &mut app, &mut link, resume, &app_tx).await;
                    }
                }
                other => run_effect(&params, &app, other, &app_tx),
            }
        }
        if exit {
            break;
        }
        frames.request();
    }
    drop(terminal);
    drop(guard);
    let id = app.session_id().to_owned();
    Ok(Outcome { session_id: (!id.is_empty()).then_some(id) })
}

async fn next_engine_event(
    link: &mut Option<Link>,
) -> Option<codewhale_engine::protocol::EventMsg> {
    match link {
        Some(l) => l.events.recv().await,
        None => std::future::pending().await,
    }
}

/// Effects that only read: they run off the UI thread and report back as events.
fn run_effect(params: &TuiParams, app: &App, effect: Effect, tx: &mpsc::UnboundedSender<AppEvent>) {
    let tx = tx.clone();
    let params = params.clone();
    let session = app.session_id().to_owned();
    let path = app.session_path().to_owned();
    // A resumed session may work in another directory than the one Codewhale started in.
    let workspace = app.workspace.clone().unwrap_or_else(|| params.workspace.clone());
    tokio::task::spawn_blocking(move || {
        let event = match effect {
            Effect::LoadContext if session.is_empty() => {
                AppEvent::ContextLoaded(Err("no session is open".to_owned()))
            }
            Effect::LoadContext => AppEvent::ContextLoaded(
                context_report(&ReportParams {
                    home: &params.home,
                    cwd: &params.workspace,
                    resume: Resume::Id(session),
                    overrides: params.overrides.clone(),
                })
                .map(Box::new)
                .map_err(|e| format!("cannot build the context report: {e}")),
            ),
            Effect::LoadSessions { all } => {
                AppEvent::SessionsLoaded { all, result: list_sessions(&params, all) }
            }
            Effect::ListAnchors => AppEvent::AnchorsLoaded(
                codewhale_engine::anchors::AnchorStore::new(&workspace)
                    .list()
                    .map_err(|e| e.to_string()),
            ),
            Effect::LoadNote { id } => {
                let note = history::note(Path::new(&path), &id);
                AppEvent::NoteLoaded { id, note }
            }
            Effect::LoadHistory { path, replace } => {
                AppEvent::HistoryLoaded { replace, result: history::load(Path::new(&path)) }
            }
            Effect::OpenSession(_) | Effect::Trust { .. } | Effect::Exit => return,
        };
        let _ = tx.send(event);
    });
}

/// Sessions newest first: all of them, or those whose workspace is this one.
fn list_sessions(params: &TuiParams, all: bool) -> Result<Vec<SessionRow>, String> {
    let dir = codewhale_engine::session::sessions_dir(&params.home);
    let listing = codewhale_engine::journal::list_sessions(&dir)
        .map_err(|e| format!("cannot list the sessions in {}: {e}", dir.display()))?;
    let here = canonical(&params.workspace);
    Ok(listing
        .sessions
        .into_iter()
        .filter(|s| all || s.cwd == here)
        .map(|s| SessionRow {
            id: s.id,
            updated: s.updated.format("%Y-%m-%d %H:%M"),
            entries: s.entries,
            cwd: s.cwd,
            title: s.title.unwrap_or_else(|| "(untitled)".to_owned()),
        })
        .collect())
}

fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string()
}

/// `/new` and `/resume`: opens the other session first (so a failure leaves the current one
/// in place), then stops the current engine and waits for it to sync.
async fn switch_session(
    params: &TuiParams,
    app: &mut App,
    link: &mut Option<Link>,
    resume: Resume,
    tx: &mpsc::UnboundedSender<AppEvent>,
) {
    if let (Resume::Id(id), Some(_)) = (&resume, link.as_ref()) {
        if !app.session_id().is_empty() && app.session_id().starts_with(id.as_str()) {
            let _ = tx.send(AppEvent::SessionOpenFailed("that session is already open".to_owned()));
            return;
        }
    }
    let next = match spawn_engine(params, resume) {
        Ok(next) => next,
        Err(err) => {
            let _ = tx.send(AppEvent::SessionOpenFailed(format!("cannot open the session: {err}")));
            return;
        }
    };
    if let Some(mut old) = link.take() {
        old.handle.submit(Op::Shutdown);
        let _ = tokio::time::timeout(SHUTDOWN_WAIT, async {
            while let Some(msg) = old.events.recv().await {
                if msg.event == Event::ShutdownComplete {
                    break;
                }
            }
        })
        .await;
    }
    app.attach(Box::new(next.handle.clone()));
    *link = Some(next);
}
