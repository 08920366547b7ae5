//! The last step of every pass: fit the record's view into the window, check it, write it.
//!
//! A record is checked on the view it would produce, rendered with the record added to the
//! journal's index ([`codewhale_journal::render_with_record`]) — never on a copy of the journal,
//! so the check costs what the new view holds, however long the session. In order:
//! 1. **Fit.** When the would-be request is over the target, the record gets bounds (see
//!    [`super::bound`]): the largest tool results and messages after the checkpoint are cut
//!    first, anchors and the checkpoint never. Existing tighter bounds stay.
//! 2. **Check.** The new view must be the record's own, sendable, and pass the survival contract
//!    against the old one; and it must be smaller (the pure [`super::judge`]).
//! 3. **Write.** Append, sync, update the budget, re-read the project instructions.
//!
//! Invariant: nothing is appended unless every check passed.

use codewhale_journal::{
    render_with_record, Bounded, CompactionPath, CompactionPayload, Entry, EntryId, ItemKind,
    Payload, View,
};

use super::bound::{self, Candidate};
use super::judge::{self, Judged, Refusal};
use super::plain::PlainView;

use crate::compaction::port::Conversation;
use crate::session::counts;

/// What a pass writes.
#[derive(Debug)]
pub(crate) struct Proposal<'a> {
    /// The view before the pass, as plain messages.
    pub plain: &'a PlainView,
    /// The record that describes that view, if any.
    pub previous: Option<&'a CompactionPayload>,
    pub record: CompactionPayload,
    /// The entry the record is parented on (the splice point).
    pub parent: EntryId,
    /// The anchors text, when the workspace has anchors.
    pub anchors: Option<&'a str>,
    /// Pressure before the pass (provider tokens), for `tokens_before`.
    pub tokens_before: u64,
    /// The request should fit under this many provider tokens.
    pub target: u64,
    /// Take the record as it is: a view over the target is refused ([`Refusal::OverTarget`])
    /// instead of bounded. A background note is committed only like this (docs/compaction.md,
    /// *Background compaction*).
    pub exact: bool,
}

/// A record that passed every check and was written.
#[derive(Debug)]
pub(crate) struct Written {
    pub id: EntryId,
    pub path: CompactionPath,
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// False when even the smallest bounds left the request over the target.
    pub fits: bool,
}

/// Fits, checks and writes `proposal`.
pub(crate) async fn commit(
    session: &mut dyn Conversation,
    proposal: Proposal<'_>,
) -> Result<Written, Refusal> {
    let Proposal { plain, previous, mut record, parent, anchors, tokens_before, target, exact } =
        proposal;
    let path = record.path.clone();
    let head = session.journal().head_id().clone();
    let mut entry = record_entry(&parent, record.clone());
    let mut new_view = render_with_record(session.journal(), head.as_str(), &entry);
    let mut new_plain = plain_with_note(session, &new_view, &entry);
    let (bounds, fits) = fit_plan(session, &new_view, &new_plain, target);
    let over_target = !bounds.is_empty();
    if over_target && !exact {
        merge_bounds(&mut record, &bounds);
        entry = record_entry(&parent, record);
        new_view = render_with_record(session.journal(), head.as_str(), &entry);
        new_plain = plain_with_note(session, &new_view, &entry);
    }
    let live_plan = session.live_plan();
    let budget = session.budget();
    let tail_target = budget.limits().cut_policy(budget.calibration()).long_tail_target();
    let (old_total, new_total) = judge::judge(&Judged {
        before: plain,
        previous,
        entry: &entry,
        view: &new_view,
        plain: &new_plain,
        anchors,
        live_plan: live_plan.as_ref(),
        tail_target,
    })?;
    if exact && over_target {
        return Err(Refusal::OverTarget);
    }
    // The figure the gauge shows once the record is in: the budget as it will stand, with the
    // system prompt re-read as it is after every pass.
    session.refresh_system_prompt();
    let mut after = session.budget().clone();
    after.record_compaction(new_total, old_total - new_total);
    let tokens_after = after.pressure().tokens;
    if let Payload::Compaction(r) = &mut entry.payload {
        r.tokens_before = Some(tokens_before);
        r.tokens_after = Some(tokens_after);
        // What a reopened session subtracts from the last report, as the live budget does.
        r.savings = Some(old_total - new_total);
        // The plan as of this pass, so finding the live plan later stops at this record.
        let plan = serde_json::to_value(&live_plan).unwrap_or(serde_json::Value::Null);
        r.extra.insert(crate::plan::RECORD_KEY.to_owned(), plan);
    }
    let id = entry.id.clone();
    let (note, trigger) = (record_note(&entry), record_trigger(&entry));
    session
        .append_entry(entry)
        .map_err(|e| Refusal::Failed(format!("cannot write the record: {e}")))?;
    if exact {
        // A background record is committed by the turn that crosses the threshold: the writer
        // syncs it now while that turn's request goes out, and the end-of-turn sync reports a
        // failure (the reply that read the record is never shown as complete without it).
        session
            .sync_detached()
            .map_err(|e| Refusal::Failed(format!("cannot sync the record: {e}")))?;
    } else {
        session
            .sync()
            .await
            .map_err(|e| Refusal::Failed(format!("cannot sync the record: {e}")))?;
    }
    *session.budget_mut() = after;
    // The user's `PostCompact` hooks, at the commit: what they print follows the record.
    session.post_compact(&note, &trigger).await;
    Ok(Written { id, path, tokens_before, tokens_after, fits })
}

fn record_note(entry: &Entry) -> String {
    match &entry.payload {
        Payload::Compaction(r) => r.note.clone(),
        _ => String::new(),
    }
}

fn record_trigger(entry: &Entry) -> codewhale_journal::Trigger {
    match &entry.payload {
        Payload::Compaction(r) => r.trigger.clone(),
        _ => codewhale_journal::Trigger::Auto,
    }
}

pub(crate) fn record_entry(parent: &EntryId, record: CompactionPayload) -> Entry {
    let note_tokens = counts::exact(&record.note);
    Entry::new(Some(parent.clone()), record).with_tokens(note_tokens)
}

/// The plain form of a would-be view; the checkpoint is counted from the record's note.
pub(crate) fn plain_with_note(session: &dyn Conversation, view: &View, entry: &Entry) -> PlainView {
    crate::compaction::plain::of(view, |item| {
        if item.source == entry.id {
            entry.tokens
        } else {
            session.known_tokens(item)
        }
    })
}

/// Bounds that bring `view` (with the system prompt) under `target` provider tokens, and
/// whether they do. Only what follows the checkpoint may be bounded, never an anchor.
fn fit_plan(
    session: &dyn Conversation,
    view: &View,
    plain: &PlainView,
    target: u64,
) -> (Vec<Bounded>, bool) {
    let budget = session.budget();
    let available = crate::budget::from_provider(target as f64, budget.calibration())
        .saturating_sub(budget.system_tokens());
    let after = view.items.iter().position(|i| i.kind == ItemKind::Checkpoint).map_or(0, |i| i + 1);
    let candidates: Vec<Candidate> = view
        .items
        .iter()
        .enumerate()
        .skip(after)
        .filter(|(_, item)| item.kind != ItemKind::Anchor && item.kind != ItemKind::Checkpoint)
        .map(|(index, item)| {
            let bytes = bound::message_bytes(&plain.messages[index]);
            match item.kind {
                ItemKind::ToolResult => Candidate::tool_result(index, bytes, plain.tokens[index]),
                _ => Candidate::message(index, bytes, plain.tokens[index]),
            }
        })
        .collect();
    let planned = bound::plan(&candidates, plain.total(), available);
    let bounds = planned
        .bounds
        .iter()
        .map(|&(index, max)| Bounded::new(view.items[index].source.clone(), max))
        .collect();
    (bounds, planned.fits)
}

/// Adds `bounds` to the record; where it already bounds an entry, the tighter bound wins.
fn merge_bounds(record: &mut CompactionPayload, bounds: &[Bounded]) {
    for b in bounds {
        match record.bounded.iter_mut().find(|old| old.id == b.id) {
            Some(old) => old.max_bytes = old.max_bytes.min(b.max_bytes),
            None => record.bounded.push(b.clone()),
        }
    }
}

/// The `CompactionFinished` of record `id`, as the journal holds it.
pub(crate) fn finished_event(
    session: &dyn Conversation,
    id: &str,
    trigger: codewhale_protocol::CompactionTrigger,
    (tokens_before, tokens_after): (u64, u64),
) -> codewhale_protocol::Event {
    let record = session.journal().get(id).and_then(|e| match &e.payload {
        codewhale_journal::Payload::Compaction(r) => Some(r),
        _ => None,
    });
    codewhale_protocol::Event::CompactionFinished {
        id: id.to_owned(),
        trigger,
        path: crate::history_pages::kind_of(
            &record.map_or(CompactionPath::Summary, |r| r.path.clone()),
        ),
        tokens_before,
        tokens_after,
        covered: record.and_then(|r| r.covers.as_ref()).map_or(0, |c| c.count),
        retained: record.map_or(0, |r| r.retained_ids.len() as u64),
        note: record
            .map(|r| codewhale_journal::checkpoint_note(r).into_owned())
            .unwrap_or_default(),
        background: record.is_some_and(|r| r.background),
    }
}
