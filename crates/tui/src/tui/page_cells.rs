//! The conversation so far, from the engine's [`HistoryPage`]s, as cells.
//!
//! The engine sends the newest page unasked when a session opens and after every HEAD move
//! (`reset`), and older pages when the app asks for them as the user scrolls up; this module
//! only turns a page into a [`Transcript`] to show or to put before what is shown. Nothing here
//! reads a file. Items the active compaction covers are shown dimmed (the model reads them only
//! through the note), and a line after them says so; the compaction itself is a
//! capsule where its note sits.

use codewhale_protocol::{CallEnd, HistoryItem, HistoryPage, NoticeLevel};

use super::branch_cell::BranchSummaryCell;
use super::cells::{
    AnchorCell, AssistantCell, CompactionCell, CompactionSummary, Covered, ImageCell, NoticeCell,
    NoticeKind, ThinkingCell, UserCell,
};
use super::tool_cell::{ToolCell, ToolState};
use super::transcript::Transcript;

/// The cells of `page`, oldest first.
pub fn transcript_of(page: &HistoryPage) -> Transcript {
    // The mark goes after the last covered item before each capsule (the retained last round
    // sits between them, drawn normally).
    let mut marks = std::collections::HashSet::new();
    let mut last_covered = None;
    for (i, item) in page.items.iter().enumerate() {
        if is_covered(item) {
            last_covered = Some(i);
        } else if matches!(item, HistoryItem::Compaction { .. }) {
            marks.extend(last_covered.take());
        }
    }
    let mut transcript = Transcript::default();
    for (i, item) in page.items.iter().enumerate() {
        push_item(&mut transcript, item);
        if marks.contains(&i) {
            transcript.push(NoticeCell { kind: NoticeKind::Info, text: COVERED_MARK.to_owned() });
        }
    }
    transcript
}

/// Said after the turns a compaction covers (before its capsule and the retained round).
pub const COVERED_MARK: &str =
    "↑ dimmed: the model now reads these turns only through the checkpoint note";

fn is_covered(item: &HistoryItem) -> bool {
    match item {
        HistoryItem::User { covered, .. }
        | HistoryItem::Assistant { covered, .. }
        | HistoryItem::Anchor { covered, .. }
        | HistoryItem::Tool { covered, .. }
        | HistoryItem::UserShell { covered, .. }
        | HistoryItem::BranchSummary { covered, .. } => *covered,
        _ => false,
    }
}

fn push_item(t: &mut Transcript, item: &HistoryItem) {
    match item {
        HistoryItem::User { text, covered, images, .. } => {
            t.push(Covered::new(UserCell { text: text.clone() }, *covered));
            for image in images {
                t.push(Covered::new(ImageCell { image: image.clone() }, *covered));
            }
        }
        HistoryItem::Assistant { text, thinking, covered, .. } => {
            if !thinking.trim().is_empty() {
                let cell = ThinkingCell { text: thinking.clone(), ..ThinkingCell::default() };
                t.push(Covered::new(cell, *covered));
            }
            if !text.trim().is_empty() {
                let cell = AssistantCell::new(text.clone());
                t.push(Covered::new(cell, *covered));
            }
        }
        HistoryItem::Anchor { text, covered, .. } => {
            t.push(Covered::new(AnchorCell { text: text.clone() }, *covered))
        }
        HistoryItem::BranchSummary { summary, covered, .. } => {
            let cell = BranchSummaryCell { summary: summary.clone(), ..Default::default() };
            t.push(Covered::new(cell, *covered))
        }
        HistoryItem::AnchorWithdrawn { text, .. } => t.push(NoticeCell {
            kind: NoticeKind::Info,
            text: format!("anchor withdrawn: {}", text.lines().next().unwrap_or_default()),
        }),
        HistoryItem::Tool { covered, .. } | HistoryItem::UserShell { covered, .. } => {
            if let Some(cell) = tool_cell(item) {
                t.push(Covered::new(cell, *covered));
            }
        }
        HistoryItem::Compaction { note, .. } => {
            if let Some(summary) = compaction_summary(item) {
                t.push(CompactionCell::new(summary, Some(note.clone())));
            }
        }
        HistoryItem::Notice { text, level, .. } => {
            let kind = match level {
                NoticeLevel::Info => NoticeKind::Info,
                NoticeLevel::Warning => NoticeKind::Warning,
                NoticeLevel::Error => NoticeKind::Error,
            };
            t.push(NoticeCell { kind, text: text.clone() })
        }
    }
}

/// The cell of a tool call or of the user's own command (`!CMD`), as the transcript shows it
/// after a resume; `None` for any other item.
pub fn tool_cell(item: &HistoryItem) -> Option<ToolCell> {
    match item {
        HistoryItem::Tool { call_id, name, input, result, .. } => {
            let state = match result {
                Some(r) => ToolState::Done {
                    end: r.end,
                    exit_code: r.exit_code,
                    exit_code_in_output: r.exit_code_in_output,
                    reason: r.reason.clone(),
                    output: r.output.clone(),
                },
                None => ToolState::Done {
                    end: CallEnd::Interrupted,
                    exit_code: None,
                    exit_code_in_output: false,
                    reason: None,
                    output: "no result".to_owned(),
                },
            };
            let mut cell = ToolCell::new(call_id.clone(), name.clone(), input);
            cell.state = state;
            Some(cell)
        }
        HistoryItem::UserShell { id, command, output, exit_code, .. } => {
            let end = match exit_code {
                Some(0) => CallEnd::Completed,
                _ => CallEnd::Failed,
            };
            let state = ToolState::Done {
                end,
                exit_code: *exit_code,
                exit_code_in_output: exit_code.is_some(),
                reason: None,
                output: output.clone(),
            };
            Some(ToolCell::user_shell(id.clone(), command, state))
        }
        _ => None,
    }
}

/// What a compaction item's capsule says; `None` for any other item.
pub fn compaction_summary(item: &HistoryItem) -> Option<CompactionSummary> {
    match item {
        HistoryItem::Compaction {
            id,
            trigger,
            path,
            covered_entries,
            retained,
            tokens_before,
            tokens_after,
            background,
            ..
        } => Some(CompactionSummary {
            id: id.clone(),
            trigger: *trigger,
            path: *path,
            covered: *covered_entries,
            retained: *retained,
            tokens_before: *tokens_before,
            tokens_after: *tokens_after,
            background: *background,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use codewhale_protocol::{CompactionKind, CompactionTrigger, ToolOutcome};
    use serde_json::json;

    use super::*;

    #[test]
    fn a_page_becomes_cells_in_order_with_tool_results_joined() {
        let page = HistoryPage {
            head: "a2".into(),
            items: vec![
                HistoryItem::User {
                    id: "u1".into(),
                    text: "list files".into(),
                    covered: true,
                    images: Vec::new(),
                },
                HistoryItem::Tool {
                    id: "a1".into(),
                    call_id: "c1".into(),
                    name: "list_dir".into(),
                    input: json!({"path": "."}),
                    result: Some(ToolOutcome {
                        is_error: false,
                        output: "a.rs".into(),
                        end: CallEnd::Completed,
                        exit_code: None,
                        exit_code_in_output: false,
                        reason: None,
                    }),
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
                    background: false,
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
        // The covered turns, the mark, the capsule, the anchor and the reply.
        assert_eq!(t.len(), 6);
        assert_eq!(t.find("dimmed", None, true), Some(2));
    }
}
