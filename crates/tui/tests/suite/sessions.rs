//! `codewhale sessions [--json]` on the real binary.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use super::support::text;
use codewhale_journal::{Entry, HeaderPayload, JournalFile, UserPayload};
use serde_json::Value;

fn sessions(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codewhale"))
        .arg("sessions")
        .args(args)
        .env("CODEWHALE_HOME", home)
        .output()
        .unwrap()
}

/// A session in `home/sessions` with `prompts` user messages, last modified `age` ago.
fn session(home: &Path, id: &str, cwd: &str, prompts: &[&str], age: Duration) {
    let mut f =
        JournalFile::create_session(&home.join("sessions"), HeaderPayload::new(id, cwd)).unwrap();
    for p in prompts {
        let head = f.journal().head_id().clone();
        f.append(Entry::new(Some(head), UserPayload::text(*p))).unwrap();
    }
    let path = f.path().to_owned();
    f.close().unwrap();
    let file = std::fs::File::options().append(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
}

#[test]
fn an_empty_home_lists_nothing() {
    let home = tempfile::tempdir().unwrap();
    let out = sessions(home.path(), &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "");
    assert!(text(&out.stderr).starts_with("no sessions in "));
    let out = sessions(home.path(), &["--json"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "[]\n", "an empty array, still one JSON document");
}

#[test]
fn the_table_lists_newest_first() {
    let home = tempfile::tempdir().unwrap();
    session(
        home.path(),
        "older",
        "/home/dev/a",
        &["Fix the parser", "and test it"],
        Duration::from_secs(7200),
    );
    session(home.path(), "newer", "/home/dev/b", &[], Duration::from_secs(60));
    let out = sessions(home.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(
        lines[0].starts_with("ID")
            && lines[0].contains("UPDATED (UTC)")
            && lines[0].ends_with("TITLE")
    );
    assert!(
        lines[1].starts_with("newer ")
            && lines[1].contains("/home/dev/b")
            && lines[1].ends_with("(untitled)"),
        "{stdout}"
    );
    assert!(
        lines[2].starts_with("older ")
            && lines[2].contains("/home/dev/a")
            && lines[2].ends_with("Fix the parser"),
        "{stdout}"
    );
    // Columns line up.
    let col = lines[0].find("CWD").unwrap();
    assert_eq!(lines[1].find("/home/dev/b"), Some(col));
}

#[test]
fn json_prints_one_array_newest_first() {
    let home = tempfile::tempdir().unwrap();
    session(home.path(), "s1", "/w", &["first prompt"], Duration::from_secs(10));
    session(home.path(), "s0", "/w", &["older prompt", "more"], Duration::from_secs(3600));
    let out = sessions(home.path(), &["--json"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "one compact line: {stdout}");
    // The whole of stdout is one JSON document (what `json.loads(stdout)` needs).
    let all: Value = serde_json::from_str(&stdout).unwrap();
    let ids: Vec<&str> =
        all.as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["s1", "s0"], "newest first");
    assert_eq!(all[1]["entries"], 2);
    let v = &all[0];
    assert_eq!(v["id"], "s1");
    assert_eq!(v["cwd"], "/w");
    assert_eq!(v["title"], "first prompt");
    assert_eq!(v["entries"], 1);
    assert!(v["updated"].as_str().unwrap().ends_with('Z'));
    assert!(v["path"].as_str().unwrap().ends_with("s1.jsonl"));
}

#[test]
fn home_flag_wins_over_the_environment_and_bad_files_are_named() {
    let env_home = tempfile::tempdir().unwrap();
    let flag_home = tempfile::tempdir().unwrap();
    session(flag_home.path(), "flagged", "/w", &[], Duration::from_secs(1));
    std::fs::write(flag_home.path().join("sessions/broken.jsonl"), "").unwrap();
    let out = sessions(env_home.path(), &["--json", "--home", flag_home.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("\"flagged\""));
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("skipped ") && stderr.contains("broken.jsonl"), "{stderr}");
}

/// Another tool may write `"kind": "user"` with spaces after the colons: the title is still
/// the first prompt.
#[test]
fn titles_come_from_journals_written_with_spaces() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions");
    std::fs::create_dir_all(&dir).unwrap();
    let header = r#"{"v": 1, "id": "h1", "parent": null, "kind": "header", "ts": "2026-11-29T18:00:00.000Z", "payload": {"session_id": "spaced", "created_at": "2026-11-29T18:00:00.000Z", "cwd": "/w", "app_version": "0", "provider": "openai", "model": "m"}}"#;
    let user = r#"{"v": 1, "id": "u1", "parent": "h1", "kind": "user", "ts": "2026-11-29T18:00:01.000Z", "payload": {"content": [{"type": "text", "text": "Fix the flaky test"}]}}"#;
    std::fs::write(dir.join("spaced.jsonl"), format!("{header}\n{user}\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codewhale"))
        .args(["sessions", "--json"])
        .env("CODEWHALE_HOME", home.path())
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["title"], "Fix the flaky test", "{list}");
}
