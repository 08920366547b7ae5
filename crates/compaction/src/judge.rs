//! Whether a compaction record may be written: the checks of `commit` as a pure function of the
//! view before, the record and the view it would produce (docs/compaction.md, *The summary
//! request*).
//!
//! In order: the record must change what the model reads; the new view must be the record's
//! own (its active compaction is this record) and sendable ([`check_view`]); it must pass the
//! survival contract against the old view ([`survival::check`]) — the anchors and the live
//! plan's steps restated by a summary note, or kept by any other pass, and every branch
//! summary verbatim; and it must be smaller. Invariant: [`judge`] reads nothing but its
//! arguments, so a refusal names what the record itself would have broken.

use codewhale_journal::{check_view, CompactionPath, CompactionPayload, Entry, Payload, View};

use super::plain::PlainView;
use super::survival::{self, SurvivalInput};
use codewhale_protocol::plan::Plan;

/// Why a record was not written.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The record would change nothing worth writing.
    NoChange,
    /// The record would not make the view smaller; the reason, for the user. An auto or
    /// reactive pass fails on it; a manual one says there is nothing to compact.
    NoGain(String),
    /// A check failed; the reason, for the user.
    Failed(String),
    /// An exact proposal passed every check but leaves the request over the target.
    OverTarget,
}

/// A record and the views it is judged on.
#[derive(Clone, Copy, Debug)]
pub struct Judged<'a> {
    /// The view before the pass, as plain messages.
    pub before: &'a PlainView,
    /// The record the view before was rendered under, if any.
    pub previous: Option<&'a CompactionPayload>,
    /// The record's entry, as it would be appended.
    pub entry: &'a Entry,
    /// The view with the record in, as the journal renders it and as plain messages.
    pub view: &'a View,
    pub plain: &'a PlainView,
    /// The anchors text (redacted), when the workspace has anchors.
    pub anchors: Option<&'a str>,
    /// HEAD's live plan.
    pub live_plan: Option<&'a Plan>,
    /// The kept-tail target (estimated tokens) that tells a long discussion, as the cut read
    /// it ([`super::cut::CutPolicy::long_tail_target`]).
    pub tail_target: u64,
}

/// Judges `j`: the estimated totals before and after when the record may be written.
pub fn judge(j: &Judged<'_>) -> Result<(u64, u64), Refusal> {
    let Payload::Compaction(record) = &j.entry.payload else {
        return Err(Refusal::Failed("the record is not a compaction record".into()));
    };
    let path = &record.path;
    if !changes_something(record, j.previous) {
        return Err(Refusal::NoChange);
    }
    if j.view.compaction.as_ref().map(|c| &c.id) != Some(&j.entry.id) {
        return Err(Refusal::Failed("the new record would not describe the current branch".into()));
    }
    check_view(j.view)
        .map_err(|e| Refusal::Failed(format!("the compacted view is not sendable: {e}")))?;
    let before = &j.before.messages;
    // A summary pass restates the anchors, so they must be there. Any other pass restates
    // nothing: it must only not lose anchors the view already carried.
    let summary = *path == CompactionPath::Summary;
    let anchors: Vec<String> = j
        .anchors
        .filter(|a| summary || survival::carries(before, a))
        .map(str::to_owned)
        .into_iter()
        .collect();
    // Likewise the live plan: a summary note restates it; any other pass must keep the steps
    // the view already carried.
    let plan_steps: Vec<String> = j
        .live_plan
        .iter()
        .flat_map(|p| p.steps.iter().map(|s| s.step.clone()))
        .filter(|step| {
            summary || super::plan_steps::carried(before, std::slice::from_ref(step)).is_empty()
        })
        .collect();
    // Every branch summary the view carried must still be there, verbatim.
    let branch_summaries: Vec<String> = before
        .iter()
        .filter(|m| m.branch_summary)
        .flat_map(|m| m.texts().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    let violations = survival::check(&SurvivalInput {
        original: before,
        replacement: &j.plain.messages,
        last_round_start: None,
        tail: Some(super::round::TailMeasure { tokens: &j.before.tokens, target: j.tail_target }),
        anchors: &anchors,
        branch_summaries: &branch_summaries,
        require_checkpoint: summary,
        plan_steps: &plan_steps,
    });
    if !violations.is_empty() {
        return Err(Refusal::Failed(format!(
            "the survival contract refused it: {}",
            survival::describe(&violations)
        )));
    }
    let (old_total, new_total) = (j.before.total(), j.plain.total());
    if new_total >= old_total {
        return Err(Refusal::NoGain(format!(
            "the pass would not shrink the view ({old_total} → {new_total} estimated tokens): \
             what is left is the protected last round, the note and the anchors"
        )));
    }
    Ok((old_total, new_total))
}

/// Whether `record` differs in what the model reads from `previous` (the record it replaces).
fn changes_something(record: &CompactionPayload, previous: Option<&CompactionPayload>) -> bool {
    let Some(previous) = previous else { return record.is_valid() };
    record.covers != previous.covers
        || record.note != previous.note
        || record.pruned_ids.len() != previous.pruned_ids.len()
        || record.bounded != previous.bounded
        || record.retained_ids != previous.retained_ids
}

#[cfg(test)]
mod tests;
