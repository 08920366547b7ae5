//! What the engine task does once, before it reads an op: the services that run beside the
//! session started (the sink of background commands and hooks, the window probe, the MCP
//! servers) and the session shown (`SessionConfigured`, the conversation when resumed, what
//! opening found, a message set aside, the `SessionStart` hooks, the plan and the figures).
//!
//! Invariants: a message the last run journaled but never answered is set aside before anything
//! is shown; the conversation is sent before what opening found, so that is shown under it; a
//! subagent's session opened on its own starts no probe and sets nothing aside.

use super::super::replies::mcp_notice;
use super::super::Ops;
use super::wakes::Wakes;
use super::{Task, START};
use crate::compaction::compactor::Compactor;
use crate::events::{ApprovalGate, EventSink};
use crate::history_pages::FIRST_PAGE;
use crate::session::Session;
use codewhale_protocol::{Event, NoticeLevel};

impl Task {
    /// The task of `session`, started and shown, and its wake-ups.
    pub(super) async fn start(
        mut session: Session,
        ops: Ops,
        sink: EventSink,
        gate: ApprovalGate,
    ) -> (Task, Wakes) {
        // Compaction's standing, beside the session: the task owns both.
        let compactor = Compactor::open(&session);
        let sink = sink.with_redactor(session.redactor().clone());
        let read_only = start_services(&mut session, &sink);
        let mut task = Task { session, compactor, ops, sink, gate, read_only, shutdown: None };
        task.show_session().await;
        let wakes = Wakes::new(&task.session, &task.read_only);
        (task, wakes)
    }

    /// Tells the front end the session it is talking to, then what opening found, the
    /// `SessionStart` hooks' run, the plan (when resumed) and the figures.
    async fn show_session(&mut self) {
        let Task { session, sink, read_only, .. } = self;
        let start = START;
        sink.emit(start, configured(session));
        // A message the last run journaled but never answered is set aside before anything is
        // shown, so the conversation shown is the one the next prompt continues.
        if let Some(parent) = read_only.as_deref() {
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
                Event::History {
                    page: crate::answers::history_page(session, None, FIRST_PAGE, true),
                },
            );
        }
        for (level, message) in session.take_notices() {
            sink.emit(start, Event::Notice { level, message });
        }
        if let Some(text) = unanswered {
            sink.emit(start, Event::MessageTakenBack { text });
        }
        // The user's `SessionStart` hooks, once per process; what they print joins the next prompt.
        crate::hooks::session_start(session, start).await;
        if session.resumed() {
            sink.emit(start, session.plan_event(false));
        }
        sink.emit(start, session.usage_event(None, None));
    }
}

/// Starts what runs beside the session: the sink that background commands and hooks tell
/// their ends to, the window probe and the MCP servers. Returns the parent of a subagent's
/// session opened on its own (`None` for any other session).
fn start_services(session: &mut Session, sink: &EventSink) -> Option<String> {
    // What the end of a background command finds is told as it happens.
    session.guard().set_sink(sink.clone());
    // A subagent's session opened on its own is shown, never written (docs/subagents.md).
    let read_only = crate::subagent::read_only_parent(session).map(str::to_owned);
    session.hook_state_mut().sink = Some(sink.clone());
    // A local server says what window it runs the model with: from the cache at once, else
    // asked in the background (no request waits for it but a large first one, briefly).
    if read_only.is_none() {
        session.start_probe();
    }
    let start = START;
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
    read_only
}

/// `SessionConfigured`: the session the front end is talking to.
fn configured(session: &Session) -> Event {
    Event::SessionConfigured {
        session_id: session.id().to_owned(),
        model: session.model().to_owned(),
        path: session.path().display().to_string(),
        resumed: session.resumed(),
        workspace: session.workspace().display().to_string(),
        approval: session.policy().mode(),
        instructions: session.instruction_names(),
        commands: session.commands().infos(),
    }
}
