//! What wakes the idle engine task besides an op: a background note or a branch summary that
//! ended, the o200k encoder ready, the server's window stated, and the clock of idle compaction
//! (docs/compaction.md, *Idle compaction*).
//!
//! Invariants: the idle clock restarts on every op (the terminal's focus aside) and after the
//! work an op started; it fires once per idle spell. Figures shown before the encoder was ready
//! are provisional: shown again, exact, once it is.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{Task, START};
use crate::session::Session;
use codewhale_protocol::{Op, SubmissionId};

/// The idle clock and the encoder being built: what [`Task::next_op`] waits on beside the ops.
pub(super) struct Wakes {
    /// How long the task waits idle before idle compaction; `None` when it never does.
    idle_after: Option<Duration>,
    /// When the task last went idle.
    idle_since: Instant,
    /// Whether idle compaction already ran in this idle spell.
    idle_spent: bool,
    /// The encoder being built, until it is ready.
    encoder: Option<JoinHandle<()>>,
}

impl Wakes {
    /// The wake-ups of the task of `session`, its idle clock starting now.
    pub(super) fn new(session: &Session, read_only: &Option<String>) -> Wakes {
        // Figures shown before the encoder was ready are provisional: shown again, exact, once it
        // is (opening never waits for it). Only an encoder already being built is waited for: a
        // one-turn command that needs no exact count never builds one (nor waits for it on exit).
        let encoder = crate::tokens::is_building()
            .then(|| tokio::task::spawn_blocking(crate::tokens::wait_ready));
        // Idle compaction (docs/compaction.md, *Idle compaction*): the clock restarts on every op
        // and after every turn; it fires once per idle spell.
        let idle_after =
            crate::compaction::background::idle_after(session).filter(|_| read_only.is_none());
        let idle_since = Instant::now();
        Wakes { idle_after, idle_since, idle_spent: false, encoder }
    }

    /// An op arrived: a new idle spell may compact again.
    pub(super) fn on_activity(&mut self) {
        self.idle_spent = false;
    }

    /// The task is idle from now on.
    pub(super) fn restart_idle_clock(&mut self) {
        self.idle_since = Instant::now();
    }
}

impl Task {
    /// The next op; what wakes the task before it arrives is handled on the way. `None` once
    /// the front end is gone.
    pub(super) async fn next_op(&mut self, wakes: &mut Wakes) -> Option<(SubmissionId, Op)> {
        let Wakes { idle_after, idle_since, idle_spent, encoder } = wakes;
        let Task { session, compactor, ops, sink, .. } = self;
        let start = START;
        loop {
            let idle = async {
                match idle_after.filter(|_| !*idle_spent) {
                    Some(after) => tokio::time::sleep_until(*idle_since + after).await,
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
            tokio::select! {
                next = ops.recv() => return next,
                () = wake.notified() => {
                    // A background note ended while idle: ready it now, not in the next turn.
                    compactor.on_note_ended(session, sink).await;
                }
                () = summary_wake.notified() => {
                    // A branch summary ended while idle: append it now.
                    crate::branch_summary::settle_idle(session, sink).await;
                }
                () = encoder_ready => {
                    *encoder = None;
                    sink.emit(start, session.usage_event(None, None));
                }
                () = session.probe_arrived() => {
                    // The server stated its window while idle: in use (and journaled) now.
                    match session.settle_probe() {
                        Ok(true) => sink.emit(start, session.usage_event(None, None)),
                        Ok(false) => {}
                        Err(err) => sink.emit(start, err.event()),
                    }
                }
                () = idle => {
                    *idle_spent = true;
                    compactor.on_idle(session, sink).await;
                }
            }
        }
    }
}
