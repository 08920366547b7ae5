//! Fail open (DESIGN §5.1): when no pass could bring the view under the window, send a request
//! that leaves out the oldest whole exchanges outside the protected round.
//!
//! Anchors and the checkpoint are never left out (the system prompt, with the project
//! instructions, is not part of the view and is always sent). Nothing is written here: the
//! caller records the first history item still sent as `reads.trimmed_before` on the assistant
//! entry and shows a notice. When even the protected round plus anchors does not fit, [`fit`]
//! says so, and the turn stops with a message naming what is protected and what to do.

use codewhale_journal::{EntryId, ItemKind, View};

use super::checkpoint::is_checkpoint;
use super::message::Role;
use super::plain::PlainView;
use super::round;

/// What to send.
#[derive(Debug)]
pub enum Fit {
    /// The view fits as it is.
    Whole(View),
    /// The oldest exchanges were left out; `first` is the first history item still sent and
    /// `estimate` the o200k estimate (system included) of what is sent.
    Trimmed { view: View, first: EntryId, dropped: usize, estimate: u64 },
    /// Even the protected round plus anchors exceeds usable input; the view comes back
    /// unchanged.
    TooBig { view: View, protected_tokens: u64 },
}

/// Fits `view` (with `plain` its plain form and counts) into `usable_input` provider tokens,
/// given the system prompt's estimate and the calibration ratio.
pub fn fit(view: View, plain: &PlainView, system: u64, calibration: f64, usable_input: u64) -> Fit {
    let c = calibration.clamp(1.0, 2.0);
    let provider = |estimate: u64| (estimate as f64 * c).ceil() as u64;
    let mut total = system + plain.total();
    if provider(total) <= usable_input {
        return Fit::Whole(view);
    }
    let messages = &plain.messages;
    let round_start = round::last_round_start(messages).unwrap_or(0);
    let legal = round::legal_cuts(messages);
    let pinned = |i: usize| {
        is_checkpoint(&messages[i])
            || messages[i].anchor
            || view.items[i].kind == ItemKind::Checkpoint
            || view.items[i].kind == ItemKind::Anchor
    };
    // Exchange starts before the round: a user message (or anything after a pinned item) where
    // no call is pending, so a question leaves with its answer and a call with its results.
    let starts: Vec<usize> = (0..=round_start)
        .filter(|&i| {
            i == round_start
                || (legal[i]
                    && !pinned(i)
                    && (i == 0
                        || pinned(i - 1)
                        || (messages[i].role == Role::User && !messages[i].has_tool_result())))
        })
        .collect();
    let mut drop = vec![false; messages.len()];
    let mut dropped_until = None;
    for pair in starts.windows(2) {
        if provider(total) <= usable_input {
            break;
        }
        for (i, dropped) in drop.iter_mut().enumerate().take(pair[1]).skip(pair[0]) {
            if !pinned(i) {
                *dropped = true;
                total -= plain.tokens[i];
            }
        }
        dropped_until = Some(pair[1]);
    }
    if provider(total) > usable_input {
        return Fit::TooBig { view, protected_tokens: provider(total) };
    }
    let Some(first_kept) = dropped_until else {
        return Fit::Whole(view);
    };
    let first = plain.sources.get(first_kept).cloned().unwrap_or_else(|| view.head.clone());
    let dropped = drop.iter().filter(|d| **d).count();
    let View { head, items, compaction } = view;
    let items = items.into_iter().zip(drop).filter(|(_, d)| !d).map(|(item, _)| item).collect();
    Fit::Trimmed { view: View { head, items, compaction }, first, dropped, estimate: total }
}

#[cfg(test)]
mod tests {
    use codewhale_journal::{AssistantPayload, Block, Entry, HeaderPayload, Journal, UserPayload};

    use super::*;

    fn journal() -> Journal {
        let header = Entry::new(None, HeaderPayload::new("s", "/w"));
        let mut journal = Journal::new(header.clone()).unwrap();
        let mut parent = header.id.clone();
        let payloads: Vec<codewhale_journal::Payload> = vec![
            UserPayload::text("q0").into(),
            AssistantPayload::new(vec![Block::text("a0")]).into(),
            UserPayload::anchor("pinned").into(),
            UserPayload::text("q1").into(),
            AssistantPayload::new(vec![Block::text("a1")]).into(),
            UserPayload::text("q2").into(),
        ];
        for p in payloads {
            let e = Entry::new(Some(parent.clone()), p).with_tokens(100);
            parent = e.id.clone();
            journal.push(e);
        }
        journal
    }

    fn plain_of(view: &View) -> PlainView {
        PlainView::new(view, |i| i.tokens)
    }

    #[test]
    fn a_view_that_fits_is_sent_whole() {
        let j = journal();
        let view = codewhale_journal::render(&j, j.head_id().as_str());
        let plain = plain_of(&view);
        assert!(matches!(fit(view, &plain, 50, 1.0, 650), Fit::Whole(_)));
    }

    #[test]
    fn the_oldest_exchanges_go_first_and_anchors_stay() {
        let j = journal();
        let view = codewhale_journal::render(&j, j.head_id().as_str());
        let plain = plain_of(&view);
        let Fit::Trimmed { view, first, dropped, estimate } = fit(view, &plain, 50, 1.0, 450)
        else {
            panic!("expected a trim")
        };
        assert_eq!(dropped, 2);
        assert_eq!(estimate, 450);
        assert_eq!(first, plain.sources[3], "q1 is the first history item still sent");
        let kinds: Vec<ItemKind> = view.items.iter().map(|i| i.kind).collect();
        assert_eq!(kinds, [ItemKind::Anchor, ItemKind::User, ItemKind::Assistant, ItemKind::User]);
    }

    #[test]
    fn a_protected_round_that_cannot_fit_is_too_big() {
        let j = journal();
        let view = codewhale_journal::render(&j, j.head_id().as_str());
        let plain = plain_of(&view);
        let Fit::TooBig { protected_tokens, .. } = fit(view, &plain, 50, 2.0, 300) else {
            panic!("expected too big")
        };
        assert_eq!(protected_tokens, 2 * (50 + 100 + 100));
    }
}
