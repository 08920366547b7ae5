//! The engine task: it owns the session and the compactor beside it, reads ops and writes
//! events until `Shutdown` (or until the front end is gone), then closes the session.
//!
//! Invariants: nothing else holds the session, so nothing else writes the journal; work that
//! takes long (a turn, a compaction, a side question, `!CMD`) runs while ops are still read
//! ([`busy`]); an op that starts work restarts the idle clock when the work ends.

use tokio_util::sync::CancellationToken;

use super::idle_ops::handle_idle_op;
use super::replies::{approval_changed, mcp_notice};
use super::Ops;
use crate::compaction::compactor::Compactor;
use crate::events::{ApprovalGate, EventSink};
use crate::history_pages::FIRST_PAGE;
use crate::session::Session;
use crate::turn;
use codewhale_protocol::{ErrorKind, Event, NoticeLevel, Op, SubmissionId};

mod busy;
mod turn_ops;

use busy::{answer_deferred, listening, Family};
use turn_ops::{custom_command, user_turn, Link};

pub(super) async fn run(mut session: Session, mut ops: Ops, sink: EventSink, gate: ApprovalGate) {
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
