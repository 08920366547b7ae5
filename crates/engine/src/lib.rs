//! Codewhale sessions, the turn loop, tools, the token budget and compaction.
//!
//! The only crate that turns journal entries into provider requests. The UI talks to it through
//! the `Op`/`Event` protocol and never touches the journal or a provider directly.

pub mod anchors;
pub mod approval;
pub mod budget;
pub mod compaction;
pub mod config;
pub mod prompt;
pub mod protocol;
pub mod tokens;
pub mod tools;

pub use codewhale_journal as journal;
