//! Compaction (docs/compaction.md): what the model reads when a conversation outgrows its window.
//!
//! A pure core in a thin async shell. The pure modules work on plain data and never touch a
//! provider or the clock:
//! - [`message`]: the plain `{role, content}` messages every function here works on, and
//!   [`plain`], the bridge from the journal's view to them;
//! - [`checkpoint`]: what makes a message a checkpoint, the note's fixed wording;
//! - [`round`]: the last round, its protected part and the legal cut points;
//! - [`cut`]: where a pass cuts, what it retains and bounds; [`prune`]: the cheap path;
//!   [`bound`]: shortening the last round when nothing else makes room;
//! - [`summary`]: the summary request's instruction, quality gate and caps;
//!   [`summary_input`]: what the request carries and how it is made to fit (bound, chunk, the
//!   request limit); [`extract`]: what the note says of the part no request read;
//! - [`note`]: the checkpoint note; [`record`]: the compaction record; [`plan_steps`]: whether
//!   the plan's steps are carried;
//! - [`survival`]: the survival contract checked before any record is written, and [`matrix`],
//!   its fixture matrix run by `codewhale survival-check`; `judge`: every check a record
//!   passes before it is written, the survival contract among them;
//! - [`pass_plan`]: which steps a pass tries, decided before any model call;
//! - [`trim`]: the fail-open request when no pass could make room;
//! - [`report`]: what the next request contains (`codewhale context`).
//!
//! The shell: [`pass`] runs one pass (the summary requests through `summarize`, then `commit`: fit,
//! survival check, append, events) and [`triggers`] connects it to the turn loop (auto, reactive,
//! fail open) and to `/compact`; [`background`] writes the next note early, on a snapshot, while
//! turns go on (docs/compaction.md, *Background compaction*), and `clock` times the summary
//! requests that bound the wait for it.
//!
//! Invariant: nothing in this module writes to the journal except through a record that passed
//! [`survival::check`]; a failed pass changes nothing the model reads.

pub mod background;
pub mod backoff;
pub mod bound;
pub mod checkpoint;
pub(crate) mod clock;
mod commit;
pub mod cut;
pub mod extract;
pub(crate) mod judge;
pub mod lean;
pub mod matrix;
pub mod message;
pub mod note;
pub mod pass;
pub mod pass_plan;
pub mod plain;
pub mod plan_steps;
pub mod prune;
pub mod record;
pub mod report;
pub mod round;
pub(crate) mod standing;
pub mod steps;
mod summarize;
pub mod summary;
pub mod summary_input;
pub mod survival;
pub mod triggers;
pub mod trim;
