//! Compaction (docs/compaction.md): what the model reads when a conversation outgrows its window.
//!
//! A pure core in a thin async shell. The pure core is the `codewhale-compaction` crate (the
//! round, the cut, the note, the survival contract, the extract, the budget arithmetic), re-
//! exported here under its module names so the shell reads `super::cut` as before; it is given
//! token counts through [`plain`], which counts a view with the session's tokenizer. Beside it,
//! in this crate:
//! - [`lean`]: the summarizer's lean system prompt; [`matrix`]: the survival fixture matrix run
//!   by `codewhale survival-check` (it reads fixture files);
//! - [`trim`]: the fail-open request when no pass could make room.
//!
//! What the next request contains (`/context`, `codewhale context`) is reported by
//! [`crate::context_report`], a session concern that reads compaction's core.
//!
//! The shell: [`pass`] runs one pass (the summary requests through `summarize`, then `commit`: fit,
//! survival check, append, events) and [`triggers`] connects it to the turn loop (auto, reactive,
//! fail open) and to `/compact`; [`background`] writes the next note early, on a snapshot, while
//! turns go on (docs/compaction.md, *Background compaction*), and `clock` times the summary
//! requests that bound the wait for it. The shell never takes the session: it is given the
//! [`port::Conversation`] port (the session implements it, in `session_port.rs`) and a
//! `summarize::Summarizer` built from it.
//!
//! Invariant: nothing in this module writes to the journal except through a record that passed
//! [`survival::check`]; a failed pass changes nothing the model reads.

pub use codewhale_compaction::{
    bound, checkpoint, cut, extract, judge, message, note, pass_plan, plan_steps, record, round,
    summary, summary_input, survival,
};

pub mod background;
pub mod backoff;
pub(crate) mod clock;
mod commit;
pub mod compactor;
pub mod conversation;
pub mod lean;
pub mod matrix;
pub mod pass;
pub mod plain;
pub mod port;
mod session_port;
pub mod standing;
mod summarize;
pub mod triggers;
pub mod trim;
