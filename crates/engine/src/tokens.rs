//! Token counting with o200k_base: one shared encoder, built once, off the start-up path.
//!
//! Owns the only tokenizer of the process: GitHub's `bpe-openai` o200k encoder, which gives
//! the same counts as OpenAI's tiktoken (a property test below holds it to tiktoken-rs) at
//! several times its speed, and stays linear on pathological input — a run of a million
//! spaces or one unbroken word — that makes tiktoken-rs quadratic or panic (figures in
//! `docs/performance.md`). Invariants:
//! - Building the encoder takes ~0.2 s, so [`warm_up`] starts it on a background thread as
//!   early as possible; [`count_if_ready`] never waits for it, [`count`] waits only when an
//!   exact figure is really needed.
//! - Counting never panics: should the encoder fail on some input, that text is estimated
//!   (`bytes / 4`) instead.
//! - When the encoder cannot be built, every count is the estimate `bytes / 4`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use bpe_openai::Tokenizer;

static ENCODER: OnceLock<Option<&'static Tokenizer>> = OnceLock::new();
/// Set once something asked for the encoder (a warm-up or an exact count): from then on it is
/// built or being built.
static REQUESTED: AtomicBool = AtomicBool::new(false);

fn build() -> Option<&'static Tokenizer> {
    tracing::debug!("building the o200k encoder");
    match catch_unwind(bpe_openai::o200k_base) {
        Ok(bpe) => Some(bpe),
        Err(_) => {
            tracing::warn!("the o200k tokenizer could not be built, estimating bytes/4");
            None
        }
    }
}

fn encoder() -> Option<&'static Tokenizer> {
    REQUESTED.store(true, Ordering::Relaxed);
    *ENCODER.get_or_init(build)
}

/// Starts building the encoder on a background thread. Cheap and idempotent; call it first
/// thing at start-up so the encoder is ready before the first exact count is needed.
pub fn warm_up() {
    if ENCODER.get().is_some() {
        return;
    }
    REQUESTED.store(true, Ordering::Relaxed);
    let spawned = std::thread::Builder::new().name("o200k-warm-up".into()).spawn(|| {
        let _ = encoder();
    });
    if let Err(err) = spawned {
        tracing::debug!("could not start the tokenizer warm-up thread: {err}");
    }
}

/// Waits until the encoder is built (or has failed to build).
pub fn wait_ready() {
    let _ = encoder();
}

/// Whether the encoder is being built and not ready yet: something asked for it (a
/// [`warm_up`] or an exact count). A one-turn command that never does stays without it.
pub fn is_building() -> bool {
    REQUESTED.load(Ordering::Relaxed) && ENCODER.get().is_none()
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

fn count_with(bpe: &Tokenizer, text: &str) -> u32 {
    catch_unwind(AssertUnwindSafe(|| bpe.count(text)))
        .map(saturate)
        .unwrap_or_else(|_| estimate(text))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn counts_match_the_encoder_on_short_text() {
        assert_eq!(count("hello world"), 2);
        assert_eq!(count(""), 0);
    }

    fn tiktoken() -> &'static tiktoken_rs::CoreBPE {
        static TIKTOKEN: OnceLock<tiktoken_rs::CoreBPE> = OnceLock::new();
        TIKTOKEN.get_or_init(|| tiktoken_rs::o200k_base().unwrap())
    }

    #[test]
    fn counts_equal_tiktoken_on_real_text() {
        let samples = [
            include_str!("../../../README.md"),
            include_str!("tokens.rs"),
            "日本語のテキストと English mixed, with emoji 🐋🐋 and   runs of   spaces\n\n\t",
            "Don't stop: it's they'll WE'VE I'M 12345678 3.14159 ---->>>> \r\n\r\n",
        ];
        for text in samples {
            assert_eq!(count(text) as usize, tiktoken().encode_ordinary(text).len(), "{text:.60}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn counts_equal_tiktoken_on_random_text(text in "[a-zA-Z0-9 \\n\\t.,'!?é日本🐋_-]{0,400}") {
            prop_assert_eq!(count(&text) as usize, tiktoken().encode_ordinary(&text).len());
        }
    }

    #[test]
    fn pathological_runs_never_panic() {
        let spaces = " ".repeat(1_000_000);
        assert!(count(&spaces) > 0);
        let unbroken = "a".repeat(1_000_000);
        assert!(count(&unbroken) > 0);
    }

    #[test]
    fn estimates_round_up() {
        assert_eq!(estimate("abcde"), 2);
        assert_eq!(upper_bound_bytes(10), 4);
    }
}
