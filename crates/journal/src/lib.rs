//! The Codewhale session ledger.
//!
//! Owns the on-disk JSONL format of a session, appending to it, loading it, replaying HEAD and
//! the view function that decides what the model reads. Depends on no other workspace crate.
//!
//! The main types:
//! - [`Entry`]: one line of a journal — id, parent, kind, time, typed [`Payload`], token count.
//!   [`Block`] is a content block (unknown block types are kept byte-for-byte); [`Text`] is tool
//!   output, shared by reference count and, for a loaded session, read from the file on demand.
//! - [`Journal`]: a session indexed, with HEAD replayed; a loaded journal parses an entry from
//!   its line only when it is read (see the `journal` module, and the index sidecar in `sidecar`);
//!   branch operations
//!   ([`Journal::fork`], [`Journal::retry`], [`Journal::edit`], [`Journal::checkout`],
//!   [`Journal::rewind`]) return the `head` record to append.
//! - [`JournalFile`]: a session file open for appending — one writer thread, whole-line
//!   appends, group-committed `sync_data`, a pid-recording lock; opening repairs a torn tail.
//!   [`load_read_only`] reads without locking or modifying.
//! - [`render`] → [`View`]: what the model reads at a HEAD; [`check_view`] verifies a view
//!   before it is sent.
//! - [`check_file`] (`codewhale journal check`) and [`list_sessions`] (`codewhale sessions`).
//!
//! The format itself is specified in `docs/journal-format.md`.

pub mod blob;
mod block;
mod branch;
mod check;
pub mod cut;
mod entry;
mod entry_id;
mod fallback_note;
mod file;
mod hash;
mod ids;
mod journal;
mod json_object;
mod kind_code;
mod lazy;
mod lenient;
mod line;
mod list;
mod load;
mod load_error;
mod meta;
mod payload;
pub mod private;
pub mod replace;
mod scan;
mod shorten;
mod sidecar;
mod text;
mod timestamp;
mod view;
mod view_check;

pub use block::{Block, ImageBlock, TextBlock, ThinkingBlock, ToolUseBlock};
pub use branch::BranchError;
pub use check::{check_file, CheckReport, Problem};
pub use entry::{EncodeError, Entry, EntryId, Timestamp};
pub use fallback_note::{
    checkpoint_note, imported_checkpoint_note, ANCHORS_TITLE as NOTE_ANCHORS_TITLE,
    FILES_TOUCHED_TITLE, NOTE_CLOSING,
};
pub use file::{holder, lock_path, JournalFile, OpenError, WriteError};
pub use ids::IdStr;
pub use journal::{DagProblem, Journal, JournalError, LineRef};
pub use list::{list_sessions, session_cost_usd, Listing, SessionInfo};
pub use load::{load_read_only, torn_path, write_index, LoadError, LoadWarning, Loaded, Malformed};
pub use meta::{MCP_TOOL_PREFIX, PLAN_TOOL};
pub use payload::{
    kind, AssistantPayload, Attachment, Bounded, BranchSummaryPayload, CallEnd, CompactionPath,
    CompactionPayload, Covers, FileChange, HeadPayload, HeadReason, HeaderPayload, HookRun, Level,
    Payload, Reads, Receipt, SidePayload, SystemPayload, ToolResultPayload, Trigger, Usage,
    UserPayload, UserShell, BRANCH_SUMMARY_PREFIX,
};
pub use sidecar::index_path;

/// Entry flags [`Journal::has_flags`] tests without reading the entry.
pub mod flags {
    pub use crate::meta::{ANCHOR, ESTIMATED, PLAIN, PLAN, PLAN_MODE, REPORTED, WITHDRAWS};
}
pub use shorten::pruned_stub;
pub use text::Text;
pub use view::{
    active_compaction_of, bound_item, render, render_with_record, view_total_from_index,
    ActiveCompaction, ItemContent, ItemKind, Role, Shortened, ToolResultView, View, ViewItem,
    CHECKPOINT_MARKER,
};
pub use view_check::{check_view, ViewError};
