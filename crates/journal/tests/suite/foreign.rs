//! Records written by other tools: exactly the docs/journal-format.md, *`compaction`* contract,
//! none of our extra fields.

use std::io::Write;

use codewhale_journal::{
    check_view, load_read_only, render, Block, EntryId, HeaderPayload, ItemKind, JournalFile,
    CHECKPOINT_MARKER,
};
use serde_json::json;

use super::support::Sink;

/// A journal of two turns plus a compaction record hand-built to §5.6 (no `note`) covering the
/// first turn; returns the file and the ids of the covered user message and the record.
fn journal_with_foreign_record(dir: &std::path::Path) -> (std::path::PathBuf, EntryId, String) {
    let mut f =
        JournalFile::create_session(dir, HeaderPayload::new("s", "/home/dev/project")).unwrap();
    let root = f.journal().head_id().clone();
    let u1 = f.user("fix the parser");
    let a1 = f.assistant("fixed the off-by-one");
    f.user("now the changelog");
    let path = f.path().to_owned();
    f.close().unwrap();

    let record_id = EntryId::new().to_string();
    let record = json!({
        "v": 1, "id": record_id, "parent": root.as_str(), "kind": "compaction",
        "ts": "2026-11-29T18:00:13.091Z",
        "payload": {
            "summary": "## Objective\nFix the parser. Done: the loop bound was inclusive.",
            "covers": {"first": u1.as_str(), "last": a1.as_str(), "count": 2},
            "retained_ids": [u1.as_str()], "pruned_ids": [], "bounded": [],
            "files_touched": ["src/parse.rs", "tests/parse.rs"],
            "anchors": "- never push to main\n",
            "trigger": "manual", "focus": null, "path": "summary", "previous_id": null,
            "model": "other-model", "tokens_before": 900, "tokens_after": 120,
            "receipt": {"last_round_messages": 1, "last_round_tool_results": 0,
                        "assistant_kept": 0, "anchors_chars": 21, "retained_user_tokens": 4}
        }
    });
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    writeln!(file, "{record}").unwrap();
    (path, u1, record_id)
}

#[test]
fn a_record_without_a_note_renders_a_checkpoint_holding_its_summary() {
    let dir = tempfile::tempdir().unwrap();
    let (path, u1, record_id) = journal_with_foreign_record(dir.path());
    let loaded = load_read_only(&path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let j = &loaded.journal;
    let view = render(j, j.head_id().as_str());
    check_view(&view).unwrap();

    let kinds: Vec<ItemKind> = view.items.iter().map(|i| i.kind).collect();
    assert_eq!(kinds, [ItemKind::User, ItemKind::Checkpoint, ItemKind::User]);
    assert_eq!(view.items[0].source, u1, "retained ids are kept before the checkpoint");
    let cp = view.checkpoint().unwrap();
    assert_eq!(cp.source.as_str(), record_id);
    let [Block::Text(note), Block::Text(marker)] = cp.blocks() else {
        panic!("a checkpoint is exactly two text blocks: {:?}", cp.blocks())
    };
    assert_eq!(marker.text, CHECKPOINT_MARKER);
    let note = note.text.as_str();
    assert!(note.starts_with("Codewhale handoff note. "), "{note}");
    let header = note.lines().next().unwrap();
    assert!(header.len() > "Codewhale handoff note. ".len(), "a header follows the prefix");
    assert!(note.contains("\n\n## Objective\nFix the parser. Done: the loop bound was inclusive."));
    assert!(note.contains("\n\n## Files touched\n- src/parse.rs\n- tests/parse.rs\n"), "{note}");
    assert!(note.contains("\n\nUser-pinned anchors (verbatim):\n- never push to main"), "{note}");
    assert_eq!(cp.tokens, None, "a count stored for another text is not reused");

    // A pure function of the file: the same bytes after a reload.
    let again = load_read_only(&path).unwrap();
    let view_again = render(&again.journal, again.journal.head_id().as_str());
    assert_eq!(view_again, view);
    assert_eq!(serde_json::to_string(cp.blocks()).unwrap(), {
        let cp = view_again.checkpoint().unwrap();
        serde_json::to_string(cp.blocks()).unwrap()
    });
}

/// Another tool wrote a receipt counter as a boolean, a token figure as a string and a `head`
/// record with a null parent: the record still describes the view, and the fields are read as
/// best they can be, each named in a warning with its line.
#[test]
fn informational_fields_of_another_type_are_read_and_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, record_id) = journal_with_foreign_record(dir.path());
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text
        .replace("\"assistant_kept\":0", "\"assistant_kept\":true")
        .replace("\"tokens_before\":900", "\"tokens_before\":\"900\"");
    assert!(text.contains("\"assistant_kept\":true"), "{text}");
    let loaded_before = load_read_only(&path).unwrap();
    let head = loaded_before.journal.head_id().clone();
    let head_line = json!({
        "v": 1, "id": EntryId::new().as_str(), "parent": null, "kind": "head",
        "ts": "2026-11-29T18:00:14.000Z", "payload": {"to": head.as_str(), "reason": "checkout"}
    });
    std::fs::write(&path, format!("{text}{head_line}\n")).unwrap();

    let loaded = load_read_only(&path).unwrap();
    let j = &loaded.journal;
    assert!(j.problems().is_empty(), "a head record may have a null parent: {:?}", j.problems());
    let view = render(j, j.head_id().as_str());
    assert_eq!(view.compaction.as_ref().map(|c| c.id.as_str()), Some(record_id.as_str()));
    let record = &view.compaction.as_ref().unwrap().record;
    assert_eq!(record.receipt.as_ref().unwrap().assistant_kept, 1);
    assert_eq!(record.tokens_before, Some(900));

    let report = codewhale_journal::check_file(&path).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let warnings: Vec<String> = report.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with("line 5: read as best it could be"), "{warnings:?}");
    assert!(warnings[0].contains("`payload.receipt.assistant_kept`: expected a non-negative integer, found the boolean true; read as 1"), "{warnings:?}");
    assert!(warnings[0].contains("`payload.tokens_before`"), "{warnings:?}");
}

/// A line whose view-relevant fields are wrong is still malformed: tolerance stops at ids,
/// parents, kinds, covers and content blocks.
#[test]
fn what_the_view_needs_still_makes_a_line_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, _) = journal_with_foreign_record(dir.path());
    let bad = json!({"v": 1, "id": 7, "parent": null, "kind": "user", "ts": "x",
        "payload": {"content": [{"type": "text", "text": "hi"}]}});
    let bad_blocks = json!({"v": 1, "id": EntryId::new().as_str(), "parent": null, "kind": "user",
        "ts": "x", "payload": {"content": "not blocks"}});
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    writeln!(file, "{bad}\n{bad_blocks}").unwrap();
    let report = codewhale_journal::check_file(&path).unwrap();
    let lines: Vec<Option<u32>> = report.problems.iter().map(|p| p.line).collect();
    assert!(lines.contains(&Some(6)) && lines.contains(&Some(7)), "{:?}", report.problems);
}
