//! Running the `task` calls of one reply: each child opened through the session open path,
//! its one turn run by the ordinary turn loop (its own budget and compaction), its events told
//! to the parent's front end as subagent progress, its questions asked in the parent's modal,
//! and its result shaped by [`crate::subagent::outcome`].
//!
//! Invariants: the calls of one reply run concurrently, each holding a
//! [`crate::subagent::slots::Slot`] while it runs; every call gets exactly one output, whatever
//! the child did (a child that cannot even be opened is a `[failed: …]` result); the child's
//! journal is synced and closed before its result is returned, so `recall` and `journal check`
//! read it whole.
//!
//! It lives in `turn/` because a child's turn is the ordinary turn loop run again: here the
//! recursion (a turn's `task` call runs a turn) stays inside the turn, and `subagent/` — what a
//! child is offered, the limit, the result — sits below it.

use std::sync::Arc;

use codewhale_journal::{EntryId, FileChange, HeaderPayload, JournalFile, Payload};
use tokio_util::sync::CancellationToken;

use super::tool_call::ToolCall;
use super::{TurnCtx, UserMessage};
use crate::approval::Grant;
use crate::compaction::compactor::Compactor;
use crate::error::EngineError;
use crate::events::{ApprovalGate, EventSink};
use crate::session::{sessions_dir, Resume, Session, SessionParams};
use crate::spend::Spent;
use crate::subagent::outcome::{self, Ended};
use crate::subagent::{slots, Link, Request};
use crate::tools::ToolOutput;
use codewhale_protocol::{Event, EventMsg, SubmissionId, TurnStatus};

/// What one `task` call produced: the output the parent's model reads and what the child
/// spent (its replies and its summary requests), which join the parent's turn.
#[derive(Debug)]
pub struct TaskDone {
    pub output: ToolOutput,
    pub replies: Spent,
    pub summaries: Spent,
    /// What the user allowed "always for this session" in the child's questions: they were
    /// asked in the parent's modal, so they hold for the parent's session too.
    pub grants: Vec<Grant>,
}

impl TaskDone {
    fn failed(message: String) -> TaskDone {
        TaskDone {
            output: ToolOutput::error(message),
            replies: Spent::default(),
            summaries: Spent::default(),
            grants: Vec::new(),
        }
    }
}

/// What a child reaches of its parent's turn while it runs.
struct ParentLink<'a> {
    sink: &'a EventSink,
    gate: &'a ApprovalGate,
    submission: SubmissionId,
    cancel: CancellationToken,
}

/// Runs `calls` (all `task` calls of one reply, in order) concurrently; one [`TaskDone`] per
/// call, in call order.
pub async fn run_tasks(ctx: &mut TurnCtx<'_>, calls: &[ToolCall]) -> Vec<TaskDone> {
    let limit =
        ctx.session.config().tools.max_subagents.unwrap_or(crate::subagent::DEFAULT_MAX_SUBAGENTS);
    let mut prepared = Vec::with_capacity(calls.len());
    for call in calls {
        let child = match crate::subagent::parse(&call.input) {
            Ok(request) => match open_child(ctx.session, &request, &call.id) {
                Ok((session, left_out)) => Ok((session, request, left_out)),
                Err(err) => Err(format!(
                    "[failed: the subagent could not be opened: {err}]\nIt made no tool calls."
                )),
            },
            Err(message) => Err(message),
        };
        prepared.push((call, child));
    }
    let parent = ParentLink {
        sink: ctx.events,
        gate: ctx.gate,
        submission: ctx.submission,
        cancel: ctx.cancel.clone(),
    };
    let parent = &parent;
    let runs = prepared.into_iter().map(|(call, child)| async move {
        match child {
            Ok((session, request, left_out)) => {
                run_child(session, request, left_out, &call.id, parent, limit).await
            }
            Err(message) => TaskDone::failed(message),
        }
    });
    let done = futures::future::join_all(runs).await;
    for task in &done {
        ctx.session.spend().replies.absorb(&task.replies);
        ctx.session.spend().summaries.absorb(&task.summaries);
        for grant in &task.grants {
            ctx.session.grant(grant.clone());
        }
    }
    done
}

/// The parent's entry holding call `call_id`: the assistant entry at or before HEAD.
fn call_entry(parent: &Session, call_id: &str) -> Option<EntryId> {
    let journal = parent.journal();
    let mut at = Some(journal.head_id().clone());
    while let Some(id) = at {
        let entry = journal.get(id.as_str())?;
        match &entry.payload {
            Payload::Assistant(a) if a.tool_uses().any(|c| c.id == call_id) => {
                return Some(entry.id.clone())
            }
            Payload::Assistant(_) | Payload::User(_) => return None,
            _ => at = entry.parent.clone(),
        }
    }
    None
}

/// Creates the child's journal beside the parent's (its header naming the parent, the entry
/// and the call) and opens it through the ordinary open path, then gives it what it shares
/// with the parent: approval mode and grants, sandbox, MCP servers, background commands,
/// the window the parent uses (a learned one included) when both run the same model.
fn open_child(
    parent: &Session,
    request: &Request,
    call_id: &str,
) -> Result<(Session, Vec<String>), EngineError> {
    let (tools, left_out) = crate::subagent::tool_set(parent, request.tools.as_deref());
    let model =
        parent.config().tools.subagent_model.clone().unwrap_or_else(|| parent.model().to_owned());
    let id = uuid::Uuid::now_v7().hyphenated().to_string();
    let mut header = HeaderPayload::new(id.clone(), parent.workspace().display().to_string());
    header.app_version = env!("CARGO_PKG_VERSION").to_owned();
    header.provider = parent.provider().kind.as_str().to_owned();
    header.model = model.clone();
    header.title = Some(request.description.clone());
    header.parent_session = Some(parent.id().to_owned());
    header.parent_entry = call_entry(parent, call_id).map(|e| e.as_str().to_owned());
    header.parent_call = Some(call_id.to_owned());
    let dir = parent.path().parent().map_or_else(|| sessions_dir(parent.home()), |d| d.to_owned());
    JournalFile::create_session(&dir, header)?.close()?;
    let mut child = open_existing(parent, &id, &model)?;
    child.share_parent(parent, Link::new(parent.path().to_owned(), tools));
    if child.model() == parent.model() {
        // The parent's window, a learned one journaled in the child too, so that the child's
        // own replay (`codewhale context --session CHILD`) finds it.
        let limits = *parent.budget().limits();
        if limits.window_source.is_learned() {
            child.learn_window(limits.window, limits.window_source)?;
        } else {
            child.budget_mut().set_limits(limits);
        }
    }
    child.refresh_system_prompt();
    child.replay_budget();
    Ok((child, left_out))
}

/// Opens the child session `id` of `parent` through the ordinary open path, on `model`.
fn open_existing(parent: &Session, id: &str, model: &str) -> Result<Session, EngineError> {
    let mut provider = parent.provider().clone();
    provider.model = model.to_owned();
    Session::open(SessionParams {
        home: parent.home().to_path_buf(),
        workspace: parent.workspace().to_owned(),
        config: parent.config().clone(),
        provider,
        resume: Resume::Id(id.to_owned()),
        retry: Some(parent.client().config().retry.clone()),
        front_end: parent.hints().front_end(),
        home_hint: None,
        model_explicit: false,
        sandbox_helper: None,
    })
}

/// After a crash (the parent's own unanswered calls were just answered "interrupted"): the
/// children of `parent` left with a call of their own unanswered get their "interrupted"
/// results too, so every journal of the conversation is whole again. A child that cannot be
/// opened is left as it is, with a log line.
pub async fn heal_children(parent: &Session) {
    for child in crate::children::children_on_spine(parent) {
        let sound = codewhale_journal::check_file(&child.path).map(|r| r.problems.is_empty());
        if !matches!(sound, Ok(false)) {
            continue;
        }
        let model = parent.model().to_owned();
        let healed = match open_existing(parent, &child.id, &model) {
            Ok(mut session) => {
                let healed = session.heal_dangling_calls();
                let closed = close_child(session).await;
                healed.and(closed)
            }
            Err(err) => Err(err),
        };
        if let Err(err) = healed {
            tracing::warn!(child = %child.id, "cannot answer a subagent's open calls: {err}");
        }
    }
}

/// What the parent's front end is told of a running child.
#[derive(Debug, Default)]
struct Progress {
    step: String,
    tokens: u64,
    compactions: u32,
    calls: u32,
    /// How many of its calls have ended.
    finished: u32,
    /// The first error the child's turn reported.
    failure: Option<String>,
}

/// What the steps of a child's run tell the parent's front end about: which child, for which
/// call and request, and the approval gate its questions go through.
struct Watch<'w> {
    child_id: &'w str,
    request: &'w Request,
    call_id: &'w str,
    parent: &'w ParentLink<'w>,
    gate: &'w Arc<ApprovalGate>,
}

/// Runs one child's turn to its end and shapes its result.
async fn run_child(
    mut child: Session,
    request: Request,
    left_out: Vec<String>,
    call_id: &str,
    parent: &ParentLink<'_>,
    limit: u32,
) -> TaskDone {
    let child_id = child.id().to_owned();
    let inherited = child.policy().grants().to_vec();
    let slot = tokio::select! {
        slot = slots::acquire(limit) => Some(slot),
        () = parent.cancel.cancelled() => None,
    };
    let started = Event::SubagentStarted {
        call_id: call_id.to_owned(),
        description: request.description.clone(),
        session_id: child_id.clone(),
    };
    parent.sink.emit(parent.submission, started);
    let (sink, mut events) = crate::events::channel();
    let sink = sink.with_redactor(child.redactor().clone());
    let gate = Arc::new(ApprovalGate::new(parent.gate.is_interactive()));
    // A mode the user chooses while the child runs (Shift+Tab) applies to it from its next
    // call on, as it does to the parent.
    parent.gate.lead(&gate);
    let mut progress = Progress { step: "starting".to_owned(), ..Progress::default() };
    let watch = Watch { child_id: &child_id, request: &request, call_id, parent, gate: &gate };
    // A subagent is a second `Session` + `Compactor` pair: its compaction stands on its own.
    let mut compactor = Compactor::open(&child);
    let status = match slot {
        None => TurnStatus::Interrupted,
        Some(_) => {
            let turn =
                turn_told(&mut child, &mut compactor, &sink, &mut events, &watch, &mut progress);
            turn.await
        }
    };
    // A note being written in the child's background is committed when ready, else dropped.
    compactor.close(&mut child, &sink, parent.submission).await;
    let reason = match status {
        TurnStatus::Completed => None,
        TurnStatus::Interrupted if parent.cancel.is_cancelled() => {
            Some("the user interrupted the turn".to_owned())
        }
        TurnStatus::Interrupted => Some("interrupted".to_owned()),
        _ => Some(progress.failure.clone().unwrap_or_else(|| "the subagent's turn failed".into())),
    };
    let ended = Ended { status, reason };
    finish(child, ended, &left_out, &inherited, &watch, &progress).await
}

/// The child's one turn, run by the ordinary turn loop, while its events are told to the
/// parent; every event it sent is told before its status is returned.
async fn turn_told(
    child: &mut Session,
    compactor: &mut Compactor,
    sink: &EventSink,
    events: &mut tokio::sync::mpsc::UnboundedReceiver<EventMsg>,
    watch: &Watch<'_>,
    progress: &mut Progress,
) -> TurnStatus {
    let Watch { child_id, request, call_id, parent, gate } = *watch;
    let message = UserMessage { text: request.prompt.clone(), ..UserMessage::default() };
    let turn = async {
        let mut ctx =
            TurnCtx::new(child, compactor, sink, gate, parent.submission, parent.cancel.clone());
        ctx.passes_per_request = true;
        super::run_turn(&mut ctx, message).await
    };
    tokio::pin!(turn);
    let outcome = loop {
        tokio::select! {
            biased;
            Some(msg) = events.recv() => {
                told(msg, child_id, progress, request, call_id, parent, gate);
            }
            outcome = &mut turn => break outcome,
        }
    };
    while let Ok(msg) = events.try_recv() {
        told(msg, child_id, progress, request, call_id, parent, gate);
    }
    outcome.status
}

/// The child's result as the parent's model reads it, with the files it changed, what it spent
/// and what the user granted in its questions; its journal closed, and the parent's front end
/// told that it finished.
async fn finish(
    child: Session,
    ended: Ended,
    left_out: &[String],
    inherited: &[Grant],
    watch: &Watch<'_>,
    progress: &Progress,
) -> TaskDone {
    let status = ended.status;
    let path = child.path().to_owned();
    let text = outcome::result_text(child.journal(), &path, &ended, left_out);
    let files = files_changed(child.journal());
    let replies = child.spend().replies.read();
    let summaries = child.spend().summaries.read();
    let grants: Vec<Grant> =
        child.policy().grants().iter().filter(|g| !inherited.contains(g)).cloned().collect();
    let closed = close_child(child).await;
    let finished = Event::SubagentFinished {
        call_id: watch.call_id.to_owned(),
        session_id: watch.child_id.to_owned(),
        status,
        calls: progress.calls,
        compactions: progress.compactions,
    };
    watch.parent.sink.emit(watch.parent.submission, finished);
    let mut output = ToolOutput::capped(&text);
    output.is_error = status == TurnStatus::Failed;
    output.files = files;
    if let Err(err) = closed {
        output.content.push_str(&format!("\n[the subagent's journal could not be closed: {err}]"));
    }
    TaskDone { output, replies, summaries, grants }
}

/// Tells the parent's front end what a child's event means: progress, a question to ask in
/// the parent's modal (its answer handed back to the child), or the error that stopped it.
fn told(
    msg: EventMsg,
    child_id: &str,
    progress: &mut Progress,
    request: &Request,
    call_id: &str,
    parent: &ParentLink<'_>,
    gate: &Arc<ApprovalGate>,
) {
    let step = match msg.event {
        Event::ApprovalNeeded { call_id: asked, name, input, reason, offers, diff } => {
            // Two children's models may well use the same call id (and so may the parent's):
            // in the parent's gate a child's question is keyed by the child's session too.
            let key = approval_key(child_id, &asked);
            let answer = parent.gate.wait_for(&key);
            let child_gate = gate.clone();
            tokio::spawn(async move {
                if let Ok(reply) = answer.await {
                    child_gate.answer(&asked, reply);
                }
            });
            let reason = format!("subagent \"{}\": {reason}", request.description);
            let event = Event::ApprovalNeeded { call_id: key, name, input, reason, offers, diff };
            parent.sink.emit(parent.submission, event);
            Some("waiting for approval".to_owned())
        }
        Event::ToolCallRequested { name, input, .. } => {
            progress.calls += 1;
            let target = outcome::target(&input);
            Some(if target.is_empty() { name } else { format!("{name} {target}") })
        }
        Event::TextDelta { .. } | Event::ThinkingDelta { .. } if progress.step != "writing" => {
            Some("writing".to_owned())
        }
        Event::CompactionStarted { .. } => Some("compacting".to_owned()),
        Event::CompactionFinished { .. } => {
            progress.compactions += 1;
            Some("compacted".to_owned())
        }
        Event::Usage { pressure, .. } if pressure.tokens != progress.tokens => {
            progress.tokens = pressure.tokens;
            Some(progress.step.clone())
        }
        Event::ToolCallFinished { .. } => {
            progress.finished += 1;
            // A test kills the process here, in the middle of a child's loop.
            if progress.finished == 2 {
                crate::pause_point::reached("subagent:loop");
            }
            None
        }
        Event::Error { message, .. } => {
            progress.failure.get_or_insert(message);
            None
        }
        _ => None,
    };
    if let Some(step) = step {
        progress.step = step;
        let event = Event::SubagentProgress {
            call_id: call_id.to_owned(),
            step: progress.step.clone(),
            tokens: progress.tokens,
            compactions: progress.compactions,
        };
        parent.sink.emit(parent.submission, event);
    }
}

/// The id under which a child's call `call_id` waits in the parent's approval gate (and which
/// the parent's front end answers): the child's session id and the call id, so that children
/// whose models use the same call ids never take each other's answers.
pub fn approval_key(child_id: &str, call_id: &str) -> String {
    format!("{child_id}/{call_id}")
}

/// The files the child's calls changed, one change per path (the first state before, the last
/// after): checkpointed in the parent's store, journaled on the `task` call's result so that
/// `/undo` and `/rewind --code` of the parent's turn take them back.
fn files_changed(journal: &codewhale_journal::Journal) -> Vec<FileChange> {
    let mut changes: Vec<FileChange> = Vec::new();
    for entry in journal.spine(journal.head_id().as_str()) {
        let Payload::ToolResult(r) = &entry.payload else { continue };
        for change in r.files.iter().flatten() {
            match changes.iter_mut().find(|c| c.path == change.path) {
                Some(known) => known.after = change.after.clone(),
                None => changes.push(change.clone()),
            }
        }
    }
    changes
}

/// Syncs and closes the child's journal. What it shares with the parent (MCP servers,
/// background commands, process groups) stays for the parent.
async fn close_child(child: Session) -> Result<(), EngineError> {
    child.close_child().await
}

/// Why a child may not run tool `name` (one its `task` call did not allow, `task` above all);
/// `None` in a session of its own, and for what the child is offered.
pub fn not_offered(session: &Session, name: &str) -> Option<String> {
    let link = session.subagent()?;
    if link.offers(name) {
        return None;
    }
    Some(if name == crate::subagent::TOOL {
        "not run: a subagent cannot start subagents of its own; do the work yourself".to_owned()
    } else {
        format!(
            "not run: {name} is not among the tools this subagent was given; use the ones offered"
        )
    })
}
