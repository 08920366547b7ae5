//! `codewhale journal check FILE` on the real binary: the one-line summary, one line per
//! problem, clear errors for files that are not journals, and never a modified file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::support::text;
use codewhale_journal::{HeaderPayload, JournalFile};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/journal").join(name)
}

fn check(path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codewhale"))
        .args(["journal", "check"])
        .arg(path)
        .env_remove("CODEWHALE_HOME")
        .output()
        .unwrap()
}

/// Copies a fixture into a temp dir, runs the check, and asserts the directory is unchanged.
fn check_copy(name: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::copy(fixture(name), &path).unwrap();
    let before = std::fs::read(&path).unwrap();
    let out = check(&path);
    assert_eq!(std::fs::read(&path).unwrap(), before, "{name} was modified");
    let files: Vec<_> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(files.len(), 1, "{name}: the check created {files:?}");
    out
}

#[test]
fn a_sound_journal_prints_one_summary_line_and_exits_0() {
    let out = check_copy("sound.jsonl");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "ok: 13 entries, 2 branches, head 0192f000-0000-7000-8000-000000000014, 1 compaction \
         (active 0192f000-0000-7000-8000-000000000013)\n"
    );
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn each_problem_is_one_line_with_its_line_number_and_exit_1() {
    for (name, expect) in [
        ("torn-tail.jsonl", "line 8: torn final line (60 bytes, not a complete entry)\n"),
        ("malformed-middle.jsonl", "line 4: not valid JSON"),
        ("dangling-parent.jsonl", "line 8: entry 0192f000-0000-7000-8000-000000000008 has parent 0192f000-0000-7000-8000-000000000099"),
        ("parent-cycle.jsonl", "line 8: parent cycle: "),
        ("head-nowhere.jsonl", "line 8: head record 0192f000-0000-7000-8000-000000000008 moves HEAD to 0192f000-0000-7000-8000-000000000077"),
        ("broken-tool-pair.jsonl", "line 9: in HEAD's view: tool call toolu_03"),
    ] {
        let out = check_copy(name);
        assert_eq!(out.status.code(), Some(1), "{name}");
        let stdout = text(&out.stdout);
        assert_eq!(stdout.lines().count(), 1, "{name}: {stdout}");
        assert!(stdout.starts_with(expect), "{name}: {stdout}");
        assert!(text(&out.stderr).contains("1 problem found (the file was not modified)"), "{name}");
    }
}

#[test]
fn files_that_are_not_journals_are_a_clear_error() {
    for (name, expect) in [
        ("empty.jsonl", "is empty"),
        ("zero-filled.jsonl", "contains only zero bytes"),
        ("not-a-journal.jsonl", "is not a codewhale journal (line 1 is not valid JSON"),
    ] {
        let out = check_copy(name);
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert_eq!(text(&out.stdout), "");
        let stderr = text(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(stderr.starts_with("codewhale: ") && stderr.contains(expect), "{name}: {stderr}");
        assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"));
    }
    let out = check(Path::new("/nonexistent/session.jsonl"));
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("cannot read /nonexistent/session.jsonl"));
}

#[test]
fn a_missing_argument_is_a_usage_error() {
    let out =
        Command::new(env!("CARGO_BIN_EXE_codewhale")).args(["journal", "check"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_session_open_in_another_process_can_still_be_checked() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = JournalFile::create_session(dir.path(), HeaderPayload::new("live", "/w")).unwrap();
    let head = f.journal().head_id().clone();
    f.append(codewhale_journal::Entry::new(
        Some(head),
        codewhale_journal::UserPayload::text("hello"),
    ))
    .unwrap();
    f.sync_blocking().unwrap();
    let out = check(f.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("ok: 1 entries, 1 branch, head "));
    f.close().unwrap();
}

/// A journal another tool wrote with informational fields of other types (a receipt counter as
/// a boolean, a figure as a string, a head record with a null parent) is sound: each field is
/// named in a warning with its line, and the exit code is 0.
#[test]
fn informational_fields_of_another_type_are_warnings_not_problems() {
    let out = check_copy("foreign-fields.jsonl");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].starts_with("warning: line 13: read as best it could be"), "{stdout}");
    assert!(lines[0].contains("`payload.receipt.assistant_kept`"), "{stdout}");
    assert!(lines[1].starts_with("ok: 13 entries") && lines[1].contains("(active "), "{stdout}");
}

/// A call left unanswered three turns back, repaired by a `repairs: true` result at HEAD, is a
/// sound journal.
#[test]
fn a_repair_result_at_head_makes_a_mid_chain_call_sound() {
    let out = check_copy("repaired-mid-chain.jsonl");
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).starts_with("ok: 13 entries, 1 branch"));
}

/// A named pipe is not a journal: the check says so at once instead of waiting for a writer.
#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("s.jsonl");
    let made = Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
    if !made {
        codewhale_mcp::test_support::skip_test("mkfifo is not available");
        return;
    }
    let start = std::time::Instant::now();
    let out = check(&fifo);
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("named pipe"), "{}", text(&out.stderr));
}

/// A byte-order mark an editor added at the start of the file is not part of the header.
#[test]
fn a_bom_prefixed_journal_is_sound() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bom.jsonl");
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(std::fs::read(fixture("sound.jsonl")).unwrap());
    std::fs::write(&path, bytes).unwrap();
    let out = check(&path);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).starts_with("ok: 13 entries"));
}
