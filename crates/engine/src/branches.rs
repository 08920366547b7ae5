//! The branches of a session as a user picks them: each tip (a conversation entry nothing
//! continues) with its newest message and its age, newest first, for `/checkout`'s picker,
//! `/context` and `codewhale context --json`.
//!
//! Invariant: reads only the tips' entries and, walking back from each, the first entry with
//! text — never a whole branch.

use codewhale_journal::{Journal, Payload};

use codewhale_protocol::report::BranchInfo;

/// Characters of a tip's newest message shown in a picker.
const PREVIEW_CHARS: usize = 80;

/// Every branch tip of `journal`, newest first; `current` marks the tips HEAD is on.
pub fn branches(journal: &Journal) -> Vec<BranchInfo> {
    let head = journal.head_id().as_str();
    let mut tips: Vec<BranchInfo> = journal
        .tips()
        .into_iter()
        .filter_map(|tip| {
            let pos = journal.position(tip.id.as_str())?;
            let preview = journal
                .spine_positions(pos)
                .into_iter()
                .rev()
                .filter(|&p| journal.is_model_visible_at(p))
                .find_map(|p| preview_of(&journal.read_entry(p).payload))
                .unwrap_or_default();
            Some(BranchInfo {
                tip: tip.id.to_string(),
                preview,
                when: tip.ts.to_string(),
                current: journal.is_ancestor(head, tip.id.as_str()),
            })
        })
        .collect();
    tips.sort_by(|a, b| b.when.cmp(&a.when));
    tips
}

/// The first line of a message's text, who said it first ("you: …", "model: …").
fn preview_of(payload: &Payload) -> Option<String> {
    let (who, blocks) = match payload {
        Payload::User(u) if u.is_plain() && u.attachment.is_none() => ("you", &u.content),
        Payload::Assistant(a) => ("model", &a.content),
        _ => return None,
    };
    let text = blocks.iter().filter_map(|b| b.as_text()).find(|t| !t.trim().is_empty())?;
    let first = text.lines().find(|l| !l.trim().is_empty())?.trim();
    let mut line: String = first.chars().take(PREVIEW_CHARS).collect();
    if line.len() < first.len() {
        line.push('…');
    }
    Some(format!("{who}: {line}"))
}

#[cfg(test)]
mod tests {
    use codewhale_journal::{AssistantPayload, Block, Entry, HeaderPayload, UserPayload};

    use super::*;

    #[test]
    fn each_tip_shows_its_newest_message_and_head_marks_its_own() {
        let header = Entry::new(None, HeaderPayload::new("s", "/w"));
        let mut j = Journal::new(header.clone()).unwrap();
        let u1 = Entry::new(Some(header.id.clone()), UserPayload::text("first question"));
        let a1 =
            Entry::new(Some(u1.id.clone()), AssistantPayload::new(vec![Block::text("answer one")]));
        let side =
            Entry::new(Some(u1.id.clone()), AssistantPayload::new(vec![Block::text("\nother")]));
        for e in [u1, a1.clone(), side.clone()] {
            j.push(e);
        }
        let found = branches(&j);
        assert_eq!(found.len(), 2);
        let of = |id: &Entry| found.iter().find(|b| b.tip == id.id.as_str()).unwrap().clone();
        assert_eq!(of(&a1).preview, "model: answer one");
        assert_eq!(of(&side).preview, "model: other");
        // An entry appended off HEAD's branch does not move HEAD.
        assert!(of(&a1).current, "HEAD is on the first branch");
        assert!(!of(&side).current);
    }
}
