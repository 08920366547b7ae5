//! Room is always found (docs/compaction.md, *Room is always found*): when what a pass keeps does
//! not fit, bound it.
//!
//! The protected part of the last round is never covered by a summary, so a round that alone
//! outgrows the window (a 40 KB file read into an 8k window, a runaway reply, a huge paste)
//! can only be made to fit by shortening what the survival contract allows to be shortened:
//! tool results (head + marker + tail; ids kept) and user and assistant messages (a prefix of
//! each text plus a marker block; the contract counts a prefix as kept). Anchors and the
//! checkpoint are never shortened.
//!
//! [`plan`] is pure: given each message's size and token estimate, which ones may be bounded,
//! and the budget, it picks one byte cap for all of them — the largest are cut first, down to
//! the cap, and the smallest never — so that the estimate fits (water-filling). Its invariants:
//! no bound goes below a candidate's floor — [`MIN_BOUND_BYTES`] for a message,
//! [`TOOL_RESULT_FLOOR_BYTES`] for a tool result, which is cut below 1 KB only when every
//! message at its 1 KB floor is not enough, so a round of many calls never strands the session;
//! an existing tighter bound is never loosened; a message at or under the cap is left alone.

use super::message::{Message, Part};

/// No message is bounded below this many bytes (a tool result keeps 512 bytes of head and of
/// tail; a text keeps a prefix of at least this much in all).
pub const MIN_BOUND_BYTES: u64 = 1024;

/// The last resort for a tool result (64 bytes of head and of tail around the marker, which
/// names the entry that holds it whole): only when every candidate at [`MIN_BOUND_BYTES`] does
/// not fit.
pub const TOOL_RESULT_FLOOR_BYTES: u64 = 128;

/// What the marker of a shortened message costs, in estimated tokens ("[… 1156 of 26359 bytes
/// cut; recall entry 019a… …]"): counted with every
/// bound, or many small cuts would overrun the budget they were planned for.
pub const MARKER_TOKENS: u64 = 48;

/// One message the plan may bound.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// Index in the view.
    pub index: usize,
    /// Its size as the bound measures it (tool output, or text and call arguments).
    pub bytes: u64,
    /// Its estimated tokens as it stands.
    pub tokens: u64,
    /// The fewest bytes it may be cut to ([`MIN_BOUND_BYTES`], or [`TOOL_RESULT_FLOOR_BYTES`]
    /// for a tool result).
    pub floor: u64,
}

impl Candidate {
    /// A candidate that may be cut to [`MIN_BOUND_BYTES`].
    pub fn message(index: usize, bytes: u64, tokens: u64) -> Candidate {
        Candidate { index, bytes, tokens, floor: MIN_BOUND_BYTES }
    }

    /// A tool result, which may be cut to [`TOOL_RESULT_FLOOR_BYTES`] as a last resort.
    pub fn tool_result(index: usize, bytes: u64, tokens: u64) -> Candidate {
        Candidate { index, bytes, tokens, floor: TOOL_RESULT_FLOOR_BYTES }
    }

    /// The bound a plan's `cap` puts on it.
    fn cap_for(&self, cap: u64) -> u64 {
        cap.max(self.floor)
    }

    /// Estimated tokens once cut to `cap` bytes (tokens scale with bytes).
    fn tokens_at(&self, cap: u64) -> u64 {
        if self.bytes <= cap || self.bytes == 0 {
            return self.tokens;
        }
        (self.tokens as u128 * cap as u128 / self.bytes as u128) as u64 + MARKER_TOKENS
    }
}

/// What bounding can do for a view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundPlan {
    /// (index, max bytes) for every message to bound, ascending by index.
    pub bounds: Vec<(usize, u64)>,
    /// Estimated tokens saved.
    pub saved: u64,
    /// True when the estimate fits the budget after bounding; false when even every candidate
    /// at [`MIN_BOUND_BYTES`] is not enough (the plan then bounds them all to it).
    pub fits: bool,
}

/// The size of `message` as a bound measures it.
pub fn message_bytes(message: &Message) -> u64 {
    let mut bytes = 0;
    for part in &message.content {
        bytes += match part {
            Part::Text { text } => text.len() as u64,
            Part::ToolUse { name, input, .. } => (name.len() + input.to_string().len()) as u64,
            Part::ToolResult { content, .. } => content.len_hint() as u64,
            Part::Thinking { thinking, signature } => {
                (thinking.len() + signature.as_ref().map_or(0, String::len)) as u64
            }
        };
    }
    bytes
}

/// Plans bounds so that `total` (the estimate of everything, candidates included) drops to
/// `budget` or below, cutting `candidates` largest first.
pub fn plan(candidates: &[Candidate], total: u64, budget: u64) -> BoundPlan {
    let need = total.saturating_sub(budget);
    let none = BoundPlan { bounds: Vec::new(), saved: 0, fits: true };
    if need == 0 {
        return none;
    }
    let cuttable: Vec<&Candidate> =
        candidates.iter().filter(|c| c.bytes > c.floor && c.tokens > 0).collect();
    let saved_at = |cap: u64| -> u64 {
        cuttable.iter().map(|c| c.tokens.saturating_sub(c.tokens_at(c.cap_for(cap)))).sum()
    };
    let max_bytes = cuttable.iter().map(|c| c.bytes).max().unwrap_or(0);
    let lowest = cuttable.iter().map(|c| c.floor).min().unwrap_or(MIN_BOUND_BYTES);
    let (cap, fits) = if saved_at(lowest) < need {
        (lowest, false)
    } else {
        // The largest cap that still saves enough: savings fall as the cap rises. Below
        // MIN_BOUND_BYTES only the tool results go lower.
        let (mut lo, mut hi) = (lowest, max_bytes.max(lowest));
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if saved_at(mid) >= need {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        (lo, true)
    };
    let mut bounds: Vec<(usize, u64)> = cuttable
        .iter()
        .filter(|c| c.bytes > c.cap_for(cap))
        .map(|c| (c.index, c.cap_for(cap)))
        .collect();
    bounds.sort_unstable();
    if bounds.is_empty() {
        return BoundPlan { fits, ..none };
    }
    BoundPlan { bounds, saved: saved_at(cap), fits }
}

/// Merges `extra` bounds into `existing` (index, max bytes) pairs: the tighter bound wins.
#[cfg(test)]
pub fn merge(existing: &mut Vec<(usize, u64)>, extra: &[(usize, u64)]) {
    for &(index, max) in extra {
        match existing.iter_mut().find(|(i, _)| *i == index) {
            Some((_, old)) => *old = (*old).min(max),
            None => existing.push((index, max)),
        }
    }
    existing.sort_unstable();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(index: usize, bytes: u64, tokens: u64) -> Candidate {
        Candidate::message(index, bytes, tokens)
    }

    #[test]
    fn nothing_is_bounded_when_the_view_fits() {
        assert_eq!(plan(&[c(0, 100_000, 25_000)], 26_000, 30_000).bounds, vec![]);
    }

    #[test]
    fn the_largest_are_cut_first_to_one_cap() {
        // 40 KB, 20 KB and 2 KB at 4 bytes a token; 16,500 tokens, budget 8,000.
        let cands = [c(1, 40_000, 10_000), c(3, 20_000, 5_000), c(5, 2_000, 500)];
        let p = plan(&cands, 16_500, 8_000);
        assert!(p.fits);
        assert_eq!(p.bounds.len(), 2, "the 2 KB message is left alone: {p:?}");
        let cap = p.bounds[0].1;
        assert_eq!(p.bounds, vec![(1, cap), (3, cap)]);
        assert!(p.saved >= 8_500, "{p:?}");
        // One byte more of cap would not save enough: the cap is as large as it can be.
        let more: u64 = cands[..2].iter().map(|x| x.tokens - x.tokens_at(cap + 1)).sum();
        assert!(more < 8_500);
    }

    #[test]
    fn a_shortfall_bounds_everything_to_the_minimum_and_says_so() {
        let p = plan(&[c(0, 8_000, 2_000)], 10_000, 1_000);
        assert!(!p.fits);
        assert_eq!(p.bounds, vec![(0, MIN_BOUND_BYTES)]);
        let nothing = plan(&[c(0, 900, 200)], 10_000, 1_000);
        assert!(!nothing.fits && nothing.bounds.is_empty(), "small messages are never cut");
    }

    #[test]
    fn tool_results_go_below_one_kb_only_when_one_kb_each_is_not_enough() {
        // 64 results of 4 KB (1,000 tokens each) and a 3 KB message: at 1 KB each they still
        // need about 64 × 298 + 798 tokens, over a budget of 12,000.
        let mut cands: Vec<Candidate> =
            (0..64).map(|i| Candidate::tool_result(i, 4_000, 1_000)).collect();
        cands.push(Candidate::message(64, 3_000, 750));
        let total = 64 * 1_000 + 750;
        let p = plan(&cands, total, 12_000);
        assert!(p.fits, "{p:?}");
        assert!(total - p.saved <= 12_000);
        let cap = p.bounds[0].1;
        assert!((TOOL_RESULT_FLOOR_BYTES..MIN_BOUND_BYTES).contains(&cap), "{cap}");
        assert_eq!(p.bounds.last(), Some(&(64, MIN_BOUND_BYTES)), "a message keeps 1 KB");
        // With room for 1 KB each, nothing goes below it.
        let p = plan(&cands, total, 30_000);
        assert!(p.fits && p.bounds.iter().all(|&(_, b)| b >= MIN_BOUND_BYTES), "{p:?}");
        // And past the last resort the plan says it does not fit.
        let p = plan(&cands, total, 1_000);
        assert!(!p.fits);
        assert!(p.bounds[..64].iter().all(|&(_, b)| b == TOOL_RESULT_FLOOR_BYTES), "{p:?}");
    }

    #[test]
    fn merging_keeps_the_tighter_bound() {
        let mut existing = vec![(2, 8_192), (7, 65_536)];
        merge(&mut existing, &[(2, 4_000), (4, 3_000), (7, 70_000)]);
        assert_eq!(existing, vec![(2, 4_000), (4, 3_000), (7, 65_536)]);
    }
}
