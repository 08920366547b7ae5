//! The Codewhale session ledger.
//!
//! Owns the on-disk JSONL format of a session, appending to it, loading it, replaying HEAD and
//! the view function that decides what the model reads. Depends on no other workspace crate.
//!
//! The main types:
//! - [`Entry`]: one line of a journal — id, parent, kind, time, typed [`Payload`], token count.
//! - [`Block`]: a content block of a user or assistant entry; unknown block types are kept
//!   byte-for-byte.
//! - [`Text`]: tool output, shared by reference count.
//!
//! The format itself is specified in `docs/journal-format.md`.

mod block;
mod branch;
mod check;
mod entry;
mod file;
mod journal;
mod list;
mod load;
mod payload;
mod record;
mod text;
mod view;

pub use block::{Block, TextBlock, ThinkingBlock, ToolUseBlock};
pub use branch::BranchError;
pub use check::{check_file, CheckReport, Problem};
pub use entry::{Entry, EntryId, Timestamp, FORMAT_VERSION};
pub use file::{lock_path, JournalFile, OpenError, WriteError};
pub use journal::{DagProblem, Journal, JournalError};
pub use list::{list_sessions, title_of, Listing, SessionInfo};
pub use load::{
    dag_message, load_read_only, scan, torn_path, LoadError, LoadWarning, Loaded, Malformed, Scan,
    Tail,
};
pub use payload::{
    kind, AssistantPayload, Bounded, BranchSummaryPayload, CompactionPath, CompactionPayload,
    Covers, HeadPayload, HeadReason, HeaderPayload, Level, Payload, Reads, Receipt, SystemPayload,
    ToolResultPayload, Trigger, Usage, UserPayload,
};
pub use text::Text;
pub use view::{
    check_view, cut_to_bound, pruned_stub, render, ActiveCompaction, ItemContent, ItemKind, Role,
    Shortened, ToolResultView, View, ViewError, ViewItem, CHECKPOINT_MARKER,
};
