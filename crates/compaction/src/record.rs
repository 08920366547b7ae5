//! Building the compaction record (docs/journal-format.md, *`compaction`*) from a plan: pure
//! bookkeeping.
//!
//! Invariants kept here: `covers` extends the previous record's segment (same `first`, later
//! `last`) instead of nesting it, so a record's size never grows with the session; `pruned_ids`
//! and `bounded` only name entries after the covered segment or retained before the note; a
//! prune-only record carries the previous record's summary, note, covers, retained ids and files
//! forward so exactly one record describes the view.

use codewhale_journal::{
    ActiveCompaction, Bounded, CompactionPath, CompactionPayload, Covers, EntryId, Receipt, Trigger,
};

use super::checkpoint::is_checkpoint;
use super::cut::CutPlan;
use super::message::Role;
use super::plain::PlainView;

/// The covered segment of a summary pass that cuts `plain` at `plan.cut`.
pub fn covers(
    plain: &PlainView,
    plan: &CutPlan,
    previous: Option<&ActiveCompaction>,
) -> Option<Covers> {
    let cut = plan.cut;
    let checkpoint = plain.messages[..cut].iter().rposition(is_checkpoint);
    let new_start = checkpoint.map_or(0, |i| i + 1);
    let last = plain.sources.get(cut.checked_sub(1)?)?.clone();
    let new_count = (new_start..cut).count() as u64;
    match previous.and_then(|p| p.record.covers.as_ref()) {
        Some(prev) if checkpoint.is_some() => {
            Some(Covers::new(prev.first.clone(), last, prev.count + new_count))
        }
        // No record describes the view: any checkpoint in it is a legacy summary, a real entry,
        // and is covered like the rest so the new note replaces it.
        _ => Some(Covers::new(plain.sources.first()?.clone(), last, cut as u64)),
    }
}

/// What the pass kept of the last round.
pub fn receipt(plain: &PlainView, plan: &CutPlan, anchors: Option<&str>) -> Receipt {
    receipt_at(plain, plan.round_start, plan.cut, plan.retained_tokens, anchors)
}

/// What a record whose covered part ends at message `cut` of `plain` keeps of the last round
/// starting at `round_start` (the figures of the round itself; the exchanges a long discussion
/// keeps from before it are in `retained_ids`).
fn receipt_at(
    plain: &PlainView,
    round_start: usize,
    cut: usize,
    retained_user_tokens: u64,
    anchors: Option<&str>,
) -> Receipt {
    let round = &plain.messages[round_start.min(plain.messages.len())..];
    Receipt {
        last_round_messages: round.len() as u64,
        last_round_tool_results: round.iter().map(|m| m.tool_result_ids().count() as u64).sum(),
        assistant_kept: plain.messages[cut.min(plain.messages.len())..]
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count() as u64,
        anchors_chars: anchors.map_or(0, |a| a.chars().count() as u64),
        retained_user_tokens,
        extra: Default::default(),
    }
}

/// The receipt of `record` (prepared earlier, on a snapshot) as of the view `plain` it is
/// about to replace: turns went on since the snapshot, so the last round and what is kept after
/// the covered part are those of `plain`, not the snapshot's. Unchanged when `plain` does not
/// hold the record's covered segment.
pub fn receipt_now(
    plain: &PlainView,
    record: &mut CompactionPayload,
    anchors: Option<&str>,
    policy: &super::cut::CutPolicy,
) {
    let Some(last) = record.covers.as_ref().map(|c| &c.last) else { return };
    let Some(at) = plain.sources.iter().position(|s| s == last) else { return };
    let Some(round) = policy.round(&plain.messages, &plain.tokens) else { return };
    let round_start = round.start;
    let retained = record.receipt.as_ref().map_or(0, |r| r.retained_user_tokens);
    record.receipt = Some(receipt_at(plain, round_start, at + 1, retained, anchors));
}

/// Inputs of a summary record beyond the plan.
#[derive(Debug)]
pub struct SummaryRecord<'a> {
    pub plain: &'a PlainView,
    pub plan: &'a CutPlan,
    pub previous: Option<&'a ActiveCompaction>,
    pub trigger: Trigger,
    pub focus: Option<String>,
    pub summary: String,
    pub note: String,
    pub files_touched: Vec<String>,
    pub anchors: Option<String>,
    pub model: String,
}

/// The record of a summary pass.
pub fn summary_record(input: SummaryRecord<'_>) -> Option<CompactionPayload> {
    let SummaryRecord { plain, plan, previous, .. } = input;
    let mut record = CompactionPayload::new(CompactionPath::Summary, input.trigger);
    record.covers = Some(covers(plain, plan, previous)?);
    record.retained_ids = plan.retained.iter().map(|&i| plain.sources[i].clone()).collect();
    // Results an earlier pass pruned that stay in the kept tail, or in a retained exchange,
    // stay pruned.
    record.pruned_ids = plain
        .pruned
        .iter()
        .filter(|&&i| i >= plan.cut || plan.retained.binary_search(&i).is_ok())
        .map(|&i| plain.sources[i].clone())
        .collect();
    record.bounded =
        plan.bounded.iter().map(|&(i, max)| Bounded::new(plain.sources[i].clone(), max)).collect();
    record.receipt = Some(receipt(plain, plan, input.anchors.as_deref()));
    record.files_touched = input.files_touched;
    record.anchors = input.anchors;
    record.focus = input.focus;
    record.previous_id = previous.map(|p| p.id.clone());
    record.model = Some(input.model);
    record.summary = Some(input.summary);
    record.note = input.note;
    Some(record)
}

/// The record of a prune-only pass: the previous record carried forward plus `pruned`.
pub fn prune_record(
    plain: &PlainView,
    pruned: &[usize],
    previous: Option<&ActiveCompaction>,
    trigger: Trigger,
) -> CompactionPayload {
    let mut record = CompactionPayload::new(CompactionPath::PruneOnly, trigger);
    if let Some(prev) = previous {
        let p = &prev.record;
        record.summary = p.summary.clone();
        record.note = p.note.clone();
        record.covers = p.covers.clone();
        record.retained_ids = p.retained_ids.clone();
        record.pruned_ids = p.pruned_ids.clone();
        record.bounded = p.bounded.clone();
        record.files_touched = p.files_touched.clone();
        record.anchors = p.anchors.clone();
        record.focus = p.focus.clone();
        record.model = p.model.clone();
        record.receipt = p.receipt.clone();
        record.previous_id = Some(prev.id.clone());
    }
    let new: Vec<EntryId> = pruned.iter().map(|&i| plain.sources[i].clone()).collect();
    record.pruned_ids.extend(new.into_iter().filter(|id| !record.retained_ids.contains(id)));
    record
}

/// Records on `record` what the summary requests behind it cost (`cost_usd`, when known) and
/// the tokens they read and wrote (`usage`), so a session's total (`codewhale sessions`) and
/// `codewhale eval` count its notes too.
pub fn cost(
    record: &mut codewhale_journal::CompactionPayload,
    stats: &crate::summary::SummaryStats,
) {
    if let Some(cost) = stats.cost_usd {
        record.extra.insert("cost_usd".to_owned(), serde_json::json!(cost));
    }
    if stats.input_tokens + stats.output_tokens > 0 {
        let usage = serde_json::json!({
            "input_tokens": stats.input_tokens,
            "output_tokens": stats.output_tokens,
        });
        record.extra.insert("usage".to_owned(), usage);
    }
}

/// The tokens a record's summary requests read and wrote (its `usage`), `(0, 0)` when none
/// was recorded.
pub fn usage(record: &codewhale_journal::CompactionPayload) -> (u64, u64) {
    let usage = record.extra.get("usage");
    let field = |name: &str| usage.and_then(|u| u.get(name)).and_then(serde_json::Value::as_u64);
    (field("input_tokens").unwrap_or(0), field("output_tokens").unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use codewhale_journal::EntryId;

    use super::*;
    use crate::message::Message;

    fn plain(messages: Vec<Message>) -> PlainView {
        let n = messages.len();
        PlainView {
            tokens: vec![10; n],
            sources: (0..n).map(|i| EntryId::from(format!("e{i}").as_str())).collect(),
            messages,
            pruned: Vec::new(),
        }
    }

    fn plan(cut: usize) -> CutPlan {
        CutPlan {
            round_start: cut,
            protected_start: cut,
            cut,
            retained: Vec::new(),
            retained_tokens: 0,
            bounded: Vec::new(),
            tail_tokens: 0,
        }
    }

    #[test]
    fn a_first_pass_covers_from_the_start_including_a_legacy_summary() {
        let p = plain(vec![
            Message::user("Conversation Summary (Auto-Generated): earlier work"),
            Message::assistant("ok"),
            Message::user("next"),
        ]);
        let covers = covers(&p, &plan(2), None).unwrap();
        assert_eq!((covers.first.as_str(), covers.last.as_str(), covers.count), ("e0", "e1", 2));
    }
}
