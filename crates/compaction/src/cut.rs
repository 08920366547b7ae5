//! The cut (docs/compaction.md, *The cut*): where the covered part ends, what is retained, what is
//! bounded.
//!
//! Pure functions over a view given as plain messages with one token count each (o200k
//! estimates). Every token target is expressed in provider tokens and divided by the session's
//! calibration ratio `c` before it is compared with estimates, so a "25 % tail" is 25 % of what
//! the provider will count, not of what o200k counts.
//!
//! Invariants of a [`CutPlan`]: the cut is a legal cut point (no call pending across it), lies
//! after every checkpoint of the view (a new note replaces the old one, never stacks) and never
//! after the protected part's start; every plain user text of the last round and every branch
//! summary that falls in the covered part is retained whatever the retained budget says.

use super::checkpoint::is_checkpoint;
use super::message::{Message, Part};
use super::round::{self, is_plain_user};

/// Tool results of the protected round are cut to this many bytes in the view.
pub const PROTECTED_RESULT_BYTES: u64 = 8 * 1024;
/// Other kept tool results are cut to this many bytes in the view.
pub const KEPT_RESULT_BYTES: u64 = 64 * 1024;
/// Default kept tail target as a fraction of usable input.
pub const TAIL_FRACTION: f64 = 0.25;
/// Default cap of the retained user messages, in tokens.
pub const RETAINED_MAX_TOKENS: u64 = 20_000;
/// Default retained budget as a fraction of usable input.
pub const RETAINED_FRACTION: f64 = 0.10;
/// Tool results of the exchanges a long discussion keeps from before its round are cut to this
/// many bytes in a small window (W ≤ 16,384), like the protected round's elsewhere.
pub const SMALL_WINDOW_EXCHANGE_RESULT_BYTES: u64 = 2 * 1024;

/// The figures a cut is measured against.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CutPolicy {
    /// `U`, in provider tokens.
    pub usable_input: u64,
    /// Calibration ratio `c` = provider count ÷ o200k estimate, in [1, 2].
    pub calibration: f64,
    pub tail_fraction: f64,
    /// Retained user text budget in provider tokens; `None` = min(20,000, 10 % of `U`).
    pub retained_tokens: Option<u64>,
    /// What a tool result of an exchange kept from before a long discussion's round is cut to
    /// (8 KiB, 2 KiB in a small window).
    pub exchange_result_bytes: u64,
}

impl CutPolicy {
    /// The defaults of docs/compaction.md, *Limits and configuration* for usable input
    /// `usable_input` and calibration `calibration`.
    pub fn new(usable_input: u64, calibration: f64) -> CutPolicy {
        CutPolicy {
            usable_input,
            calibration,
            tail_fraction: TAIL_FRACTION,
            retained_tokens: None,
            exchange_result_bytes: PROTECTED_RESULT_BYTES,
        }
    }

    /// The defaults for a session whose window is `window` tokens with `usable_input` of them
    /// for input, at calibration `calibration`: in a small window the kept exchanges' results
    /// are cut to 2 KiB.
    pub fn for_window(window: u64, usable_input: u64, calibration: f64) -> CutPolicy {
        let mut policy = CutPolicy::new(usable_input, calibration);
        if window <= crate::budget::SMALL_WINDOW {
            policy.exchange_result_bytes = SMALL_WINDOW_EXCHANGE_RESULT_BYTES;
        }
        policy
    }

    fn estimate_budget(&self, provider_tokens: f64) -> u64 {
        crate::budget::from_provider(provider_tokens, self.calibration)
    }

    /// The kept tail target, in estimated tokens.
    pub fn tail_target(&self) -> u64 {
        self.estimate_budget(self.usable_input as f64 * self.tail_fraction)
    }

    /// What a toolless tail is measured against to tell a long discussion (25 % of `U`,
    /// calibrated, whatever tail a pass aims at): the same for the cut, the survival contract
    /// and `/context`.
    pub fn long_tail_target(&self) -> u64 {
        self.estimate_budget(self.usable_input as f64 * TAIL_FRACTION)
    }

    /// The last round of `messages` (with `tokens` their estimates) under this policy.
    pub fn round(&self, messages: &[Message], tokens: &[u64]) -> Option<round::Round> {
        let measure = round::TailMeasure { tokens, target: self.long_tail_target() };
        round::last_round(messages, Some(measure))
    }

    /// The retained user text budget, in estimated tokens.
    pub fn retained_budget(&self) -> u64 {
        let provider = self.retained_tokens.unwrap_or_else(|| {
            RETAINED_MAX_TOKENS.min((self.usable_input as f64 * RETAINED_FRACTION) as u64)
        });
        self.estimate_budget(provider as f64)
    }
}

/// Where a pass cuts and what it keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CutPlan {
    /// Index of the last round's first message.
    pub round_start: usize,
    /// Index of the protected part's first message.
    pub protected_start: usize,
    /// First index of the kept tail; `0..cut` is covered.
    pub cut: usize,
    /// Indices (in `0..cut`, ascending) of the messages kept verbatim before the note: plain
    /// user messages, and the messages of the tool exchanges a long discussion keeps from
    /// before its round ([`round::Round::exchanges`]).
    pub retained: Vec<usize>,
    /// Estimated tokens of the retained user messages.
    pub retained_tokens: u64,
    /// Kept tool results (index, byte bound) whose text exceeds their bound.
    pub bounded: Vec<(usize, u64)>,
    /// Estimated tokens of the kept tail after bounding, with the exchanges kept from before
    /// the round (they count against the kept-tail target).
    pub tail_tokens: u64,
}

/// Why no cut exists.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CutError {
    #[error("the view has {0} model-visible messages; compaction needs at least 4")]
    TooFew(usize),
    #[error(
        "everything left is protected: the last round (its user messages and its two most \
         recent tool exchanges) starts at the beginning of what can be compacted"
    )]
    AllProtected,
}

/// The fewest model-visible messages a pass accepts.
pub const MIN_MESSAGES: usize = 4;

/// Plans the cut of `messages` (with `tokens[i]` the estimate of `messages[i]`).
pub fn plan(messages: &[Message], tokens: &[u64], policy: &CutPolicy) -> Result<CutPlan, CutError> {
    if messages.len() < MIN_MESSAGES {
        return Err(CutError::TooFew(messages.len()));
    }
    let tok = |i: usize| tokens.get(i).copied().unwrap_or(0);
    let round = policy.round(messages, tokens).unwrap_or_default();
    let (round_start, protected_start) = (round.start, round.protected_start);
    let first_allowed = messages.iter().rposition(is_checkpoint).map_or(1, |i| i + 1).max(1);
    if first_allowed > protected_start {
        return Err(CutError::AllProtected);
    }

    let bound_of = |i: usize| {
        if round.holds_exchange(i) {
            policy.exchange_result_bytes
        } else if i >= round_start {
            PROTECTED_RESULT_BYTES
        } else {
            KEPT_RESULT_BYTES
        }
    };
    let kept_tokens = |i: usize| bounded_tokens(&messages[i], tok(i), bound_of(i));
    let target = policy.tail_target();
    // The exchanges kept from before the round count against the target wherever the cut
    // falls: retained before the note, or in the tail. They never pull the cut back.
    let exchanges: u64 = round.exchanges.iter().map(|&i| kept_tokens(i)).sum();
    let mut suffix: u64 =
        exchanges + (protected_start..messages.len()).map(kept_tokens).sum::<u64>();
    let legal = round::legal_cuts(messages);
    let mut cut = None;
    // Walk back from the protected part: the earliest legal point whose tail fits the target.
    // The protected part itself is kept even when it alone exceeds the target.
    let mut i = protected_start;
    loop {
        if legal[i] && (cut.is_none() || suffix <= target) {
            cut = Some((i, suffix));
        }
        if i == first_allowed || suffix > target {
            break;
        }
        i -= 1;
        if !round.holds_exchange(i) {
            suffix += kept_tokens(i);
        }
    }
    let Some((cut, tail_tokens)) = cut else {
        return Err(CutError::AllProtected);
    };

    let (mut retained, retained_tokens) = retain(messages, tokens, cut, round_start, policy);
    retained.extend(round.exchanges.iter().copied().filter(|&i| i < cut));
    retained.sort_unstable();
    retained.dedup();
    let covers_something =
        (0..cut).any(|i| !is_checkpoint(&messages[i]) && retained.binary_search(&i).is_err());
    if !covers_something {
        return Err(CutError::AllProtected);
    }
    let bounded = (cut..messages.len())
        .chain(round.exchanges.iter().copied().filter(|&i| i < cut))
        .filter(|&i| result_bytes(&messages[i]) > bound_of(i))
        .map(|i| (i, bound_of(i)))
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect();
    Ok(CutPlan {
        round_start,
        protected_start,
        cut,
        retained,
        retained_tokens,
        bounded,
        tail_tokens,
    })
}

/// Plain user messages of the covered part kept verbatim: first every one of the last round
/// (the survival contract requires them), then the others newest first within the budget.
pub fn retain(
    messages: &[Message],
    tokens: &[u64],
    cut: usize,
    round_start: usize,
    policy: &CutPolicy,
) -> (Vec<usize>, u64) {
    let tok = |i: usize| tokens.get(i).copied().unwrap_or(0);
    let candidates: Vec<usize> = (0..cut).filter(|&i| is_plain_user(&messages[i])).collect();
    // What was tried on a branch HEAD left is kept verbatim, like an anchor, whatever the budget
    // says (each is at most 2,000 characters).
    let mut chosen: Vec<usize> = (0..cut).filter(|&i| messages[i].branch_summary).collect();
    chosen.extend(candidates.iter().copied().filter(|&i| i >= round_start));
    let mut used: u64 = chosen.iter().map(|&i| tok(i)).sum();
    let budget = policy.retained_budget();
    for &i in candidates.iter().rev().filter(|&&i| i < round_start) {
        // Before the checkpoint its images read as one line each: they cost nothing here.
        let cost = tok(i).saturating_sub(messages[i].image_tokens);
        if used + cost <= budget {
            used += cost;
            chosen.push(i);
        }
    }
    chosen.sort_unstable();
    (chosen, used)
}

/// Bytes of tool output a message carries.
pub fn result_bytes(message: &Message) -> u64 {
    message
        .content
        .iter()
        .map(|p| match p {
            Part::ToolResult { content, .. } => content.len_hint() as u64,
            _ => 0,
        })
        .sum()
}

/// The estimated tokens of `message` once its tool output is cut to `bound` bytes.
pub fn bounded_tokens(message: &Message, tokens: u64, bound: u64) -> u64 {
    let bytes = result_bytes(message);
    if bytes <= bound || bytes == 0 {
        return tokens;
    }
    (tokens as u128 * bound as u128 / bytes as u128) as u64
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::checkpoint::MARKER;
    use crate::message::Role;
    use crate::round::is_legal_cut;

    fn call(id: &str) -> Message {
        Message::new(Role::Assistant, vec![Part::tool_use(id, "shell", json!({"command": id}))])
    }
    fn result(id: &str, out: &str) -> Message {
        Message::new(Role::User, vec![Part::tool_result(id, out)])
    }
    fn checkpoint() -> Message {
        Message::new(Role::User, vec![Part::text("Codewhale handoff note. x"), Part::text(MARKER)])
    }
    /// Ten turns of: user, call, result, answer. Each message costs 10 tokens.
    fn history(turns: usize) -> Vec<Message> {
        let mut m = Vec::new();
        for t in 0..turns {
            m.push(Message::user(format!("task {t}")));
            m.push(call(&format!("c{t}")));
            m.push(result(&format!("c{t}"), "ok"));
            m.push(Message::assistant(format!("done {t}")));
        }
        m
    }
    fn tens(n: usize) -> Vec<u64> {
        vec![10; n]
    }

    #[test]
    fn tail_aims_at_a_quarter_of_usable_input() {
        let m = history(10);
        // U = 320 → tail target 80 tokens = 8 messages = the last two turns.
        let plan = plan(&m, &tens(40), &CutPolicy::new(320, 1.0)).unwrap();
        assert_eq!(plan.round_start, 36);
        assert_eq!(plan.cut, 32);
        assert_eq!(plan.tail_tokens, 80);
    }

    #[test]
    fn calibration_shrinks_the_tail() {
        let m = history(10);
        let plan = plan(&m, &tens(40), &CutPolicy::new(320, 2.0)).unwrap();
        assert_eq!(plan.cut, 36, "40 estimated tokens = 80 provider tokens");
    }

    #[test]
    fn the_protected_part_is_kept_even_over_target() {
        let m = history(3);
        let plan = plan(&m, &tens(12), &CutPolicy::new(8, 1.0)).unwrap();
        assert_eq!(plan.cut, 8);
        assert_eq!(plan.tail_tokens, 40);
    }

    #[test]
    fn cut_never_splits_a_pending_call() {
        let mut m = history(2);
        // A long round: user, then five exchanges; the second is a parallel batch.
        m.push(Message::user("big job"));
        m.push(call("a"));
        m.push(result("a", "x"));
        m.push(Message::new(
            Role::Assistant,
            vec![Part::tool_use("b1", "shell", json!(1)), Part::tool_use("b2", "shell", json!(2))],
        ));
        m.push(result("b1", "x"));
        m.push(result("b2", "x"));
        m.push(call("c"));
        m.push(result("c", "x"));
        m.push(call("d"));
        m.push(result("d", "x"));
        let n = m.len();
        let plan = plan(&m, &tens(n), &CutPolicy::new(4 * 70, 1.0)).unwrap();
        // Target 70 tokens = 7 messages; protected starts at call c (index 14).
        assert_eq!(plan.protected_start, 14);
        assert!(is_legal_cut(&m, plan.cut));
        assert_eq!(plan.cut, 11, "the batch b1/b2 is kept whole, never split at 12 or 13");
        assert_eq!(plan.retained, vec![4, 8], "the round's user text first, then within budget");
    }

    #[test]
    fn retained_users_newest_first_within_budget() {
        let m = history(10);
        let mut tokens = tens(40);
        // "task 7" is large. U = 320: retained budget 32 tokens; task 7 (40) does not fit,
        // tasks 6, 5, 4 (10 each) do.
        tokens[4 * 7] = 40;
        let plan = plan(&m, &tokens, &CutPolicy::new(320, 1.0)).unwrap();
        assert_eq!(plan.cut, 32);
        assert_eq!(plan.retained, vec![16, 20, 24]);
        assert_eq!(plan.retained_tokens, 30);
    }

    #[test]
    fn the_cut_lies_after_the_previous_checkpoint() {
        let mut m = vec![Message::user("old ask"), checkpoint()];
        m.extend(history(2));
        let plan = plan(&m, &tens(10), &CutPolicy::new(40, 1.0)).unwrap();
        assert!(plan.cut >= 2);
        assert_eq!(plan.cut, 6);
        let m = vec![checkpoint(), Message::user("a"), call("x"), result("x", "y")];
        assert_eq!(super::plan(&m, &tens(4), &CutPolicy::new(4, 1.0)), Err(CutError::AllProtected));
    }

    #[test]
    fn too_few_messages_are_refused() {
        let m = vec![Message::user("a"), Message::assistant("b"), Message::user("c")];
        assert_eq!(plan(&m, &tens(3), &CutPolicy::new(10, 1.0)), Err(CutError::TooFew(3)));
    }

    #[test]
    fn kept_results_are_bounded_by_round() {
        let mut m = history(3);
        m[6] = result("c1", &"a".repeat(70 * 1024));
        m[10] = result("c2", &"b".repeat(9 * 1024));
        let plan = plan(&m, &tens(12), &CutPolicy::new(320, 1.0)).unwrap();
        assert_eq!(plan.round_start, 8);
        assert_eq!(plan.cut, 4);
        assert_eq!(plan.bounded, vec![(6, KEPT_RESULT_BYTES), (10, PROTECTED_RESULT_BYTES)]);
        assert_eq!(plan.tail_tokens, 77, "bounded results count for 64/70 and 8/9 of their tokens");
    }

    /// Two tool turns, then `chats` chat turns of a user message and a 10-token answer.
    fn tools_then_chat(chats: usize) -> Vec<Message> {
        let mut m = history(2);
        for k in 0..chats {
            m.push(Message::user(format!("question {k}")));
            m.push(Message::assistant(format!("answer {k}")));
        }
        m
    }

    #[test]
    fn a_long_discussion_keeps_its_latest_turn_and_retains_two_exchanges() {
        let mut m = tools_then_chat(6);
        m[2] = result("c0", &"r".repeat(3 * 1024));
        let n = m.len();
        // Target 40 tokens: the two exchanges (call, result, answer: 60 tokens) already exceed
        // it, so the tail is the latest turn alone.
        let plan = plan(&m, &tens(n), &CutPolicy::new(160, 1.0)).unwrap();
        assert_eq!((plan.round_start, plan.protected_start, plan.cut), (18, 18, 18));
        assert_eq!(plan.retained, vec![0, 1, 2, 3, 4, 5, 6, 7, 16], "exchanges, a user text");
        assert_eq!(plan.tail_tokens, 80 + 20, "the exchanges count against the tail target");
        assert!(plan.bounded.is_empty(), "3 KiB is within 8 KiB");
        // In a small window the kept exchanges' results are cut to 2 KiB.
        let small = CutPolicy { retained_tokens: Some(0), ..CutPolicy::for_window(213, 160, 1.0) };
        let plan = super::plan(&m, &tens(n), &small).unwrap();
        assert_eq!(plan.bounded, vec![(2, SMALL_WINDOW_EXCHANGE_RESULT_BYTES)]);
        assert_eq!(plan.retained, vec![0, 1, 2, 3, 4, 5, 6, 7], "only the exchanges' questions");
    }

    #[test]
    fn kept_exchanges_inside_the_tail_are_not_counted_twice() {
        let mut m = history(3);
        for k in 0..4 {
            m.push(Message::user(format!("question {k}")));
            m.push(Message::assistant(format!("answer {k}")));
        }
        let n = m.len();
        // Target 160: the kept exchanges with their questions (turns 1 and 2, 80 tokens), the
        // latest turn (20) and the discussion before it (60) fit; the cut walks back over the
        // exchanges without counting them again and stops before the first turn.
        let policy = CutPolicy { retained_tokens: Some(0), ..CutPolicy::new(640, 1.0) };
        let plan = plan(&m, &tens(n), &policy).unwrap();
        assert_eq!((plan.round_start, plan.cut, plan.tail_tokens), (18, 4, 160));
        assert_eq!(plan.retained, Vec::<usize>::new(), "the exchanges are in the tail");
    }
}

/// The cut and the survival contract must agree: whatever the cut keeps, with a real note in
/// between, passes the contract. Checked over many generated conversations (a small LCG keeps
/// the test deterministic without a property-testing dependency).
#[cfg(test)]
mod agreement {
    use serde_json::json;

    use super::*;
    use crate::message::Role;
    use crate::note::checkpoint_message;
    use crate::survival::{check, SurvivalInput};

    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) % n.max(1)
        }
    }

    fn conversation(rng: &mut Lcg) -> Vec<Message> {
        let mut m = Vec::new();
        let mut id = 0;
        for turn in 0..1 + rng.next(10) {
            m.push(Message::user(format!("ask {turn}")));
            // Some runs end in a discussion: chat turns after the last tool call.
            let calls = if turn > 3 && rng.next(2) == 0 { 0 } else { rng.next(4) };
            for _ in 0..calls {
                let calls: Vec<String> = (0..1 + rng.next(3))
                    .map(|_| {
                        id += 1;
                        format!("c{id}")
                    })
                    .collect();
                let mut content = vec![Part::text(format!("step {id}"))];
                content.extend(
                    calls.iter().map(|c| Part::tool_use(c.clone(), "shell", json!({"c": c}))),
                );
                m.push(Message::new(Role::Assistant, content));
                for c in &calls {
                    m.push(Message::new(Role::User, vec![Part::tool_result(c.clone(), "out")]));
                }
            }
            if rng.next(3) > 0 {
                m.push(Message::assistant(format!("answer {turn}")));
            }
        }
        m
    }

    #[test]
    fn whatever_the_cut_keeps_passes_the_survival_contract() {
        let mut rng = Lcg(7);
        let mut planned = 0;
        let mut stopped = 0;
        for _ in 0..2_000 {
            let messages = conversation(&mut rng);
            let tokens: Vec<u64> = messages.iter().map(|_| 1 + rng.next(40)).collect();
            let policy = CutPolicy::new(20 + rng.next(2_000), 1.0 + rng.next(100) as f64 / 100.0);
            let Ok(plan) = plan(&messages, &tokens, &policy) else { continue };
            planned += 1;
            let mut replacement: Vec<Message> =
                plan.retained.iter().map(|&i| messages[i].clone()).collect();
            replacement.push(checkpoint_message("Codewhale handoff note.\n\n## Objective\nGo on."));
            replacement.extend(messages[plan.cut..].iter().cloned());
            let measure = round::TailMeasure { tokens: &tokens, target: policy.long_tail_target() };
            let violations = check(&SurvivalInput {
                original: &messages,
                replacement: &replacement,
                last_round_start: None,
                tail: Some(measure),
                anchors: &[],
                branch_summaries: &[],
                require_checkpoint: true,
                plan_steps: &[],
            });
            assert!(violations.is_empty(), "{violations:?}\n{messages:#?}\n{plan:?}");
            assert!(round::legal_cuts(&messages)[plan.cut]);
            assert!(plan.cut <= plan.protected_start);
            let round = policy.round(&messages, &tokens).unwrap();
            stopped += usize::from(!round.exchanges.is_empty());
        }
        assert!(planned > 500, "only {planned} conversations could be cut");
        assert!(stopped > 50, "only {stopped} ended in a long discussion");
    }
}
