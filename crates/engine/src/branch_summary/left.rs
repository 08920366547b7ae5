//! What a summary of a branch HEAD left is made of (docs/journal-format.md, *`branch_summary`*):
//! which part of the branch was left ([`left_part`]), the transcript the summarizer reads
//! ([`transcript`]) and whether its reply can be journaled ([`usable`]). Plain functions over the
//! journal; the async shell that asks the model and appends the entry is the parent module.
//!
//! Invariants: only a branch **tip** that HEAD left counts (a move away from the middle of a
//! branch leaves nothing that is not still reachable from its own tip); the left part is the
//! old tip's spine after the branch point — the last entry both spines share — and it is worth
//! a summary only when it holds a tool call or more than one plain user turn ([`worth_a_summary`]):
//! a one-turn chat branch (one message and its reply, the turn an Esc Esc edit or a retry
//! replaces) is simply dropped, as Claude Code and Codex drop it — nothing was tried there that
//! the new branch needs to hear about, and a summary of it would cost a request. The
//! transcript never exceeds the budget it is given, however large the branch or its tool
//! outputs.

use std::collections::{HashMap, HashSet};

use codewhale_journal::{cut, kind, Block, EntryId, Journal, Payload};

/// Plain user turns a left branch without a tool call must hold to be summarized.
pub(crate) const MIN_CHAT_TURNS: usize = 2;

/// The longest summary journaled, in characters (docs/journal-format.md, *`branch_summary`*).
pub(crate) const SUMMARY_MAX_CHARS: usize = 2_000;

/// Characters kept of one message's text in the transcript (head and tail).
const TEXT_CHARS: usize = 4_000;
/// Characters kept of one tool result (head and tail).
const RESULT_CHARS: usize = 1_500;
/// Characters kept of a tool call's arguments.
const INPUT_CHARS: usize = 400;
/// Characters kept of the user's request before the branch.
const CONTEXT_CHARS: usize = 2_000;

/// The part of a branch HEAD left.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Left {
    /// The branch point: the last entry the left branch and HEAD's branch share.
    pub from: EntryId,
    /// The left branch's last entry (HEAD before the move).
    pub tip: EntryId,
    /// The first entry of the left part.
    pub branch_id: EntryId,
    /// The first entry of the branch the branch point lies on; `None` on the session's first
    /// branch (no fork before the branch point).
    pub parent_branch_id: Option<EntryId>,
    /// The left part's positions, oldest first (after `from`, through `tip`).
    pub positions: Vec<u32>,
    /// Its model-visible messages (branch summaries not counted).
    pub messages: usize,
    /// Its plain user turns.
    pub user_turns: usize,
    /// Whether the model called a tool on it.
    pub tool_call: bool,
}

/// Whether a left part is worth a summary: it holds a tool call, or more than one plain user
/// turn (docs/journal-format.md, *`branch_summary`*).
pub(crate) fn worth_a_summary(left: &Left) -> bool {
    left.tool_call || left.user_turns >= MIN_CHAT_TURNS
}

/// Whether the entry at `pos` is a tool call or its result.
fn is_tool_call(journal: &Journal, pos: u32) -> bool {
    match journal.kind_at(pos) {
        kind::TOOL_RESULT => true,
        kind::ASSISTANT => matches!(
            &journal.read_entry(pos).payload,
            Payload::Assistant(a) if a.content.iter().any(|b| b.as_tool_use().is_some())
        ),
        _ => false,
    }
}

/// Entries that continue a chain: everything but the header, compaction and `head` records.
fn is_chain(journal: &Journal, pos: u32) -> bool {
    !matches!(journal.kind_at(pos), kind::HEADER | kind::COMPACTION | kind::HEAD)
}

fn counts(journal: &Journal, pos: u32) -> bool {
    journal.is_model_visible_at(pos) && journal.kind_at(pos) != kind::BRANCH_SUMMARY
}

/// The part of `old`'s branch that HEAD, now at `new`, left: `None` when `old` is not a tip
/// (something continues it), HEAD is still on it, or it is not [`worth_a_summary`].
pub(crate) fn left_part(journal: &Journal, old: &str, new: &str) -> Option<Left> {
    let old_pos = journal.position(old)?;
    let new_pos = journal.position(new)?;
    if journal.is_ancestor(old, new) {
        return None;
    }
    // Children are always after their parent in the file.
    let continued = (old_pos + 1..journal.len() as u32)
        .any(|p| journal.parent_at(p) == Some(old_pos) && is_chain(journal, p));
    if continued {
        return None;
    }
    let new_spine: HashSet<u32> = journal.spine_positions(new_pos).into_iter().collect();
    let old_spine = journal.spine_positions(old_pos);
    let split = old_spine.iter().rposition(|p| new_spine.contains(p))?;
    let positions = old_spine[split + 1..].to_vec();
    let messages = positions.iter().filter(|&&p| counts(journal, p)).count();
    let user_turns = positions
        .iter()
        .filter(|&&p| journal.has_flags(p, codewhale_journal::flags::PLAIN))
        .count();
    let tool_call = positions.iter().any(|&p| is_tool_call(journal, p));
    let from_pos = old_spine[split];
    let left = Left {
        from: EntryId::from_string(journal.id_at(from_pos).to_string()),
        tip: EntryId::from_string(old.to_owned()),
        branch_id: EntryId::from_string(journal.id_at(*positions.first()?).to_string()),
        parent_branch_id: branch_start(journal, &old_spine[..=split]),
        positions,
        messages,
        user_turns,
        tool_call,
    };
    worth_a_summary(&left).then_some(left)
}

/// The first entry of the branch the last position of `spine` lies on: the newest entry of the
/// spine whose parent has two or more chain children. `None` when there is none (the first
/// branch of the session).
fn branch_start(journal: &Journal, spine: &[u32]) -> Option<EntryId> {
    let on_spine: HashSet<u32> = spine.iter().copied().collect();
    let mut children: HashMap<u32, u32> = HashMap::new();
    for p in 0..journal.len() as u32 {
        if let Some(parent) = journal.parent_at(p).filter(|q| on_spine.contains(q)) {
            if is_chain(journal, p) {
                *children.entry(parent).or_default() += 1;
            }
        }
    }
    spine
        .iter()
        .rev()
        .find(|&&p| {
            journal.parent_at(p).is_some_and(|q| children.get(&q).copied().unwrap_or(0) >= 2)
        })
        .map(|&p| EntryId::from_string(journal.id_at(p).to_string()))
}

/// What the summarizer reads: the user's last request before the branch, then the left part,
/// oldest first, each message bounded; at most `budget` characters (the oldest messages after
/// the first are left out, with a marker, when the branch is longer).
pub(crate) fn transcript(journal: &Journal, left: &Left, budget: usize) -> String {
    let mut out = String::new();
    if let Some(request) = request_before(journal, &left.from) {
        out.push_str("The user's last request before the branch:\n");
        out.push_str(&clip(&request, CONTEXT_CHARS));
        out.push_str("\n\n");
    }
    out.push_str("The branch the user left, oldest first:\n\n");
    let messages: Vec<String> = left
        .positions
        .iter()
        .filter(|&&p| journal.is_model_visible_at(p))
        .filter_map(|&p| render_entry(&journal.read_entry(p).payload))
        .collect();
    let room = budget.saturating_sub(out.chars().count());
    out.push_str(&fit(&messages, room));
    out
}

/// Keeps the first message and as many of the newest as fit in `room` characters.
fn fit(messages: &[String], room: usize) -> String {
    let size = |m: &String| m.chars().count() + 2;
    let total: usize = messages.iter().map(size).sum();
    if total <= room {
        return messages.join("\n\n");
    }
    let Some((first, rest)) = messages.split_first() else { return String::new() };
    let marker_room = 60;
    let mut left_room = room.saturating_sub(size(first) + marker_room);
    let mut newest = Vec::new();
    for m in rest.iter().rev() {
        if size(m) > left_room {
            break;
        }
        left_room -= size(m);
        newest.push(m.as_str());
    }
    newest.reverse();
    let omitted = rest.len() - newest.len();
    let mut parts = vec![clip(first, room.saturating_sub(marker_room).max(1))];
    parts.push(format!("[… {omitted} messages of the branch left out here …]"));
    parts.extend(newest.into_iter().map(str::to_owned));
    parts.join("\n\n")
}

/// The text of the newest plain user message at or before `from`.
fn request_before(journal: &Journal, from: &EntryId) -> Option<String> {
    let pos = journal.position(from.as_str())?;
    journal
        .spine_positions(pos)
        .into_iter()
        .rev()
        .filter(|&p| journal.kind_at(p) == kind::USER)
        .find_map(|p| match &journal.read_entry(p).payload {
            Payload::User(u) if u.is_plain() => Some(texts(&u.content)),
            _ => None,
        })
}

fn texts(blocks: &[Block]) -> String {
    blocks.iter().filter_map(Block::as_text).collect::<Vec<_>>().join("\n")
}

/// One message as the transcript shows it; `None` for one with nothing to show.
fn render_entry(payload: &Payload) -> Option<String> {
    let text = match payload {
        Payload::User(u) => {
            let who = if u.is_plain() { "user" } else { "note to the assistant" };
            format!("[{who}] {}", clip(&texts(&u.content), TEXT_CHARS))
        }
        Payload::Assistant(a) => {
            let mut parts = Vec::new();
            for block in &a.content {
                match block {
                    Block::Text(t) if !t.text.trim().is_empty() => {
                        parts.push(format!("[assistant] {}", clip(&t.text, TEXT_CHARS)))
                    }
                    Block::ToolUse(call) => parts.push(format!(
                        "[assistant called {}] {}",
                        call.name,
                        clip(&call.input.to_string(), INPUT_CHARS)
                    )),
                    _ => {}
                }
            }
            if parts.is_empty() {
                return None;
            }
            parts.join("\n")
        }
        Payload::ToolResult(r) => {
            let output = r.content.try_str().unwrap_or("(output not readable)");
            let failed = if r.is_error { ", failed" } else { "" };
            format!("[result of {}{failed}] {}", r.tool_use_id, clip(output, RESULT_CHARS))
        }
        Payload::BranchSummary(b) => {
            format!("[an earlier summary of another branch] {}", clip(&b.summary, TEXT_CHARS))
        }
        _ => return None,
    };
    Some(text)
}

/// `text` cut to at most `max` characters: its head and tail around the marker. A byte is at
/// most a character, so a byte budget of `max` less the marker's room keeps within `max`.
fn clip(text: &str, max: usize) -> String {
    const MARKER_ROOM: usize = 48;
    if text.chars().count() <= max {
        return text.to_owned();
    }
    cut::head_tail(text, max.saturating_sub(MARKER_ROOM), cut::Whole::Nowhere)
        .unwrap_or_else(|| text.to_owned())
}

/// The reply as the summary to journal, or why it cannot be: empty, or longer than
/// [`SUMMARY_MAX_CHARS`] (a summary is never cut: one that ignored the limit is not trusted).
pub(crate) fn usable(reply: &str) -> Result<String, String> {
    let text = reply.trim();
    if text.is_empty() {
        return Err("the model's reply was empty".into());
    }
    let n = text.chars().count();
    if n > SUMMARY_MAX_CHARS {
        return Err(format!(
            "the model's reply was {n} characters, over the {SUMMARY_MAX_CHARS} a summary may have"
        ));
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use codewhale_journal::{
        AssistantPayload, Entry, HeadPayload, HeadReason, HeaderPayload, ToolResultPayload,
        UserPayload,
    };

    use super::*;

    struct J {
        j: Journal,
    }

    impl J {
        fn new() -> J {
            J { j: Journal::new(Entry::new(None, HeaderPayload::new("s", "/w"))).unwrap() }
        }
        fn on(&mut self, parent: &EntryId, payload: impl Into<Payload>) -> EntryId {
            let e = Entry::new(Some(parent.clone()), payload);
            let id = e.id.clone();
            self.j.push(e);
            id
        }
        fn add(&mut self, payload: impl Into<Payload>) -> EntryId {
            let head = self.j.head_id().clone();
            self.on(&head, payload)
        }
        fn user(&mut self, t: &str) -> EntryId {
            self.add(UserPayload::text(t))
        }
        fn reply(&mut self, t: &str) -> EntryId {
            self.add(AssistantPayload::new(vec![Block::text(t)]))
        }
        fn move_to(&mut self, to: &EntryId) {
            let head = self.j.head_id().clone();
            self.on(&head, HeadPayload::new(to.clone(), HeadReason::Rewind));
        }
    }

    #[test]
    fn a_rewind_leaves_the_part_after_where_head_goes() {
        let mut j = J::new();
        let u1 = j.user("fix the parser");
        let a1 = j.reply("looking");
        let _u2 = j.user("try nom");
        j.reply("nom fails on nested groups");
        j.user("and pest?");
        let a2 = j.reply("pest handles them");
        j.move_to(&a1);
        let left = left_part(&j.j, a2.as_str(), a1.as_str()).unwrap();
        assert_eq!(
            (left.from.clone(), left.tip.clone(), left.messages, left.user_turns),
            (a1.clone(), a2.clone(), 4, 2)
        );
        assert!(!left.tool_call);
        assert_eq!(left.parent_branch_id, None, "the first branch of the session");
        let text = transcript(&j.j, &left, 10_000);
        assert!(
            text.starts_with("The user's last request before the branch:\nfix the parser"),
            "{text}"
        );
        assert!(
            text.contains("[user] try nom\n\n[assistant] nom fails on nested groups"),
            "{text}"
        );
        // HEAD still on the branch, or going nowhere: nothing was left.
        assert_eq!(left_part(&j.j, a1.as_str(), a2.as_str()), None);
        assert_eq!(left_part(&j.j, u1.as_str(), a1.as_str()), None);
    }

    #[test]
    fn a_one_turn_chat_branch_or_a_non_tip_leaves_nothing_worth_a_summary() {
        let mut j = J::new();
        let _u1 = j.user("q");
        let a1 = j.reply("a");
        let u2 = j.user("q2");
        j.move_to(&a1);
        assert_eq!(left_part(&j.j, u2.as_str(), a1.as_str()), None, "one message");
        // One user turn and its reply, no tool call: the turn an Esc Esc edit replaces.
        let mut j = J::new();
        j.user("q");
        let a1 = j.reply("a");
        let start = j.j.header_entry().id.clone();
        j.move_to(&start);
        assert_eq!(left_part(&j.j, a1.as_str(), start.as_str()), None, "a one-turn chat branch");
        // A branch summary on the left part counts as neither a turn nor a call.
        let mut j = J::new();
        let _u1 = j.user("q");
        let a1 = j.reply("a");
        let s = j.add(codewhale_journal::BranchSummaryPayload::new(a1.clone(), "tried X"));
        let u2 = j.user("q2");
        let a2 = j.reply("a2");
        assert_eq!(left_part(&j.j, a2.as_str(), a1.as_str()), None);
        // A call in the one turn makes it worth a summary.
        let call = Block::tool_use("c1", "shell", serde_json::json!({"command": "make"}));
        j.add(AssistantPayload::new(vec![call]));
        let r = j.add(ToolResultPayload::new("c1", "built", false));
        let left = left_part(&j.j, r.as_str(), a1.as_str()).unwrap();
        assert!(left.tool_call && left.user_turns == 1, "{left:?}");
        // `s` is continued by `u2`: leaving it is not leaving a tip.
        assert_eq!(left_part(&j.j, s.as_str(), a1.as_str()), None);
        let _ = u2;
    }

    #[test]
    fn a_checkout_to_a_sibling_names_the_branch_point_and_the_parent_branch() {
        let mut j = J::new();
        let u1 = j.user("q");
        let a1 = j.reply("a");
        // A fork at a1: the branch starting at `side` ...
        let side = j.on(&a1, UserPayload::text("side question"));
        let side_a = j.on(&side, AssistantPayload::new(vec![Block::text("side answer")]));
        j.on(&a1, UserPayload::text("the first branch goes on"));
        // ... and, forked from inside it, a branch that is left.
        let l1 = j.on(&side_a, UserPayload::text("left 1"));
        let call = Block::tool_use("c1", "shell", serde_json::json!({"command": "make"}));
        let l2 = j.on(&l1, AssistantPayload::new(vec![call]));
        let l3 = j.on(&l2, ToolResultPayload::new("c1", "built", false));
        let other = j.on(&side_a, UserPayload::text("other"));
        let left = left_part(&j.j, l3.as_str(), other.as_str()).unwrap();
        assert_eq!((left.from, left.branch_id), (side_a, l1));
        assert_eq!(left.parent_branch_id, Some(side));
        let _ = u1;
    }

    #[test]
    fn the_transcript_keeps_within_its_budget_and_marks_what_it_left_out() {
        let mut j = J::new();
        let a0 = {
            j.user("start");
            j.reply("ok")
        };
        j.user("first on the branch");
        for k in 0..50 {
            let call =
                Block::tool_use(format!("c{k}"), "shell", serde_json::json!({"command": "make"}));
            j.add(AssistantPayload::new(vec![call]));
            j.add(ToolResultPayload::new(format!("c{k}"), "x".repeat(10_000), true));
        }
        let tip = j.reply("the last attempt failed too");
        j.move_to(&a0);
        let left = left_part(&j.j, tip.as_str(), a0.as_str()).unwrap();
        let text = transcript(&j.j, &left, 8_000);
        assert!(text.chars().count() <= 8_000, "{}", text.chars().count());
        assert!(text.contains("[user] first on the branch"), "the first message stays");
        assert!(text.contains("messages of the branch left out here"), "{text}");
        assert!(text.ends_with("[assistant] the last attempt failed too"), "the newest stays");
        assert!(text.contains(cut::WORDS), "long outputs are shortened");
    }

    #[test]
    fn a_reply_is_usable_only_when_it_says_something_within_the_limit() {
        assert_eq!(usable("  tried nom; it failed.\n").unwrap(), "tried nom; it failed.");
        assert!(usable(" \n ").unwrap_err().contains("empty"));
        assert!(usable(&"x".repeat(2_001)).unwrap_err().contains("2001 characters"));
        assert!(usable(&"é".repeat(2_000)).is_ok(), "characters, not bytes");
    }
}
