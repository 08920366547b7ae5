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
