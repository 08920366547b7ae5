//! Compaction's pure core (docs/compaction.md): what the model reads when a conversation
//! outgrows its window, decided on plain data.
//!
//! Nothing here touches a provider, the clock, a runtime or the file system: token counts and
//! the calibration ratio arrive through the inputs, so the same function serves a pass's cut,
//! the survival contract's check, `/context` and `codewhale survival-check`. The engine's
//! `Compactor` is the async shell around it (summary requests, commits, the background note).
//!
//! - [`message`]: the plain `{role, content}` messages every function here works on, and
//!   [`plain`], the bridge from the journal's view to them;
//! - [`budget`]: the scaling rule between our estimate and the provider's count, and the fixed
//!   figures of a window;
//! - [`checkpoint`]: what makes a message a checkpoint, the note's fixed wording;
//! - [`round`]: the last round, its protected part and the legal cut points;
//! - [`cut`]: where a pass cuts, what it retains and bounds; [`prune`]: the cheap path;
//!   [`bound`]: shortening the last round when nothing else makes room;
//! - [`summary`]: the summary request's instruction, quality gate and caps;
//!   [`summary_input`]: what the request carries and how it is made to fit (bound, chunk, the
//!   request limit); [`extract`]: what the note says of the part no request read;
//! - [`note`]: the checkpoint note; [`record`]: the compaction record; [`plan`] and
//!   [`plan_steps`]: the plan as a note restates it and whether its steps are carried;
//! - [`survival`]: the survival contract checked before any record is written; [`judge`]: every
//!   check a record passes before it is written, the survival contract among them;
//! - [`pass_plan`]: which steps a pass tries, decided before any model call.
//!
//! Invariant: every function is deterministic in its arguments; a failed check changes nothing.

pub mod bound;
pub mod budget;
pub mod checkpoint;
pub mod cut;
pub mod extract;
pub mod judge;
pub mod message;
pub mod note;
pub mod pass_plan;
pub mod plain;
pub mod plan;
pub mod plan_steps;
pub mod prune;
pub mod record;
pub mod round;
pub mod summary;
pub mod summary_input;
pub mod survival;
