//! Taking back what came after a point (docs/journal-format.md, *The file store*): `/rewind`,
//! `/fork`, `/undo` and `codewhale rewind` on a session — where HEAD goes, which files come
//! back, and what is journaled.
//!
//! Above the session: it moves the session's HEAD, restores files through the checkpoint store
//! ([`crate::checkpoint`], which keeps what tools changed and sits below the tools) and journals
//! the account. A restore writes its intent first ([`intent`]) so a kill at any step is
//! completed by the next open; [`account`] is the journal's record of a restore; [`ops`] is
//! the front end's entry point; [`branch_files`] plans bringing a checked-out branch's files
//! back to what its history shows.

pub(crate) mod account;
pub(crate) mod branch_files;
pub(crate) mod intent;
pub(crate) mod ops;
