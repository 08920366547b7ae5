//! Loading: torn tails, malformed lines, files that are not journals, newer versions.

use std::path::{Path, PathBuf};

use codewhale_journal::{
    load_read_only, torn_path, Entry, JournalFile, LoadError, LoadWarning, OpenError, Payload,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/journal").join(name)
}

/// Copies a fixture into a temp dir.
fn copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::copy(fixture(name), &path).unwrap();
    (dir, path)
}

#[test]
fn a_torn_tail_is_saved_then_truncated_with_a_warning() {
    let (_dir, path) = copy("torn-tail.jsonl");
    let bytes = std::fs::read(&path).unwrap();
    let cut = bytes.iter().rposition(|&b| b == b'\n').unwrap() + 1;

    let (f, warnings) = JournalFile::open(&path).unwrap();
    assert_eq!(
        warnings,
        [LoadWarning::TornTail {
            line: 8,
            bytes: (bytes.len() - cut) as u64,
            saved_to: Some(torn_path(&path))
        }]
    );
    assert!(warnings[0].to_string().contains("torn final line"));
    assert_eq!(std::fs::read(&path).unwrap(), bytes[..cut], "truncated to the last complete line");
    let torn = std::fs::read(torn_path(&path)).unwrap();
    assert_eq!(&torn[..torn.len() - 1], &bytes[cut..], "the torn bytes are kept");
    assert_eq!(f.journal().entries().len(), 7);
    f.close().unwrap();

    // Reopening finds nothing more to repair.
    let (f, warnings) = JournalFile::open(&path).unwrap();
    assert!(warnings.is_empty());
    f.close().unwrap();
}

#[test]
fn read_only_loading_reports_a_torn_tail_without_touching_it() {
    let (_dir, path) = copy("torn-tail.jsonl");
    let before = std::fs::read(&path).unwrap();
    let loaded = load_read_only(&path).unwrap();
    assert!(matches!(loaded.warnings[..], [LoadWarning::TornTail { line: 8, saved_to: None, .. }]));
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert!(!torn_path(&path).exists());
}

#[test]
fn a_complete_final_entry_missing_its_newline_is_kept() {
    let (_dir, path) = copy("sound.jsonl");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.pop();
    std::fs::write(&path, &bytes).unwrap();
    let (f, warnings) = JournalFile::open(&path).unwrap();
    assert_eq!(warnings, [LoadWarning::MissingNewline { line: 14, repaired: true }]);
    assert_eq!(f.journal().entries().len(), 14);
    f.close().unwrap();
    bytes.push(b'\n');
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_torn_tail_of_zero_bytes_is_removed() {
    let (_dir, path) = copy("sound.jsonl");
    let good = std::fs::read(&path).unwrap();
    let mut bytes = good.clone();
    bytes.extend_from_slice(&[0u8; 300]);
    std::fs::write(&path, &bytes).unwrap();
    let (f, warnings) = JournalFile::open(&path).unwrap();
    assert!(matches!(warnings[..], [LoadWarning::TornTail { line: 15, bytes: 300, .. }]));
    f.close().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), good);
}

#[test]
fn malformed_middle_lines_are_reported_by_line_and_skipped() {
    let (_dir, path) = copy("malformed-middle.jsonl");
    let before = std::fs::read(&path).unwrap();
    let (f, warnings) = JournalFile::open(&path).unwrap();
    assert!(matches!(&warnings[..], [LoadWarning::Malformed(m)] if m.line == 4), "{warnings:?}");
    assert!(warnings[0].to_string().starts_with("line 4: not valid JSON"));
    assert_eq!(f.journal().entries().len(), 7, "loading goes on past the bad line");
    assert_eq!(f.journal().line_of(f.journal().entries()[3].id.as_str()), Some(5));
    f.close().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), before, "a malformed middle line is never removed");
}

#[test]
fn nul_prefixed_lines_are_read_past_the_zero_fill() {
    let (_dir, path) = copy("sound.jsonl");
    let bytes = std::fs::read(&path).unwrap();
    let second = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut patched = bytes[..second].to_vec();
    patched.extend_from_slice(&[0u8; 16]);
    patched.extend_from_slice(&bytes[second..]);
    std::fs::write(&path, &patched).unwrap();
    let loaded = load_read_only(&path).unwrap();
    assert_eq!(loaded.warnings, [LoadWarning::NulPrefix { line: 2 }]);
    assert_eq!(loaded.journal.entries().len(), 14);
}

#[test]
fn empty_zero_filled_and_foreign_files_are_errors_and_untouched() {
    for (name, expect) in [
        ("empty.jsonl", "is empty"),
        ("zero-filled.jsonl", "only zero bytes"),
        ("not-a-journal.jsonl", "is not a codewhale journal"),
    ] {
        let (_dir, path) = copy(name);
        let before = std::fs::read(&path).unwrap();
        let err = JournalFile::open(&path).unwrap_err();
        assert!(matches!(err, OpenError::Load(_)), "{name}: {err:?}");
        assert!(err.to_string().contains(expect), "{name}: {err}");
        assert!(err.to_string().contains("untouched"), "{name}: {err}");
        let err = load_read_only(&path).unwrap_err();
        assert!(err.to_string().contains(expect));
        assert_eq!(std::fs::read(&path).unwrap(), before, "{name} was modified");
        assert!(!torn_path(&path).exists());
    }
}

#[test]
fn a_file_with_only_a_partial_header_is_not_a_journal_and_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let partial = br#"{"v":1,"id":"a","parent":null,"kind":"hea"#;
    std::fs::write(&path, partial).unwrap();
    let err = JournalFile::open(&path).unwrap_err();
    assert!(matches!(err, OpenError::Load(LoadError::NotAJournal { .. })), "{err}");
    assert!(err.to_string().contains("first line is incomplete"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), partial);
}

#[test]
fn a_file_not_starting_with_a_header_is_not_a_journal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let bytes = std::fs::read(fixture("sound.jsonl")).unwrap();
    let second = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    std::fs::write(&path, &bytes[second..]).unwrap();
    let err = load_read_only(&path).unwrap_err();
    assert!(err.to_string().contains("first line is a `user` entry"), "{err}");
}

#[test]
fn entries_from_a_newer_version_survive_a_reload_unchanged() {
    let (_dir, path) = copy("newer-version.jsonl");
    let bytes = std::fs::read_to_string(&path).unwrap();
    let loaded = load_read_only(&path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let entries = loaded.journal.entries();
    assert!(matches!(&entries[7].payload, Payload::Unknown { kind, .. } if kind == "vote"));
    assert_eq!(loaded.journal.head_id(), &entries[8].id, "unknown kinds stay on the chain");
    for (entry, line) in entries.iter().zip(bytes.lines()) {
        assert_eq!(entry.to_line().unwrap(), line);
        assert_eq!(&Entry::parse_line(line).unwrap(), *entry);
    }
}

#[test]
fn long_tool_outputs_stay_in_the_file_until_read_and_decode_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let mut f =
        JournalFile::create_session(dir.path(), codewhale_journal::HeaderPayload::new("s", "/w"))
            .unwrap();
    let tricky = [
        "plain ".repeat(1000),
        format!(
            "{}\"quoted\" \\\"escaped\\\" back\\\\slash\\ tab\t nl\n é ✓ 🐳 \u{1} end\\",
            "x".repeat(3000)
        ),
        format!("{}\\", "y".repeat(4000)),
        "\"".repeat(3000),
    ];
    let mut ids = Vec::new();
    for (i, t) in tricky.iter().enumerate() {
        let head = f.journal().head_id().clone();
        let e = Entry::new(
            Some(head),
            codewhale_journal::ToolResultPayload::new(format!("t{i}"), t.as_str(), false),
        );
        ids.push(e.id.clone());
        f.append(e).unwrap();
    }
    let path = f.path().to_owned();
    f.close().unwrap();
    let loaded = load_read_only(&path).unwrap();
    assert!(loaded.warnings.is_empty());
    for (id, t) in ids.iter().zip(&tricky) {
        let Payload::ToolResult(r) = &loaded.journal.get(id.as_str()).unwrap().payload else {
            panic!()
        };
        assert!(r.content.is_on_disk(), "long outputs are not decoded by loading");
        assert_eq!(r.content.as_str(), t.as_str());
        assert!(!r.content.is_on_disk());
    }
    // Re-serialized lines are identical to the file's.
    let text = std::fs::read_to_string(&path).unwrap();
    for (entry, line) in loaded.journal.entries().iter().zip(text.lines()) {
        assert_eq!(entry.to_line().unwrap(), line);
    }
}

#[test]
fn long_tool_results_in_another_field_order_parse_normally() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let sound = std::fs::read_to_string(fixture("sound.jsonl")).unwrap();
    let header = sound.lines().next().unwrap();
    let out = "z\\\"".repeat(2000);
    let lines = [
        // is_error before content
        format!(
            r#"{{"v":1,"id":"a","parent":"0192f000-0000-7000-8000-000000000001","kind":"tool_result","ts":"2026-11-29T18:00:00.000Z","payload":{{"tool_use_id":"t","is_error":false,"content":"{out}"}}}}"#
        ),
        // a duplicate is_error key after a string field
        format!(
            r#"{{"v":1,"id":"b","parent":"a","kind":"tool_result","ts":"2026-11-29T18:00:00.000Z","payload":{{"tool_use_id":"t","content":"{out}","is_error":false,"note":"n","is_error":true}}}}"#
        ),
        // payload before kind
        format!(
            r#"{{"v":1,"id":"c","parent":"b","payload":{{"tool_use_id":"t","content":"{out}","is_error":false}},"kind":"tool_result","ts":"2026-11-29T18:00:00.000Z"}}"#
        ),
    ];
    std::fs::write(&path, format!("{header}\n{}\n", lines.join("\n"))).unwrap();
    let loaded = load_read_only(&path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    for id in ["a", "b", "c"] {
        let Payload::ToolResult(r) = &loaded.journal.get(id).unwrap().payload else { panic!() };
        assert_eq!(r.content.as_str(), "z\"".repeat(2000), "{id}");
    }
}

/// `scan_lines` hands over each line in the file as it stands, in the order asked for; an
/// entry the journal holds comes parsed; `parse_raw` reads the same entry as loading does,
/// tool output decoded; and the walk stops where the caller breaks.
#[test]
fn a_scan_hands_over_raw_lines_that_parse_to_the_loaded_entries() {
    use std::ops::ControlFlow;

    use codewhale_journal::LineRef;
    let dir = tempfile::tempdir().unwrap();
    let mut f =
        JournalFile::create_session(dir.path(), codewhale_journal::HeaderPayload::new("s", "/w"))
            .unwrap();
    let outputs = ["short".to_owned(), format!("{}\"é\\\n", "long ".repeat(400)), "x".repeat(9)];
    for (i, out) in outputs.iter().enumerate() {
        let head = f.journal().head_id().clone();
        let e = Entry::new(
            Some(head),
            codewhale_journal::ToolResultPayload::new(format!("t{i}"), out.as_str(), false),
        );
        f.append(e).unwrap();
    }
    let path = f.path().to_owned();
    f.close().unwrap();
    let journal = load_read_only(&path).unwrap().journal;
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Hold the second entry; ask for the others out of file order too.
    journal.entry_at(2);
    let (mut seen, mut raws) = (Vec::new(), Vec::new());
    journal.scan_lines(&[1, 2, 3, 0], |pos, line| {
        let entry = match line {
            LineRef::Raw(raw) => {
                raws.push(pos);
                assert_eq!(raw, lines[pos as usize].as_bytes(), "line {pos} as it stands");
                journal.parse_raw(pos, raw)
            }
            LineRef::Entry(e) => {
                // The header is always held.
                assert!(pos == 0 || pos == 2, "only held entries come parsed: {pos}");
                e.clone()
            }
        };
        assert_eq!(entry.to_line().unwrap(), lines[pos as usize]);
        if pos > 0 {
            let Payload::ToolResult(r) = &entry.payload else { panic!() };
            assert_eq!(r.content.as_str(), outputs[pos as usize - 1]);
            assert!(!r.content.is_on_disk(), "parsed whole");
        }
        seen.push(pos);
        ControlFlow::Continue(())
    });
    assert_eq!(seen, [1, 2, 3, 0]);
    assert_eq!(raws, [1, 3], "lines not held come raw");
    let mut seen = Vec::new();
    journal.scan_lines(&[0, 1, 2, 3], |pos, _| {
        seen.push(pos);
        if pos == 1 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    assert_eq!(seen, [0, 1]);
    // A line that no longer holds the entry indexed there reads as an unknown kind.
    let other = journal.parse_raw(1, lines[3].as_bytes());
    assert!(matches!(other.payload, Payload::Unknown { .. }), "{:?}", other.payload);
}
