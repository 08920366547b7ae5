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
//! to [`OTHER_MODEL_TAIL_BYTES`].
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
//! This module owns the summarizer's port, the job, the input budget and the loop that plans
//! again after an overflow; `requests` sends the requests of one plan (the chunks, then the final
//! request) and `ask` one request, with its one stricter retry.

use codewhale_journal::View;
use codewhale_provider::CancellationToken;

use super::plain::PlainView;
use super::summary::SummaryStats;
use super::summary::{self, Scope};
use super::summary_input::{self, InputBudget};
use crate::budget::{
    from_provider, unnumbered_overflow_window, Limits, WindowSource, UNNUMBERED_OVERFLOW_FRACTION,
};
use crate::compaction::port::Conversation;
use crate::prompt::SystemPrompt;
use crate::session::counts;
use requests::run_plan;

mod ask;
mod requests;

/// Why no summary came back.
#[derive(Debug)]
pub(crate) enum SummaryError {
    /// The input cannot be made to fit, or the provider failed.
    Failed(String),
    /// No usable note can be had: the model answered with none, or the request cannot fit its
    /// window (auto passes back off after this).
    Unusable(String),
    Cancelled,
    /// The provider rejected a summary request of the session's own model as too long, which
    /// teaches the session a smaller window (`source`: `overflow` when the error stated it,
    /// `overflow-unnumbered` when it is 90 % of the rejected request): the pass journals it and
    /// plans again under it, so the request is never sent again as it was.
    WindowLearned {
        window: u64,
        source: crate::budget::WindowSource,
    },
}

/// What a kept-tail item may hold in the request of a `compaction_model` other than the
/// session's: that model shares no prompt cache with the session, and it reads the tail only to
/// tell what is done from what is next.
const OTHER_MODEL_TAIL_BYTES: u64 = 8 * 1024;

/// How many times a pass plans again after the provider said a summary request was too long.
const OVERFLOW_RETRIES: u32 = 3;

/// Room kept in a chunked request for the interim note it folds in: a full note is 12,000
/// characters, about 3,000 tokens.
const NOTE_RESERVE_TOKENS: u64 = 3_000;

/// The summarizer's port: what a summary request is made of besides the view — the client and
/// the summarizing model, the live request's system prompt and tools, the figures its budget
/// needs, and where its cost and time are counted. Every summary request compaction sends
/// (foreground and background) is built from one, made from the conversation port by
/// [`Summarizer::of`]. Owned, so a background pass can take
/// it along while the session goes on (docs/compaction.md, *Background compaction*).
#[derive(Debug, Clone)]
pub(crate) struct Summarizer {
    pub client: codewhale_provider::Client,
    /// The summarizing model (`compaction_model`, else the conversation's).
    pub model: String,
    pub system: SystemPrompt,
    pub tools: Vec<codewhale_provider::ToolSpec>,
    /// The limits of the summarizing model.
    pub limits: Limits,
    pub calibration: f64,
    /// The o200k estimate of the system prompt with the tool schemas.
    pub system_tokens: u64,
    /// Another model than the session's writes the note (`compaction_model`): the kept tail
    /// is sent bounded, without a shared prefix.
    pub other_model: bool,
    /// The shared prefix would take over a third of the summarizer's window: requests go
    /// without it, the transcript flattened ([`super::lean`]).
    pub lean: bool,
    /// Where what its requests cost is counted, and the summarizing model's price.
    pub spend: crate::spend::Meter,
    pub price: Option<codewhale_provider::Price>,
    /// Where how long its requests take is measured (the wait bound of a background note).
    pub clock: super::clock::SummaryClock,
}

impl Summarizer {
    /// The summarizer of `session` when `model` writes the note.
    pub fn of(
        session: &dyn Conversation,
        clock: &super::clock::SummaryClock,
        model: &str,
    ) -> Summarizer {
        let limits = if model == session.model() {
            *session.budget().limits()
        } else {
            Limits::for_model(session.config(), model)
        };
        let prefix = session.budget().system_tokens();
        let lean = super::lean::wanted(prefix, limits.window);
        let (system, tools, system_tokens) = if lean {
            (super::lean::system_prompt(), Vec::new(), super::lean::system_tokens())
        } else {
            (session.system_prompt().clone(), session.tool_specs(), prefix)
        };
        Summarizer {
            client: session.client().clone(),
            model: model.to_owned(),
            system,
            tools,
            limits,
            calibration: session.budget().calibration(),
            system_tokens,
            other_model: model != session.model(),
            lean,
            spend: session.summary_spend().clone(),
            price: session.config().price_of(model),
            clock: clock.clone(),
        }
    }
}

/// One summary to write.
pub(crate) struct SummaryJob<'a> {
    pub summarizer: &'a Summarizer,
    /// The view the pass started from, and its plain form.
    pub view: &'a View,
    pub plain: &'a PlainView,
    /// The first message the pass keeps (`view.items[cut..]` stay verbatim after the note).
    pub cut: usize,
    pub focus: Option<&'a str>,
    pub max_output: u32,
    /// Summary requests the pass may send (`compaction.max_summary_requests`).
    pub max_requests: u32,
    /// The note's length, in characters, as the instruction states it.
    pub note_chars: usize,
    /// Told before each request: which one of how many, and the tokens it carries.
    pub progress: Option<&'a (dyn Fn(Progress) + Send + Sync)>,
}

impl std::fmt::Debug for SummaryJob<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummaryJob")
            .field("cut", &self.cut)
            .field("model", &self.summarizer.model)
            .field("max_output", &self.max_output)
            .field("max_requests", &self.max_requests)
            .finish_non_exhaustive()
    }
}

/// Where a pass's summary requests are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Progress {
    /// 1-based.
    pub request: u32,
    pub of: u32,
    /// Estimated tokens the request carries.
    pub tokens: u64,
}

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

enum Attempt {
    /// Rejected as too long: the limit the error stated, and the rejected request's o200k
    /// estimate.
    Overflow {
        limit: Option<u64>,
        estimate: u64,
    },
    Stop(SummaryError),
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
