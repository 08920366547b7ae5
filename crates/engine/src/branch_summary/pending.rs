//! What a session keeps of the branch summary being written: the one slot, below the session
//! that holds it (the writing itself, which reads the session, is the parent module).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use codewhale_journal::{BranchSummaryPayload, EntryId};
use codewhale_provider::CancellationToken;
use tokio::task::JoinHandle;

/// The summary being written, if any.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    pub(super) slot: Option<Slot>,
    /// Woken when the request ends, so an idle engine appends the summary at once.
    pub(super) wake: Arc<tokio::sync::Notify>,
}

#[derive(Debug)]
pub(super) struct Slot {
    /// HEAD right after the move: the summary is appended on this entry or a continuation.
    pub(super) meant: EntryId,
    /// The entry's payload, all but the summary.
    pub(super) payload: BranchSummaryPayload,
    pub(super) cancel: CancellationToken,
    pub(super) task: JoinHandle<Result<String, String>>,
    /// Set by the task just before it wakes the engine: its answer is in (the handle may not
    /// report finished yet), and a wake-up left over from an earlier slot is told apart.
    pub(super) done: Arc<AtomicBool>,
}

impl Slot {
    pub(super) fn stop(self) {
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
