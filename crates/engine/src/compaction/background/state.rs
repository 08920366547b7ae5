//! What a session keeps of its background pass (docs/compaction.md, *Background compaction*): a
//! [`Job`] (the session's one background-job type) whose state is its snapshot and the note once
//! prepared. Plain state, held by the [`crate::compaction::standing::Standing`] and below it:
//! the pass itself, which reads and writes the conversation, is `start`, `settle`, `idle` and
//! `close`, above this file; it imports only the pure `decide` beside it.

use std::sync::Arc;

use codewhale_journal::{CompactionPayload, EntryId, View};

use super::decide::Basis;
use crate::compaction::cut::CutPlan;
use crate::compaction::plain::PlainView;
use crate::compaction::summarize::SummaryError;
use crate::compaction::summary::SummaryStats;
use crate::session::job::{Job, Running};
use codewhale_protocol::BackgroundState;

/// Everything fixed when a background pass starts.
#[derive(Debug)]
pub(super) struct Snapshot {
    pub(super) view: View,
    pub(super) plain: PlainView,
    pub(super) plan: CutPlan,
    pub(super) basis: Basis,
    /// HEAD when the snapshot was taken.
    pub(super) head: EntryId,
    pub(super) summary_model: String,
    /// The session's limits then (the note's budget).
    pub(super) limits: crate::budget::Limits,
    /// The view the note leaves when committed at the threshold was planned to be at the aim of
    /// an auto pass; when not even the smallest view could be, it need only leave a median turn
    /// of room ([`crate::compaction::conversation::commit_target`]).
    pub(super) reaches_aim: bool,
}

/// The one background pass of a session, if any, and when the last note was used up.
#[derive(Debug, Default)]
pub(crate) struct NotePass {
    pub(super) job: Job<Note, NoteAnswer>,
    /// Records in the journal when the last note was used up: no new pass until another record
    /// is written (the early mark re-arms after every record).
    pub(super) spent_at: Option<usize>,
}

/// What the background request answers: the note and what its requests were like.
pub(super) type NoteAnswer = Result<(String, SummaryStats), SummaryError>;

/// A background pass started and not yet used: its job's `done` says the note is ready.
pub(super) type Slot = Running<Note, NoteAnswer>;

/// What a background pass keeps beside its request.
#[derive(Debug)]
pub(super) struct Note {
    pub(super) snapshot: Arc<Snapshot>,
    /// The finished note as a record, composed as soon as the engine saw it finished (between
    /// requests), so the turn that crosses the threshold only checks and writes it.
    pub(super) prepared: Option<Prepared>,
    /// Idle compaction asked for this note: commit it as soon as it is ready, while the session
    /// stays idle.
    pub(super) commit_when_idle: bool,
}

impl NotePass {
    /// Where the background note is, for the status line and `context --json`.
    pub fn state(&self) -> Option<BackgroundState> {
        self.job.slot.as_ref().map(|s| {
            if s.is_done() {
                BackgroundState::Ready
            } else {
                BackgroundState::Writing
            }
        })
    }

    /// Notified when a background request ends.
    pub fn wake(&self) -> Arc<tokio::sync::Notify> {
        self.job.wake()
    }
}

/// A finished background note as the record a pass may commit.
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    pub record: CompactionPayload,
    /// The splice point: the entry just before the covered segment.
    pub parent: EntryId,
    /// Its snapshot was planned to reach the aim of an auto pass.
    pub reaches_aim: bool,
}
