//! `check_file` over the fixtures: every problem named with its line; the file untouched.

use std::path::{Path, PathBuf};

use codewhale_journal::check_file;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/journal").join(name)
}

fn problems(name: &str) -> Vec<String> {
    let path = fixture(name);
    let before = std::fs::read(&path).unwrap();
    let report = check_file(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), before);
    report.problems.iter().map(ToString::to_string).collect()
}

#[test]
fn a_sound_journal_has_a_one_line_summary() {
    let report = check_file(&fixture("sound.jsonl")).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(
        report.summary(),
        "ok: 13 entries, 2 branches, head 0192f000-0000-7000-8000-000000000014, 1 compaction \
         (active 0192f000-0000-7000-8000-000000000013)"
    );
}

#[test]
fn each_broken_fixture_names_its_line() {
    for (name, expect) in [
        ("torn-tail.jsonl", "line 8: torn final line (60 bytes, not a complete entry)"),
        ("malformed-middle.jsonl", "line 4: not valid JSON"),
        ("dangling-parent.jsonl", "line 8: entry 0192f000-0000-7000-8000-000000000008 has parent 0192f000-0000-7000-8000-000000000099, which is not an earlier entry"),
        ("parent-cycle.jsonl", "line 8: parent cycle: 0192f000-0000-7000-8000-000000000020 -> 0192f000-0000-7000-8000-000000000021 -> 0192f000-0000-7000-8000-000000000020"),
        ("head-nowhere.jsonl", "line 8: head record 0192f000-0000-7000-8000-000000000008 moves HEAD to 0192f000-0000-7000-8000-000000000077"),
        ("broken-tool-pair.jsonl", "line 9: in HEAD's view: tool call toolu_03 in assistant entry 0192f000-0000-7000-8000-000000000009 has no tool result after it"),
    ] {
        let p = problems(name);
        assert_eq!(p.len(), 1, "{name}: {p:?}");
        assert!(p[0].starts_with(expect), "{name}: {p:?}");
    }
}

#[test]
fn not_a_journal_is_an_error() {
    for name in ["empty.jsonl", "zero-filled.jsonl", "not-a-journal.jsonl"] {
        assert!(check_file(&fixture(name)).is_err(), "{name}");
    }
    assert!(check_file(Path::new("/nonexistent/x.jsonl"))
        .unwrap_err()
        .to_string()
        .contains("cannot read"));
}

#[test]
fn a_corrupt_long_tool_output_is_found_by_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let sound = std::fs::read_to_string(fixture("sound.jsonl")).unwrap();
    let header = sound.lines().next().unwrap();
    let bad = format!(
        r#"{{"v":1,"id":"x1","parent":"0192f000-0000-7000-8000-000000000001","kind":"tool_result","ts":"2026-11-29T18:00:00.000Z","payload":{{"tool_use_id":"t","content":"{}\q","is_error":false}}}}"#,
        "a".repeat(5000)
    );
    std::fs::write(&path, format!("{header}\n{bad}\n")).unwrap();
    let report = check_file(&path).unwrap();
    let p: Vec<String> = report.problems.iter().map(ToString::to_string).collect();
    assert!(
        p.iter().any(|p| p.starts_with("line 2: the tool output is not a valid JSON string")),
        "{p:?}"
    );
}
