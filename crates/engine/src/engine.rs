//! The engine as a handle: [`Engine::spawn`] opens the session and starts one tokio task that
//! owns it; the front end holds an [`EngineHandle`] to submit [`Op`]s and a receiver of
//! [`EventMsg`]s.
//!
//! Invariants: the task is the only owner of the session, so nothing else writes the journal;
//! while a turn runs, the task still reads ops — `Interrupt` cancels the turn, `Approve`/`Deny`
//! reach the waiting call, `Shutdown` interrupts and then stops — and any other op gets an
//! error event saying a turn is running. After `Shutdown` the journal is synced, background
//! commands are stopped and `ShutdownComplete` is the last event.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use codewhale_provider::RetryPolicy;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::{self, Env, Overrides};
use crate::error::EngineError;
use crate::events::{self, ApprovalGate, ApprovalReply, EventSink};
use crate::protocol::{Event, EventMsg, NoticeLevel, Op, SubmissionId};
use crate::session::{Resume, Session, SessionParams};
use crate::turn::{self, TurnCtx};

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
    pub front_end: crate::FrontEnd,
}

/// The receiving end of the engine's events.
pub type EventReceiver = mpsc::UnboundedReceiver<EventMsg>;

/// Submits ops to a running engine. Cheap to clone.
#[derive(Debug, Clone)]
pub struct EngineHandle {
    tx: mpsc::UnboundedSender<(SubmissionId, Op)>,
    next: Arc<AtomicU64>,
    session_id: String,
    session_path: PathBuf,
}

impl EngineHandle {
    /// Queues `op` and returns the id its events will carry. An engine that already stopped
    /// drops the op; its event stream has ended.
    pub fn submit(&self, op: Op) -> SubmissionId {
        let id = SubmissionId(self.next.fetch_add(1, Ordering::Relaxed));
        let _ = self.tx.send((id, op));
        id
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The session's journal file.
    pub fn session_path(&self) -> &std::path::Path {
        &self.session_path
    }
}

/// The engine's entry point.
#[derive(Debug)]
pub struct Engine;

impl Engine {
    /// Loads the configuration, opens (or creates) the session and starts the engine task.
    /// Must be called inside a tokio runtime. Fails before anything runs when the
    /// configuration is bad, no provider is configured, or the session cannot be opened.
    pub fn spawn(params: EngineParams) -> Result<(EngineHandle, EventReceiver), EngineError> {
        crate::tokens::warm_up();
        // A resumed session works (and is configured) in the directory it was started in.
        let workspace =
            crate::session::workspace::for_resume(&params.home, &params.resume, &params.workspace);
        let config = config::load(&params.home, &workspace, &params.overrides)?;
        let provider = config.resolve_provider(&params.env)?.ok_or(EngineError::NoProvider)?;
        let session = Session::open(SessionParams {
            home: params.home.clone(),
            workspace: params.workspace.clone(),
            config,
            provider,
            resume: params.resume.clone(),
            retry: params.retry.clone(),
            front_end: params.front_end,
        })?;
        let (sink, events) = events::channel();
        let sink = sink.with_redactor(session.redactor().clone());
        let (tx, ops) = mpsc::unbounded_channel();
        let handle = EngineHandle {
            tx,
            next: Arc::new(AtomicU64::new(1)),
            session_id: session.id().to_owned(),
            session_path: session.path().to_path_buf(),
        };
        let gate = ApprovalGate::new(params.interactive);
        tokio::spawn(run(session, ops, sink, gate));
        Ok((handle, events))
    }
}

async fn run(
    mut session: Session,
    mut ops: mpsc::UnboundedReceiver<(SubmissionId, Op)>,
    sink: EventSink,
    gate: ApprovalGate,
) {
    let start = SubmissionId(0);
    sink.emit(
        start,
        Event::SessionConfigured {
            session_id: session.id().to_owned(),
            model: session.model().to_owned(),
            path: session.path().display().to_string(),
            resumed: session.resumed,
            workspace: session.workspace().display().to_string(),
        },
    );
    for (level, message) in std::mem::take(&mut session.notices) {
        sink.emit(start, Event::Notice { level, message });
    }
    let mut shutdown = None;
    while shutdown.is_none() {
        let Some((id, op)) = ops.recv().await else { break };
        match op {
            Op::UserInput { text } => {
                shutdown = run_turn_listening(&mut session, &mut ops, &sink, &gate, id, text).await;
            }
            Op::Shutdown => shutdown = Some(id),
            Op::Compact { focus } => {
                let cancel = CancellationToken::new();
                crate::compaction::triggers::manual(&mut session, &sink, id, focus, cancel).await;
            }
            Op::AddAnchor { text } => {
                let result = crate::anchors::add_to_session(&mut session, &text);
                anchor_reply(&sink, id, result);
            }
            Op::RemoveAnchor { index } => {
                let result = crate::anchors::remove_from_session(&session, index);
                anchor_reply(&sink, id, result);
            }
            other => handle_idle_op(&mut session, &sink, id, other).await,
        }
    }
    if let Err(err) = session.close().await {
        sink.emit(shutdown.unwrap_or(start), error_event(&err));
    }
    sink.emit(shutdown.unwrap_or(start), Event::ShutdownComplete);
}

/// Runs a turn while still reading ops; returns the id of a `Shutdown` received meanwhile.
async fn run_turn_listening(
    session: &mut Session,
    ops: &mut mpsc::UnboundedReceiver<(SubmissionId, Op)>,
    sink: &EventSink,
    gate: &ApprovalGate,
    id: SubmissionId,
    text: String,
) -> Option<SubmissionId> {
    let cancel = CancellationToken::new();
    let mut ctx = TurnCtx::new(session, sink, gate, id, cancel.clone());
    let turn = turn::run_turn(&mut ctx, text);
    tokio::pin!(turn);
    let mut shutdown = None;
    let mut ops_open = true;
    loop {
        tokio::select! {
            _ = &mut turn => break,
            op = ops.recv(), if ops_open => match op {
                None => {
                    // The front end is gone: nobody will see the rest of this turn.
                    ops_open = false;
                    cancel.cancel();
                }
                Some((_, Op::Interrupt)) => cancel.cancel(),
                Some((oid, Op::Shutdown)) => {
                    shutdown = Some(oid);
                    cancel.cancel();
                }
                Some((oid, Op::Approve { call_id, scope })) => {
                    answer(gate, sink, oid, &call_id, ApprovalReply::Approve(scope))
                }
                Some((oid, Op::Deny { call_id })) => {
                    answer(gate, sink, oid, &call_id, ApprovalReply::Deny)
                }
                Some((oid, _)) => sink.emit(oid, Event::Error {
                    kind: "busy".into(),
                    message: "a turn is running; wait for it to finish or interrupt it first".into(),
                }),
            },
        }
    }
    shutdown
}

fn answer(gate: &ApprovalGate, sink: &EventSink, id: SubmissionId, call: &str, r: ApprovalReply) {
    if !gate.answer(call, r) {
        sink.emit(id, no_such_call(call));
    }
}

fn no_such_call(call: &str) -> Event {
    Event::Error {
        kind: "no_such_call".into(),
        message: format!("no tool call {call} is waiting for approval"),
    }
}

fn anchor_reply(sink: &EventSink, id: SubmissionId, result: Result<String, String>) {
    let event = match result {
        Ok(message) => Event::Notice { level: NoticeLevel::Info, message },
        Err(message) => Event::Error { kind: "anchor".into(), message },
    };
    sink.emit(id, event);
}

fn error_event(err: &EngineError) -> Event {
    Event::Error { kind: err.kind_name().to_owned(), message: err.to_string() }
}

/// Ops that need no turn: branch moves, model switches, and the ones only meaningful in a turn.
async fn handle_idle_op(session: &mut Session, sink: &EventSink, id: SubmissionId, op: Op) {
    let notice = |message: String| Event::Notice { level: NoticeLevel::Info, message };
    let result: Result<Option<String>, EngineError> = match op {
        Op::Interrupt => Ok(Some("nothing to interrupt: no turn is running".into())),
        Op::Approve { call_id, .. } | Op::Deny { call_id } => {
            sink.emit(id, no_such_call(&call_id));
            Ok(None)
        }
        Op::SwitchModel { model } => {
            session.switch_model(&model);
            Ok(Some(format!("model switched to {model}")))
        }
        Op::Fork { at } => move_head(session, |j| j.fork(&at), "forked at").await,
        Op::Checkout { to } => move_head(session, |j| j.checkout(&to), "checked out").await,
        Op::Rewind { to } => move_head(session, |j| j.rewind(&to), "rewound to").await,
        // Handled in `run`: they need the session between turns.
        Op::Compact { .. } | Op::AddAnchor { .. } | Op::RemoveAnchor { .. } => Ok(None),
        Op::UserInput { .. } | Op::Shutdown => Ok(None),
    };
    match result {
        Ok(Some(message)) => sink.emit(id, notice(message)),
        Ok(None) => {}
        Err(err) => sink.emit(id, error_event(&err)),
    }
}

async fn move_head(
    session: &mut Session,
    record: impl FnOnce(
        &codewhale_journal::Journal,
    ) -> Result<codewhale_journal::Entry, codewhale_journal::BranchError>,
    verb: &str,
) -> Result<Option<String>, EngineError> {
    let entry = record(session.journal())?;
    session.append_entry(entry)?;
    // A HEAD move is an explicit user action: it is on disk before the UI is told it happened,
    // so a crash right after cannot silently put the user back on the old branch.
    session.sync().await?;
    let view = session.render();
    let total = session.view_tokens(&view);
    // The last reported prompt was the old branch's; keeping it would hold pressure near the
    // old size and could start a needless auto-compaction on a short branch.
    session.budget_mut().head_moved(total);
    Ok(Some(format!("{verb} {}", view.head)))
}
