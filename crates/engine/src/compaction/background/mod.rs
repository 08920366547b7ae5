//! Background compaction (docs/compaction.md, *Background compaction*): the note is written before
//! it is needed, so the turn that crosses the threshold does not wait for a summary.
//!
//! When pressure crosses the early mark (`compaction.background_at`, default 0.6 × `U`) and no
//! pass is running, [`maybe_start`] takes a **snapshot** — the view, its cut plan, the anchors,
//! the summarizer (system prompt, tools, client) — and spawns the summary request on it; turns
//! go on meanwhile. When pressure reaches the threshold, the auto pass asks [`take`] for the
//! note: a finished one becomes a [`Prepared`] record (the note composed then, on the snapshot's
//! covered part), which the pass commits through [`try_commit`] when the view it yields is below
//! the threshold and passes the survival contract, or else folds in as the previous note of an
//! ordinary pass. A note not ready yet is waited for at most as long as a summary request of its
//! model takes (`decide::wait_bound`, measured by `clock`); past that it goes on and no second summary
//! request is sent for the same crossing ([`Taken::Late`]): the request goes out trimmed to fit
//! meanwhile, and the note is taken when it is ready.
//!
//! Invariants:
//! - at most one background pass (`state::NotePass` holds one slot);
//! - nothing reaches the journal but a committed record (through `commit`, like any pass) or,
//!   for a failed note, the same `system` notice a failed foreground pass leaves (so the backoff
//!   of §5.1 holds across processes); a cancelled or unused note leaves no trace;
//! - a snapshot is used only while it still describes the session (`decide::stale`): same model,
//!   same anchors, no record written since, and its HEAD still on HEAD's spine. The engine also
//!   cancels it outright on `/compact`, a HEAD move, `/model`, an anchor change, an interrupt
//!   and close ([`cancel`]).
//!
//! The decisions (`decide::should_start`, `decide::stale`, `decide::wait_bound`, `decide::early_mark`) are pure; the
//! rest is the thin async shell around them.
//!
//! Inside, the files import one way (this file only declares them and re-exports their doors):
//! `close` → `idle` → `start` → `settle` → `state`, `decide`.
//!
//! Where it sits: below `pass` and beside nothing above it. A pass is the note's consumer — it
//! is handed a [`Prepared`] note and asks [`try_commit`] what became of it ([`Tried`]) — while
//! the note never runs a pass: what both need of the conversation (the window a rejected
//! summary request teaches, the warning, the room) is `conversation`'s, below both, and the
//! standing they update (the note's job, the backoff, the clock) is lent by the Compactor as
//! `&mut Standing`. So `pass` imports `background`, never the reverse, and neither imports the
//! Compactor.

mod close;
mod decide;
pub mod idle;
mod settle;
mod start;
pub(crate) mod state;

pub(crate) use close::close;
pub(crate) use idle::{activity, idle_after, on_idle, settle_idle};
pub(crate) use settle::{cancel, take, try_commit, Current, Taken, Tried};
pub(crate) use start::{maybe_start, StartAt};
pub use state::Prepared;
