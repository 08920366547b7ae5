//! What is on its way to the engine: ops whose replies need more than a generic notice, and
//! messages typed while the engine was busy.
//!
//! Invariant: queued messages are sent in the order typed, one per idle engine; a reply is
//! matched to the op that asked for it by submission id, never by arrival order.

use std::collections::VecDeque;

use codewhale_protocol::SubmissionId;

use crate::tui::restore_view::RestoreTarget;

/// What an op was sent for, when its reply needs more than a generic notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pending {
    /// `/anchor list`: the engine's list is shown.
    ListAnchors,
    /// `/compact`: a refusal (a turn runs) ends the compacting state.
    Compact,
    /// An older page of the conversation, asked for while scrolling up.
    OlderHistory,
    /// `/rewind` or `/fork` without an id: the messages to pick from.
    BranchPick { fork: bool },
    /// `/checkout` without an id: the tips become a picker.
    TipPick,
    /// `/rewind`, `/fork` or `/undo`: the files a restore would touch, before asking.
    Restore(RestoreTarget),
    /// A restore that leaves HEAD where it is (`/undo`, taking back the code only): the
    /// transcript stays as the user saw it, and the restore's notice goes under it.
    KeepTranscript,
    /// A rewind or fork back to an earlier message: what the user saw before that point stays,
    /// only what followed it goes.
    HeadBack,
    /// `/btw`: an error ends the wait for the answer.
    SideQuestion,
    /// `/cost`: the status report's cost part is shown.
    Cost,
    /// `/export [FILE]`: the transcript is written to FILE (as typed), or copied.
    Export { file: Option<String> },
    /// Ctrl+T on a subagent's cell: its conversation opens in the pager, under `title`.
    SubagentTranscript { title: String },
}

/// A message on its way to the engine: its text and the files mentioned with `@`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub text: String,
    pub attachments: Vec<String>,
}

/// Ops waiting for their reply and messages waiting for the engine.
#[derive(Debug, Clone, Default)]
pub struct Outbox {
    pending: Vec<(SubmissionId, Pending)>,
    /// Messages typed while a turn or `/compact` ran, sent in order when it ends.
    pub queued: VecDeque<Outgoing>,
}

impl Outbox {
    /// Op `id` was sent for `what`.
    pub fn expect(&mut self, id: SubmissionId, what: Pending) {
        self.pending.push((id, what));
    }

    /// The reply to op `id` came: what it was sent for, if anything.
    pub fn answered(&mut self, id: SubmissionId) -> Option<Pending> {
        let i = self.pending.iter().position(|(sent, _)| *sent == id)?;
        Some(self.pending.remove(i).1)
    }

    /// Whether an op for `what` is still unanswered.
    pub fn waiting_for(&self, what: &Pending) -> bool {
        self.pending.iter().any(|(_, p)| p == what)
    }

    /// Another engine is attached: nothing sent to the old one will be answered.
    pub fn clear(&mut self) {
        self.pending.clear();
        self.queued.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_matched_by_submission_id_whatever_their_order() {
        let mut outbox = Outbox::default();
        outbox.expect(SubmissionId(1), Pending::Compact);
        outbox.expect(SubmissionId(2), Pending::OlderHistory);
        assert!(outbox.waiting_for(&Pending::OlderHistory));
        assert_eq!(outbox.answered(SubmissionId(2)), Some(Pending::OlderHistory));
        assert!(!outbox.waiting_for(&Pending::OlderHistory));
        assert_eq!(outbox.answered(SubmissionId(3)), None, "an op sent for nothing special");
        assert_eq!(outbox.answered(SubmissionId(1)), Some(Pending::Compact));
        assert_eq!(outbox.answered(SubmissionId(1)), None, "answered once");
    }
}
