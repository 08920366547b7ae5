//! The conversation so far, from the engine's [`HistoryPage`]s, as cells.
//!
//! The engine sends the newest page unasked when a session opens and after every HEAD move
//! (`reset`), and older pages when the app asks for them as the user scrolls up; this module
//! only turns a page into a [`Transcript`] to show or to put before what is shown. Nothing here
//! reads a file. Items the active compaction covers are shown dimmed (the model reads them only
//! through the note); the compaction itself is a capsule where its note sits.

use codewhale_engine::protocol::{HistoryItem, HistoryPage};

use super::cells::{
    summarize_input, AnchorCell, AssistantCell, CompactionCell, CompactionSummary, Covered,
    NoticeCell, NoticeKind, ToolCell, ToolState, UserCell,
};
use super::transcript::Transcript;

/// The cells of `page`, oldest first.
pub fn transcript_of(page: &HistoryPage) -> Transcript {
    let mut transcript = Transcript::default();
    for item in &page.items {
        push_item(&mut transcript, item);
    }
    transcript
}

fn push_item(t: &mut Transcript, item: &HistoryItem) {
    match item {
        HistoryItem::User { text, covered, .. } => {
            t.push(Covered::new(UserCell { text: text.clone() }, *covered))
        }
        HistoryItem::Assistant { text, covered, .. } if !text.trim().is_empty() => {
            t.push(Covered::new(AssistantCell { text: text.clone(), cut_short: false }, *covered))
        }
        HistoryItem::Anchor { text, covered, .. } => {
            t.push(Covered::new(AnchorCell { text: text.clone() }, *covered))
        }
        HistoryItem::AnchorWithdrawn { text, .. } => t.push(NoticeCell {
            kind: NoticeKind::Info,
            text: format!("anchor withdrawn: {}", text.lines().next().unwrap_or_default()),
        }),
        HistoryItem::Tool { call_id, name, input, result, covered, .. } => {
            let state = match result {
                Some(r) => ToolState::Done { is_error: r.is_error, output: r.output.clone() },
                None => ToolState::Done { is_error: true, output: "no result".to_owned() },
            };
            let cell = ToolCell {
                call_id: call_id.clone(),
                name: name.clone(),
                summary: summarize_input(input),
                state,
                expanded: false,
            };
            t.push(Covered::new(cell, *covered));
        }
        HistoryItem::Compaction {
            id,
            trigger,
            path,
            covered_entries,
            retained,
            tokens_before,
            tokens_after,
            note,
        } => t.push(CompactionCell::new(
            CompactionSummary {
                id: id.clone(),
                trigger: *trigger,
                path: *path,
                covered: *covered_entries,
                retained: *retained,
                tokens_before: *tokens_before,
                tokens_after: *tokens_after,
            },
            Some(note.clone()),
        )),
        HistoryItem::Notice { text, .. } => {
            t.push(NoticeCell { kind: NoticeKind::Info, text: text.clone() })
        }
        // Thinking-only replies and items of newer protocol versions are not shown.
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use codewhale_engine::protocol::{CompactionKind, CompactionTrigger, ToolOutcome};
    use serde_json::json;

    use super::*;

    #[test]
    fn a_page_becomes_cells_in_order_with_tool_results_joined() {
        let page = HistoryPage {
            head: "a2".into(),
            items: vec![
                HistoryItem::User { id: "u1".into(), text: "list files".into(), covered: true },
                HistoryItem::Tool {
                    id: "a1".into(),
                    call_id: "c1".into(),
                    name: "list_dir".into(),
                    input: json!({"path": "."}),
                    result: Some(ToolOutcome { is_error: false, output: "a.rs".into() }),
                    covered: true,
                },
                HistoryItem::Compaction {
                    id: "k1".into(),
                    trigger: CompactionTrigger::Manual,
                    path: CompactionKind::Summary,
                    covered_entries: 3,
                    retained: 1,
                    tokens_before: 9_000,
                    tokens_after: 1_000,
                    note: "Codewhale handoff note.".into(),
                },
                HistoryItem::Anchor { id: "n1".into(), text: "never push".into(), covered: false },
                HistoryItem::Assistant {
                    id: "a2".into(),
                    text: "Two files.".into(),
                    thinking: String::new(),
                    covered: false,
                },
            ],
            older: None,
            reset: true,
        };
        let t = transcript_of(&page);
        assert_eq!(t.len(), 5);
    }
}
