//! Fail open (docs/compaction.md, *Room is always found*): when no pass could bring the view under
//! the window, send a request that leaves out the oldest whole exchanges outside the protected part
//! of the last round.
//!
//! Anchors, the checkpoint and the last round's user texts are never left out, nor the round's
//! two newest exchanges (the system prompt, with the project instructions, is not part of the
//! view and is always sent). Nothing is written here: the caller records the first history item
//! still sent after a left-out one as `reads.trimmed_before` (and, when the request itself had
//! to be bounded, `reads.bounded`) on the assistant entry and shows a notice. When even the
//! protected part plus anchors does not fit, [`fit`] says so, and the turn stops with a message
//! naming what is too big and what to do.
//!
//! A request that leaves messages out says so: [`notice`] is a system block sent after the
//! system prompt, naming how many messages are missing, that `recall` reads them, and
//! restating the live plan — whose `update_plan` call may be among them — as a note would.

use codewhale_journal::{Bounded, EntryId, ItemKind, View};

use super::bound::{self, Candidate};
use super::checkpoint::is_checkpoint;
use super::cut::{self, CutPolicy};
use super::message::Role;
use super::plain::PlainView;
use super::round;

const NOTICE: &str = include_str!("../../../../assets/prompts/trimmed-request.md");
const NOTICE_PLAN: &str = include_str!("../../../../assets/prompts/trimmed-request-plan.md");

/// The system block that ends a request which leaves out `dropped` messages before `first`:
/// what is missing, where to find it, and the live plan (a note's `## Plan` section).
pub fn notice(dropped: usize, first: &EntryId, plan: Option<&crate::plan::Plan>) -> String {
    let mut out = NOTICE
        .trim_ascii_end()
        .replace("{dropped}", &dropped.to_string())
        .replace("{first}", first.as_str());
    if let Some(plan) = plan {
        out.push_str("\n\n");
        out.push_str(&NOTICE_PLAN.trim_ascii_end().replace("{plan}", &crate::plan::section(plan)));
    }
    out
}

/// An upper bound of [`notice`]'s o200k count for any count and id: what a request that may
/// be trimmed reserves for it.
pub fn notice_tokens(plan: Option<&crate::plan::Plan>) -> u64 {
    let widest = EntryId::from_string("f".repeat(36));
    crate::tokens::upper_bound_bytes(notice(usize::MAX, &widest, plan).len() as u64)
}

/// What to send.
#[derive(Debug)]
pub enum Fit {
    /// The view fits as it is.
    Whole(View),
    /// The oldest exchanges were left out (and, when even that was not enough, the rest was
    /// bounded: `bounded`); `first` is the first history item still sent after a left-out one
    /// and `estimate` the o200k estimate (system included) of what is sent.
    Trimmed { view: View, first: EntryId, dropped: usize, estimate: u64, bounded: Vec<Bounded> },
    /// Even the protected part plus anchors exceeds usable input; the view comes back
    /// unchanged.
    TooBig { view: View, protected_tokens: u64 },
}

/// What may be shortened to make a request fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shorten {
    /// Only leave out whole exchanges.
    Drop,
    /// Leave out what may be left out, then bound what remains (no pass was left to do it).
    DropAndBound,
}

/// Fits `view` (with `plain` its plain form and counts) into `policy.usable_input` provider
/// tokens, given the system prompt's estimate and `policy`'s calibration ratio.
///
/// What may be left out: whole rounds before the last one (a question with its answer and its
/// tool calls), and the last round's exchanges older than its protected part — never its user
/// texts, its two newest exchanges (or, after a long discussion, the two it keeps from before
/// the round), an anchor, a branch summary or the checkpoint; and, as a
/// note retains them, never the user's older texts that fit the retained budget (newest first,
/// docs/compaction.md, *The cut*): what the user said outlives the answers around it.
pub fn fit(
    view: View,
    plain: &PlainView,
    system: u64,
    policy: &CutPolicy,
    shorten: Shorten,
) -> Fit {
    let usable_input = policy.usable_input;
    let total = system + plain.total();
    if to_provider(total, policy) <= usable_input {
        return Fit::Whole(view);
    }
    let trim = Trim::new(&view, plain, policy);
    let mut left = trim.drop_oldest(total);
    let mut bounded = Vec::new();
    if to_provider(left.total, policy) > usable_input && shorten == Shorten::DropAndBound {
        bounded = trim.bound_rest(&mut left, system);
    }
    if to_provider(left.total, policy) > usable_input {
        return Fit::TooBig { view, protected_tokens: to_provider(left.total, policy) };
    }
    if left.last_dropped.is_none() && bounded.is_empty() {
        return Fit::Whole(view);
    }
    let first = trim.first_sent(&left);
    trimmed(view, left, bounded, first)
}

/// `estimate` in provider tokens, by `policy`'s calibration ratio.
fn to_provider(estimate: u64, policy: &CutPolicy) -> u64 {
    crate::budget::to_provider(estimate, policy.calibration)
}

/// What the steps of a trim share: the view and its plain form, the policy, the last round and
/// the user texts the retained budget keeps.
struct Trim<'a> {
    view: &'a View,
    plain: &'a PlainView,
    policy: &'a CutPolicy,
    round: round::Round,
    retained: Vec<usize>,
}

/// What is left after the oldest exchanges are left out: which messages go, the last of them,
/// and the estimate (system included) of what is sent.
struct Left {
    drop: Vec<bool>,
    last_dropped: Option<usize>,
    total: u64,
}

impl<'a> Trim<'a> {
    fn new(view: &'a View, plain: &'a PlainView, policy: &'a CutPolicy) -> Trim<'a> {
        let messages = &plain.messages;
        let round = policy.round(messages, &plain.tokens).unwrap_or_default();
        let (round_start, protected_start) = (round.start, round.protected_start);
        let (retained, _) =
            cut::retain(messages, &plain.tokens, protected_start, round_start, policy);
        Trim { view, plain, policy, round, retained }
    }

    /// Whether message `i` is never left out: a retained user text, one of the exchanges the
    /// round protects, the checkpoint, an anchor, a branch summary, or a user text of the round.
    fn pinned(&self, i: usize) -> bool {
        let (messages, view, round) = (&self.plain.messages, self.view, &self.round);
        let round_start = round.start;
        self.retained.binary_search(&i).is_ok()
            || round.holds_exchange(i)
            || is_checkpoint(&messages[i])
            || messages[i].anchor
            || messages[i].branch_summary
            || view.items[i].kind == ItemKind::Checkpoint
            || view.items[i].kind == ItemKind::Anchor
            || (i >= round_start
                && messages[i].role == Role::User
                && !messages[i].has_tool_result())
    }

    /// Where what may be left out starts, oldest first, ending with the protected part.
    fn starts(&self) -> Vec<usize> {
        let messages = &self.plain.messages;
        let (round_start, protected_start) = (self.round.start, self.round.protected_start);
        let pinned = |i: usize| self.pinned(i);
        let legal = round::legal_cuts(messages);
        // Before the round: a user message (or anything after a pinned item) where no call is
        // pending, so a question leaves with its answer and a call with its results. Inside the
        // round: every exchange start up to the protected part.
        let mut starts: Vec<usize> = (0..round_start)
            .filter(|&i| {
                legal[i]
                    && !pinned(i)
                    && (i == 0
                        || pinned(i - 1)
                        || (messages[i].role == Role::User && !messages[i].has_tool_result()))
            })
            .collect();
        starts.extend(
            round::exchange_starts(messages)
                .into_iter()
                .filter(|&i| i >= round_start && i < protected_start),
        );
        starts.push(protected_start);
        starts.dedup();
        starts
    }

    /// Leaves out the oldest exchanges, whole, until the request fits (or nothing more may go).
    fn drop_oldest(&self, mut total: u64) -> Left {
        let plain = self.plain;
        let mut drop = vec![false; plain.messages.len()];
        let mut last_dropped = None;
        for pair in self.starts().windows(2) {
            if to_provider(total, self.policy) <= self.policy.usable_input {
                break;
            }
            for (i, dropped) in drop.iter_mut().enumerate().take(pair[1]).skip(pair[0]) {
                if !self.pinned(i) {
                    *dropped = true;
                    total -= plain.tokens[i];
                    last_dropped = Some(i);
                }
            }
        }
        Left { drop, last_dropped, total }
    }

    /// Bounds what is still sent, largest first, when that makes the request fit: the bounds,
    /// with `left.total` lowered by what they save (none when even they do not fit).
    fn bound_rest(&self, left: &mut Left, system: u64) -> Vec<(usize, u64)> {
        let (messages, view, plain) = (&self.plain.messages, self.view, self.plain);
        let (drop, total) = (&left.drop, left.total);
        let (calibration, usable_input) = (self.policy.calibration, self.policy.usable_input);
        let budget =
            crate::budget::from_provider(usable_input as f64, calibration).saturating_sub(system);
        let candidates: Vec<Candidate> = (0..messages.len())
            .filter(|&i| {
                !drop[i]
                    && !messages[i].anchor
                    && !messages[i].branch_summary
                    && !is_checkpoint(&messages[i])
            })
            .map(|i| {
                let bytes = bound::message_bytes(&messages[i]);
                match view.items[i].kind {
                    ItemKind::ToolResult => Candidate::tool_result(i, bytes, plain.tokens[i]),
                    _ => Candidate::message(i, bytes, plain.tokens[i]),
                }
            })
            .collect();
        let kept: u64 = total.saturating_sub(system);
        let planned = bound::plan(&candidates, kept, budget);
        if planned.fits {
            left.total = system + kept - planned.saved;
            planned.bounds
        } else {
            Vec::new()
        }
    }

    /// The first item sent after the last left-out one that is not an anchor, a branch summary
    /// or the checkpoint (those are always sent, wherever they stand); a user text kept by the
    /// retained budget or the round counts, so what comes before `first` was left out.
    fn first_sent(&self, left: &Left) -> EntryId {
        let (messages, view, plain) = (&self.plain.messages, self.view, self.plain);
        let drop = &left.drop;
        let anywhere = |k: usize| {
            is_checkpoint(&messages[k])
                || messages[k].anchor
                || messages[k].branch_summary
                || view.items[k].kind == ItemKind::Checkpoint
                || view.items[k].kind == ItemKind::Anchor
        };
        let after = left.last_dropped.map_or(0, |i| i + 1);
        let first_kept = (after..messages.len())
            .find(|&k| !drop[k] && !anywhere(k))
            .or_else(|| (after..messages.len()).find(|&k| !drop[k]))
            .unwrap_or(after);
        plain.sources.get(first_kept).cloned().unwrap_or_else(|| view.head.clone())
    }
}

/// The request as sent: `view` without what `left` leaves out, with `bounded` applied.
fn trimmed(view: View, left: Left, bounded: Vec<(usize, u64)>, first: EntryId) -> Fit {
    let Left { drop, total, .. } = left;
    let dropped = drop.iter().filter(|d| **d).count();
    let View { head, mut items, compaction } = view;
    let bounded: Vec<Bounded> = bounded
        .into_iter()
        .filter_map(|(index, max_bytes)| {
            let cut = codewhale_journal::bound_item(&items[index], max_bytes)?;
            items[index] = cut;
            Some(Bounded::new(items[index].source.clone(), max_bytes))
        })
        .collect();
    let items = items.into_iter().zip(drop).filter(|(_, d)| !d).map(|(item, _)| item).collect();
    Fit::Trimmed {
        view: View { head, items, compaction },
        first,
        dropped,
        estimate: total,
        bounded,
    }
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
        crate::compaction::plain::of(view, |i| i.tokens)
    }

    #[test]
    fn a_view_that_fits_is_sent_whole() {
        let j = journal();
        let view = codewhale_journal::render(&j, j.head_id().as_str());
        let plain = plain_of(&view);
        assert!(matches!(
            fit(view, &plain, 50, &CutPolicy::new(650, 1.0), Shorten::Drop),
            Fit::Whole(_)
        ));
    }

    #[test]
    fn the_oldest_exchanges_go_first_and_anchors_stay() {
        let j = journal();
        let view = codewhale_journal::render(&j, j.head_id().as_str());
        let plain = plain_of(&view);
        let Fit::Trimmed { view, first, dropped, estimate, .. } =
            fit(view, &plain, 50, &CutPolicy::new(450, 1.0), Shorten::Drop)
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
    fn the_users_older_texts_within_the_retained_budget_stay() {
        let j = journal();
        let view = codewhale_journal::render(&j, j.head_id().as_str());
        let plain = plain_of(&view);
        // Room for q0 and q1 (100 tokens each) in the retained budget: their answers go, the
        // texts stay (without the budget, q0 and a0 go: the test above).
        let policy = CutPolicy { retained_tokens: Some(200), ..CutPolicy::new(450, 1.0) };
        let Fit::Trimmed { view, first, dropped, .. } =
            fit(view, &plain, 50, &policy, Shorten::Drop)
        else {
            panic!("expected a trim")
        };
        assert_eq!(dropped, 2, "a0 and a1 are left out");
        assert_eq!(first, plain.sources[5]);
        let texts: Vec<String> = view
            .items
            .iter()
            .filter_map(|i| match &i.content {
                codewhale_journal::ItemContent::Blocks(b) => b[0].as_text().map(str::to_owned),
                _ => None,
            })
            .collect();
        assert_eq!(texts, ["q0", "pinned", "q1", "q2"]);
    }

    #[test]
    fn the_notice_names_the_left_out_part_and_restates_the_plan() {
        let first = EntryId::from_string("0190aaaa-0000-7000-8000-000000000001");
        let plan: crate::plan::Plan = serde_json::from_value(serde_json::json!({"steps": [
            {"step": "Write the parser", "status": "done"},
            {"step": "Wire it into main", "status": "pending"}
        ]}))
        .unwrap();
        let text = notice(7, &first, Some(&plan));
        assert!(text.starts_with("# This request is trimmed"), "{text}");
        assert!(text.contains("The 7 oldest messages") && text.contains(first.as_str()), "{text}");
        assert!(text.contains("`recall`"));
        assert!(text.ends_with("## Plan\n- [done] Write the parser\n- [pending] Wire it into main"));
        assert!(!notice(7, &first, None).contains("## Plan"));
        assert!(notice_tokens(Some(&plan)) >= u64::from(crate::tokens::count(&text)));
    }

    #[test]
    fn a_protected_round_that_cannot_fit_is_too_big() {
        let j = journal();
        let view = codewhale_journal::render(&j, j.head_id().as_str());
        let plain = plain_of(&view);
        let Fit::TooBig { protected_tokens, .. } =
            fit(view, &plain, 50, &CutPolicy::new(300, 2.0), Shorten::Drop)
        else {
            panic!("expected too big")
        };
        assert_eq!(protected_tokens, 2 * (50 + 100 + 100));
    }

    /// An older round, then one long turn: a question and `n` calls with `bytes` of output each.
    fn long_turn(n: usize, bytes: usize) -> Journal {
        use codewhale_journal::ToolResultPayload;
        let header = Entry::new(None, HeaderPayload::new("s", "/w"));
        let mut journal = Journal::new(header.clone()).unwrap();
        let mut parent = header.id.clone();
        let mut payloads: Vec<codewhale_journal::Payload> = vec![
            UserPayload::text("old").into(),
            AssistantPayload::new(vec![Block::text("ok")]).into(),
        ];
        payloads.push(UserPayload::text("do the long job").into());
        for k in 0..n {
            let id = format!("c{k}");
            payloads.push(
                AssistantPayload::new(vec![Block::tool_use(
                    &id,
                    "shell",
                    serde_json::json!({"k": k}),
                )])
                .into(),
            );
            payloads.push(ToolResultPayload::new(&id, "o".repeat(bytes), false).into());
        }
        for p in payloads {
            let e = Entry::new(Some(parent.clone()), p).with_tokens(100);
            parent = e.id.clone();
            journal.push(e);
        }
        journal
    }

    #[test]
    fn a_long_round_loses_its_oldest_exchanges_but_never_its_user_text() {
        let j = long_turn(30, 400);
        let view = codewhale_journal::render(&j, j.head_id().as_str());
        let plain = plain_of(&view);
        // 63 items of 100 tokens: room for the question and ten exchanges (and no retained
        // budget: the older round's text goes too, see the next test for what a budget keeps).
        let policy = CutPolicy { retained_tokens: Some(0), ..CutPolicy::new(2_100, 1.0) };
        let Fit::Trimmed { view, first, dropped, bounded, .. } =
            fit(view, &plain, 0, &policy, Shorten::Drop)
        else {
            panic!("expected a trim")
        };
        assert!(bounded.is_empty());
        assert_eq!(dropped, 2 + 2 * 20, "the older round and twenty exchanges of this one");
        let texts: Vec<String> = view
            .items
            .iter()
            .filter_map(|i| i.blocks().first()?.as_text().map(str::to_owned))
            .collect();
        assert_eq!(texts, ["do the long job"], "the round's user text is always sent");
        assert_eq!(view.items.len(), 21);
        let Some(codewhale_journal::ItemContent::Blocks(b)) = view.items.get(1).map(|i| &i.content)
        else {
            panic!()
        };
        assert!(matches!(&b[0], Block::ToolUse(t) if t.id == "c20"));
        assert_eq!(first, plain.sources[3 + 2 * 20], "the first exchange still sent");
        codewhale_journal::check_view(&view).unwrap();
    }

    #[test]
    fn with_no_pass_left_the_request_itself_is_bounded() {
        let j = long_turn(2, 4_000);
        let view = codewhale_journal::render(&j, j.head_id().as_str());
        let plain = plain_of(&view);
        // Only the round is left after the drop (5 items, 500 tokens) and 450 are allowed (each
        // cut costs its marker too).
        assert!(matches!(
            fit(view.clone(), &plain, 0, &CutPolicy::new(450, 1.0), Shorten::Drop),
            Fit::TooBig { .. }
        ));
        let Fit::Trimmed { view, bounded, estimate, .. } =
            fit(view, &plain, 0, &CutPolicy::new(450, 1.0), Shorten::DropAndBound)
        else {
            panic!("expected a bounded request")
        };
        assert!(estimate <= 450, "{estimate}");
        assert!(!bounded.is_empty());
        let cut = view.items.iter().find(|i| i.source == bounded[0].id).unwrap();
        assert!(matches!(cut.shortened, Some(codewhale_journal::Shortened::Bounded { .. })));
    }
}
