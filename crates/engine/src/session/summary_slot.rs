//! What a session keeps of the branch summary being written (docs/journal-format.md,
//! *`branch_summary`*): a [`Job`] whose state is the entry it will become. Plain state of the
//! session; the writing itself, which reads the session, is `crate::branch_summary`, above it.

use codewhale_journal::{BranchSummaryPayload, EntryId};

use super::job::Job;

/// The summary being written, if any; its task answers with the summary or why there is none.
pub(crate) type Pending = Job<Meant, Result<String, String>>;

/// The entry a summary being written will become.
#[derive(Debug)]
pub(crate) struct Meant {
    /// HEAD right after the move: the summary is appended on this entry or a continuation.
    pub(crate) meant: EntryId,
    /// The entry's payload, all but the summary.
    pub(crate) payload: BranchSummaryPayload,
}
