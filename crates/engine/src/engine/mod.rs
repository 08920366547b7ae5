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
//! `ShutdownComplete` is the last event. The ops answered without a turn are in [`idle_ops`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use codewhale_provider::RetryPolicy;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::compaction::compactor::{Change, Compactor};
use crate::config::{self, Env, Overrides};
use crate::error::EngineError;
use crate::events::{self, ApprovalGate, ApprovalReply, EventSink};
use crate::history_pages::FIRST_PAGE;
use crate::session::{Resume, Session};
use crate::turn::{self, TurnCtx};
use codewhale_protocol::{ErrorKind, Event, EventMsg, NoticeLevel, Op, SubmissionId};

mod idle_ops;
mod open;

use idle_ops::handle_idle_op;
use open::{open, Need};

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

type Ops = mpsc::UnboundedReceiver<(SubmissionId, Op)>;

fn channels() -> (EngineHandle, EventReceiver, Ops, EventSink) {
    let (sink, events) = events::channel();
    let (tx, ops) = mpsc::unbounded_channel();
    let handle = EngineHandle { tx, next: Arc::new(AtomicU64::new(1)), opened: Arc::default() };
    (handle, events, ops, sink)
}

async fn run(mut session: Session, mut ops: Ops, sink: EventSink, gate: ApprovalGate) {
    // Compaction's standing, beside the session: the task owns both.
    let mut compactor = Compactor::open(&session);
    let sink = sink.with_redactor(session.redactor().clone());
    // What the end of a background command finds is told as it happens.
    session.guard().set_sink(sink.clone());
    // A subagent's session opened on its own is shown, never written (docs/subagents.md).
    let read_only = crate::subagent::read_only_parent(&session).map(str::to_owned);
    session.hook_state_mut().sink = Some(sink.clone());
    // A local server says what window it runs the model with: from the cache at once, else
    // asked in the background (no request waits for it but a large first one, briefly).
    if read_only.is_none() {
        session.start_probe();
    }
    let start = SubmissionId(0);
    // MCP servers connect in the background; the session goes on at once. A one-turn `exec`
    // starts a server whose tool list is cached only when the model calls one of its tools.
    let reporter = sink.clone();
    let reporter: codewhale_mcp::Reporter = std::sync::Arc::new(move |event| {
        reporter.emit(start, mcp_notice(event));
    });
    if session.one_turn() {
        session.mcp().start_lazily(reporter);
    } else {
        session.mcp().start(reporter);
    }
    sink.emit(
        start,
        Event::SessionConfigured {
            session_id: session.id().to_owned(),
            model: session.model().to_owned(),
            path: session.path().display().to_string(),
            resumed: session.resumed(),
            workspace: session.workspace().display().to_string(),
            approval: session.policy().mode(),
            instructions: session.instruction_names(),
            commands: session.commands().infos(),
        },
    );
    // A message the last run journaled but never answered is set aside before anything is
    // shown, so the conversation shown is the one the next prompt continues.
    if let Some(parent) = &read_only {
        session.push_notice(NoticeLevel::Info, crate::subagent::read_only_notice(parent));
    }
    let unanswered = if session.resumed() && read_only.is_none() {
        session.set_aside_unanswered().unwrap_or_else(|err| {
            sink.emit(start, err.event());
            None
        })
    } else {
        None
    };
    // The conversation first, so that what opening found (a repaired line, say) is shown
    // under it rather than replaced by it.
    if session.resumed() {
        sink.emit(
            start,
            Event::History { page: crate::answers::history_page(&session, None, FIRST_PAGE, true) },
        );
    }
    for (level, message) in session.take_notices() {
        sink.emit(start, Event::Notice { level, message });
    }
    if let Some(text) = unanswered {
        sink.emit(start, Event::MessageTakenBack { text });
    }
    // The user's `SessionStart` hooks, once per process; what they print joins the next prompt.
    crate::hooks::session_start(&mut session, start).await;
    if session.resumed() {
        sink.emit(start, session.plan_event(false));
    }
    sink.emit(start, session.usage_event(None, None));
    // Figures shown before the encoder was ready are provisional: shown again, exact, once it
    // is (opening never waits for it). Only an encoder already being built is waited for: a
    // one-turn command that needs no exact count never builds one (nor waits for it on exit).
    let mut encoder = crate::tokens::is_building()
        .then(|| tokio::task::spawn_blocking(crate::tokens::wait_ready));
    let mut shutdown = None;
    // Idle compaction (docs/compaction.md, *Idle compaction*): the clock restarts on every op
    // and after every turn; it fires once per idle spell.
    let idle_after =
        crate::compaction::background::idle_after(&session).filter(|_| read_only.is_none());
    let mut idle_since = tokio::time::Instant::now();
    let mut idle_spent = false;
    while shutdown.is_none() {
        let idle = async {
            match idle_after.filter(|_| !idle_spent) {
                Some(after) => tokio::time::sleep_until(idle_since + after).await,
                None => std::future::pending::<()>().await,
            }
        };
        let wake = compactor.wake();
        let summary_wake = session.branch_summary().wake();
        let encoder_ready = async {
            match encoder.as_mut() {
                Some(ready) => {
                    let _ = ready.await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        let next = tokio::select! {
            next = ops.recv() => next,
            () = wake.notified() => {
                // A background note ended while idle: ready it now, not in the next turn.
                compactor.on_note_ended(&mut session, &sink).await;
                continue;
            }
            () = summary_wake.notified() => {
                // A branch summary ended while idle: append it now.
                crate::branch_summary::settle_idle(&mut session, &sink).await;
                continue;
            }
            () = encoder_ready => {
                encoder = None;
                sink.emit(start, session.usage_event(None, None));
                continue;
            }
            () = session.probe_arrived() => {
                // The server stated its window while idle: in use (and journaled) now.
                match session.settle_probe() {
                    Ok(true) => sink.emit(start, session.usage_event(None, None)),
                    Ok(false) => {}
                    Err(err) => sink.emit(start, err.event()),
                }
                continue;
            }
            () = idle => {
                idle_spent = true;
                compactor.on_idle(&mut session, &sink).await;
                continue;
            }
        };
        let Some((id, op)) = next else { break };
        if let Some(why) = read_only.as_deref().and_then(|p| crate::subagent::refusal(p, &op)) {
            sink.emit(id, Event::Error { kind: ErrorKind::Command, message: why });
            if matches!(op, Op::UserInput { .. } | Op::RunCommand { .. } | Op::CarryOutPlan { .. })
            {
                let status = codewhale_protocol::TurnStatus::Failed;
                let finished =
                    Event::TurnFinished { status, text: String::new(), stats: Default::default() };
                sink.emit(id, finished);
            }
            continue;
        }
        if let Op::Focus { focused } = op {
            // The terminal's focus is no activity: the idle clock runs on.
            gate.set_focused(focused);
            continue;
        }
        compactor.on_activity();
        idle_spent = false;
        // A mode chosen while the last turn ran, which made no call after it.
        if let Some(mode) = gate.take_mode() {
            session.set_approval_mode(mode);
        }
        match op {
            Op::UserInput { text, attachments, images } => {
                let message = turn::UserMessage { text, attachments, images, synthetic: false };
                let link = Link { ops: &mut ops, sink: &sink, gate: &gate };
                shutdown = user_turn(&mut session, &mut compactor, link, id, message).await;
            }
            Op::CarryOutPlan { mode } => {
                // The chosen mode first: the turn's note to the model follows from it.
                session.set_approval_mode(mode);
                sink.emit(id, approval_changed(mode));
                let text = crate::plan_mode::CARRY_OUT.to_owned();
                let message = turn::UserMessage { text, synthetic: true, ..Default::default() };
                let link = Link { ops: &mut ops, sink: &sink, gate: &gate };
                shutdown = user_turn(&mut session, &mut compactor, link, id, message).await;
            }
            Op::SideQuestion { question } => {
                let cancel = CancellationToken::new();
                let mcp = session.mcp().clone();
                let family = Family::of(&session);
                let run =
                    crate::side_question::run(&mut session, &sink, id, question, cancel.clone());
                let (stop, deferred) =
                    listening(run, &mut ops, &sink, &gate, &cancel, (&mcp, &family)).await;
                shutdown = stop;
                answer_deferred(&mut session, &mut compactor, &sink, deferred).await;
            }
            Op::RunCommand { name, args } => {
                let link = Link { ops: &mut ops, sink: &sink, gate: &gate };
                shutdown =
                    custom_command(&mut session, &mut compactor, link, id, &name, &args).await;
            }
            Op::Compact { focus } => {
                let cancel = CancellationToken::new();
                let mcp = session.mcp().clone();
                let family = Family::of(&session);
                let pass = compactor.manual(&mut session, &sink, id, focus, cancel.clone());
                let (stop, deferred) =
                    listening(pass, &mut ops, &sink, &gate, &cancel, (&mcp, &family)).await;
                shutdown = stop;
                if gate.user_away() {
                    crate::hooks::notification(&mut session, id, "the compaction finished").await;
                }
                sink.emit(id, session.usage_event(None, None));
                answer_deferred(&mut session, &mut compactor, &sink, deferred).await;
            }
            Op::UserShell { command } => {
                let cancel = CancellationToken::new();
                let mcp = session.mcp().clone();
                let family = Family::of(&session);
                let run = crate::user_shell::run(&mut session, &sink, id, command, cancel.clone());
                let (stop, deferred) =
                    listening(run, &mut ops, &sink, &gate, &cancel, (&mcp, &family)).await;
                shutdown = stop;
                answer_deferred(&mut session, &mut compactor, &sink, deferred).await;
            }
            Op::AwaitBranchSummary => {
                // Ops wait meanwhile, a `shutdown` sent right after among them (that is how
                // `codewhale rewind` uses it); the wait is bounded by the summary's timeout.
                let never = CancellationToken::new();
                let state = crate::branch_summary::wait(&mut session, &sink, id, &never).await;
                if state == codewhale_protocol::BranchSummaryState::None {
                    let none = Event::BranchSummary {
                        state,
                        summary: None,
                        reason: Some("no summary was being written".into()),
                    };
                    sink.emit(id, none);
                }
            }
            Op::Shutdown => shutdown = Some(id),
            other => handle_idle_op(&mut session, &mut compactor, &sink, id, other).await,
        }
        // Idle from the end of what the op started (a turn may have run for minutes).
        idle_since = tokio::time::Instant::now();
    }
    // The background work of the session stops before it closes: a note already written is
    // committed, never thrown away; a note or a branch summary still being written is dropped
    // (it would be for a session nobody has open).
    let closing = shutdown.unwrap_or(start);
    // A window the server stated before the end is journaled (an `exec` that got the answer
    // leaves it for the next command).
    match session.settle_probe() {
        Ok(true) => sink.emit(closing, session.usage_event(None, None)),
        Ok(false) => {}
        Err(err) => sink.emit(closing, err.event()),
    }
    compactor.close(&mut session, &sink, closing).await;
    crate::branch_summary::close(&mut session);
    if let Err(err) = session.close().await {
        sink.emit(shutdown.unwrap_or(start), err.event());
    }
    sink.emit(shutdown.unwrap_or(start), Event::ShutdownComplete);
}

/// What a turn run by the engine task reads ops from and writes events to.
struct Link<'a> {
    ops: &'a mut Ops,
    sink: &'a EventSink,
    gate: &'a ApprovalGate,
}

/// Runs one turn of `message` while still reading ops; returns the id of a `Shutdown`
/// received meanwhile.
async fn user_turn(
    session: &mut Session,
    compactor: &mut Compactor,
    link: Link<'_>,
    id: SubmissionId,
    message: turn::UserMessage,
) -> Option<SubmissionId> {
    let Link { ops, sink, gate } = link;
    let cancel = CancellationToken::new();
    let mcp = session.mcp().clone();
    let family = Family::of(session);
    let turn = async {
        // The summary of the branch just left goes before the message, so the model's first
        // reply on the new branch reads it (bounded by its timeout).
        crate::branch_summary::wait(session, sink, id, &cancel).await;
        let mut ctx = TurnCtx::new(session, compactor, sink, gate, id, cancel.clone());
        turn::run_turn(&mut ctx, message).await
    };
    let (stop, deferred) = listening(turn, ops, sink, gate, &cancel, (&mcp, &family)).await;
    if cancel.is_cancelled() {
        compactor.on_change(sink, id, Change::Interrupted);
    }
    answer_deferred(session, compactor, sink, deferred).await;
    stop
}

/// `/NAME args` of a custom command (docs/extending.md): its body filled in is the turn's
/// message, on the command's `model` for that one turn (the switch there and back is journaled
/// like `/model`). One that cannot run fails the turn with the reason and sends nothing.
async fn custom_command(
    session: &mut Session,
    compactor: &mut Compactor,
    link: Link<'_>,
    id: SubmissionId,
    name: &str,
    args: &str,
) -> Option<SubmissionId> {
    let sink = link.sink;
    let failed = |message: String| {
        sink.emit(id, Event::Error { kind: ErrorKind::Command, message });
        sink.emit(
            id,
            Event::TurnFinished {
                status: codewhale_protocol::TurnStatus::Failed,
                text: String::new(),
                stats: Default::default(),
            },
        );
    };
    let expanded = match session.commands().expand(name, args) {
        Ok(expanded) => expanded,
        Err(why) => {
            failed(why);
            return None;
        }
    };
    let before = session.model().to_owned();
    let switch = expanded.model.filter(|m| *m != before);
    if let Some(model) = &switch {
        if let Err(err) = session.switch_model(model) {
            failed(format!("/{name} names the model {model}, which cannot be used: {err}"));
            return None;
        }
        sink.emit(id, session.usage_event(None, None));
    }
    let message = turn::UserMessage { text: expanded.text, ..Default::default() };
    let stop = user_turn(session, compactor, link, id, message).await;
    if switch.is_some() {
        if let Err(err) = session.switch_model(&before) {
            sink.emit(id, err.event());
        }
        sink.emit(id, session.usage_event(None, None));
    }
    stop
}

/// Read-only questions asked while a turn or a compaction ran: answered as soon as it ends.
type Deferred = Vec<(SubmissionId, Op)>;

/// Runs `work` (a turn, a compaction) while still reading ops; returns the id of a `Shutdown`
/// received meanwhile and the questions to answer once the work is done.
async fn listening<F: std::future::Future>(
    work: F,
    ops: &mut Ops,
    sink: &EventSink,
    gate: &ApprovalGate,
    cancel: &CancellationToken,
    (mcp, family): (&codewhale_mcp::Servers, &Family),
) -> (Option<SubmissionId>, Deferred) {
    tokio::pin!(work);
    let mut shutdown = None;
    let mut deferred = Vec::new();
    let mut ops_open = true;
    loop {
        tokio::select! {
            _ = &mut work => break,
            op = ops.recv(), if ops_open => match op {
                None => {
                    // The front end is gone: nobody will see the rest of this work.
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
                Some((oid, Op::Deny { call_id, reason })) => {
                    answer(gate, sink, oid, &call_id, ApprovalReply::Deny(reason))
                }
                Some((oid, Op::ListMcpServers)) => sink.emit(oid, mcp_servers_event(mcp)),
                // A running subagent's conversation is read from its file, at once.
                Some((oid, Op::GetSubagentTranscript { session_id })) => {
                    let event = crate::children::transcript_event(&family.dir, &family.id, &session_id);
                    sink.emit(oid, event);
                }
                // Typing during a turn changes nothing the turn does.
                Some((_, Op::Typing)) => {}
                Some((_, Op::Focus { focused })) => gate.set_focused(focused),
                Some((oid, Op::SetApproval { mode })) => {
                    // Applies from the turn's next call on.
                    gate.switch_mode(mode);
                    sink.emit(oid, approval_changed(mode));
                }
                Some((
                    oid,
                    op @ (Op::GetContext
                    | Op::ListAnchors
                    | Op::GetHistory { .. }
                    | Op::GetTranscript
                    | Op::ListGrants
                    | Op::RevokeGrant { .. }
                    | Op::ListUserMessages
                    | Op::ListBranches
                    | Op::GetStatus
                    | Op::GetDiff
                    | Op::ListModels),
                )) => deferred.push((oid, op)),
                Some((oid, _)) => sink.emit(oid, Event::Error {
                    kind: ErrorKind::Busy,
                    message: "a turn or a compaction is running; wait for it to finish or \
                              interrupt it first"
                        .into(),
                }),
            },
        }
    }
    (shutdown, deferred)
}

/// Where the session's `task` children are found while it is busy: its journal's folder and
/// its id.
struct Family {
    dir: PathBuf,
    id: String,
}

impl Family {
    fn of(session: &Session) -> Family {
        let dir = session.path().parent().map(std::path::Path::to_path_buf).unwrap_or_default();
        Family { dir, id: session.id().to_owned() }
    }
}

async fn answer_deferred(
    session: &mut Session,
    compactor: &mut Compactor,
    sink: &EventSink,
    deferred: Deferred,
) {
    for (id, op) in deferred {
        handle_idle_op(session, compactor, sink, id, op).await;
    }
}

fn answer(gate: &ApprovalGate, sink: &EventSink, id: SubmissionId, call: &str, r: ApprovalReply) {
    if !gate.answer(call, r) {
        sink.emit(id, no_such_call(call));
    }
}

fn no_such_call(call: &str) -> Event {
    Event::Error {
        kind: ErrorKind::NoSuchCall,
        message: format!("no tool call {call} is waiting for approval"),
    }
}

fn mcp_servers_event(mcp: &codewhale_mcp::Servers) -> Event {
    let servers = mcp.reports().into_iter().map(crate::session::mcp_tools::server_info).collect();
    Event::McpServers { servers }
}

/// What the user hears about an MCP server (once per failure).
fn mcp_notice(event: codewhale_mcp::ServerEvent) -> Event {
    use codewhale_mcp::ServerEvent;
    let (level, message) = match event {
        ServerEvent::Failed { server, reason } => (
            NoticeLevel::Warning,
            format!(
                "MCP server `{server}` is not available: {reason}; the session goes on without \
                 its tools (/mcp shows the servers)"
            ),
        ),
        ServerEvent::Stopped { server, reason } => (
            NoticeLevel::Warning,
            format!("MCP server `{server}` stopped: {reason}; its tools are unavailable now"),
        ),
        ServerEvent::ToolsChanged { server, tools } => (
            NoticeLevel::Info,
            format!("MCP server `{server}` changed its tools ({tools} now); the next request offers them"),
        ),
    };
    Event::Notice { level, message }
}

/// What a change of approval mode is told as.
pub(super) fn approval_changed(mode: crate::approval::ApprovalMode) -> Event {
    use crate::approval::ApprovalMode;
    let what = match mode {
        ApprovalMode::Plan => {
            "reads, searches and read-only commands run; nothing in the workspace changes"
        }
        ApprovalMode::Ask => "reads run on their own; edits and commands ask first",
        ApprovalMode::AutoEdit => {
            "edits inside the workspace run without asking; commands ask first"
        }
        ApprovalMode::Full => "edits and commands run without asking, inside the sandbox",
    };
    Event::ApprovalChanged { mode, message: format!("approval mode {mode}: {what}") }
}
