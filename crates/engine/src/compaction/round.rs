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

/// Where the last round starts: the latest plain user message if a tool result follows it;
/// otherwise the nearest earlier plain user message with a tool result after it; a chat-only
/// view keeps just its latest plain user message. `None` when there is no plain user message.
pub fn last_round_start(messages: &[Message]) -> Option<usize> {
    let mut latest = None;
    let mut result_after = false;
    for (i, message) in messages.iter().enumerate().rev() {
        if message.has_tool_result() {
            result_after = true;
        }
        if is_plain_user(message) {
            if latest.is_none() {
                latest = Some(i);
            }
            if result_after {
                return Some(i);
            }
        }
    }
    latest
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
    use crate::compaction::message::Part;

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
        assert_eq!(last_round_start(&m), Some(3));
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
        assert_eq!(last_round_start(&m), Some(0));
    }

    #[test]
    fn chat_only_keeps_latest_user_turn_and_skips_anchors() {
        let mut anchor = Message::user("pinned");
        anchor.anchor = true;
        let m = vec![Message::user("a"), Message::assistant("x"), Message::user("b"), anchor];
        assert_eq!(last_round_start(&m), Some(2));
        assert_eq!(last_round_start(&[Message::assistant("x")]), None);
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

    #[test]
    fn two_exchanges_protect_the_whole_round() {
        let m = vec![Message::user("go"), call(&["1"]), result("1"), call(&["2"]), result("2")];
        assert_eq!(protected_start(&m, 0), 0);
    }
}
