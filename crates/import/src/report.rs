//! [`Report`]: what an import read, wrote, repaired and left out.
//!
//! Invariant: every complete line of the source is either used or counted under a reason in
//! [`Report::lines_unused`] (or as a sidechain line); nothing is dropped without a count.

use std::collections::BTreeMap;

use serde::Serialize;

/// Which tool wrote the source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tool {
    /// Claude Code (`~/.claude/projects/<dir>/<uuid>.jsonl`).
    Claude,
    /// Codex CLI (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).
    Codex,
}

impl Tool {
    /// `claude` or `codex`, as in `--from` and `--json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tool::Claude => "claude",
            Tool::Codex => "codex",
        }
    }

    /// The product's name, for messages and notes.
    pub fn display_name(self) -> &'static str {
        match self {
            Tool::Claude => "Claude Code",
            Tool::Codex => "Codex CLI",
        }
    }
}

/// Why thinking was left out.
pub mod thinking_reason {
    /// A thinking block that came without its signature cannot be replayed to the provider.
    pub const UNSIGNED: &str = "unsigned";
    /// Codex reasoning items are encrypted for OpenAI's servers only; their summaries carry
    /// no signature.
    pub const ENCRYPTED_REASONING: &str = "encrypted reasoning";
    /// A signed block that holds a secret is dropped whole (redaction may not edit it).
    pub const HELD_A_SECRET: &str = "held a secret";
}

/// The fidelity report of one import.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub source: Tool,
    /// Complete lines read from the source.
    pub entries_read: u64,
    /// Journal entries written after the header (compaction records included).
    pub entries_written: u64,
    /// Tool pairs made whole: calls given an "interrupted" result plus results kept as text
    /// because their call is not in the conversation.
    pub pairs_repaired: u64,
    pub calls_interrupted: u64,
    pub results_kept_as_text: u64,
    /// Source lines or items folded into an assistant entry that another line had started.
    pub blocks_merged: u64,
    pub thinking_dropped: u64,
    pub thinking_dropped_reasons: BTreeMap<String, u64>,
    /// The source's own compaction summaries, imported as checkpoints.
    pub summaries_imported: u64,
    /// Lines of sub-agent conversations (not spliced into the main branch).
    pub sidechain_lines: u64,
    /// The source is a sub-agent's own transcript (Claude Code's `agent-*.jsonl`), imported
    /// as a session of its own.
    pub subagent: bool,
    /// Images and documents replaced by a one-line text placeholder.
    pub images_replaced: u64,
    /// Images of user messages carried into the new session's blob store.
    pub images_imported: u64,
    /// Bytes of a torn final line (a file still being written, or cut short), if any.
    pub torn_tail_bytes: Option<u64>,
    /// Lines not used, by reason.
    pub lines_unused: BTreeMap<String, u64>,
    /// Structural problems of the source met and worked around (duplicate ids, a parent that
    /// is missing, a parent cycle), by kind.
    pub problems: BTreeMap<String, u64>,
}

impl Report {
    /// An empty report for a source written by `tool`.
    pub fn new(tool: Tool) -> Report {
        Report {
            source: tool,
            entries_read: 0,
            entries_written: 0,
            pairs_repaired: 0,
            calls_interrupted: 0,
            results_kept_as_text: 0,
            blocks_merged: 0,
            thinking_dropped: 0,
            thinking_dropped_reasons: BTreeMap::new(),
            summaries_imported: 0,
            sidechain_lines: 0,
            subagent: false,
            images_replaced: 0,
            images_imported: 0,
            torn_tail_bytes: None,
            lines_unused: BTreeMap::new(),
            problems: BTreeMap::new(),
        }
    }

    /// Counts one line (or item) not used, under `reason`.
    pub fn unused(&mut self, reason: impl Into<String>) {
        *self.lines_unused.entry(reason.into()).or_default() += 1;
    }

    /// Counts `n` lines skipped unread for being longer than any session line.
    pub(crate) fn oversized(&mut self, n: u64) {
        if n > 0 {
            *self.lines_unused.entry("line over 64 MiB (skipped unread)".into()).or_default() += n;
        }
    }

    /// Counts one structural problem of the source, of `kind`.
    pub fn problem(&mut self, kind: impl Into<String>) {
        *self.problems.entry(kind.into()).or_default() += 1;
    }

    /// Counts one thinking block dropped, under `reason`.
    pub fn drop_thinking(&mut self, reason: &str) {
        self.thinking_dropped += 1;
        *self.thinking_dropped_reasons.entry(reason.to_owned()).or_default() += 1;
    }

    /// Lines not used, all reasons together.
    pub fn unused_total(&self) -> u64 {
        self.lines_unused.values().sum()
    }
}
