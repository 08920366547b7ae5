//! The last round and its protected part (docs/compaction.md, *The cut*;
//! docs/survival-contract.md), over plain messages.
//!
//! The cut, the prune and the survival validator all ask the same two questions — where does
//! the last round start, and where does its protected part start — so the answers live here,
//! in one place, and the validator can never disagree with the code that chose the cut.

use std::collections::HashSet;

use super::checkpoint::is_checkpoint;
use super::message::{Message, Role};

/// A plain user message: user role, some text, not a checkpoint, an anchor or an engine notice.
pub fn is_plain_user(message: &Message) -> bool {
    message.role == Role::User
        && !message.anchor
        && !message.synthetic
        && message.texts().next().is_some()
        && !is_checkpoint(message)
}

/// A toolless tail with this many plain user turns (the latest included) is a long discussion:
/// the walk back stops at it (docs/survival-contract.md, *The last round and its protected part*).
pub const LONG_TAIL_USER_TURNS: usize = 4;

/// What the long-tail rule measures a toolless tail with: each message's estimate and the
/// kept-tail target (25 % of usable input, calibrated), both in estimated tokens. Without it
/// (a fixture case without `usable_input`) only the count of user turns applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TailMeasure<'a> {
    pub tokens: &'a [u64],
    pub target: u64,
}

/// The last round as the cut, the survival contract, `/context` and `survival-check` all see
/// it: one answer, so the validator can never disagree with the code that chose the cut.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    /// Index of the round's first message (a plain user message).
    pub start: usize,
    /// Index of the protected part's first message within the round.
    pub protected_start: usize,
    /// When the walk back stopped at a long toolless tail: the messages of the last two
    /// complete tool exchanges before the round (each from its boundary to its last result,
    /// with the assistant text that answered it), and the user message that asked for them,
    /// ascending. They are protected like the round's own exchanges and kept as retained
    /// entries of the record. Empty otherwise.
    pub exchanges: Vec<usize>,
}

impl Round {
    /// The round starting at `start` (a case's `last_round_start`): its protected part, no
    /// exchanges from before it.
    pub fn starting_at(messages: &[Message], start: usize) -> Round {
        let start = start.min(messages.len());
        Round { start, protected_start: protected_start(messages, start), exchanges: Vec::new() }
    }

    /// Whether message `index` is one of the exchanges kept from before the round.
    pub fn holds_exchange(&self, index: usize) -> bool {
        self.exchanges.binary_search(&index).is_ok()
    }

    /// Whether message `index` is protected: in the round's protected part or one of the
    /// exchanges kept from before it.
    pub fn protects(&self, index: usize) -> bool {
        index >= self.protected_start || self.holds_exchange(index)
    }
}

/// The last round of `messages` (docs/survival-contract.md, *The last round and its protected
/// part*): the latest plain user message if a tool result follows it; otherwise the walk back to
/// the nearest earlier plain user message with a tool result after it — unless the toolless tail
/// (the messages after the last tool result) is a long discussion: [`LONG_TAIL_USER_TURNS`] plain
/// user turns or more, or, with `measure`, an estimate above the kept-tail target. Then the round
/// is the latest user turn, as in a chat-only view, and the last two complete tool exchanges before
/// it are protected with it ([`Round::exchanges`]). A chat-only view keeps just its latest plain
/// user message. `None` when there is no plain user message.
pub fn last_round(messages: &[Message], measure: Option<TailMeasure<'_>>) -> Option<Round> {
    let latest = messages.iter().rposition(is_plain_user)?;
    let last_result = messages.iter().rposition(Message::has_tool_result);
    let Some(last_result) = last_result.filter(|&r| r < latest) else {
        // A tool result follows the latest user message, or there is none at all.
        return Some(Round::starting_at(messages, latest));
    };
    let tail = last_result + 1..messages.len();
    let users = messages[tail.clone()].iter().filter(|m| is_plain_user(m)).count();
    let heavy = measure.is_some_and(|m| {
        let tokens: u64 = tail.clone().map(|i| m.tokens.get(i).copied().unwrap_or(0)).sum();
        tokens > m.target
    });
    if users >= LONG_TAIL_USER_TURNS || heavy {
        let mut round = Round::starting_at(messages, latest);
        round.exchanges = last_exchanges(messages, latest, 2);
        return Some(round);
    }
    // A short tail ("thanks", "and the docs?") still belongs to the tool round before it.
    let start = messages[..=last_result].iter().rposition(is_plain_user).unwrap_or(latest);
    Some(Round::starting_at(messages, start))
}

/// The messages of the last `count` complete tool exchanges of `messages[..before]`, ascending:
/// each from its boundary (an assistant message issuing calls while none is pending) to the
/// result that leaves nothing pending, then the assistant messages without calls that
/// answered it; and before each the plain user message that asked for it, when there is one.
fn last_exchanges(messages: &[Message], before: usize, count: usize) -> Vec<usize> {
    let before = before.min(messages.len());
    let mut complete: Vec<(usize, usize)> = Vec::new();
    let mut pending: HashSet<&str> = HashSet::new();
    let mut open: Option<usize> = None;
    for (i, message) in messages[..before].iter().enumerate() {
        if message.has_tool_use() {
            if pending.is_empty() {
                open = Some(i);
            }
            pending.extend(message.tool_use_ids());
        }
        for id in message.tool_result_ids() {
            pending.remove(id);
        }
        if pending.is_empty() {
            if let Some(boundary) = open.take() {
                complete.push((boundary, i));
            }
        }
    }
    let mut out = Vec::new();
    for &(boundary, end) in complete.iter().rev().take(count).rev() {
        out.extend(boundary..=end);
        let answers = messages[end + 1..before]
            .iter()
            .take_while(|m| m.role == Role::Assistant && !m.has_tool_use())
            .count();
        out.extend(end + 1..end + 1 + answers);
    }
    // The user message that asked for each: kept before it, so a request never opens with the
    // model's call and a call is read with the question it answered.
    let asked: Vec<usize> = complete
        .iter()
        .rev()
        .take(count)
        .filter_map(|&(boundary, _)| messages[..boundary].iter().rposition(is_plain_user))
        .collect();
    out.extend(asked);
    out.sort_unstable();
    out.dedup();
    out
}

/// The exchange boundaries of `round` (indices into it): assistant messages that issue calls
/// while no call is pending.
pub fn exchange_boundaries(round: &[Message]) -> Vec<usize> {
    let mut pending: HashSet<&str> = HashSet::new();
    let mut boundaries = Vec::new();
    for (i, message) in round.iter().enumerate() {
        if message.has_tool_use() {
            if pending.is_empty() {
                boundaries.push(i);
            }
            pending.extend(message.tool_use_ids());
        }
        for id in message.tool_result_ids() {
            pending.remove(id);
        }
    }
    boundaries
}

/// Where whole exchanges start in `messages`, ascending: every legal cut point (no call
/// pending) at a user message that is not a tool result, at an assistant message that issues
/// calls (one exchange = one assistant message with its tool results, never the whole turn),
/// at a checkpoint and right after one. An assistant answer without calls is not a start: a
/// question leaves with its answer. Index 0 is always a start when `messages` is not empty.
/// The summary input's sizing, the cut and the fail-open trim all drop or keep whole
/// exchanges by these points.
pub fn exchange_starts(messages: &[Message]) -> Vec<usize> {
    let legal = legal_cuts(messages);
    (0..messages.len())
        .filter(|&i| {
            let m = &messages[i];
            legal[i]
                && (i == 0
                    || is_checkpoint(m)
                    || is_checkpoint(&messages[i - 1])
                    || (m.role == Role::User && !m.has_tool_result())
                    || (m.role == Role::Assistant && m.has_tool_use()))
        })
        .collect()
}

/// Where the protected part starts (an index into `messages`): at the second-to-last exchange
/// boundary when the round has more than two, else at the round start.
pub fn protected_start(messages: &[Message], round_start: usize) -> usize {
    let round_start = round_start.min(messages.len());
    let boundaries = exchange_boundaries(&messages[round_start..]);
    if boundaries.len() > 2 {
        round_start + boundaries[boundaries.len() - 2]
    } else {
        round_start
    }
}

/// For every index `0..=len`, whether a cut there is legal (no call issued before it is still
/// waiting for its result there); one pass over the view.
pub fn legal_cuts(messages: &[Message]) -> Vec<bool> {
    let mut pending: HashSet<&str> = HashSet::new();
    let mut out = Vec::with_capacity(messages.len() + 1);
    for message in messages {
        out.push(pending.is_empty());
        if message.role == Role::Assistant {
            pending.extend(message.tool_use_ids());
        }
        for id in message.tool_result_ids() {
            pending.remove(id);
        }
    }
    out.push(pending.is_empty());
    out
}

/// True when no call issued before `index` is still waiting for its result at `index`: a cut
/// there never separates a call from its result or splits a parallel batch.
#[cfg(test)]
pub fn is_legal_cut(messages: &[Message], index: usize) -> bool {
    let mut pending: HashSet<&str> = HashSet::new();
    for message in &messages[..index.min(messages.len())] {
        if message.role == Role::Assistant {
            pending.extend(message.tool_use_ids());
        }
        for id in message.tool_result_ids() {
            pending.remove(id);
        }
    }
    pending.is_empty()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::Part;

    fn call(ids: &[&str]) -> Message {
        Message::new(
            Role::Assistant,
            ids.iter().map(|id| Part::tool_use(*id, "shell", json!({"command": "ls"}))).collect(),
        )
    }

    fn result(id: &str) -> Message {
        Message::new(Role::User, vec![Part::tool_result(id, "out")])
    }

    #[test]
    fn round_starts_at_latest_user_with_tool_results_after_it() {
        let m = vec![
            Message::user("a"),
            call(&["1"]),
            result("1"),
            Message::user("b"),
            call(&["2"]),
            result("2"),
        ];
        assert_eq!(last_round(&m, None).map(|r| r.start), Some(3));
    }

    #[test]
    fn chat_follow_ups_join_the_previous_tool_round() {
        let m = vec![
            Message::user("a"),
            call(&["1"]),
            result("1"),
            Message::assistant("done"),
            Message::user("thanks, and?"),
            Message::assistant("more"),
        ];
        assert_eq!(last_round(&m, None).map(|r| r.start), Some(0));
    }

    #[test]
    fn chat_only_keeps_latest_user_turn_and_skips_anchors() {
        let mut anchor = Message::user("pinned");
        anchor.anchor = true;
        let m = vec![Message::user("a"), Message::assistant("x"), Message::user("b"), anchor];
        assert_eq!(last_round(&m, None).map(|r| r.start), Some(2));
        assert_eq!(last_round(&[Message::assistant("x")], None), None);
    }

    #[test]
    fn parallel_batches_are_one_exchange() {
        let m = vec![
            Message::user("go"),
            call(&["1", "2"]),
            result("1"),
            call(&["3"]), // issued while 2 is pending: not a boundary
            result("2"),
            result("3"),
            call(&["4"]),
            result("4"),
            call(&["5"]),
            result("5"),
        ];
        assert_eq!(exchange_boundaries(&m[1..]), vec![0, 5, 7]);
        assert_eq!(protected_start(&m, 0), 6);
        assert!(!is_legal_cut(&m, 3));
        assert!(!is_legal_cut(&m, 5));
        assert!(is_legal_cut(&m, 6));
        let one_pass: Vec<bool> = (0..=m.len()).map(|i| is_legal_cut(&m, i)).collect();
        assert_eq!(legal_cuts(&m), one_pass);
    }

    #[test]
    fn every_call_of_a_long_turn_starts_an_exchange() {
        let m = vec![
            Message::user("go"),
            call(&["1"]),
            result("1"),
            call(&["2", "3"]),
            result("2"),
            result("3"),
            call(&["4"]),
            result("4"),
            Message::assistant("done"),
            Message::user("next"),
            Message::assistant("ok"),
        ];
        assert_eq!(exchange_starts(&m), vec![0, 1, 3, 6, 9]);
    }

    /// Two tool exchanges, then `chats` plain chat turns (a user message and an answer each).
    fn tools_then_chat(chats: usize) -> Vec<Message> {
        let mut m = vec![
            Message::user("look at the code"),
            call(&["1"]),
            result("1"),
            Message::assistant("read one"),
            call(&["2", "3"]),
            result("2"),
            result("3"),
            Message::assistant("here is what the code does"),
        ];
        for k in 0..chats {
            m.push(Message::user(format!("question {k}")));
            m.push(Message::assistant(format!("answer {k}")));
        }
        m
    }

    #[test]
    fn a_short_toolless_tail_keeps_the_tool_round() {
        let m = tools_then_chat(3);
        let round = last_round(&m, None).unwrap();
        assert_eq!(round, Round { start: 0, protected_start: 0, exchanges: vec![] });
    }

    #[test]
    fn a_long_discussion_ends_the_walk_back_and_keeps_two_exchanges() {
        let m = tools_then_chat(4);
        let round = last_round(&m, None).unwrap();
        assert_eq!(round.start, 14, "the latest user turn");
        assert_eq!(round.protected_start, 14);
        // The question, call 1 with its result and the text after it, the batch 2/3 with its
        // results and the answer.
        assert_eq!(round.exchanges, vec![0, 1, 2, 3, 4, 5, 6, 7]);
        assert!(round.protects(5) && round.protects(0) && !round.protects(8));
    }

    #[test]
    fn a_heavy_tail_ends_the_walk_back_before_four_turns() {
        let m = tools_then_chat(2);
        let tokens: Vec<u64> = (0..m.len()).map(|i| if i >= 8 { 100 } else { 10 }).collect();
        let light = TailMeasure { tokens: &tokens, target: 410 };
        assert_eq!(
            last_round(&m, Some(light)).unwrap().start,
            0,
            "the answer and two turns, 410 tokens, fit"
        );
        let heavy = TailMeasure { tokens: &tokens, target: 409 };
        let round = last_round(&m, Some(heavy)).unwrap();
        assert_eq!((round.start, round.exchanges.len()), (10, 8));
    }

    #[test]
    fn only_complete_exchanges_count_and_at_most_two() {
        let mut m = vec![Message::user("go"), call(&["0"]), result("0")];
        m.extend(tools_then_chat(5));
        let round = last_round(&m, None).unwrap();
        // The question (3) of the newer exchanges; not the older exchange or its question.
        assert_eq!(round.exchanges, (3..=10).collect::<Vec<_>>());
        assert_eq!(last_exchanges(&[call(&["x"]), Message::user("?")], 1, 2), Vec::<usize>::new());
    }

    #[test]
    fn two_exchanges_protect_the_whole_round() {
        let m = vec![Message::user("go"), call(&["1"]), result("1"), call(&["2"]), result("2")];
        assert_eq!(protected_start(&m, 0), 0);
    }
}
