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
//! Modules: [`app`] (state, keys), `engine_events` (each engine event to one `on_*` method,
//! which lives with what it changes: `turn_events`, `compaction_events`, `answer_events`,
//! `history_events`), [`cell_builders`] (the cells, built alike live and from a history page),
//! `effects` (the loop's side of each [`Effect`]), `engine_link` (the engines followed, one on
//! screen and one opening), `slash_dispatch` (running commands), `render` (drawing),
//! [`cells`]/[`transcript`] (the conversation), [`composer`], [`slash`] (the command table),
//! [`views`] (modal views), [`frame`], [`terminal`] (raw mode and its restoration).

pub mod ansi;
mod answer_events;
pub mod app;
pub mod approval_view;
mod branch_cell;
pub mod cell;
pub mod cell_builders;
pub mod cells;
pub mod clipboard;
mod compaction_events;
pub mod composer;
pub mod diff_cell;
pub mod editor;
mod effects;
mod engine_events;
mod engine_link;
pub mod event;
mod exporting;
pub mod frame;
mod history_events;
mod keys;
pub mod markdown;
pub mod mentions;
pub mod notify;
pub mod page_cells;
pub mod plan_cell;
mod plan_ready;
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
mod turn_events;
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
use effects::{Loop, Next, TrustState};
use engine_link::{next_event, opening_event, spawn_engine, Links};
pub use event::{AppEvent, Effect, NoSession, OpSink};
pub use frame::{FrameKind, FrameRequester};
use session_files::session_rows;

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
    let mut trust =
        TrustState { waiting: params.trust.as_ref().and(params.resume.clone()), asked_again: None };
    let mut links = Links::default();
    if let (None, Some(resume)) = (&params.trust, params.resume.clone()) {
        links.current = Some(spawn_engine(&params, resume));
    }
    terminal::install_panic_hook();
    let (mut terminal, guard, keyboard_enhanced) =
        terminal::enter().context("cannot set up the terminal")?;
    let history_file = composer::prompt_history::file_for(&params.home, &params.workspace);
    let mut app = start_app(&params, &links, &history_file, keyboard_enhanced);
    let (frames, draws) = FrameRequester::spawn();
    let (app_tx, app_rx) = mpsc::unbounded_channel::<AppEvent>();
    let mut sources = Sources {
        input: Some(EventStream::new()),
        draws,
        ticker: tokio::time::interval(TICK),
        signals: terminal::Signals::new().context("cannot listen for signals")?,
        leave_by: None,
        app_rx,
    };
    frames.request();
    'run: loop {
        let event = match sources.next(&mut app, &mut links, &mut terminal, &frames).await? {
            Step::Event(event) => event,
            Step::Again => continue,
            Step::Leave => break,
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
        let mut effects = Loop {
            params: &params,
            app: &mut app,
            links: &mut links,
            terminal: &mut terminal,
            input: &mut sources.input,
            app_tx: &app_tx,
            history_file: &history_file,
            trust: &mut trust,
        };
        for effect in effects.app.take_effects() {
            if effects.apply(effect).await? == Next::Exit {
                break 'run;
            }
        }
        frames.request_kind(kind);
    }
    drop(terminal);
    drop(guard);
    let id = app.session_id().to_owned();
    Ok(Outcome { session_id: (!id.is_empty()).then_some(id) })
}

/// What the loop waits on besides the engines.
struct Sources {
    /// The terminal's input; taken (and so stopped) while an editor or the shell has it.
    input: Option<EventStream>,
    draws: mpsc::UnboundedReceiver<()>,
    ticker: tokio::time::Interval,
    signals: terminal::Signals,
    /// Set when SIGTERM or SIGHUP arrived: leave by then even if the engine does not answer.
    leave_by: Option<tokio::time::Instant>,
    /// Results of effects carried out off the UI task.
    app_rx: mpsc::UnboundedReceiver<AppEvent>,
}

/// What one wait of the loop brought.
enum Step {
    Event(AppEvent),
    /// Handled already (a frame drawn, a session still opening): wait again.
    Again,
    Leave,
}

impl Sources {
    /// The next thing to handle. Biased: a key (and a due frame) goes before the engine's next
    /// delta, so input is never queued behind streamed output.
    async fn next(
        &mut self,
        app: &mut App,
        links: &mut Links,
        terminal: &mut terminal::Tui,
        frames: &FrameRequester,
    ) -> anyhow::Result<Step> {
        let leave_by = self.leave_by;
        let deadline = async {
            match leave_by {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let keys = self.input.get_or_insert_with(EventStream::new);
        let step = tokio::select! {
            biased;
            () = self.signals.next() => {
                // Killed or the terminal went away: save, restore the terminal, leave.
                tracing::info!("terminated by a signal; saving and leaving");
                self.leave_by = Some(tokio::time::Instant::now() + SIGNAL_GRACE);
                app.quit();
                Step::Event(AppEvent::Tick(std::time::Instant::now()))
            }
            () = deadline => Step::Leave,
            term = keys.next() => match term {
                Some(Ok(ev)) => Step::Event(AppEvent::Input(ev)),
                Some(Err(err)) => return Err(err).context("cannot read the terminal"),
                None => Step::Leave,
            },
            Some(()) = self.draws.recv() => {
                // Draws that queued up while the loop was busy are one draw.
                while self.draws.try_recv().is_ok() {}
                terminal::draw(terminal, |f| app.draw(f)).context("cannot draw the terminal")?;
                Step::Again
            }
            _ = self.ticker.tick(), if app.animating() => {
                Step::Event(AppEvent::Tick(std::time::Instant::now()))
            }
            msg = next_event(&mut links.current) => match msg {
                Some(msg) => Step::Event(AppEvent::Engine(msg)),
                None => {
                    links.current = None;
                    Step::Event(AppEvent::EngineGone)
                }
            },
            msg = next_event(&mut links.opening) => match opening_event(links, app, msg) {
                Some(event) => Step::Event(event),
                None => {
                    frames.request();
                    Step::Again
                }
            },
            Some(ev) = self.app_rx.recv() => Step::Event(ev),
        };
        Ok(step)
    }
}

/// The app as the session starts: its op sink (the engine, or none yet), the prompt history,
/// and the first view when the session waits (the trust question, or the session picker).
fn start_app(
    params: &TuiParams,
    links: &Links,
    history_file: &std::path::Path,
    keyboard_enhanced: bool,
) -> App {
    let sink: Box<dyn OpSink> = match &links.current {
        Some(l) => Box::new(l.handle.clone()),
        None => Box::new(NoSession),
    };
    let mut app = App::new(sink, params.overrides.model.clone().unwrap_or_default());
    app.screen.keyboard_enhanced = keyboard_enhanced;
    app.screen.notify = notify::method(params.notify, |k| std::env::var(k).ok());
    match composer::prompt_history::load(history_file) {
        Ok(entries) => app.composer = composer::Composer::with_history(entries),
        Err(e) => {
            tracing::warn!(path = %history_file.display(), "cannot read the prompt history: {e}")
        }
    }
    if let Some(q) = &params.trust {
        app.views.push(views::TrustView::new(q.file.display().to_string(), q.settings.clone()));
    } else if links.current.is_none() {
        let result = session_rows(params, false, "");
        app.handle(AppEvent::SessionsLoaded { all: false, result });
    }
    app
}
