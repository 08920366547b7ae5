//! The summary backoff (docs/compaction.md, *Failure behaviour*): after a summary fails, automatic
//! passes wait a number of turns that doubles with each failure in a row, so a model that cannot
//! summarize does not pay two summary requests every turn. Pure state and formulas over the
//! journal, below the [`super::standing::Standing`] that holds them; the passes update it through
//! the standing.

/// Auto passes held back after failed summaries: a model that cannot write a note will not
/// write one next turn either, so each failure in a row doubles how many turns pass before the
/// next attempt (2, 4, 8, ... up to [`MAX_SKIPPED_TURNS`]). A summary written by any pass
/// (manual, reactive) ends the backoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Summary failures in a row.
    pub failures: u32,
    /// Turns still to start before an auto pass may summarize again.
    pub skip_turns: u32,
}

/// The longest wait, in turns, between two auto summary attempts.
pub const MAX_SKIPPED_TURNS: u32 = 32;

/// The turns an auto pass waits after `failures` summary failures in a row: 2, 4, 8, … up to
/// [`MAX_SKIPPED_TURNS`] (docs/compaction.md, *Failure behaviour*). The one formula, live and
/// replayed from the journal.
pub fn turns_to_wait(failures: u32) -> u32 {
    2u32.saturating_pow(failures).min(MAX_SKIPPED_TURNS)
}

/// The backoff a session's journal implies: the summary failures since the last summary
/// record (a `system` notice with `summary_failed`), and the turns started since the latest
/// one. So a backoff holds across processes — each `codewhale exec` is one.
pub(crate) fn replay(journal: &codewhale_journal::Journal) -> Option<Backoff> {
    use codewhale_journal::{flags, kind, CompactionPath, Payload};
    let mut failures = 0u32;
    let mut turns = 0u32;
    let mut turns_since_latest = None;
    // Newest first, reading only records and notices (users are told apart by their flags).
    for pos in (0..journal.len() as u32).rev() {
        if journal.has_flags(pos, flags::PLAIN) {
            turns += 1;
            continue;
        }
        if !matches!(journal.kind_at(pos), kind::COMPACTION | kind::SYSTEM) {
            continue;
        }
        match &journal.entry_at(pos).payload {
            Payload::Compaction(r) if r.path == CompactionPath::Summary => break,
            Payload::System(s) if s.summary_failed => {
                failures += 1;
                turns_since_latest.get_or_insert(turns);
            }
            _ => {}
        }
    }
    let since = turns_since_latest?;
    Some(Backoff { failures, skip_turns: turns_to_wait(failures).saturating_sub(since) })
}

/// A turn started: one turn less to wait.
pub fn turn_started(backoff: &mut Option<Backoff>) {
    if let Some(b) = backoff {
        b.skip_turns = b.skip_turns.saturating_sub(1);
    }
}

/// A summary failed: wait longer. True for the first failure of a streak (the one the user
/// is told about).
pub fn failed(backoff: &mut Option<Backoff>) -> bool {
    let first = backoff.is_none();
    let failures = backoff.map_or(0, |b| b.failures) + 1;
    *backoff = Some(Backoff { failures, skip_turns: turns_to_wait(failures) });
    first
}

/// Whether automatic passes are holding back.
pub fn holding(backoff: Option<Backoff>) -> bool {
    backoff.is_some_and(|b| b.skip_turns > 0)
}
