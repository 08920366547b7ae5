//! What compaction keeps about itself between passes, held by the session: whether summary
//! passes are backing off after a failure, whether the "past the threshold" warning was given,
//! the background note being written and how long summary requests take. Plain state; the
//! passes and the turn hooks read and set it, nothing here does I/O.

use super::background::state::NotePass;
use super::backoff::Backoff;

/// Compaction's standing in a session.
#[derive(Debug, Default)]
pub(crate) struct Standing {
    /// Set after a summary pass failed: auto passes wait for the conversation to grow.
    pub(crate) summary_backoff: Option<Backoff>,
    /// The "past the threshold" warning was given; not again until pressure is back under it.
    /// Display only: it never holds a pass back.
    pub(crate) warned_over_threshold: bool,
    /// The background note, if one is being written or waits (docs/compaction.md, *Background
    /// compaction*).
    pub(crate) note_pass: NotePass,
    /// How long summary requests take, per model: the bound on waiting for a background note.
    pub(crate) clock: super::clock::SummaryClock,
}
