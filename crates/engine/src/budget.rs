//! The token budget of one session (docs/architecture.md, *Budget and tokens*): window, reserve,
//! threshold, and pressure.
//!
//! Owns the running sums that make every budget check O(1): the system prompt's count, the sum
//! of the view's entry counts, what the provider last reported and what was added since. The
//! session keeps these sums current as it appends; nothing here walks or tokenizes history.
//! Invariants: the calibration ratio stays in [1, 2]; every figure handed out says whether the
//! provider reported it or Codewhale estimated it.

use serde::{Deserialize, Serialize};

use crate::config::Config;

pub use codewhale_compaction::budget::{
    from_provider, to_provider, unnumbered_overflow_window, CALIBRATION_RANGE, DEFAULT_THRESHOLD,
    MAX_RESERVED_OUTPUT, SMALL_WINDOW, UNNUMBERED_OVERFLOW_FRACTION,
};
pub use codewhale_protocol::{Figure, Source};

/// Where the context window figure came from; spelled as `context --json`'s `window_source`
/// and the journal's `system` entries spell it ([`WindowSource::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum WindowSource {
    Config,
    Catalog,
    /// The catalog did not know the model: a conservative guess, shown as "(unverified)".
    Default,
    /// A provider's overflow error stated the limit; remembered for the session.
    Overflow,
    /// An overflow error that named no window: 90 % of the rejected request's estimate.
    OverflowUnnumbered,
    /// The server silently cut a prompt and stated no window: the count it reported.
    Truncation,
    /// The local server said what window it runs the model with.
    Probe(codewhale_provider::ProbeSource),
}

impl WindowSource {
    /// `config`, `catalog`, `default`, `overflow`, `overflow-unnumbered`, `truncation` or
    /// `probe:ollama-ps` (`probe:ollama-show`, `probe:llamacpp-props`, `probe:lmstudio`).
    pub fn as_str(self) -> &'static str {
        use codewhale_provider::ProbeSource;
        match self {
            WindowSource::Config => "config",
            WindowSource::Catalog => "catalog",
            WindowSource::Default => "default",
            WindowSource::Overflow => "overflow",
            WindowSource::OverflowUnnumbered => "overflow-unnumbered",
            WindowSource::Truncation => "truncation",
            WindowSource::Probe(ProbeSource::OllamaPs) => "probe:ollama-ps",
            WindowSource::Probe(ProbeSource::OllamaShow) => "probe:ollama-show",
            WindowSource::Probe(ProbeSource::LlamacppProps) => "probe:llamacpp-props",
            WindowSource::Probe(ProbeSource::LmStudio) => "probe:lmstudio",
        }
    }

    /// The source spelled `s` ([`WindowSource::as_str`]).
    pub fn parse(s: &str) -> Option<WindowSource> {
        Some(match s {
            "config" => WindowSource::Config,
            "catalog" => WindowSource::Catalog,
            "default" => WindowSource::Default,
            "overflow" => WindowSource::Overflow,
            "overflow-unnumbered" => WindowSource::OverflowUnnumbered,
            "truncation" => WindowSource::Truncation,
            other => WindowSource::Probe(codewhale_provider::ProbeSource::parse(
                other.strip_prefix("probe:")?,
            )?),
        })
    }

    /// Whether the window was learned for this session (an overflow or a cut): used only
    /// while it is smaller than the window it replaced and the model is the same.
    pub fn is_learned(self) -> bool {
        matches!(
            self,
            WindowSource::Overflow | WindowSource::OverflowUnnumbered | WindowSource::Truncation
        )
    }

    /// The probe that stated the window, if one did.
    pub fn probe(self) -> Option<codewhale_provider::ProbeSource> {
        match self {
            WindowSource::Probe(p) => Some(p),
            _ => None,
        }
    }
}

impl From<WindowSource> for String {
    fn from(source: WindowSource) -> String {
        source.as_str().to_owned()
    }
}

impl TryFrom<String> for WindowSource {
    type Error = String;

    fn try_from(s: String) -> Result<WindowSource, String> {
        WindowSource::parse(&s).ok_or_else(|| format!("unknown window source {s:?}"))
    }
}

/// The fixed figures derived from the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// `W`.
    pub window: u64,
    pub window_source: WindowSource,
    /// `R`.
    pub reserved_output: u64,
    /// `U = W − R`.
    pub usable_input: u64,
    /// The threshold fraction of `U` (default 0.8).
    pub threshold_fraction: f64,
    /// `threshold_fraction × U`.
    pub threshold: u64,
    reserved_configured: bool,
}

impl Limits {
    /// Limits for `model`: the window from config, else the catalog, else its default.
    pub fn for_model(config: &Config, model: &str) -> Limits {
        let (window, source) = match config.context_window {
            Some(w) => (w, WindowSource::Config),
            None => {
                let info = codewhale_provider::lookup_model(model);
                let source =
                    if info.verified { WindowSource::Catalog } else { WindowSource::Default };
                (info.context_window, source)
            }
        };
        let fraction = config.compaction.threshold.unwrap_or(DEFAULT_THRESHOLD);
        Limits::compute(window, source, config.reserved_output, fraction)
    }

    /// Limits from explicit figures; `reserved` overrides min(16,384, W/4).
    pub fn compute(
        window: u64,
        window_source: WindowSource,
        reserved: Option<u64>,
        threshold_fraction: f64,
    ) -> Limits {
        let window = window.max(1);
        let reserved_output =
            reserved.unwrap_or_else(|| MAX_RESERVED_OUTPUT.min(window / 4)).min(window / 2);
        let usable_input = window - reserved_output;
        let threshold = (usable_input as f64 * threshold_fraction).floor() as u64;
        Limits {
            window,
            window_source,
            reserved_output,
            usable_input,
            threshold_fraction,
            threshold,
            reserved_configured: reserved.is_some(),
        }
    }

    /// The figures the summary's and the note's budgets follow from.
    pub fn note_window(&self) -> codewhale_compaction::budget::Window {
        codewhale_compaction::budget::Window {
            window: self.window,
            reserved_output: self.reserved_output,
            usable_input: self.usable_input,
        }
    }

    /// The cut's defaults for these limits at `calibration` (docs/compaction.md, *Limits and
    /// configuration*).
    pub fn cut_policy(&self, calibration: f64) -> codewhale_compaction::cut::CutPolicy {
        codewhale_compaction::cut::CutPolicy::for_window(
            self.window,
            self.usable_input,
            calibration,
        )
    }

    /// Whether the window is a guess the UI must mark "(unverified)".
    pub fn is_unverified(&self) -> bool {
        self.window_source == WindowSource::Default
    }

    /// The same limits with another window (learned from an overflow or a cut, or stated by
    /// the server), from `source`.
    pub fn with_window(&self, window: u64, source: WindowSource) -> Limits {
        let reserved = self.reserved_configured.then_some(self.reserved_output);
        Limits::compute(window, source, reserved, self.threshold_fraction)
    }
}

/// What every request carries before the view, in tokens: the system prompt, and the tool
/// schemas (built-in and MCP). Counted by one function on every path
/// ([`crate::session::Session::settle_figures`] live, the report's replay offline), so the
/// gauge, `/context` and `codewhale context` split it the same way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SystemCounts {
    pub prompt: u64,
    pub schemas: u64,
}

impl SystemCounts {
    pub fn total(&self) -> u64 {
        self.prompt + self.schemas
    }
}

/// The session's live budget.
#[derive(Debug, Clone)]
pub struct Budget {
    limits: Limits,
    system: SystemCounts,
    view_tokens: u64,
    last_reported: Option<u64>,
    added_since_report: u64,
    estimated_savings: u64,
    calibration: f64,
    /// The last request left the oldest part of the view out to fit (fail-open trimming).
    trimmed: bool,
    /// The last report and the estimate of its request, for catching a silent cut
    /// ([`crate::truncation`]); cleared when the view changes other than by growing.
    last_pair: Option<crate::truncation::Reported>,
}

impl Budget {
    /// A budget with empty sums.
    pub fn new(limits: Limits) -> Budget {
        Budget {
            limits,
            system: SystemCounts::default(),
            view_tokens: 0,
            last_reported: None,
            added_since_report: 0,
            estimated_savings: 0,
            calibration: CALIBRATION_RANGE.0,
            trimmed: false,
            last_pair: None,
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Replaces the limits (a model switch, a provider-stated window).
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// The system prompt's and the tool schemas' counts.
    pub fn set_system(&mut self, system: SystemCounts) {
        self.system = system;
    }

    /// What every request carries before the view: the system prompt and the tool schemas.
    pub fn system(&self) -> SystemCounts {
        self.system
    }

    /// The system prompt's and tool schemas' tokens together.
    pub fn system_tokens(&self) -> u64 {
        self.system.total()
    }

    /// Sets the view's total from a fresh render (session open, after a compaction pass).
    pub fn reset_view(&mut self, view_tokens: u64) {
        self.view_tokens = view_tokens;
    }

    /// An entry of `tokens` joined the view (or a provisional upper bound was replaced, with
    /// a negative adjustment through [`Budget::adjust`]).
    pub fn add(&mut self, tokens: u64) {
        self.view_tokens += tokens;
        self.added_since_report += tokens;
    }

    /// Counts `tokens` as added since the last report without changing the view's total (a
    /// replayed budget: the view total is already known).
    pub fn add_since_report(&mut self, tokens: u64) {
        self.added_since_report += tokens;
    }

    /// Replaces a provisional figure `from` (an upper bound) with the exact `to`.
    pub fn adjust(&mut self, from: u64, to: u64) {
        self.view_tokens = (self.view_tokens + to).saturating_sub(from);
        self.added_since_report = (self.added_since_report + to).saturating_sub(from);
    }

    /// The provider reported `reported` prompt tokens for a prompt Codewhale estimated at
    /// `estimated`: the report becomes the truth and the calibration ratio is updated.
    pub fn record_report(&mut self, reported: u64, estimated: u64) {
        if reported == 0 {
            return;
        }
        self.last_reported = Some(reported);
        self.added_since_report = 0;
        self.estimated_savings = 0;
        self.last_pair = Some(crate::truncation::Reported { estimate: estimated, reported });
        if estimated > 0 {
            let ratio = reported as f64 / estimated as f64;
            self.calibration = ratio.clamp(CALIBRATION_RANGE.0, CALIBRATION_RANGE.1);
        }
    }

    /// A compaction pass replaced the view: `view_tokens` is the new total, `savings` the
    /// estimated tokens it removed. Until the next report, pressure is last reported + added −
    /// savings.
    pub fn record_compaction(&mut self, view_tokens: u64, savings: u64) {
        self.view_tokens = view_tokens;
        self.estimated_savings += savings;
        self.trimmed = false;
        self.last_pair = None;
    }

    /// The last report and the estimate of its request, while the view has only grown since.
    pub fn report_pair(&self) -> Option<crate::truncation::Reported> {
        self.last_pair
    }

    /// Restores the pair a replayed budget read from the journal ([`Budget::report_pair`]):
    /// the last reply's figures as journaled, so the next request of another process is
    /// compared with them as the next request of the same process would be.
    pub fn restore_pair(&mut self, pair: Option<crate::truncation::Reported>) {
        self.last_pair = pair;
    }

    /// Whether a reply reporting `reported` input for a request estimated at `estimated`
    /// looks silently cut by the server ([`crate::truncation::suspected`]), measured against
    /// the last report.
    pub fn cut_silently(&self, reported: u64, estimated: u64) -> bool {
        let now = crate::truncation::Reported { estimate: estimated, reported };
        self.last_pair.is_some_and(|previous| crate::truncation::suspected(previous, now))
    }

    /// HEAD moved (fork, checkout, rewind): the view is now another branch, of `view_tokens`.
    /// The last report measured the old branch's prompt, so it says nothing about the next
    /// request; it is dropped and pressure is the estimate until the provider reports again.
    /// The calibration ratio stays: it describes the provider's tokenizer, not the branch.
    pub fn head_moved(&mut self, view_tokens: u64) {
        self.view_tokens = view_tokens;
        self.last_reported = None;
        self.added_since_report = 0;
        self.estimated_savings = 0;
        self.trimmed = false;
        self.last_pair = None;
    }

    /// The per-session ratio reported ÷ estimated, in [1, 2].
    pub fn calibration(&self) -> f64 {
        self.calibration
    }

    /// `tokens` scaled by the calibration ratio.
    pub fn calibrated(&self, tokens: u64) -> u64 {
        to_provider(tokens, self.calibration)
    }

    /// The raw o200k estimate of the next request (system + view), uncalibrated.
    pub fn raw_estimate(&self) -> u64 {
        self.system.total() + self.view_tokens
    }

    /// max(estimate of the next request, last reported + added since − savings), calibrated,
    /// labelled with the source of the larger figure. O(1).
    pub fn pressure(&self) -> Figure {
        let estimate = self.calibrated(self.raw_estimate());
        let reported = self.last_reported.map(|last| {
            (last + self.calibrated(self.added_since_report))
                .saturating_sub(self.calibrated(self.estimated_savings))
        });
        match reported {
            Some(r) if r >= estimate => Figure { tokens: r, source: Source::Reported },
            _ => Figure { tokens: estimate, source: Source::Estimated },
        }
    }

    /// Whether the last request had to leave the oldest part of the view out to fit.
    pub fn set_trimmed(&mut self, trimmed: bool) {
        self.trimmed = trimmed;
    }

    /// What the gauge, `/context` and `codewhale context` show: the next request as it will
    /// be sent. That is [`Budget::pressure`] — the whole view, which the auto trigger reads —
    /// unless the last request was trimmed to fit: then it is the provider's report of what
    /// was sent, plus what was added since (without a report, the whole view's figure).
    pub fn shown(&self) -> Figure {
        // A compaction since the last report changed the view by an estimate: the figure is
        // the estimate of the view as it is now, labelled so (no request has said otherwise),
        // and the parts shown beside it add up to it.
        if self.estimated_savings > 0 {
            return Figure {
                tokens: self.calibrated(self.raw_estimate()),
                source: Source::Estimated,
            };
        }
        let whole = self.pressure();
        match self.last_reported.filter(|_| self.trimmed) {
            Some(last) => Figure::reported(
                (last + self.calibrated(self.added_since_report))
                    .saturating_sub(self.calibrated(self.estimated_savings))
                    .min(whole.tokens),
            ),
            None => whole,
        }
    }

    /// Whether auto-compaction should run before the next request.
    pub fn over_threshold(&self) -> bool {
        self.pressure().tokens >= self.limits.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(window: u64) -> Limits {
        Limits::compute(window, WindowSource::Config, None, DEFAULT_THRESHOLD)
    }

    #[test]
    fn window_sources_read_back_as_they_are_spelled() {
        let mut all = vec![
            WindowSource::Config,
            WindowSource::Catalog,
            WindowSource::Default,
            WindowSource::Overflow,
            WindowSource::OverflowUnnumbered,
            WindowSource::Truncation,
        ];
        all.extend(codewhale_provider::ProbeSource::ALL.map(WindowSource::Probe));
        for source in all {
            assert_eq!(WindowSource::parse(source.as_str()), Some(source), "{}", source.as_str());
        }
        assert_eq!(
            WindowSource::Probe(codewhale_provider::ProbeSource::OllamaPs).as_str(),
            "probe:ollama-ps"
        );
        assert_eq!(WindowSource::parse("probe:nothing"), None);
        assert_eq!(WindowSource::parse("provider"), None);
    }

    #[test]
    fn an_unnumbered_overflow_teaches_ninety_percent_of_the_rejected_request() {
        assert_eq!(unnumbered_overflow_window(7_547, 1.0, 400_000), 6_792);
        assert_eq!(unnumbered_overflow_window(5_000, 1.2, 400_000), 5_400);
        assert_eq!(unnumbered_overflow_window(9_000, 1.0, 6_000), 6_000, "never more");
    }

    #[test]
    fn after_a_compaction_the_figure_shown_is_the_estimate_of_the_new_view() {
        let mut b = Budget::new(limits(200_000));
        b.set_system(SystemCounts { prompt: 1_000, schemas: 1_000 });
        b.reset_view(10_000);
        b.record_report(15_000, 12_000);
        assert_eq!(b.shown().source, Source::Reported);
        b.record_compaction(3_000, 7_000);
        let shown = b.shown();
        assert_eq!(shown.source, Source::Estimated, "no request was sent since");
        assert_eq!(shown.tokens, b.calibrated(5_000));
        // The next report is the truth again.
        b.record_report(6_500, 5_000);
        assert_eq!(b.shown().source, Source::Reported);
    }

    #[test]
    fn limits_follow_design() {
        let l = limits(200_000);
        assert_eq!((l.reserved_output, l.usable_input), (16_384, 183_616));
        assert_eq!(l.threshold, 146_892);
        let small = limits(8_000);
        assert_eq!((small.reserved_output, small.usable_input), (2_000, 6_000));
        let configured = Limits::compute(10_000, WindowSource::Config, Some(1_000), 0.5);
        assert_eq!((configured.usable_input, configured.threshold), (9_000, 4_500));
    }

    #[test]
    fn unknown_models_are_unverified() {
        let l = Limits::for_model(&Config::default(), "some-private-model-xyz");
        assert!(l.is_unverified());
        let l = Limits::for_model(&Config { context_window: Some(1000), ..Config::default() }, "x");
        assert_eq!((l.window, l.window_source), (1000, WindowSource::Config));
    }

    #[test]
    fn pressure_takes_the_larger_of_estimate_and_report() {
        let mut b = Budget::new(limits(100_000));
        b.set_system(SystemCounts { prompt: 1_000, schemas: 0 });
        b.add(4_000);
        assert_eq!(b.pressure(), Figure { tokens: 5_000, source: Source::Estimated });
        b.record_report(6_000, 5_000);
        assert!((b.calibration() - 1.2).abs() < 1e-9);
        assert_eq!(b.pressure(), Figure { tokens: 6_000, source: Source::Reported });
        b.add(1_000);
        assert_eq!(b.pressure(), Figure { tokens: 7_200, source: Source::Reported });
    }

    #[test]
    fn calibration_is_clamped() {
        let mut b = Budget::new(limits(100_000));
        b.record_report(100, 1_000);
        assert_eq!(b.calibration(), 1.0);
        b.record_report(10_000, 1_000);
        assert_eq!(b.calibration(), 2.0);
    }

    #[test]
    fn compaction_savings_lower_pressure_until_the_next_report() {
        let mut b = Budget::new(limits(100_000));
        b.add(50_000);
        b.record_report(50_000, 50_000);
        b.record_compaction(10_000, 40_000);
        assert_eq!(b.pressure(), Figure { tokens: 10_000, source: Source::Reported });
        b.record_report(11_000, 10_000);
        assert_eq!(b.pressure().tokens, 11_000);
    }

    #[test]
    fn a_head_move_drops_the_old_branch_report_but_keeps_calibration() {
        let mut b = Budget::new(limits(100_000));
        b.add(50_000);
        b.record_report(90_000, 50_000);
        b.add(100);
        b.head_moved(2_000);
        assert!(b.last_reported.is_none());
        assert!((b.calibration() - 1.8).abs() < 1e-9);
        assert_eq!(b.pressure(), Figure { tokens: 3_600, source: Source::Estimated });
        b.add(10);
        assert_eq!(b.pressure().tokens, 3_618);
    }

    #[test]
    fn provisional_counts_can_be_settled() {
        let mut b = Budget::new(limits(100_000));
        b.add(300);
        b.adjust(300, 200);
        assert_eq!(b.raw_estimate(), 200);
    }
}
