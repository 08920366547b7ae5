//! One builder per kind of transcript cell, called both by the live path (an engine event, in
//! `engine_events`) and by the replay of a history page (`page_cells`), so a cell the user saw
//! live and the same cell after a resume or a HEAD move are built by the same code from the
//! same values: an interrupted `!CMD` reads "interrupted" in both, because both carry the
//! engine's `end`, never a guess from the exit code.
//!
//! The builders only change a [`Transcript`]; the lifecycle, the clocks and the outbox are the
//! live handlers' business.

use codewhale_protocol::{CallEnd, ImageInfo, NoticeLevel};

use super::branch_cell::BranchSummaryCell;
use super::cells::{
    AnchorCell, AssistantCell, CompactionCell, CompactionSummary, Covered, ImageCell, NoticeCell,
    NoticeKind, SideCell, ThinkingCell, UserCell,
};
use super::tool_cell::{ToolCell, ToolState};
use super::transcript::Transcript;

/// How a call (a tool call or the user's own `!CMD`) ended, as the engine said it: in the
/// event that finished it live, or in the history page's item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    pub end: CallEnd,
    pub exit_code: Option<i32>,
    /// Whether `output` states the exit code itself, so the cell does not repeat it.
    pub exit_code_in_output: bool,
    /// What the user said when they declined the call.
    pub reason: Option<String>,
    pub output: String,
}

impl Ending {
    /// A call the journal has no result for: it was cut off (a crash, an interrupt).
    pub fn without_result() -> Ending {
        Ending {
            end: CallEnd::Interrupted,
            exit_code: None,
            exit_code_in_output: false,
            reason: None,
            output: "no result".to_owned(),
        }
    }

    /// How the user's own command (`!CMD`) ended: the shell writes the exit code into the
    /// output itself.
    pub fn user_shell(output: &str, end: CallEnd, exit_code: Option<i32>) -> Ending {
        Ending {
            end,
            exit_code,
            exit_code_in_output: exit_code.is_some(),
            reason: None,
            output: output.to_owned(),
        }
    }

    /// The finished state of the call's cell.
    pub fn state(self) -> ToolState {
        ToolState::Done {
            end: self.end,
            exit_code: self.exit_code,
            exit_code_in_output: self.exit_code_in_output,
            reason: self.reason,
            output: self.output,
        }
    }
}

/// The kind of cell a notice level is drawn as.
pub fn notice_kind(level: NoticeLevel) -> NoticeKind {
    match level {
        NoticeLevel::Info => NoticeKind::Info,
        NoticeLevel::Warning => NoticeKind::Warning,
        NoticeLevel::Error => NoticeKind::Error,
    }
}

/// A message the user sent, and the images it carried.
pub fn user_message(t: &mut Transcript, text: &str, images: &[ImageInfo], covered: bool) {
    t.push(Covered::new(UserCell { text: text.to_owned() }, covered));
    for image in images {
        t.push(Covered::new(ImageCell { image: image.clone() }, covered));
    }
}

/// A finished reply, its thinking first (each only when it says something). A reply that
/// streams is built by the transcript's active cell and committed the same way.
pub fn reply(t: &mut Transcript, text: &str, thinking: &str, covered: bool) {
    if !thinking.trim().is_empty() {
        let cell = ThinkingCell { text: thinking.to_owned(), ..ThinkingCell::default() };
        t.push(Covered::new(cell, covered));
    }
    if !text.trim().is_empty() {
        t.push(Covered::new(AssistantCell::new(text.to_owned()), covered));
    }
}

/// A tool call the model asked for (not started yet).
pub fn tool_requested(
    t: &mut Transcript,
    call_id: &str,
    name: &str,
    input: &serde_json::Value,
    covered: bool,
) {
    t.push(Covered::new(ToolCell::new(call_id.to_owned(), name.to_owned(), input), covered));
}

/// The user's own command (`!CMD`), running.
pub fn user_shell_started(t: &mut Transcript, call_id: &str, command: &str, covered: bool) {
    let running = ToolState::Running { elapsed_secs: 0, live: String::new() };
    t.push(Covered::new(ToolCell::user_shell(call_id.to_owned(), command, running), covered));
}

/// Sets the state of the newest cell of call `call_id`; `false` when there is none.
pub fn call_state(t: &mut Transcript, call_id: &str, state: ToolState) -> bool {
    t.update_last(|cell| {
        super::tool_cell::tool_mut(cell).is_some_and(|tool| {
            let hit = tool.call_id == call_id;
            if hit {
                tool.state = state.clone();
            }
            hit
        })
    })
}

/// A call (a tool call or a `!CMD`) ended.
pub fn call_finished(t: &mut Transcript, call_id: &str, ending: Ending) {
    call_state(t, call_id, ending.state());
}

/// What a write or an edit changed, folded under its call.
pub fn diff(t: &mut Transcript, diff: String) {
    t.push(super::diff_cell::DiffCell { diff, ..Default::default() });
}

/// A compaction's capsule, where its note sits.
pub fn compaction(t: &mut Transcript, summary: CompactionSummary, note: String) {
    t.push(CompactionCell::new(summary, Some(note)));
}

/// A pinned note, where the conversation has it.
pub fn anchor(t: &mut Transcript, text: &str, covered: bool) {
    t.push(Covered::new(AnchorCell { text: text.to_owned() }, covered));
}

/// The summary of a branch the user left (placed by the caller: a live one may go before the
/// message just sent).
pub fn branch_summary_cell(summary: &str) -> BranchSummaryCell {
    BranchSummaryCell { summary: summary.to_owned(), ..Default::default() }
}

/// A side question (`/btw`) and its answer, where it was asked.
pub fn side(t: &mut Transcript, cell: SideCell) {
    t.push(cell);
}

/// A notice, as a line of its level.
pub fn notice(t: &mut Transcript, kind: NoticeKind, text: impl Into<String>) {
    t.push(NoticeCell { kind, text: text.into() });
}
