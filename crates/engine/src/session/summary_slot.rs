//! What a session keeps of the branch summary being written (docs/journal-format.md,
//! *`branch_summary`*): the one slot. Plain state of the session; the writing itself, which reads
//! the session, is `crate::branch_summary`, above it.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use codewhale_journal::{BranchSummaryPayload, EntryId};
use codewhale_provider::CancellationToken;
use tokio::task::JoinHandle;

/// The summary being written, if any.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    pub(crate) slot: Option<Slot>,
    /// Woken when the request ends, so an idle engine appends the summary at once.
    pub(crate) wake: Arc<tokio::sync::Notify>,
}

#[derive(Debug)]
pub(crate) struct Slot {
    /// HEAD right after the move: the summary is appended on this entry or a continuation.
    pub(crate) meant: EntryId,
    /// The entry's payload, all but the summary.
    pub(crate) payload: BranchSummaryPayload,
    pub(crate) cancel: CancellationToken,
    pub(crate) task: JoinHandle<Result<String, String>>,
    /// Set by the task just before it wakes the engine: its answer is in (the handle may not
    /// report finished yet), and a wake-up left over from an earlier slot is told apart.
    pub(crate) done: Arc<AtomicBool>,
}

impl Slot {
    pub(crate) fn stop(self) {
        self.cancel.cancel();
        self.task.abort();
    }
}

impl Pending {
    /// Notified when a summary request ends.
    pub fn wake(&self) -> Arc<tokio::sync::Notify> {
        self.wake.clone()
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            slot.stop();
        }
    }
}
