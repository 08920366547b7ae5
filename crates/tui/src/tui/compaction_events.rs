//! Compaction as the engine reports it — a pass starting, its progress, its end (a capsule, a
//! failure, a refusal, a cancellation) — and the summary of a branch HEAD left. The capsule and
//! the summary's cell come from `cell_builders`, as they do when a history page is replayed.
//!
//! Invariant: every end of a pass returns the lifecycle to where the pass found it (the turn it
//! ran in, or idle) and sends what was queued meanwhile.

use codewhale_protocol::{BranchSummaryState, CompactionTrigger};

use super::app::{App, Lifecycle};
use super::cell_builders as build;
use super::cells::{short_tokens, CompactionSummary, NoticeKind};

impl App {
    pub(super) fn on_compaction_started(&mut self) {
        let in_turn = self.lifecycle.turn_running();
        self.lifecycle = Lifecycle::Compacting { in_turn };
    }

    pub(super) fn on_compaction_finished(&mut self, summary: CompactionSummary, note: String) {
        // One inside a turn is followed by the turn's own end: called back once; one done
        // while idle is nothing the user waited for.
        let waited = summary.trigger != CompactionTrigger::Idle;
        if waited && self.lifecycle == (Lifecycle::Compacting { in_turn: false }) {
            let said = format!(
                "Codewhale: compacted, {} → {} tokens",
                short_tokens(summary.tokens_before),
                short_tokens(summary.tokens_after)
            );
            self.call_back(&said);
        }
        build::compaction(&mut self.transcript, summary, note);
        self.end_compaction();
    }

    pub(super) fn on_compaction_progress(&mut self, request: u32, of: u32, tokens: u64) {
        self.session.compaction_progress = Some((request, of, tokens, self.progress.clock))
    }

    pub(super) fn on_compaction_failed(&mut self, reason: &str) {
        self.notice(NoticeKind::Error, format!("compaction failed: {reason}"));
        self.end_compaction();
    }

    /// Nothing could or needed to shrink: information, not a failure.
    pub(super) fn on_compaction_refused(&mut self, reason: &str) {
        self.notice(NoticeKind::Info, format!("nothing to compact: {reason}"));
        self.end_compaction();
    }

    pub(super) fn on_compaction_cancelled(&mut self) {
        self.notice(NoticeKind::Warning, "compaction cancelled; nothing was changed");
        self.end_compaction();
    }

    /// The summary of the branch the user left: quiet while it is written; once written, its
    /// cell goes where the journal has it — at the end when idle, before the message just sent
    /// when a turn was starting.
    pub(super) fn on_branch_summary(
        &mut self,
        state: BranchSummaryState,
        summary: Option<String>,
        reason: Option<String>,
    ) {
        self.session.branch_summary_writing = state == BranchSummaryState::Writing;
        match state {
            BranchSummaryState::Written => {
                if let Some(summary) = summary {
                    let cell = build::branch_summary_cell(&summary);
                    if self.lifecycle.turn_running() {
                        self.transcript.insert_before_last(cell);
                    } else {
                        self.transcript.push(cell);
                    }
                }
            }
            BranchSummaryState::Dropped => {
                let why = reason.unwrap_or_else(|| "it could not be written".into());
                self.notice(NoticeKind::Info, format!("no summary of the branch you left: {why}"));
            }
            // Writing shows in the status line; "none" answers an op only `codewhale rewind`
            // sends.
            BranchSummaryState::Writing | BranchSummaryState::None => {}
        }
    }

    pub(super) fn end_compaction(&mut self) {
        self.session.compaction_progress = None;
        self.lifecycle = match self.lifecycle {
            Lifecycle::Compacting { in_turn: true } => Lifecycle::Streaming { thinking: false },
            Lifecycle::Compacting { in_turn: false } => Lifecycle::Idle,
            ref other => other.clone(),
        };
        self.send_queued();
    }
}
