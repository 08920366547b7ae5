//! The conversation so far, for a resumed session: what the model reads at HEAD, as cells.
//!
//! Read-only: the journal is loaded with the journal crate's read-only loader (the same one
//! the engine's `/context` report uses) and rendered with the one view function, so the
//! transcript shows exactly what the model will read — retained messages, the checkpoint of
//! the active compaction as its capsule, then the recent turns. Nothing here writes.
//! Invariant: every item of the view becomes at most one entry of [`HistoryItem`]s, in view
//! order, with tool results joined to their calls.

use std::path::Path;

use codewhale_engine::journal::{self, Block, ItemContent, ItemKind};

use super::cells::{
    summarize_input, AnchorCell, AssistantCell, CompactionCell, CompactionSummary, ToolCell,
    ToolState, UserCell,
};
use super::transcript::Transcript;

/// Output kept per tool result for display; the journal has the rest.
const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// One past event to show, as plain data (sent between threads, compared in tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryItem {
    User(String),
    Assistant(String),
    Anchor(String),
    Tool { call_id: String, name: String, summary: String, result: Option<(bool, String)> },
    Compaction { summary: CompactionSummary, note: String },
}

/// The checkpoint note of the compaction record `id` in the session file at `path`.
pub fn note(path: &Path, id: &str) -> Result<String, String> {
    let loaded = journal::load_read_only(path)
        .map_err(|e| format!("cannot read the compaction note: {e}"))?;
    match loaded.journal.get(id).map(|e| &e.payload) {
        Some(journal::Payload::Compaction(record)) => {
            Ok(journal::checkpoint_note(record).into_owned())
        }
        _ => Err(format!("the journal has no compaction record {id}")),
    }
}

/// Loads the session file at `path` and lists what its HEAD's view shows.
pub fn load(path: &Path) -> Result<Vec<HistoryItem>, String> {
    let loaded = journal::load_read_only(path)
        .map_err(|e| format!("cannot show the earlier conversation: {e}"))?;
    let j = loaded.journal;
    let view = journal::render(&j, j.head_id().as_str());
    let mut items = Vec::new();
    for item in &view.items {
        match (&item.kind, &item.content) {
            (ItemKind::Checkpoint, _) => {
                if let Some(c) = &view.compaction {
                    let r = &c.record;
                    items.push(HistoryItem::Compaction {
                        summary: CompactionSummary {
                            id: c.id.to_string(),
                            trigger: r.trigger.as_str().to_owned(),
                            path: r.path.as_str().to_owned(),
                            covered: r.covers.as_ref().map_or(0, |v| v.count),
                            retained: r.retained_ids.len() as u64,
                            tokens_before: r.tokens_before.unwrap_or(0),
                            tokens_after: r.tokens_after.unwrap_or(0),
                        },
                        note: journal::checkpoint_note(r).into_owned(),
                    });
                }
            }
            (ItemKind::ToolResult, ItemContent::ToolResult(result)) => {
                let output = truncate(result.content.as_str());
                let joined = items.iter_mut().rev().find_map(|i| match i {
                    HistoryItem::Tool { call_id, result: slot, .. }
                        if *call_id == result.tool_use_id && slot.is_none() =>
                    {
                        Some(slot)
                    }
                    _ => None,
                });
                if let Some(slot) = joined {
                    *slot = Some((result.is_error, output));
                }
            }
            (kind, ItemContent::Blocks(blocks)) => {
                let text = texts(blocks);
                match kind {
                    ItemKind::User if !text.is_empty() => items.push(HistoryItem::User(text)),
                    ItemKind::Anchor => items.push(HistoryItem::Anchor(text)),
                    ItemKind::Assistant => {
                        if !text.trim().is_empty() {
                            items.push(HistoryItem::Assistant(text));
                        }
                        for block in blocks {
                            if let Block::ToolUse(call) = block {
                                items.push(HistoryItem::Tool {
                                    call_id: call.id.clone(),
                                    name: call.name.clone(),
                                    summary: summarize_input(&call.input),
                                    result: None,
                                });
                            }
                        }
                    }
                    // Engine notes to the model are not the user's words.
                    _ => {}
                }
            }
            _ => {}
        }
    }
    Ok(items)
}

fn texts(blocks: &[Block]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn truncate(text: &str) -> String {
    if text.len() <= MAX_OUTPUT_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_OUTPUT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… (shortened for display)", &text[..end])
}

/// Adds the items to the transcript as cells.
pub fn push_all(transcript: &mut Transcript, items: Vec<HistoryItem>) {
    for item in items {
        match item {
            HistoryItem::User(text) => transcript.push(UserCell { text }),
            HistoryItem::Assistant(text) => {
                transcript.push(AssistantCell { text, cut_short: false })
            }
            HistoryItem::Anchor(text) => transcript.push(AnchorCell { text }),
            HistoryItem::Tool { call_id, name, summary, result } => {
                let state = match result {
                    Some((is_error, output)) => ToolState::Done { is_error, output },
                    None => ToolState::Done { is_error: true, output: "no result".to_owned() },
                };
                transcript.push(ToolCell { call_id, name, summary, state, expanded: false });
            }
            HistoryItem::Compaction { summary, note } => {
                transcript.push(CompactionCell::new(summary, Some(note)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_becomes_the_items_the_model_reads() {
        let lines = [
            r#"{"v":1,"id":"h","parent":null,"kind":"header","ts":"2026-11-29T18:00:00.000Z","payload":{"session_id":"s","created_at":"2026-11-29T18:00:00.000Z","cwd":"/w","app_version":"0","provider":"openai","model":"m"}}"#,
            r#"{"v":1,"id":"u1","parent":"h","kind":"user","ts":"2026-11-29T18:00:01.000Z","payload":{"content":[{"type":"text","text":"list files"}]}}"#,
            r#"{"v":1,"id":"a1","parent":"u1","kind":"assistant","ts":"2026-11-29T18:00:02.000Z","payload":{"content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"c1","name":"list_dir","input":{"path":"."}}]}}"#,
            r#"{"v":1,"id":"r1","parent":"a1","kind":"tool_result","ts":"2026-11-29T18:00:03.000Z","payload":{"tool_use_id":"c1","content":"a.rs\nb.rs","is_error":false}}"#,
            r#"{"v":1,"id":"n1","parent":"r1","kind":"user","ts":"2026-11-29T18:00:04.000Z","payload":{"content":[{"type":"text","text":"never push"}],"anchor":true}}"#,
            r#"{"v":1,"id":"a2","parent":"n1","kind":"assistant","ts":"2026-11-29T18:00:05.000Z","payload":{"content":[{"type":"text","text":"Two files."}]}}"#,
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let items = load(&path).unwrap();
        assert_eq!(
            items,
            [
                HistoryItem::User("list files".into()),
                HistoryItem::Assistant("Looking.".into()),
                HistoryItem::Tool {
                    call_id: "c1".into(),
                    name: "list_dir".into(),
                    summary: "path=.".into(),
                    result: Some((false, "a.rs\nb.rs".into())),
                },
                HistoryItem::Anchor("never push".into()),
                HistoryItem::Assistant("Two files.".into()),
            ]
        );
        let mut t = Transcript::default();
        push_all(&mut t, items);
        assert_eq!(t.len(), 5);
    }

    #[test]
    fn a_record_written_without_a_note_unfolds_to_the_rebuilt_note() {
        // Records written by other tools follow the plain record shape, without `note`.
        let lines = [
            r#"{"v":1,"id":"h","parent":null,"kind":"header","ts":"2026-11-29T18:00:00.000Z","payload":{"session_id":"s","created_at":"2026-11-29T18:00:00.000Z","cwd":"/w","app_version":"0","provider":"openai","model":"m"}}"#,
            r#"{"v":1,"id":"u1","parent":"h","kind":"user","ts":"2026-11-29T18:00:01.000Z","payload":{"content":[{"type":"text","text":"fix the parser"}]}}"#,
            r#"{"v":1,"id":"a1","parent":"u1","kind":"assistant","ts":"2026-11-29T18:00:02.000Z","payload":{"content":[{"type":"text","text":"Fixed."}]}}"#,
            r#"{"v":1,"id":"k1","parent":"h","kind":"compaction","ts":"2026-11-29T18:00:03.000Z","payload":{"summary":"Objective: Fix the parser.","covers":{"first":"u1","last":"a1","count":2},"retained_ids":[],"pruned_ids":[],"bounded":[],"files_touched":[],"trigger":"manual","path":"summary"}}"#,
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let note = note(&path, "k1").unwrap();
        assert!(note.starts_with("Codewhale handoff note."), "{note}");
        assert!(note.contains("Fix the parser."), "{note}");
    }

    #[test]
    fn a_missing_file_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(&dir.path().join("nope.jsonl")).is_err());
    }
}
