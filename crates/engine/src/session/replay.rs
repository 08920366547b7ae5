//! The budget a session's journal implies (DESIGN §4), replayed: what a reopened session
//! starts from, what a HEAD move resets to, and what `codewhale context` reports offline — so
//! the live gauge, `/context` and `codewhale context` show one figure.
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

use codewhale_journal::{Journal, Payload};

use crate::budget::{Budget, Limits};
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
    for entry in journal.entries() {
        if let Payload::System(s) = &entry.payload {
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

/// The budget of HEAD's view: `view_total` is the view's token total, `system` the system
/// prompt's, and `tokens` gives an entry's count (stored, remembered or counted now).
pub fn replay(
    journal: &Journal,
    limits: Limits,
    system: u64,
    view_total: u64,
    tokens: &mut dyn FnMut(&codewhale_journal::Entry) -> u64,
) -> Budget {
    let mut budget = Budget::new(limits);
    budget.set_system_tokens(system);
    budget.reset_view(view_total);
    let head = journal.head_id().clone();
    let spine = journal.spine(head.as_str());
    // Calibration describes the provider, whatever the branch.
    let calibration = spine.iter().rev().find_map(|e| match &e.payload {
        Payload::Assistant(a) => {
            let reported = a.usage.as_ref()?.input_tokens;
            let estimate = a.reads.as_ref()?.estimate?;
            (reported > 0 && estimate > 0).then_some((reported, estimate))
        }
        _ => None,
    });
    if let Some((reported, estimate)) = calibration {
        budget.record_report(reported, estimate);
        budget.head_moved(view_total);
    }
    // The newest reply on the branch with a reported prompt: that prompt was a prefix of this
    // branch, so it stays the truth after HEAD moves along it (a rewind, a checkout back).
    let basis = spine.iter().rposition(|e| {
        matches!(&e.payload, Payload::Assistant(a)
            if a.usage.as_ref().is_some_and(|u| u.input_tokens > 0))
    });
    let Some(basis) = basis else { return budget };
    let basis_entry = spine[basis];
    let basis_line = journal.line_of(basis_entry.id.as_str()).unwrap_or(0);
    let Payload::Assistant(a) = &basis_entry.payload else { return budget };
    let reported = a.usage.as_ref().map_or(0, |u| u.input_tokens);
    let estimate = a.reads.as_ref().and_then(|r| r.estimate).unwrap_or(0);
    budget.record_report(reported, estimate);
    // Pins withdrawn on this branch: not sent any more.
    let withdrawn: Vec<(usize, &str)> = spine
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match &e.payload {
            Payload::User(u) => u.withdraws.as_ref().map(|w| (i, w.as_str())),
            _ => None,
        })
        .collect();
    let is_withdrawn = |id: &str| withdrawn.iter().any(|(_, w)| *w == id);
    let added: u64 = spine[basis..]
        .iter()
        .filter(|e| e.payload.is_model_visible() && !is_withdrawn(e.id.as_str()))
        .map(|e| tokens(e))
        .sum();
    budget.add_since_report(added);
    // What left the prompt since the report: the savings of this branch's compaction records
    // written after it, and pins it carried that were withdrawn after it.
    let head_id = head.as_str();
    let on_branch = |e: &codewhale_journal::Entry, r: &codewhale_journal::CompactionPayload| {
        match (&r.covers, &e.parent) {
            (Some(c), _) => journal.is_ancestor(c.last.as_str(), head_id),
            (None, Some(parent)) => journal.is_ancestor(parent.as_str(), head_id),
            (None, None) => false,
        }
    };
    let mut savings: u64 = journal
        .compactions()
        .filter(|(e, _)| journal.line_of(e.id.as_str()).unwrap_or(0) > basis_line)
        .filter(|(e, r)| on_branch(e, r))
        .filter_map(|(_, r)| r.savings)
        .sum();
    for (at, id) in &withdrawn {
        let Some(pin) = spine[..basis].iter().find(|e| e.id.as_str() == *id) else { continue };
        if *at >= basis {
            savings += tokens(pin);
        }
    }
    budget.record_compaction(view_total, savings);
    budget
}
