//! The ops that run a turn: a message the user typed, a custom command's filled-in body (on
//! its own model for that one turn), and "carry out the plan".
//!
//! Invariant: a turn runs while ops are still read; an interrupted turn tells the compactor,
//! and the questions asked meanwhile are answered once it ends.

use tokio_util::sync::CancellationToken;

use super::super::replies::approval_changed;
use super::busy::{answer_deferred, listening, Family};
use super::{Ops, Task};
use crate::approval::ApprovalMode;
use crate::compaction::compactor::{Change, Compactor};
use crate::events::{ApprovalGate, EventSink};
use crate::session::Session;
use crate::turn::{self, TurnCtx};
use codewhale_protocol::{ErrorKind, Event, SubmissionId};

impl Task {
    /// A message the user typed, with what it attaches: one turn.
    pub(super) async fn user_input(
        &mut self,
        id: SubmissionId,
        text: String,
        attachments: Vec<String>,
        images: Vec<String>,
    ) {
        let message = turn::UserMessage { text, attachments, images, synthetic: false };
        let link = Link { ops: &mut self.ops, sink: &self.sink, gate: &self.gate };
        self.shutdown = user_turn(&mut self.session, &mut self.compactor, link, id, message).await;
    }

    /// "Carry out the plan" in the mode the user chose: one turn of the engine's own words.
    pub(super) async fn carry_out_plan(&mut self, id: SubmissionId, mode: ApprovalMode) {
        let Task { session, compactor, ops, sink, gate, shutdown, .. } = self;
        // The chosen mode first: the turn's note to the model follows from it.
        session.set_approval_mode(mode);
        sink.emit(id, approval_changed(mode));
        let text = crate::plan_mode::CARRY_OUT.to_owned();
        let message = turn::UserMessage { text, synthetic: true, ..Default::default() };
        let link = Link { ops, sink, gate };
        *shutdown = user_turn(session, compactor, link, id, message).await;
    }

    /// `/NAME args` of a custom command: see [`custom_command`].
    pub(super) async fn run_command(&mut self, id: SubmissionId, name: &str, args: &str) {
        let link = Link { ops: &mut self.ops, sink: &self.sink, gate: &self.gate };
        self.shutdown =
            custom_command(&mut self.session, &mut self.compactor, link, id, name, args).await;
    }
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
