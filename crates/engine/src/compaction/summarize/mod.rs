//! Asking the model for a summary (docs/compaction.md, *The summary request*): the thin async shell
//! around [`super::summary_input`] and [`super::summary`].
//!
//! The request is the live request — the session's system prompt, its tools and the view, in
//! order — plus one user-role instruction after everything, with a cache breakpoint on the last
//! shared message, so its prefix is the previous request's and providers answer it from their
//! prompt cache; and the summarizer sees what happened after the cut, so the note never lists as
//! next what the kept tail shows done. When it does not fit the summarizer's window, the plan
//! bounds what it carries and, past that, summarizes the oldest exchanges first in chunks whose
//! interim notes the next request folds in. The pass fails only when one exchange alone cannot
//! fit even bounded.
//!
//! With `compaction_model` set to another model nothing is shared (the cache is the session
//! model's): the covered part and the kept tail go in the same order, the tail's items bounded
//! to `job::OTHER_MODEL_TAIL_BYTES`.
//!
//! A reply that calls a tool, or that is empty, a placeholder or misses most headings, gets one
//! retry: the stricter instruction, with tool calls forbidden (`tool_choice` none, the tools
//! still defined so the request stays valid and its prefix the same). A provider that rejects a
//! request of the session's own model as too long teaches the session its window — the one it
//! states, else 90 % of the rejected request ([`crate::budget::unnumbered_overflow_window`]) —
//! and the pass plans again under it ([`SummaryError::WindowLearned`]); another summarizing
//! model's request is planned again here, below that window and below 90 % of the request it
//! rejected, at most [`OVERFLOW_RETRIES`] times. Never is the same request sent twice.
//!
//! This module owns the input budget and the loop that plans again after an overflow; `job` owns
//! the summarizer's port, the job and the errors every file here shares, `requests` sends the
//! requests of one plan (the chunks, then the final request) and `ask` one request, with its one
//! stricter retry. The files import one way: `mod.rs` → `requests.rs` → `ask.rs` → `job.rs`.

use codewhale_provider::CancellationToken;

use super::summary::SummaryStats;
use super::summary::{self, Scope};
use super::summary_input::{self, InputBudget};
use crate::budget::{
    from_provider, unnumbered_overflow_window, WindowSource, UNNUMBERED_OVERFLOW_FRACTION,
};
use crate::session::counts;
use requests::run_plan;

mod ask;
mod job;
mod requests;

use job::Attempt;
pub(crate) use job::{Progress, Summarizer, SummaryError, SummaryJob};

/// How many times a pass plans again after the provider said a summary request was too long.
const OVERFLOW_RETRIES: u32 = 3;

/// Room kept in a chunked request for the interim note it folds in: a full note is 12,000
/// characters, about 3,000 tokens.
const NOTE_RESERVE_TOKENS: u64 = 3_000;

/// Writes the summary of `job`; the text is the model's, uncapped.
pub(crate) async fn summarize(
    job: &SummaryJob<'_>,
    cancel: CancellationToken,
) -> Result<(String, SummaryStats), SummaryError> {
    let mut budget = input_budget(job);
    let mut overflows = 0;
    let spent_before = job.summarizer.spend.read();
    loop {
        // A request that cannot fit will not fit next turn either: auto passes back off.
        let plan = summary_input::plan(&job.plain.messages, &job.plain.tokens, &budget)
            .map_err(|e| SummaryError::Unusable(format!("the summary request cannot fit: {e}")))?;
        tracing::debug!(
            budget = budget.tokens,
            fixed = budget.fixed,
            input = job.plain.total(),
            calibration = job.summarizer.calibration,
            shares_prefix = plan.is_whole(),
            bounded = plan.bounds.len(),
            chunks = plan.chunks.len(),
            "summary input planned"
        );
        match run_plan(job, &plan, budget.note, cancel.clone()).await {
            Err(Attempt::Overflow { limit, estimate }) => {
                let calibration = job.summarizer.calibration;
                let window_now = job.summarizer.limits.window;
                let (window, source) = match limit {
                    Some(l) => (l.min(window_now), WindowSource::Overflow),
                    None => (
                        unnumbered_overflow_window(estimate, calibration, window_now),
                        WindowSource::OverflowUnnumbered,
                    ),
                };
                if !job.summarizer.other_model && window < window_now {
                    tracing::info!(
                        ?limit,
                        estimate,
                        window,
                        "summary request too long; the window is learned"
                    );
                    return Err(SummaryError::WindowLearned { window, source });
                }
                if overflows >= OVERFLOW_RETRIES {
                    return Err(SummaryError::Failed(
                        "the provider rejected the summary request as too long, even shortened"
                            .into(),
                    ));
                }
                overflows += 1;
                // Below the window and below the request it rejected: never the same again.
                let room = window.saturating_sub(u64::from(job.max_output));
                let under_window = from_provider(room as f64, calibration);
                let under_request = (estimate as f64 * UNNUMBERED_OVERFLOW_FRACTION) as u64;
                budget.tokens = budget.tokens.min(under_window).min(under_request).max(1);
                tracing::info!(
                    ?limit,
                    tokens = budget.tokens,
                    "summary request too long; planning again"
                );
            }
            Err(Attempt::Stop(stop)) => return Err(stop),
            Ok((text, mut stats)) => {
                let spent = job.summarizer.spend.read().since(&spent_before);
                stats.cost_usd = spent.cost_usd();
                (stats.input_tokens, stats.output_tokens) =
                    (spent.input_tokens, spent.output_tokens);
                return Ok((text, stats));
            }
        }
    }
}

/// The budget of the summarizing model, in estimated tokens.
fn input_budget(job: &SummaryJob<'_>) -> InputBudget {
    let limits = job.summarizer.limits;
    // A request fits when its input and its output budget fit the window together.
    let room = limits.window.saturating_sub(u64::from(job.max_output)).min(limits.window);
    let tokens = from_provider(room as f64, job.summarizer.calibration);
    let instruction = summary::instruction(&Scope::Chunk, job.focus, true, job.note_chars);
    // Exact when the encoder is ready; never waited for (an upper bound instead).
    let instruction = counts::exact_if_ready(&instruction)
        .map_or_else(|| counts::upper_bound(&instruction), u64::from);
    let fixed = job.summarizer.system_tokens + instruction;
    let tokens = tokens.min(summary::INPUT_MAX_BYTES as u64 / 4);
    InputBudget {
        tokens,
        fixed,
        note: note_reserve(tokens.saturating_sub(fixed), job.max_output),
        max_requests: job.max_requests.max(1),
    }
}

/// Room for an interim note: a full note, but no more than the summarizer may write and no more
/// than a third of what a request holds besides its fixed part (a small window's note is short;
/// [`requests::run_plan`] caps it to this).
fn note_reserve(available: u64, max_output: u32) -> u64 {
    NOTE_RESERVE_TOKENS.min(u64::from(max_output)).min(available / 3)
}
