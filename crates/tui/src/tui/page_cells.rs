//! The conversation so far, from the engine's [`HistoryPage`]s, as cells.
//!
//! The engine sends the newest page unasked when a session opens and after every HEAD move
//! (`reset`), and older pages when the app asks for them as the user scrolls up; this module
//! replays a page's items into a [`Transcript`] through the same builders the live events use
//! ([`cell_builders`](super::cell_builders)), so a resumed cell is the cell the user saw live.
//! Nothing here reads a file. Items the active compaction covers are shown dimmed (the model
//! reads them only through the note), and a line after them says so; the compaction itself is
//! a capsule where its note sits.

use codewhale_protocol::{HistoryItem, HistoryPage};

use super::cell_builders::{self as build, Ending};
use super::cells::{CompactionSummary, Covered, NoticeKind, SideCell};
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
        replay(&mut transcript, item);
        if marks.contains(&i) {
            build::notice(&mut transcript, NoticeKind::Info, COVERED_MARK);
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

/// One item, through the builder its live event uses.
fn replay(t: &mut Transcript, item: &HistoryItem) {
    match item {
        HistoryItem::User { text, covered, images, .. } => {
            build::user_message(t, text, images, *covered)
        }
        HistoryItem::Assistant { text, thinking, covered, .. } => {
            build::reply(t, text, thinking, *covered)
        }
        HistoryItem::Anchor { text, covered, .. } => build::anchor(t, text, *covered),
        HistoryItem::BranchSummary { summary, covered, .. } => {
            t.push(Covered::new(build::branch_summary_cell(summary), *covered))
        }
        HistoryItem::Side { question, answer, model, cost_usd, .. } => build::side(
            t,
            SideCell {
                question: question.clone(),
                answer: answer.clone(),
                model: model.clone(),
                cost_usd: *cost_usd,
            },
        ),
        HistoryItem::AnchorWithdrawn { text, .. } => build::notice(
            t,
            NoticeKind::Info,
            format!("anchor withdrawn: {}", text.lines().next().unwrap_or_default()),
        ),
        HistoryItem::Tool { call_id, name, input, covered, .. } => {
            build::tool_requested(t, call_id, name, input, *covered);
            build::call_finished(t, call_id, ending_of(item));
        }
        HistoryItem::UserShell { id, command, covered, .. } => {
            build::user_shell_started(t, id, command, *covered);
            build::call_finished(t, id, ending_of(item));
        }
        HistoryItem::Compaction { note, .. } => {
            if let Some(summary) = compaction_summary(item) {
                build::compaction(t, summary, note.clone())
            }
        }
        HistoryItem::Notice { text, level, .. } => {
            build::notice(t, build::notice_kind(*level), text.clone())
        }
    }
}

/// How a tool call or a `!CMD` ended, as the page's item says.
fn ending_of(item: &HistoryItem) -> Ending {
    match item {
        HistoryItem::Tool { result: Some(r), .. } => Ending {
            end: r.end,
            exit_code: r.exit_code,
            exit_code_in_output: r.exit_code_in_output,
            reason: r.reason.clone(),
            output: r.output.clone(),
        },
        HistoryItem::UserShell { output, end, exit_code, .. } => {
            Ending::user_shell(output, *end, *exit_code)
        }
        _ => Ending::without_result(),
    }
}

/// The finished cell of a tool call or of the user's own command (`!CMD`), as the transcript
/// shows it (`codewhale export` folds it to its line); `None` for any other item.
pub fn tool_cell(item: &HistoryItem) -> Option<ToolCell> {
    let mut cell = match item {
        HistoryItem::Tool { call_id, name, input, .. } => {
            ToolCell::new(call_id.clone(), name.clone(), input)
        }
        HistoryItem::UserShell { id, command, .. } => {
            let running = ToolState::Running { elapsed_secs: 0, live: String::new() };
            ToolCell::user_shell(id.clone(), command, running)
        }
        _ => return None,
    };
    cell.state = ending_of(item).state();
    Some(cell)
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
    use codewhale_protocol::{CallEnd, CompactionKind, CompactionTrigger, ToolOutcome};
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
