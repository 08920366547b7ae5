//! The engine as a handle: [`Engine::spawn`] opens the session and starts one tokio task that
//! owns it; the front end holds an [`EngineHandle`] to submit [`Op`]s and a receiver of
//! [`EventMsg`]s. [`Engine::spawn_opening`] returns at once and opens the session on a worker
//! thread, so a front end never waits for a large journal to load.
//!
//! Invariants: the task is the only owner of the session, so nothing else writes the journal; while
//! a turn or a compaction runs, the task still reads ops — `Interrupt` cancels it, `Approve`/`Deny`
//! reach the waiting call, `Shutdown` cancels and then stops, the read-only questions
//! (`GetContext`, `ListAnchors`, `GetHistory`) are answered once it ends — and any other op gets an
//! error event saying something is running. Every change of what the model reads is followed by a
//! `Usage` event; the session's history is sent after it opens (when resumed) and after every HEAD
//! move. After `Shutdown` the journal is synced, background commands are stopped and
//! `ShutdownComplete` is the last event. The task is in [`task`]; the ops answered without a turn
//! are in [`idle_ops`]; the events the task words itself are in [`replies`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use codewhale_provider::RetryPolicy;
use tokio::sync::mpsc;

use crate::config::{self, Env, Overrides};
use crate::error::EngineError;
use crate::events::{self, ApprovalGate, EventSink};
use crate::session::Resume;
use codewhale_protocol::{ErrorKind, Event, EventMsg, Op, SubmissionId};

mod idle_ops;
mod open;
mod replies;
mod task;

use open::{open, Need};
use task::run;

/// What [`Engine::spawn`] needs.
#[derive(Debug, Clone, Default)]
pub struct EngineParams {
    /// Codewhale's home directory.
    pub home: PathBuf,
    /// The workspace the session works in.
    pub workspace: PathBuf,
    /// Command-line overrides of the configuration.
    pub overrides: Overrides,
    /// API keys and base URLs from the environment.
    pub env: Env,
    pub resume: Resume,
    /// Whether someone can answer approval requests; `false` denies calls that would ask.
    pub interactive: bool,
    /// Overrides the provider client's retry policy.
    pub retry: Option<RetryPolicy>,
    /// Who drives the engine: suggestions in messages name commands that exist there.
    pub front_end: crate::hints::FrontEnd,
    /// The `--home` the user gave, if any: suggested commands repeat it.
    pub home_hint: Option<PathBuf>,
    /// The binary whose hidden `sandbox-exec` subcommand confines shell commands (the front
    /// end passes its own, `std::env::current_exe`); `None` runs commands unconfined.
    pub sandbox_helper: Option<PathBuf>,
}

/// The receiving end of the engine's events.
pub type EventReceiver = mpsc::UnboundedReceiver<EventMsg>;

/// Submits ops to a running engine. Cheap to clone.
#[derive(Debug, Clone)]
pub struct EngineHandle {
    tx: mpsc::UnboundedSender<(SubmissionId, Op)>,
    next: Arc<AtomicU64>,
    /// The session's id, once it is open.
    opened: Arc<OnceLock<String>>,
}

impl EngineHandle {
    /// Queues `op` and returns the id its events will carry. An engine that already stopped
    /// drops the op; its event stream has ended. Ops submitted while the session is still
    /// opening wait for it.
    pub fn submit(&self, op: Op) -> SubmissionId {
        let id = SubmissionId(self.next.fetch_add(1, Ordering::Relaxed));
        let _ = self.tx.send((id, op));
        id
    }

    /// The session's id (empty while it is still opening).
    pub fn session_id(&self) -> &str {
        self.opened.get().map_or("", String::as_str)
    }
}

/// The engine's entry point.
#[derive(Debug)]
pub struct Engine;

/// Settings a front end honours itself, read from the configuration files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrontEndSettings {
    /// `[tui] notify`: how the user is called back while the terminal is not focused.
    pub notify: codewhale_protocol::Notify,
}

impl Engine {
    /// Loads the configuration, opens (or creates) the session and starts the engine task.
    /// Must be called inside a tokio runtime. Fails before anything runs when the
    /// configuration is bad, no provider is configured, or the session cannot be opened.
    ///
    /// The o200k encoder is not built here: a command that will need exact counts starts it
    /// ([`crate::warm_up`]); a one-prompt `exec` usually needs none (docs/architecture.md, *Budget
    /// and tokens*).
    pub fn spawn(params: EngineParams) -> Result<(EngineHandle, EventReceiver), EngineError> {
        Engine::spawn_with(params, Need::Model)
    }

    /// Like [`Engine::spawn`] for a command that changes files and HEAD but needs no model
    /// (`codewhale rewind`): without a configured provider the session opens anyway; only a
    /// branch summary needs the model, and it is skipped with a reason (docs/cli.md).
    pub fn spawn_without_model(
        params: EngineParams,
    ) -> Result<(EngineHandle, EventReceiver), EngineError> {
        Engine::spawn_with(params, Need::NoModel)
    }

    fn spawn_with(
        params: EngineParams,
        need: Need,
    ) -> Result<(EngineHandle, EventReceiver), EngineError> {
        let session = open(&params, need)?;
        let (handle, events, ops, sink) = channels();
        let _ = handle.opened.set(session.id().to_owned());
        let gate = ApprovalGate::new(params.interactive);
        tokio::spawn(run(session, ops, sink, gate));
        Ok((handle, events))
    }

    /// Checks, without opening or creating anything, what would make opening fail at once:
    /// the configuration, the provider, the workspace and the session to resume. A front end
    /// calls it before taking over the terminal, so such an error is a plain one-line message;
    /// [`Engine::spawn_opening`] then loads the session off its task. Returns the settings
    /// that are the front end's own (`[tui]`).
    pub fn preflight(params: &EngineParams) -> Result<FrontEndSettings, EngineError> {
        let current = std::fs::canonicalize(&params.workspace)
            .map_err(|source| EngineError::Workspace { path: params.workspace.clone(), source })?;
        let workspace =
            crate::session::workspace::for_resume(&params.home, &params.resume, &params.workspace);
        let config = config::load(&params.home, &workspace, &params.overrides)?;
        config.resolve_provider(&params.env)?.ok_or(EngineError::NoProvider)?;
        match &params.resume {
            Resume::New => {}
            Resume::Id(id) => drop(crate::session::find_by_id(&params.home, id)?),
            Resume::Last => drop(crate::session::find_last(&params.home, &current)?),
        }
        Ok(FrontEndSettings { notify: config.tui.notify.unwrap_or_default() })
    }

    /// Like [`Engine::spawn`], but returns at once: the session is opened on a worker thread
    /// (a `SessionOpening` event first, for a large file), then runs as usual. A failure to
    /// open is an `Error` event followed by `ShutdownComplete`. Ops submitted meanwhile wait.
    pub fn spawn_opening(params: EngineParams) -> (EngineHandle, EventReceiver) {
        crate::tokens::warm_up();
        let (handle, events, ops, sink) = channels();
        let opened = handle.opened.clone();
        tokio::spawn(async move {
            let start = SubmissionId(0);
            if let Some((path, bytes)) = crate::session::locate::resumed_file(
                &params.home,
                &params.workspace,
                &params.resume,
            ) {
                sink.emit(start, Event::SessionOpening { path, bytes });
            }
            let gate = ApprovalGate::new(params.interactive);
            match tokio::task::spawn_blocking(move || open(&params, Need::Model)).await {
                Ok(Ok(session)) => {
                    let _ = opened.set(session.id().to_owned());
                    run(session, ops, sink, gate).await;
                }
                Ok(Err(err)) => {
                    sink.emit(start, err.event());
                    sink.emit(start, Event::ShutdownComplete);
                }
                Err(join) => {
                    let message = format!("opening the session stopped unexpectedly: {join}");
                    sink.emit(start, Event::Error { kind: ErrorKind::Journal, message });
                    sink.emit(start, Event::ShutdownComplete);
                }
            }
        });
        (handle, events)
    }
}

pub(super) type Ops = mpsc::UnboundedReceiver<(SubmissionId, Op)>;

fn channels() -> (EngineHandle, EventReceiver, Ops, EventSink) {
    let (sink, events) = events::channel();
    let (tx, ops) = mpsc::unbounded_channel();
    let handle = EngineHandle { tx, next: Arc::new(AtomicU64::new(1)), opened: Arc::default() };
    (handle, events, ops, sink)
}
