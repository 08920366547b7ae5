//! What a session keeps of its background pass (docs/compaction.md, *Background compaction*): the
//! one slot, its snapshot and the note once prepared. Plain state below the session that holds it:
//! the pass itself, which reads and writes the session, is the parent module.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use codewhale_journal::{CompactionPayload, EntryId, View};
use codewhale_provider::CancellationToken;
use tokio::task::JoinHandle;

use super::decide::Basis;
use crate::compaction::cut::CutPlan;
use crate::compaction::plain::PlainView;
use crate::compaction::summary::SummaryError;
use crate::compaction::summary::SummaryStats;
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
}

/// The one background pass of a session, if any.
#[derive(Debug, Default)]
pub(crate) struct NotePass {
    pub(super) slot: Option<Slot>,
    /// Records in the journal when the last note was used up: no new pass until another record
    /// is written (the early mark re-arms after every record).
    pub(super) spent_at: Option<usize>,
    /// Woken when a background request ends, so an idle engine composes the note at once
    /// ([`settle_idle`]) rather than in the turn that crosses the threshold.
    pub(super) wake: Arc<tokio::sync::Notify>,
}

#[derive(Debug)]
pub(super) struct Slot {
    pub(super) snapshot: Arc<Snapshot>,
    pub(super) cancel: CancellationToken,
    /// The request; `None` once its answer was taken.
    pub(super) task: Option<JoinHandle<Result<(String, SummaryStats), SummaryError>>>,
    pub(super) ready: Arc<AtomicBool>,
    /// The finished note as a record, composed as soon as the engine saw it finished (between
    /// requests), so the turn that crosses the threshold only checks and writes it.
    pub(super) prepared: Option<Prepared>,
    /// Idle compaction asked for this note: commit it as soon as it is ready, while the session
    /// stays idle.
    pub(super) commit_when_idle: bool,
}

impl Slot {
    pub(super) fn stop(self) {
        self.cancel.cancel();
        if let Some(task) = self.task {
            task.abort();
        }
    }
}

impl NotePass {
    /// Where the background note is, for the status line and `context --json`.
    pub fn state(&self) -> Option<BackgroundState> {
        self.slot.as_ref().map(|s| {
            if s.ready.load(Ordering::Acquire) {
                BackgroundState::Ready
            } else {
                BackgroundState::Writing
            }
        })
    }

    /// Notified when a background request ends.
    pub fn wake(&self) -> Arc<tokio::sync::Notify> {
        self.wake.clone()
    }

    pub(super) fn drop_slot(&mut self) -> bool {
        self.slot.take().map(Slot::stop).is_some()
    }
}

impl Drop for NotePass {
    fn drop(&mut self) {
        self.drop_slot();
    }
}

/// A finished background note as the record a pass may commit.
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    pub record: CompactionPayload,
    /// The splice point: the entry just before the covered segment.
    pub parent: EntryId,
}
