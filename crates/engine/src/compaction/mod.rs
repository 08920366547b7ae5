//! Compaction (DESIGN §5): what the model reads when a conversation outgrows its window.
//!
//! A pure core in a thin async shell. The pure modules work on plain data and never touch a
//! journal, a provider or the clock:
//! - [`message`]: the plain `{role, content}` messages every function here works on;
//! - [`checkpoint`]: what makes a message a checkpoint, the note's fixed wording;
//! - [`round`]: the last round and its protected part;
//! - [`survival`]: the survival contract checked before any record is written;
//! - [`matrix`]: the survival fixture matrix run by `codewhale survival-check`.
//!
//! Invariant: nothing in this module writes to the journal except through a record that passed
//! [`survival::check`]; a failed pass changes nothing the model reads.

pub mod checkpoint;
pub mod cut;
pub mod matrix;
pub mod message;
pub mod note;
pub mod pass;
pub mod plain;
pub mod prune;
pub mod record;
pub mod report;
pub mod round;
pub mod summary;
pub mod survival;
pub mod trim;
pub mod triggers;
