//! Token counting with o200k_base: one shared encoder, built once, off the start-up path.
//!
//! Owns the only tokenizer of the process. Invariants:
//! - Building the encoder takes ~0.2 s, so [`warm_up`] starts it on a background thread as
//!   early as possible; [`count_if_ready`] never waits for it, [`count`] waits only when an
//!   exact figure is really needed.
//! - Counting never panics and stays linear in the input: text is fed to the encoder in
//!   pieces of at most [`MAX_PIECE_BYTES`], cut at whitespace where possible and at a char
//!   boundary otherwise (tiktoken-rs panics on a run of ~1M spaces and is quadratic on long
//!   unbroken runs). Cutting can shift the count by a token per piece, which is far inside the
//!   calibration the budget applies anyway.
//! - When the encoder cannot be built, every count is the estimate `bytes / 4`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

/// Largest piece handed to the encoder in one call.
pub const MAX_PIECE_BYTES: usize = 512;

/// Pieces are only cut at whitespace found in their second half, so a piece is never tiny.
const MIN_PIECE_BYTES: usize = MAX_PIECE_BYTES / 2;

static ENCODER: OnceLock<Option<CoreBPE>> = OnceLock::new();

fn build() -> Option<CoreBPE> {
    match tiktoken_rs::o200k_base() {
        Ok(bpe) => Some(bpe),
        Err(err) => {
            tracing::warn!("the o200k tokenizer could not be built, estimating bytes/4: {err}");
            None
        }
    }
}

fn encoder() -> Option<&'static CoreBPE> {
    ENCODER.get_or_init(build).as_ref()
}

/// Starts building the encoder on a background thread. Cheap and idempotent; call it first
/// thing at start-up so the encoder is ready before the first exact count is needed.
pub fn warm_up() {
    if ENCODER.get().is_some() {
        return;
    }
    let spawned = std::thread::Builder::new().name("o200k-warm-up".into()).spawn(|| {
        let _ = encoder();
    });
    if let Err(err) = spawned {
        tracing::debug!("could not start the tokenizer warm-up thread: {err}");
    }
}

/// Whether exact counts are available without waiting.
pub fn is_ready() -> bool {
    ENCODER.get().is_some()
}

/// The o200k token count of `text`, waiting for the encoder if it is still being built.
pub fn count(text: &str) -> u32 {
    match encoder() {
        Some(bpe) => count_with(bpe, text),
        None => estimate(text),
    }
}

/// The exact count when the encoder is ready, `None` otherwise (never waits).
pub fn count_if_ready(text: &str) -> Option<u32> {
    match ENCODER.get() {
        Some(Some(bpe)) => Some(count_with(bpe, text)),
        Some(None) => Some(estimate(text)),
        None => None,
    }
}

/// The fallback estimate: bytes / 4, rounded up.
pub fn estimate(text: &str) -> u32 {
    saturate(text.len().div_ceil(4))
}

/// A cheap upper bound that holds for o200k on real text: bytes / 3, rounded up.
///
/// o200k averages ~4 bytes per token on prose and code; only dense runs of unusual symbols
/// approach one token per 3 bytes, so this bound is used only to decide that a request is
/// *far* below a threshold, never as a count.
pub fn upper_bound_bytes(bytes: u64) -> u64 {
    bytes.div_ceil(3)
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn count_with(bpe: &CoreBPE, text: &str) -> u32 {
    let mut total: u32 = 0;
    for piece in Pieces::new(text) {
        let n = catch_unwind(AssertUnwindSafe(|| bpe.encode_ordinary(piece).len()))
            .map(saturate)
            .unwrap_or_else(|_| estimate(piece));
        total = total.saturating_add(n);
    }
    total
}

/// Splits text into pieces of at most [`MAX_PIECE_BYTES`] bytes (or one char, if a single char
/// were longer, which UTF-8 never is). A cut goes just before the last whitespace in the
/// piece's second half, so the whitespace stays with the word after it as the tokenizer
/// expects; without such whitespace the cut is at the last char boundary.
#[derive(Debug)]
pub struct Pieces<'a> {
    rest: &'a str,
}

impl<'a> Pieces<'a> {
    /// Pieces of `text`.
    pub fn new(text: &'a str) -> Pieces<'a> {
        Pieces { rest: text }
    }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        if self.rest.len() <= MAX_PIECE_BYTES {
            let piece = self.rest;
            self.rest = "";
            return Some(piece);
        }
        let mut end = MAX_PIECE_BYTES;
        while !self.rest.is_char_boundary(end) {
            end -= 1;
        }
        let window = &self.rest.as_bytes()[MIN_PIECE_BYTES..end];
        if let Some(pos) = window.iter().rposition(|b| b.is_ascii_whitespace()) {
            end = MIN_PIECE_BYTES + pos;
        }
        let (piece, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(piece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_text_exactly_and_stay_bounded() {
        let samples = [
            "hello world ".repeat(200),
            " ".repeat(5000),
            "x".repeat(5000),
            "é".repeat(3001),
            "日本語のテキスト".repeat(300),
            String::new(),
        ];
        for text in samples {
            let pieces: Vec<&str> = Pieces::new(&text).collect();
            assert_eq!(pieces.concat(), text);
            assert!(pieces.iter().all(|p| p.len() <= MAX_PIECE_BYTES && !p.is_empty()));
        }
    }

    #[test]
    fn cuts_prefer_whitespace() {
        let text = "word ".repeat(300);
        let first = Pieces::new(&text).next().unwrap();
        assert!(first.ends_with("word"), "{first:?}");
    }

    #[test]
    fn counts_match_the_encoder_on_short_text() {
        assert_eq!(count("hello world"), 2);
        assert_eq!(count(""), 0);
    }

    #[test]
    fn long_prose_counts_close_to_the_unsplit_count() {
        let text = "The quick brown fox jumps over the lazy dog. ".repeat(400);
        let bpe = encoder().unwrap();
        let whole = bpe.encode_ordinary(&text).len() as f64;
        let split = f64::from(count(&text));
        assert!((split - whole).abs() / whole < 0.02, "{split} vs {whole}");
    }

    #[test]
    fn pathological_runs_never_panic() {
        let spaces = " ".repeat(1_000_000);
        assert!(count(&spaces) > 0);
        let unbroken = "a".repeat(200_000);
        assert!(count(&unbroken) > 0);
    }

    #[test]
    fn estimates_round_up() {
        assert_eq!(estimate("abcde"), 2);
        assert_eq!(upper_bound_bytes(10), 4);
    }
}
