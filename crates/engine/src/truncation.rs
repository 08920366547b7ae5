//! Silent truncation (docs/compaction.md, *Small local models*): some servers — Ollama past its
//! `num_ctx`, 4096 by default on machines under 24 GiB of VRAM — drop the start of an over-long
//! prompt and answer 200 with the kept count as the prompt's usage. Nothing fails, and the model
//! has silently lost the beginning of the conversation.
//!
//! The rule is a pure function of two consecutive replies: on a request of more than
//! [`MIN_REQUEST`] estimated tokens, truncation is suspected when the reported input grew by
//! less than half of what the request grew since the previous reply (or fell) while staying at
//! or above [`KEPT_FRACTION`] of the previous report — a count that leaves cached tokens out, as
//! some servers do, drops far lower and is not taken for truncation. Growth below
//! [`MIN_GROWTH`] says nothing either way (tokenizers differ by a few tokens a message).

/// Requests this small are never suspected.
pub const MIN_REQUEST: u64 = 1_000;
/// Growth, in estimated tokens, below which two reports are not compared.
pub const MIN_GROWTH: u64 = 64;
/// A report below this fraction of the previous one is a different way of counting, not a cut.
pub const KEPT_FRACTION: f64 = 0.8;

/// One reply's figures: the request's o200k estimate and the input the server reported (cached
/// tokens included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reported {
    pub estimate: u64,
    pub reported: u64,
}

/// Whether the server silently cut the request of `now`, given the reply before it.
pub fn suspected(previous: Reported, now: Reported) -> bool {
    if now.estimate <= MIN_REQUEST || previous.reported == 0 {
        return false;
    }
    let grew = now.estimate.saturating_sub(previous.estimate);
    if grew < MIN_GROWTH {
        return false;
    }
    let reported_growth = now.reported as i128 - previous.reported as i128;
    let stays = now.reported as f64 >= previous.reported as f64 * KEPT_FRACTION;
    reported_growth * 2 < grew as i128 && stays
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(estimate: u64, reported: u64) -> Reported {
        Reported { estimate, reported }
    }

    #[test]
    fn a_server_that_keeps_only_its_window_is_caught() {
        // Ollama at num_ctx 3000: the prompt grew by 600, the count stayed at the window.
        assert!(suspected(r(2_900, 2_950), r(3_500, 2_990)));
        // ... or fell a little.
        assert!(suspected(r(3_500, 2_990), r(4_100, 2_900)));
    }

    #[test]
    fn honest_counts_are_not_suspected() {
        // Grew as the conversation grew (another tokenizer: 20 % more).
        assert!(!suspected(r(2_000, 2_400), r(2_600, 3_120)));
        // A count that leaves cached tokens out drops far lower.
        assert!(!suspected(r(20_000, 20_500), r(21_000, 1_200)));
        // Small requests, small growth and a compaction (the request shrank) say nothing.
        assert!(!suspected(r(600, 700), r(990, 700)));
        assert!(!suspected(r(5_000, 5_100), r(5_030, 5_100)));
        assert!(!suspected(r(9_000, 9_200), r(3_000, 3_100)));
    }
}
