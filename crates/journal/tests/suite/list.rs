//! Session listing from header lines.

use std::time::{Duration, SystemTime};

use codewhale_journal::{list_sessions, HeaderPayload, JournalFile};

use super::support::Sink;

fn session(dir: &std::path::Path, id: &str, cwd: &str, messages: &[&str]) -> std::path::PathBuf {
    let mut f = JournalFile::create_session(dir, HeaderPayload::new(id, cwd)).unwrap();
    for m in messages {
        f.user(m);
        f.assistant("ok");
    }
    let path = f.path().to_owned();
    f.close().unwrap();
    path
}

fn touch(path: &std::path::Path, secs_ago: u64) {
    let f = std::fs::File::options().append(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs_ago)).unwrap();
}

#[test]
fn newest_first_with_cwd_title_and_entry_count() {
    let dir = tempfile::tempdir().unwrap();
    let old = session(dir.path(), "old", "/a", &["  \n  First prompt line\nsecond line", "more"]);
    let new = session(dir.path(), "new", "/b", &[]);
    touch(&old, 3600);
    touch(&new, 60);
    std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
    std::fs::write(dir.path().join("bad.jsonl"), "not json\n").unwrap();

    let listing = list_sessions(dir.path()).unwrap();
    let ids: Vec<&str> = listing.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["new", "old"]);
    let old_info = &listing.sessions[1];
    assert_eq!(old_info.cwd, "/a");
    assert_eq!(old_info.title.as_deref(), Some("First prompt line"));
    assert_eq!(old_info.entries, 4);
    assert_eq!(listing.sessions[0].title, None);
    assert_eq!(listing.sessions[0].entries, 0);
    assert_eq!(listing.skipped.len(), 1);
    assert!(listing.skipped[0].1.contains("not a journal entry"), "{:?}", listing.skipped);
}

#[test]
fn a_header_title_wins_and_long_titles_are_shortened() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = HeaderPayload::new("t", "/w");
    h.title = Some("Given title".into());
    JournalFile::create_session(dir.path(), h).unwrap().close().unwrap();
    session(dir.path(), "long", "/w", &[&"word ".repeat(40)]);
    let listing = list_sessions(dir.path()).unwrap();
    let by_id =
        |id: &str| listing.sessions.iter().find(|s| s.id == id).unwrap().title.clone().unwrap();
    assert_eq!(by_id("t"), "Given title");
    let long = by_id("long");
    assert_eq!(long.chars().count(), 81);
    assert!(long.ends_with('…'));
}

#[test]
fn counts_stay_exact_as_sessions_grow_and_shrink() {
    let dir = tempfile::tempdir().unwrap();
    let path = session(dir.path(), "s", "/w", &["a"]);
    assert_eq!(list_sessions(dir.path()).unwrap().sessions[0].entries, 2);
    assert!(dir.path().join(".index.json").exists());

    let (mut f, _) = JournalFile::open(&path).unwrap();
    f.user("b");
    f.close().unwrap();
    assert_eq!(list_sessions(dir.path()).unwrap().sessions[0].entries, 3, "counted incrementally");

    // A shrunk file (a repaired tail) is counted again from scratch.
    let text = std::fs::read_to_string(&path).unwrap();
    let keep: Vec<&str> = text.lines().take(2).collect();
    std::fs::write(&path, keep.join("\n") + "\n").unwrap();
    assert_eq!(list_sessions(dir.path()).unwrap().sessions[0].entries, 1);

    // A corrupt cache is ignored.
    std::fs::write(dir.path().join(".index.json"), "garbage").unwrap();
    assert_eq!(list_sessions(dir.path()).unwrap().sessions[0].entries, 1);
}

#[test]
fn a_missing_directory_lists_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let listing = list_sessions(&dir.path().join("nope")).unwrap();
    assert!(listing.sessions.is_empty() && listing.skipped.is_empty());
}
