//! The writer: one writer per file, durable appends, clear errors.

use codewhale_journal::{Entry, HeaderPayload, JournalFile, OpenError, Payload};

use super::support::{header, Sink};

#[test]
fn a_second_writer_is_refused_with_the_holders_pid() {
    let dir = tempfile::tempdir().unwrap();
    let f = JournalFile::create_session(dir.path(), HeaderPayload::new("s", "/w")).unwrap();
    let err = JournalFile::open(f.path()).unwrap_err();
    assert!(matches!(err, OpenError::Locked { .. }));
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "session is open in another codewhale (pid {})",
            std::process::id()
        )),
        "{msg}"
    );
    let path = f.path().to_owned();
    f.close().unwrap();
    let (f, _) = JournalFile::open(&path).unwrap();
    f.close().unwrap();
}

#[test]
fn a_clean_close_leaves_no_lock_file_and_the_next_writer_gets_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let f = JournalFile::create_session(dir.path(), HeaderPayload::new("s", "/w")).unwrap();
    let path = f.path().to_owned();
    let lock = codewhale_journal::lock_path(&path);
    assert!(lock.exists(), "held while open");
    f.close().unwrap();
    assert!(!lock.exists(), "a clean close removes it");
    let (f, _) = JournalFile::open(&path).unwrap();
    assert!(matches!(JournalFile::open(&path), Err(OpenError::Locked { .. })), "still exclusive");
    f.close().unwrap();
    assert!(!lock.exists());
}

#[test]
fn creating_over_an_existing_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, "keep me\n").unwrap();
    let err = JournalFile::create(&path, header()).unwrap_err();
    assert!(matches!(err, OpenError::Exists { .. }), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me\n");
}

#[test]
fn a_new_journal_must_start_with_a_header() {
    let dir = tempfile::tempdir().unwrap();
    let e = Entry::new(None, codewhale_journal::UserPayload::text("x"));
    let err = JournalFile::create(&dir.path().join("s.jsonl"), e).unwrap_err();
    assert!(matches!(err, OpenError::NotAHeader(_)));
}

#[test]
fn appended_lines_are_one_complete_line_each_and_match_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = JournalFile::create_session(dir.path(), HeaderPayload::new("s", "/w")).unwrap();
    assert!(f.path().ends_with("s.jsonl"));
    for i in 0..50 {
        f.user(&format!("message {i}\nwith a newline"));
    }
    f.sync_blocking().unwrap();
    let text = std::fs::read_to_string(f.path()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 51);
    for (line, entry) in lines.iter().zip(f.journal().entries()) {
        assert_eq!(*line, entry.to_line().unwrap());
    }
    f.close().unwrap();
}

#[test]
fn unheld_appends_keep_the_index_and_head_and_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = JournalFile::create_session(dir.path(), HeaderPayload::new("s", "/w")).unwrap();
    let mut ids = Vec::new();
    for i in 0..200 {
        let entry = Entry::new(
            Some(f.journal().head_id().clone()),
            codewhale_journal::UserPayload::text(format!("message {i}")),
        );
        ids.push(entry.id.clone());
        f.append_unheld(entry).unwrap();
    }
    assert_eq!(f.journal().head_id(), ids.last().unwrap(), "HEAD follows the appends");
    assert_eq!(f.journal().len(), 201);
    let path = f.path().to_path_buf();
    f.close().unwrap();
    let loaded = codewhale_journal::load_read_only(&path).unwrap().journal;
    assert_eq!(loaded.head_id(), ids.last().unwrap());
    let Payload::User(u) = &loaded.get(ids[137].as_str()).unwrap().payload else { panic!() };
    assert_eq!(u.content[0].as_text(), Some("message 137"));
}

#[tokio::test]
async fn async_sync_waits_for_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = JournalFile::create_session(dir.path(), HeaderPayload::new("s", "/w")).unwrap();
    let id = f.user("hello");
    f.sync().await.unwrap();
    let text = std::fs::read_to_string(f.path()).unwrap();
    assert!(text.lines().nth(1).unwrap().contains(id.as_str()));
    assert!(matches!(f.journal().get(id.as_str()).unwrap().payload, Payload::User(_)));
}

#[test]
fn an_entry_that_cannot_be_serialized_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = JournalFile::create_session(dir.path(), HeaderPayload::new("s", "/w")).unwrap();
    f.user("before");
    f.sync_blocking().unwrap();
    let before = std::fs::read(f.path()).unwrap();
    let entries = f.journal().entries().len();

    let untyped = Payload::Unknown { kind: "assistant".into(), payload: serde_json::json!({}) };
    let bad = Entry::new(Some(f.tip()), untyped);
    let err = f.append(bad.clone()).unwrap_err();
    assert!(err.message.contains(bad.id.as_str()), "the error names the entry: {err}");
    f.sync_blocking().unwrap();
    assert_eq!(std::fs::read(f.path()).unwrap(), before, "no empty or partial line");
    assert_eq!(f.journal().entries().len(), entries);

    let id = f.user("after");
    f.close().unwrap();
    let loaded = codewhale_journal::load_read_only(&dir.path().join("s.jsonl")).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.journal.head_id(), &id, "the journal keeps accepting appends");
}
