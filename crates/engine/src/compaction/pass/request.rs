//! What a pass is asked to do ([`PassRequest`]), how it ended ([`PassOutcome`]) and why an
//! attempt stopped short of a record (`Stop`): plain values the pass's files share. The bottom of
//! `pass/`: `mod.rs`, `attempt.rs` and `summary_path.rs` import it, and it imports none of them.

use codewhale_journal::{CompactionPath, Trigger};

use crate::compaction::background::Prepared;
use crate::compaction::pass_plan::PassMode;

/// What a pass was asked to do.
#[derive(Clone, Debug, PartialEq)]
pub struct PassRequest {
    pub trigger: Trigger,
    /// The manual `/compact` focus.
    pub focus: Option<String>,
    pub mode: PassMode,
    /// A finished background note (docs/compaction.md, *Background compaction*): committed as it is
    /// when it fits and passes the contract, else folded in as the previous note of this pass.
    pub background: Option<Box<Prepared>>,
}

impl PassRequest {
    /// A full pass.
    pub fn new(trigger: Trigger, focus: Option<String>) -> PassRequest {
        PassRequest { trigger, focus, mode: PassMode::Full, background: None }
    }
}

/// How a pass ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PassOutcome {
    Compacted {
        id: String,
        path: CompactionPath,
        tokens_before: u64,
        tokens_after: u64,
        /// False when even the smallest bounds left the request over the threshold.
        fits: bool,
    },
    /// Nothing to do (too few messages, everything protected and within the window): not an
    /// error.
    Refused(String),
    /// The pass was attempted and abandoned; nothing was written.
    Failed(String),
    /// The user interrupted the pass; nothing was written.
    Cancelled,
}

impl PassOutcome {
    /// True when a record was written.
    pub fn compacted(&self) -> bool {
        matches!(self, PassOutcome::Compacted { .. })
    }
}

pub(super) enum Stop {
    Refused(String),
    Failed(String),
    /// The summarizer could not produce a usable note (auto passes back off after this).
    SummaryFailed(String),
    /// The user interrupted the pass.
    Cancelled,
    /// A summary request was rejected as too long: the window it teaches is journaled and the
    /// pass plans again under it.
    WindowLearned {
        window: u64,
        source: crate::budget::WindowSource,
    },
}
