//! Compaction's standing in one conversation (docs/architecture.md, *The Compactor*): what it
//! keeps about itself between passes — the summary backoff, whether the "past the threshold"
//! warning was given, the background note's pass and the summary clock — and the small rules
//! over it that the shell applies (is an auto pass worth it, are passes backing off, a summary
//! failed).
//!
//! Owned by the [`super::compactor::Compactor`], which lends it to the shell (`pass`, `triggers`,
//! `background`) for the length of one call, as `&mut Standing`; the shell never sees the
//! `Compactor`. Below every file of the shell: it imports only the plain state it holds
//! (`backoff`, `clock`, the background note's `state`) and the conversation port, never a door
//! or a pass.

use codewhale_protocol::Event;

use super::background::state::NotePass;
use super::backoff::{self, Backoff};
use super::clock::SummaryClock;
use super::conversation;
use super::port::Conversation;

/// Compaction's standing in one conversation.
#[derive(Debug, Default)]
pub struct Standing {
    /// Set after a summary pass failed: auto passes wait for the conversation to grow.
    pub(super) summary_backoff: Option<Backoff>,
    /// The "past the threshold" warning was given; not again until pressure is back under it.
    /// Display only: it never holds a pass back.
    pub(super) warned_over_threshold: bool,
    /// The background note, if one is being written or waits (docs/compaction.md, *Background
    /// compaction*).
    pub(super) note_pass: NotePass,
    /// How long summary requests take, per model: the bound on waiting for a background note.
    pub(super) clock: SummaryClock,
}

impl Standing {
    /// The standing a conversation's journal left: a summary backoff holds across processes
    /// (each `codewhale exec` is one).
    pub(super) fn replayed(journal: &codewhale_journal::Journal) -> Standing {
        Standing { summary_backoff: backoff::replay(journal), ..Standing::default() }
    }

    /// Whether an auto pass can help now ([`codewhale_compaction::budget::worth_an_auto_pass`]).
    /// Reactive and manual passes are never held back.
    pub(super) fn auto_worthwhile(&self, session: &dyn Conversation) -> bool {
        let budget = session.budget();
        let view = session.render();
        let after = view.compaction.as_ref().and_then(|c| c.record.tokens_after);
        let limits = budget.limits();
        codewhale_compaction::budget::worth_an_auto_pass(
            after,
            budget.pressure().tokens,
            limits.threshold,
            limits.usable_input,
        )
    }

    /// The summarizer failed: hold auto passes back, and say so once per streak.
    pub(super) fn summary_failed(
        &mut self,
        session: &dyn Conversation,
        reason: &str,
        emit: &(dyn Fn(Event) + Send + Sync),
    ) {
        if backoff::failed(&mut self.summary_backoff) {
            conversation::warn(
                emit,
                format!(
                    "the model could not write a usable summary ({reason}); automatic \
                     compaction now waits a few turns between attempts (longer after each \
                     failure), and meanwhile each request leaves out the oldest messages that do \
                     not fit (the journal keeps them); {} asks again at any time",
                    session.compact_hint()
                ),
            );
        }
    }

    /// A pass wrote a summary: auto passes run normally again.
    pub(super) fn summary_written(&mut self) {
        self.summary_backoff = None;
    }

    /// Whether automatic passes are holding back after failed summaries.
    pub(super) fn backing_off(&self) -> bool {
        backoff::holding(self.summary_backoff)
    }
}
