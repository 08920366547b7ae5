//! The budget a session's journal implies (docs/architecture.md, *Budget and tokens*), replayed:
//! what a reopened session starts from, what a HEAD move resets to, and what `codewhale context`
//! reports offline — so the live gauge, `/context` and `codewhale context` show one figure.
//!
//! From the journal alone:
//! - **limits**: the model of the latest `system` entry with `model` (a switch), else the
//!   session's; the window of the latest `system` entry with `context_window` learned after
//!   that switch (a provider's overflow error stated it), else config or catalog;
//! - **calibration**: reported ÷ estimated of the newest reply on the branch that recorded both
//!   (`usage.input_tokens`, `reads.estimate`);
//! - **the last report**: the newest reply on the branch with a reported prompt (a prefix of
//!   this branch, so it holds after any HEAD move along it); everything visible appended from
//!   that reply on is "added since", and what left the prompt since is subtracted: the
//!   `savings` of this branch's compaction records written after it, and the pins withdrawn
//!   after it. The live session uses this replay at open, after every HEAD move and after an
//!   anchor is withdrawn, and keeps the same sums as it goes;
//! - **the last reply's figures** (its report and its request's estimate), kept while the view
//!   has only grown since, so silent truncation is caught across processes
//!   (docs/compaction.md, *Small local models*).

use codewhale_journal::{flags, kind, EntryId, Journal, Payload};

use crate::budget::{Budget, Limits, SystemCounts, WindowSource};
use crate::config::Config;

/// The model and window the journal says requests use now.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalLimits {
    /// The model of the latest switch, if any.
    pub model: Option<String>,
    /// The latest window journaled after that switch (learned from an overflow or a cut, or
    /// stated by the server).
    pub learned_window: Option<LearnedWindow>,
}

/// A window a `system` entry journaled for the session's model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LearnedWindow {
    pub window: u64,
    pub source: WindowSource,
    /// The window it replaced, when the entry says (older journals do not).
    pub before: Option<u64>,
}

/// Reads the model switches and learned windows of `journal` (file order).
pub fn journal_limits(journal: &Journal) -> JournalLimits {
    let mut out = JournalLimits { model: None, learned_window: None };
    let mut notices: Vec<u32> = journal.positions_of_kind(kind::SYSTEM).collect();
    notices.reverse();
    for pos in notices {
        if let Payload::System(s) = &journal.entry_at(pos).payload {
            if let Some(model) = &s.model {
                out.model = Some(model.clone());
                out.learned_window = None;
            }
            if let Some(window) = s.context_window {
                // Entries written before sources were journaled were overflow windows.
                let source = s
                    .window_source
                    .as_deref()
                    .and_then(WindowSource::parse)
                    .unwrap_or(WindowSource::Overflow);
                out.learned_window =
                    Some(LearnedWindow { window, source, before: s.window_before });
            }
        }
    }
    out
}

/// The limits for `model` under `config`, with a journaled window applied as DESIGN's rules
/// for learned windows say (docs/compaction.md, *Small local models*): a server's stated window
/// replaces the catalog's or the default whatever its size, and a configured window replaces
/// it; a window learned from an overflow or a cut is used while it is smaller than the window
/// it would replace, unless the configured window is not the one it replaced.
pub fn limits_for(config: &Config, model: &str, learned: Option<LearnedWindow>) -> Limits {
    let limits = Limits::for_model(config, model);
    let Some(learned) = learned else { return limits };
    match learned.source {
        WindowSource::Probe(_) if limits.window_source != WindowSource::Config => {
            limits.with_window(learned.window, learned.source)
        }
        source if source.is_learned() => {
            let configured_since = limits.window_source == WindowSource::Config
                && learned.before.is_some_and(|before| before != limits.window);
            if learned.window < limits.window && !configured_since {
                limits.with_window(learned.window, learned.source)
            } else {
                limits
            }
        }
        _ => limits,
    }
}

/// The budget of HEAD's view: `view_total` is the view's token total, `system` the system prompt's
/// and tool schemas', and `tokens` gives an entry's count (stored, remembered or counted now).
pub fn replay(
    journal: &Journal,
    limits: Limits,
    system: SystemCounts,
    view_total: u64,
    tokens: &mut dyn FnMut(&codewhale_journal::Entry) -> u64,
) -> Budget {
    let mut budget = Budget::new(limits);
    budget.set_system(system);
    budget.reset_view(view_total);
    // Positions only: the walks below read just the entries they stop at, so replaying the
    // budget of a long session reads a few entries, not the branch.
    let spine = journal.spine_positions(journal.head_position());
    if let Some((reported, estimate)) = calibration(journal, &spine) {
        budget.record_report(reported, estimate);
        budget.head_moved(view_total);
    }
    // The newest reply on the branch with a reported prompt: that prompt was a prefix of this
    // branch, so it stays the truth after HEAD moves along it (a rewind, a checkout back).
    let basis = spine.iter().rposition(|&p| journal.has_flags(p, flags::REPORTED));
    let Some(basis) = basis else { return budget };
    let Payload::Assistant(a) = &journal.entry_at(spine[basis]).payload else { return budget };
    let reported = a.usage.as_ref().map_or(0, |u| u.input_tokens);
    let estimate = a.reads.as_ref().and_then(|r| r.estimate).unwrap_or(0);
    budget.record_report(reported, estimate);
    // The last request was trimmed to fit when it left messages out or shortened outputs;
    // the figure shown is then what it sent (docs/compaction.md, *Room is always found* fail open).
    let trimmed =
        a.reads.as_ref().is_some_and(|r| r.trimmed_before.is_some() || r.bounded.is_some());
    let since = Since { journal, spine: &spine, basis, withdrawn: withdrawn(journal, &spine) };
    budget.add_since_report(since.added(tokens));
    let (savings, compacted_since) = since.left(tokens);
    let pair = budget.report_pair();
    budget.record_compaction(view_total, savings);
    // A compaction written after that request replaced the view it trimmed.
    budget.set_trimmed(trimmed && !compacted_since);
    // The view only grew since that reply: its journaled figures are what the next reply is
    // compared with to catch a silent cut, in this process as in the one that wrote it.
    if savings == 0 && !compacted_since {
        budget.restore_pair(pair);
    }
    budget
}

/// Reported ÷ estimated of the newest reply on the branch that recorded both. Calibration
/// describes the provider, whatever the branch.
fn calibration(journal: &Journal, spine: &[u32]) -> Option<(u64, u64)> {
    let calibrated = flags::REPORTED | flags::ESTIMATED;
    spine.iter().rev().filter(|&&p| journal.has_flags(p, calibrated)).find_map(|&p| match &journal
        .entry_at(p)
        .payload
    {
        Payload::Assistant(a) => {
            let reported = a.usage.as_ref()?.input_tokens;
            let estimate = a.reads.as_ref()?.estimate?;
            (reported > 0 && estimate > 0).then_some((reported, estimate))
        }
        _ => None,
    })
}

/// Pins withdrawn on this branch (not sent any more): where on the spine each withdrawal is,
/// and the pin it withdraws.
fn withdrawn(journal: &Journal, spine: &[u32]) -> Vec<(usize, EntryId)> {
    spine
        .iter()
        .enumerate()
        .filter(|&(_, &p)| journal.has_flags(p, flags::WITHDRAWS))
        .filter_map(|(i, &p)| match &journal.entry_at(p).payload {
            Payload::User(u) => u.withdraws.clone().map(|w| (i, w)),
            _ => None,
        })
        .collect()
}

/// HEAD's branch from its last reported reply (`basis`, an index into `spine`) on.
struct Since<'a> {
    journal: &'a Journal,
    spine: &'a [u32],
    basis: usize,
    withdrawn: Vec<(usize, EntryId)>,
}

impl Since<'_> {
    /// Everything visible appended from the reply on, but the withdrawn pins.
    fn added(&self, tokens: &mut dyn FnMut(&codewhale_journal::Entry) -> u64) -> u64 {
        let journal = self.journal;
        let is_withdrawn = |id: &str| self.withdrawn.iter().any(|(_, w)| w.as_str() == id);
        self.spine[self.basis..]
            .iter()
            .filter(|&&p| journal.is_model_visible_at(p) && !is_withdrawn(&journal.id_at(p)))
            .map(|&p| tokens(&journal.read_entry(p)))
            .sum()
    }

    /// What left the prompt since the reply — the savings of this branch's compaction records
    /// written after it, and pins it carried that were withdrawn after it — and whether such a
    /// compaction exists.
    fn left(&self, tokens: &mut dyn FnMut(&codewhale_journal::Entry) -> u64) -> (u64, bool) {
        let journal = self.journal;
        let head = journal.head_id().clone();
        let head_id = head.as_str();
        let basis_line = journal.line_at(self.spine[self.basis]);
        let on_branch =
            |e: &codewhale_journal::Entry, r: &codewhale_journal::CompactionPayload| match (
                &r.covers, &e.parent,
            ) {
                (Some(c), _) => journal.is_ancestor(c.last.as_str(), head_id),
                (None, Some(parent)) => journal.is_ancestor(parent.as_str(), head_id),
                (None, None) => false,
            };
        let after =
            |e: &codewhale_journal::Entry| journal.line_of(e.id.as_str()).unwrap_or(0) > basis_line;
        let mut savings: u64 = journal
            .compactions()
            .filter(|(e, r)| after(e) && on_branch(e, r))
            .filter_map(|(_, r)| r.savings)
            .sum();
        for (at, id) in &self.withdrawn {
            let Some(pin) = journal.position(id.as_str()) else { continue };
            if *at >= self.basis && self.spine[..self.basis].binary_search(&pin).is_ok() {
                savings += tokens(&journal.read_entry(pin));
            }
        }
        let compacted_since = journal.compactions().any(|(e, r)| after(e) && on_branch(e, r));
        (savings, compacted_since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn learned(window: u64, source: WindowSource, before: Option<u64>) -> Option<LearnedWindow> {
        Some(LearnedWindow { window, source, before })
    }

    #[test]
    fn a_learned_window_holds_while_smaller_and_until_another_is_configured() {
        let catalog = Config::default();
        let model = "gpt-4o";
        let base = Limits::for_model(&catalog, model).window;
        let l = limits_for(&catalog, model, learned(6_000, WindowSource::OverflowUnnumbered, None));
        assert_eq!((l.window, l.window_source), (6_000, WindowSource::OverflowUnnumbered));
        let l = limits_for(&catalog, model, learned(base * 2, WindowSource::Overflow, None));
        assert_eq!(l.window, base, "a learned window never grows the one it replaces");
        let configured = Config { context_window: Some(8_192), ..Config::default() };
        let l =
            limits_for(&configured, model, learned(3_000, WindowSource::Truncation, Some(8_192)));
        assert_eq!(l.window, 3_000, "the configured window it replaced: still learned");
        let l =
            limits_for(&configured, model, learned(3_000, WindowSource::Truncation, Some(4_096)));
        assert_eq!(
            (l.window, l.window_source),
            (8_192, WindowSource::Config),
            "a window configured since ends it"
        );
    }

    #[test]
    fn a_probed_window_replaces_the_catalog_but_never_a_configured_one() {
        let probe = WindowSource::Probe(codewhale_provider::ProbeSource::OllamaPs);
        let l = limits_for(&Config::default(), "llama3.2", learned(200_000, probe, None));
        assert_eq!((l.window, l.window_source), (200_000, probe));
        let configured = Config { context_window: Some(8_192), ..Config::default() };
        let l = limits_for(&configured, "llama3.2", learned(4_096, probe, None));
        assert_eq!((l.window, l.window_source), (8_192, WindowSource::Config));
    }
}
