//! Event emission and the approval gate shared by the engine loop and a running turn.
//!
//! [`EventSink`] is the only way events leave the engine; every event is also logged (at
//! debug level, deltas at trace) so a session can be reconstructed from the log.
//! [`ApprovalGate`] parks a tool call that needs the user's yes until the engine loop delivers
//! an `Approve`/`Deny` op for it. Invariant: a call id waits at most once; a reply for a call
//! nobody waits for is reported back as an error event, never silently dropped.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::{mpsc, oneshot};

use codewhale_protocol::{ApprovalScope, Event, EventMsg, SubmissionId};

/// Sends events to the front end.
#[derive(Debug, Clone)]
pub struct EventSink {
    tx: mpsc::UnboundedSender<EventMsg>,
    /// Redacts what is logged: the log never holds a secret.
    redactor: crate::redact::Redactor,
}

impl EventSink {
    pub(crate) fn new(tx: mpsc::UnboundedSender<EventMsg>) -> EventSink {
        EventSink { tx, redactor: crate::redact::Redactor::default() }
    }

    /// The same sink, logging through `redactor` (the session's, with its own patterns).
    pub(crate) fn with_redactor(mut self, redactor: crate::redact::Redactor) -> EventSink {
        self.redactor = redactor;
        self
    }

    /// Emits `event` on behalf of submission `id`. A front end that went away is not an error:
    /// the engine finishes its work and journals it anyway.
    pub fn emit(&self, id: SubmissionId, event: Event) {
        let enabled = match &event {
            Event::TextDelta { .. } | Event::ThinkingDelta { .. } => {
                tracing::enabled!(tracing::Level::TRACE)
            }
            _ => tracing::enabled!(tracing::Level::DEBUG),
        };
        if enabled {
            let logged = format!("{event:?}");
            let logged = self.redactor.redact(&logged);
            match &event {
                Event::TextDelta { .. } | Event::ThinkingDelta { .. } => {
                    tracing::trace!(submission = id.0, event = %logged, "event")
                }
                _ => tracing::debug!(submission = id.0, event = %logged, "event"),
            }
        }
        let _ = self.tx.send(EventMsg { id, event });
    }
}

/// The user's answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalReply {
    Approve(ApprovalScope),
    /// No, with what the user said, if anything.
    Deny(Option<String>),
}

/// Tool calls waiting for the user, and the approval mode the user chose while a turn runs;
/// the gates of the turn's running subagents follow it (a mode chosen mid-turn reaches them).
#[derive(Debug)]
pub struct ApprovalGate {
    interactive: bool,
    waiting: Mutex<HashMap<String, oneshot::Sender<ApprovalReply>>>,
    /// An approval mode the user chose while a turn ran, for the turn's next decision.
    mode: Mutex<Option<crate::approval::ApprovalMode>>,
    /// The front end's terminal has lost the focus ([`codewhale_protocol::Op::Focus`]).
    away: std::sync::atomic::AtomicBool,
    /// The gates of the subagents running under this one: a mode chosen here reaches them.
    followers: Mutex<Vec<std::sync::Weak<ApprovalGate>>>,
}

impl ApprovalGate {
    /// `interactive` is false when nobody can answer (exec without a terminal): calls that
    /// would ask are denied at once.
    pub fn new(interactive: bool) -> ApprovalGate {
        ApprovalGate {
            interactive,
            waiting: Mutex::new(HashMap::new()),
            mode: Mutex::new(None),
            away: std::sync::atomic::AtomicBool::new(false),
            followers: Mutex::new(Vec::new()),
        }
    }

    /// Makes `child` (a running subagent's gate) follow the approval modes chosen here from now
    /// on, and hands it the mode chosen but not yet applied here, if any. It stops following
    /// when it is dropped.
    pub(crate) fn lead(&self, child: &std::sync::Arc<ApprovalGate>) {
        let pending = *self.mode.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(mode) = pending {
            child.switch_mode(mode);
        }
        let mut followers = self.followers.lock().unwrap_or_else(|p| p.into_inner());
        followers.retain(|f| f.strong_count() > 0);
        followers.push(std::sync::Arc::downgrade(child));
    }

    /// The front end's terminal gained or lost the focus.
    pub(crate) fn set_focused(&self, focused: bool) {
        self.away.store(!focused, std::sync::atomic::Ordering::Relaxed);
    }

    /// The user would be called back now (docs/extending.md, *Hooks*): the terminal is not
    /// focused.
    pub(crate) fn user_away(&self) -> bool {
        self.away.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn is_interactive(&self) -> bool {
        self.interactive
    }

    /// Registers `call_id` as waiting; the receiver resolves when the user answers.
    pub(crate) fn wait_for(&self, call_id: &str) -> oneshot::Receiver<ApprovalReply> {
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().unwrap_or_else(|p| p.into_inner()).insert(call_id.to_owned(), tx);
        rx
    }

    /// Delivers the user's answer; false when no call `call_id` is waiting.
    pub fn answer(&self, call_id: &str, reply: ApprovalReply) -> bool {
        let sender = self.waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(call_id);
        sender.is_some_and(|tx| tx.send(reply).is_ok())
    }

    /// Hands the running turn, and the subagents it runs, the approval mode the user just chose.
    pub(crate) fn switch_mode(&self, mode: crate::approval::ApprovalMode) {
        *self.mode.lock().unwrap_or_else(|p| p.into_inner()) = Some(mode);
        let followers: Vec<_> = self
            .followers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .collect();
        for child in followers {
            child.switch_mode(mode);
        }
    }

    /// The mode chosen since the last call, if any (taken: a turn applies it once).
    pub(crate) fn take_mode(&self) -> Option<crate::approval::ApprovalMode> {
        self.mode.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Forgets every waiting call (the turn ended).
    pub(crate) fn clear(&self) {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

/// A fresh event channel.
pub fn channel() -> (EventSink, mpsc::UnboundedReceiver<EventMsg>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (EventSink::new(tx), rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_reach_the_waiting_call_once() {
        let gate = ApprovalGate::new(true);
        let rx = gate.wait_for("c1");
        assert!(gate.answer("c1", ApprovalReply::Deny(None)));
        assert_eq!(rx.await.unwrap(), ApprovalReply::Deny(None));
        assert!(!gate.answer("c1", ApprovalReply::Deny(None)));
    }
}
