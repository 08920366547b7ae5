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
//!   anchor is withdrawn, and keeps the same sums as it goes.

use codewhale_journal::{flags, kind, EntryId, Journal, Payload};

use crate::budget::{Budget, Limits, SystemCounts};
use crate::config::Config;

/// The model and window the journal says requests use now.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalLimits {
    /// The model of the latest switch, if any.
    pub model: Option<String>,
    /// A window learned from a provider's error after that switch.
    pub learned_window: Option<u64>,
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
                out.learned_window = Some(window);
            }
        }
    }
    out
}

/// The limits for `model` under `config`, with a learned window applied.
pub fn limits_for(config: &Config, model: &str, learned_window: Option<u64>) -> Limits {
    let limits = Limits::for_model(config, model);
    match learned_window {
        Some(w) => limits.with_provider_window(w),
        None => limits,
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
    let head = journal.head_id().clone();
    // Positions only: the walks below read just the entries they stop at, so replaying the
    // budget of a long session reads a few entries, not the branch.
    let spine = journal.spine_positions(journal.head_position());
    // Calibration describes the provider, whatever the branch.
    let calibrated = flags::REPORTED | flags::ESTIMATED;
    let calibration =
        spine.iter().rev().filter(|&&p| journal.has_flags(p, calibrated)).find_map(|&p| {
            match &journal.entry_at(p).payload {
                Payload::Assistant(a) => {
                    let reported = a.usage.as_ref()?.input_tokens;
                    let estimate = a.reads.as_ref()?.estimate?;
                    (reported > 0 && estimate > 0).then_some((reported, estimate))
                }
                _ => None,
            }
        });
    if let Some((reported, estimate)) = calibration {
        budget.record_report(reported, estimate);
        budget.head_moved(view_total);
    }
    // The newest reply on the branch with a reported prompt: that prompt was a prefix of this
    // branch, so it stays the truth after HEAD moves along it (a rewind, a checkout back).
    let basis = spine.iter().rposition(|&p| journal.has_flags(p, flags::REPORTED));
    let Some(basis) = basis else { return budget };
    let basis_pos = spine[basis];
    let basis_line = journal.line_at(basis_pos);
    let Payload::Assistant(a) = &journal.entry_at(basis_pos).payload else { return budget };
    let reported = a.usage.as_ref().map_or(0, |u| u.input_tokens);
    let estimate = a.reads.as_ref().and_then(|r| r.estimate).unwrap_or(0);
    budget.record_report(reported, estimate);
    // The last request was trimmed to fit when it left messages out or shortened outputs;
    // the figure shown is then what it sent (docs/compaction.md, *Room is always found* fail open).
    let trimmed =
        a.reads.as_ref().is_some_and(|r| r.trimmed_before.is_some() || r.bounded.is_some());
    // Pins withdrawn on this branch: not sent any more.
    let withdrawn: Vec<(usize, EntryId)> = spine
        .iter()
        .enumerate()
        .filter(|&(_, &p)| journal.has_flags(p, flags::WITHDRAWS))
        .filter_map(|(i, &p)| match &journal.entry_at(p).payload {
            Payload::User(u) => u.withdraws.clone().map(|w| (i, w)),
            _ => None,
        })
        .collect();
    let is_withdrawn = |id: &str| withdrawn.iter().any(|(_, w)| w.as_str() == id);
    let added: u64 = spine[basis..]
        .iter()
        .filter(|&&p| journal.is_model_visible_at(p) && !is_withdrawn(&journal.id_at(p)))
        .map(|&p| tokens(&journal.read_entry(p)))
        .sum();
    budget.add_since_report(added);
    // What left the prompt since the report: the savings of this branch's compaction records
    // written after it, and pins it carried that were withdrawn after it.
    let head_id = head.as_str();
    let on_branch = |e: &codewhale_journal::Entry, r: &codewhale_journal::CompactionPayload| match (
        &r.covers, &e.parent,
    ) {
        (Some(c), _) => journal.is_ancestor(c.last.as_str(), head_id),
        (None, Some(parent)) => journal.is_ancestor(parent.as_str(), head_id),
        (None, None) => false,
    };
    let mut savings: u64 = journal
        .compactions()
        .filter(|(e, _)| journal.line_of(e.id.as_str()).unwrap_or(0) > basis_line)
        .filter(|(e, r)| on_branch(e, r))
        .filter_map(|(_, r)| r.savings)
        .sum();
    for (at, id) in &withdrawn {
        let Some(pin) = journal.position(id.as_str()) else { continue };
        if *at >= basis && spine[..basis].binary_search(&pin).is_ok() {
            savings += tokens(&journal.read_entry(pin));
        }
    }
    budget.record_compaction(view_total, savings);
    // A compaction written after that request replaced the view it trimmed.
    let compacted_since = journal
        .compactions()
        .any(|(e, r)| journal.line_of(e.id.as_str()).unwrap_or(0) > basis_line && on_branch(e, r));
    budget.set_trimmed(trimmed && !compacted_since);
    budget
}
