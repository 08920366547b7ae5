//! The budget arithmetic every compaction decision shares (docs/architecture.md, *Budget and
//! tokens*): the fixed figures of a window and the one scaling rule between our o200k estimate
//! and the provider's count.
//!
//! Pure functions of their inputs: the calibration ratio arrives as an argument (the engine's
//! running budget keeps it), so the cut, the survival contract, `/context` and `survival-check`
//! scale by the same rule. Invariant: a ratio outside [`CALIBRATION_RANGE`] is clamped into it.

/// The reserved-output cap of docs/architecture.md, *Budget and tokens*.
pub const MAX_RESERVED_OUTPUT: u64 = 16_384;
/// Windows up to this size are small (docs/compaction.md, *Small local models*): the note's budget
/// scales with them.
pub const SMALL_WINDOW: u64 = 16_384;
/// The default auto-compaction threshold as a fraction of usable input.
pub const DEFAULT_THRESHOLD: f64 = 0.8;
/// The calibration ratio's bounds: providers never count fewer tokens than o200k by much, and
/// a ratio past 2 means the estimate and the report were of different prompts.
pub const CALIBRATION_RANGE: (f64, f64) = (1.0, 2.0);

/// `tokens` of our estimate as the provider will count them at `calibration` (kept within
/// [`CALIBRATION_RANGE`]), rounded up. With [`from_provider`], the one scaling rule of every
/// budget decision.
pub fn to_provider(tokens: u64, calibration: f64) -> u64 {
    (tokens as f64 * clamp_calibration(calibration)).ceil() as u64
}

/// How many tokens of our estimate fit in `provider_tokens` of the provider's at `calibration`
/// (kept within [`CALIBRATION_RANGE`]), rounded down.
pub fn from_provider(provider_tokens: f64, calibration: f64) -> u64 {
    (provider_tokens / clamp_calibration(calibration)).floor() as u64
}

/// The share of a rejected request's size taken as the window when the overflow error named
/// none (docs/compaction.md, *Triggers*).
pub const UNNUMBERED_OVERFLOW_FRACTION: f64 = 0.9;

/// The window an overflow that named none teaches: the window is at most the rejected
/// request's size, so 90 % of its calibrated estimate (`estimate` o200k tokens at
/// `calibration`), never more than the window in use.
pub fn unnumbered_overflow_window(estimate: u64, calibration: f64, window: u64) -> u64 {
    let request = to_provider(estimate, calibration) as f64;
    ((request * UNNUMBERED_OVERFLOW_FRACTION).floor() as u64).min(window).max(1)
}

fn clamp_calibration(ratio: f64) -> f64 {
    ratio.clamp(CALIBRATION_RANGE.0, CALIBRATION_RANGE.1)
}

/// The figures of a window the summary's and the note's budgets follow from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// `W`.
    pub window: u64,
    /// `R`.
    pub reserved_output: u64,
    /// `U = W − R`.
    pub usable_input: u64,
}

/// Output budget of a summary request: room for a 12,000-character note with headroom.
const SUMMARY_MAX_OUTPUT: u64 = 8_192;

/// The output budget of a summary request under `limits`. In a small window it is twice the
/// note's budget (headroom for a model that writes long), not the whole reserved output: a
/// summary request's input may use what the note does not need of the window.
pub fn summary_max_output(limits: &Window) -> u32 {
    let mut most = SUMMARY_MAX_OUTPUT.min(limits.reserved_output);
    if limits.window <= SMALL_WINDOW {
        most = most.min(small_note_tokens(limits).saturating_mul(2));
    }
    most.max(1) as u32
}

/// The note's budget in a small window, before any cap of the request's output.
fn small_note_tokens(limits: &Window) -> u64 {
    let full = (crate::summary::NOTE_MAX_CHARS / 4) as u64;
    (limits.usable_input / 10).max(MIN_NOTE_TOKENS).min(full)
}

/// The smallest note budget, in tokens.
const MIN_NOTE_TOKENS: u64 = 300;

/// The note's budget under `limits`, in tokens: the 12,000-character cap (about 3,000 tokens),
/// or in a small window about a tenth of usable input (at least 300); never more than a summary
/// request may write.
pub fn note_budget_tokens(limits: &Window) -> u64 {
    let budget = if limits.window <= SMALL_WINDOW {
        small_note_tokens(limits)
    } else {
        (crate::summary::NOTE_MAX_CHARS / 4) as u64
    };
    budget.min(u64::from(summary_max_output(limits)))
}

/// The note's budget in characters, as the instruction states it and the cap applies it.
pub fn note_chars(limits: &Window) -> usize {
    let chars = usize::try_from(note_budget_tokens(limits) * 4).unwrap_or(usize::MAX);
    chars.min(crate::summary::NOTE_MAX_CHARS)
}

/// Growth (as a fraction of usable input) after which an auto pass is tried again when the last
/// pass could not get below the threshold.
const REGROWTH_FRACTION: f64 = 0.1;

/// Whether an auto pass can help now, at `pressure`: not when the active record already could
/// not get a tenth of `usable_input` below `threshold` (it left `tokens_after`: the user's own
/// protected messages fill the window) and the conversation has not grown by a tenth of
/// `usable_input` since — that pass would summarize next to nothing, on every turn.
pub fn worth_an_auto_pass(
    tokens_after: Option<u64>,
    pressure: u64,
    threshold: u64,
    usable_input: u64,
) -> bool {
    let Some(after) = tokens_after else { return true };
    let regrowth = (usable_input as f64 * REGROWTH_FRACTION) as u64;
    // A record that left less than that much room (it bounded up to the threshold) counts as
    // one that could not get below it: the next small turn would cross again.
    after + regrowth <= threshold || pressure >= after + regrowth
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(window: u64, reserved_output: u64) -> Window {
        Window { window, reserved_output, usable_input: window - reserved_output }
    }

    #[test]
    fn a_large_window_gives_the_note_its_full_cap() {
        let w = window(200_000, 16_384);
        assert_eq!(summary_max_output(&w), 8_192);
        assert_eq!(note_budget_tokens(&w), 3_000);
        assert_eq!(note_chars(&w), crate::summary::NOTE_MAX_CHARS);
    }

    #[test]
    fn a_small_window_gives_the_note_a_tenth_of_usable_input_and_twice_that_of_output() {
        let w = window(8_192, 2_048);
        assert_eq!(note_budget_tokens(&w), 614);
        assert_eq!(summary_max_output(&w), 1_228);
        assert_eq!(note_chars(&w), 614 * 4);
        let tiny = window(2_048, 512);
        assert_eq!(note_budget_tokens(&tiny), 300, "never below the smallest note");
    }

    #[test]
    fn an_auto_pass_waits_for_regrowth_only_after_one_that_could_not_get_below_the_threshold() {
        assert!(worth_an_auto_pass(None, 90_000, 80_000, 100_000), "no record yet");
        assert!(worth_an_auto_pass(Some(70_000), 75_000, 80_000, 100_000), "the last got below");
        assert!(
            !worth_an_auto_pass(Some(75_000), 80_000, 80_000, 100_000),
            "the last left less than a tenth below the threshold"
        );
        assert!(!worth_an_auto_pass(Some(85_000), 90_000, 80_000, 100_000), "grew by 5 %");
        assert!(worth_an_auto_pass(Some(85_000), 95_000, 80_000, 100_000), "grew by a tenth");
    }

    #[test]
    fn scaling_rounds_against_the_budget_and_clamps_the_ratio() {
        assert_eq!(to_provider(100, 1.25), 125);
        assert_eq!(from_provider(125.0, 1.25), 100);
        assert_eq!(to_provider(100, 5.0), 200, "clamped to 2");
        assert_eq!(from_provider(100.0, 0.5), 100, "clamped to 1");
    }
}
