//! What a summary request is made of and what comes back: the summarizer's port
//! ([`Summarizer`]), one summary to write ([`SummaryJob`]), where the requests are
//! ([`Progress`]), why no summary came back ([`SummaryError`]) and how one request ended
//! (`Attempt`). Plain values the summary requests' files share: the bottom of `summarize/`
//! (`mod.rs` → `requests.rs` → `ask.rs` → this file), importing none of them.

use codewhale_journal::View;

use crate::budget::Limits;
use crate::compaction::plain::PlainView;
use crate::compaction::port::Conversation;
use crate::prompt::SystemPrompt;

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
pub(super) const OTHER_MODEL_TAIL_BYTES: u64 = 8 * 1024;

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
    /// without it, the transcript flattened ([`crate::compaction::lean`]).
    pub lean: bool,
    /// Where what its requests cost is counted, and the summarizing model's price.
    pub spend: crate::spend::Meter,
    pub price: Option<codewhale_provider::Price>,
    /// Where how long its requests take is measured (the wait bound of a background note).
    pub clock: crate::compaction::clock::SummaryClock,
}

impl Summarizer {
    /// The summarizer of `session` when `model` writes the note.
    pub fn of(
        session: &dyn Conversation,
        clock: &crate::compaction::clock::SummaryClock,
        model: &str,
    ) -> Summarizer {
        let limits = if model == session.model() {
            *session.budget().limits()
        } else {
            Limits::for_model(session.config(), model)
        };
        let prefix = session.budget().system_tokens();
        let lean = crate::compaction::lean::wanted(prefix, limits.window);
        let (system, tools, system_tokens) = if lean {
            (
                crate::compaction::lean::system_prompt(),
                Vec::new(),
                crate::compaction::lean::system_tokens(),
            )
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

/// How one summary request ended short of a summary.
pub(super) enum Attempt {
    /// Rejected as too long: the limit the error stated, and the rejected request's o200k
    /// estimate.
    Overflow {
        limit: Option<u64>,
        estimate: u64,
    },
    Stop(SummaryError),
}
