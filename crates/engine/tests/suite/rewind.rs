//! File checkpoints through the engine: `write_file` and `edit_file` record what they changed,
//! and `/undo`, `/rewind` (code, both) take it back — a file someone else changed only when
//! forced, a second restore changing nothing.

use std::os::unix::fs::PermissionsExt;

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::protocol::{Event, Op, RestoreState, TakeBack, TurnStatus};
use codewhale_journal::{load_read_only, Payload};
use codewhale_provider::test_support::Reply;
use serde_json::json;

use super::common::{reload_checked, session_file, Harness, Running};

/// Submits `op`, then a context request (ops run in order), and returns `op`'s events.
async fn run_op(engine: &mut Running, op: Op) -> Vec<Event> {
    let id = engine.submit(op);
    let marker = engine.submit(Op::GetContext);
    let mut out = Vec::new();
    loop {
        let msg = engine.next().await;
        if msg.id == marker {
            return out;
        }
        if msg.id == id {
            out.push(msg.event);
        }
    }
}

fn restored(events: &[Event]) -> (Vec<String>, Vec<String>) {
    events
        .iter()
        .find_map(|e| match e {
            Event::FilesRestored { outcome } => {
                Some((outcome.restored.clone(), outcome.skipped.clone()))
            }
            _ => None,
        })
        .unwrap_or_default()
}

fn user_ids(h: &Harness) -> Vec<String> {
    let journal = load_read_only(&session_file(h.home.path())).unwrap().journal;
    journal
        .spine(journal.head_id().as_str())
        .into_iter()
        .filter(|e| matches!(&e.payload, Payload::User(u) if u.is_plain()))
        .map(|e| e.id.to_string())
        .collect()
}

#[tokio::test]
async fn write_and_edit_are_taken_back_by_undo_and_rewind() {
    let h = Harness::new().await;
    h.no_branch_summaries();
    h.write("a.txt", "one\n");
    let mut engine = h.spawn(ApprovalMode::Full);
    h.server.push_all([
        Reply::tool_call("w1", "write_file", json!({"path": "dir/new.txt", "content": "new"})),
        Reply::tool_call(
            "e1",
            "edit_file",
            json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
        ),
        Reply::text("done 1"),
        Reply::tool_call(
            "e2",
            "edit_file",
            json!({"path": "a.txt", "old_string": "two", "new_string": "three"}),
        ),
        Reply::text("done 2"),
    ]);
    assert_eq!(engine.turn("q1").await.status, TurnStatus::Completed);
    assert_eq!(engine.turn("q2").await.status, TurnStatus::Completed);
    assert_eq!(h.read("a.txt"), "three\n");

    // The results record the hashes; the store holds both sides, private to the user.
    let path = session_file(h.home.path());
    let journal = load_read_only(&path).unwrap().journal;
    let files: Vec<_> = journal
        .entries()
        .into_iter()
        .filter_map(|e| match &e.payload {
            Payload::ToolResult(r) => r.files.clone(),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(files.len(), 3, "{files:?}");
    assert_eq!(files[0].path, "dir/new.txt");
    assert_eq!(files[0].before, None);
    let store = path.with_extension("files");
    let blob = |hash: &str| store.join("objects").join(&hash[..2]).join(&hash[2..]);
    let after = files[1].after.clone().unwrap();
    assert_eq!(std::fs::read_to_string(blob(&after)).unwrap(), "two\n");
    let mode = std::fs::metadata(blob(&after)).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // /undo: the last turn's edit goes; the first turn's files stay.
    let events = run_op(&mut engine, Op::Undo { force: false }).await;
    assert_eq!(restored(&events).0, ["a.txt"]);
    assert_eq!(h.read("a.txt"), "two\n");
    // Twice is harmless: nothing changes, nothing is journaled.
    let lines = std::fs::read_to_string(&path).unwrap().lines().count();
    let events = run_op(&mut engine, Op::Undo { force: false }).await;
    assert!(restored(&events).0.is_empty(), "{events:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), lines);

    // Someone else changes a.txt: the preview says so, and a code rewind leaves it alone.
    h.write("a.txt", "outside\n");
    let q1 = user_ids(&h)[0].clone();
    let events = run_op(&mut engine, Op::PreviewRestore { to: Some(q1.clone()) }).await;
    let Some(Event::RestorePreview { files, .. }) = events.first() else { panic!("{events:?}") };
    let states: Vec<_> = files.iter().map(|f| (f.path.as_str(), f.state)).collect();
    assert_eq!(
        states,
        [("a.txt", RestoreState::ChangedElsewhere), ("dir/new.txt", RestoreState::Remove)]
    );
    let code = |force| Op::TakeBack {
        to: q1.clone(),
        take: TakeBack::Code,
        fork: false,
        before: false,
        force,
    };
    let events = run_op(&mut engine, code(false)).await;
    assert_eq!(restored(&events), (vec!["dir/new.txt".into()], vec!["a.txt".into()]));
    assert_eq!(h.read("a.txt"), "outside\n");
    assert!(!h.ws.path().join("dir/new.txt").exists());

    // Both, forced: the outside change is overwritten, HEAD goes before q1 and q1 comes back
    // for the composer.
    let both =
        Op::TakeBack { to: q1, take: TakeBack::Both, fork: false, before: false, force: true };
    let events = run_op(&mut engine, both).await;
    assert_eq!(restored(&events).0, ["a.txt"]);
    assert_eq!(h.read("a.txt"), "one\n");
    assert!(events.contains(&Event::ComposerText { text: "q1".into() }), "{events:?}");

    // The model reads which files were restored, and q1 is not glued to the next prompt.
    h.server.push(Reply::text("fresh"));
    assert_eq!(engine.turn("q1 again").await.status, TurnStatus::Completed);
    let body = &h.server.last_request().unwrap().body;
    let sent: Vec<String> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    let all = sent.join("\n");
    assert!(all.contains("Restored: a.txt."), "{all}");
    assert!(all.ends_with("q1 again"), "{all}");
    assert!(!all.contains("q1\n"), "the old message stays out: {all}");
    engine.shutdown().await;

    let journal = reload_checked(&path);
    let notes = journal
        .entries()
        .into_iter()
        .filter(|e| matches!(&e.payload, Payload::System(s) if s.text.starts_with("restored")))
        .count();
    assert_eq!(notes, 3, "undo, code rewind, both");
    let report = codewhale_journal::check_file(&path).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

#[tokio::test]
async fn rewind_and_fork_to_a_user_message_go_before_it() {
    let h = Harness::new().await;
    h.no_branch_summaries();
    let mut engine = h.spawn(ApprovalMode::Ask);
    h.server.push_all([Reply::text("a1"), Reply::text("a2")]);
    engine.turn("q1").await;
    engine.turn("q2").await;
    let q2 = user_ids(&h)[1].clone();
    let events = run_op(&mut engine, Op::Rewind { to: q2 }).await;
    assert!(events.contains(&Event::ComposerText { text: "q2".into() }), "{events:?}");
    h.server.push(Reply::text("a3"));
    engine.turn("q3").await;
    let body = &h.server.last_request().unwrap().body;
    let texts: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(texts, ["q1", "a1", "q3"]);
    engine.shutdown().await;
}

/// Whether git can run here; without it the snapshot tests skip visibly (and fail under CI).
fn have_git() -> bool {
    let ok = std::process::Command::new("git").arg("--version").output().is_ok();
    if !ok {
        codewhale_mcp::test_support::skip_test("git is not installed");
    }
    ok
}

fn git(ws: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git").current_dir(ws).args(args).output().unwrap()
}

fn recorded(path: &std::path::Path, call: &str) -> Vec<String> {
    let journal = load_read_only(path).unwrap().journal;
    journal
        .entries()
        .into_iter()
        .filter_map(|e| match &e.payload {
            Payload::ToolResult(r) if r.tool_use_id == call => r.files.clone(),
            _ => None,
        })
        .flatten()
        .map(|f| f.path)
        .collect()
}

#[tokio::test]
async fn shell_edits_in_a_git_workspace_are_snapshotted_and_taken_back() {
    if !have_git() {
        return;
    }
    let h = Harness::new().await;
    let ws = h.workspace();
    assert!(git(&ws, &["init", "-q"]).status.success());
    h.write(".gitignore", "ignored.txt\n");
    let mut engine = h.spawn(ApprovalMode::Full);
    h.server.push_all([
        Reply::tool_call("w", "write_file", json!({"path": "sub/a.txt", "content": "v1\n"})),
        Reply::tool_call(
            "s",
            "shell",
            json!({"command": "echo v2 > sub/a.txt; echo s > b.txt; echo i > ignored.txt"}),
        ),
        Reply::text("done"),
    ]);
    assert_eq!(engine.turn("change things").await.status, TurnStatus::Completed);
    let path = session_file(h.home.path());
    let mut shell_files = recorded(&path, "s");
    shell_files.sort();
    assert_eq!(shell_files, ["b.txt", "sub/a.txt"], ".gitignore honoured");
    // The user's repository got nothing: no index, no commit, no object.
    assert!(!ws.join(".git/index").exists());
    assert!(!git(&ws, &["rev-parse", "-q", "--verify", "HEAD"]).status.success());
    let objects = git(&ws, &["count-objects"]);
    assert!(String::from_utf8_lossy(&objects.stdout).starts_with("0 objects"));

    let q = user_ids(&h)[0].clone();
    let both =
        Op::TakeBack { to: q, take: TakeBack::Both, fork: false, before: true, force: false };
    let events = run_op(&mut engine, both).await;
    let (mut restored, skipped) = restored(&events);
    restored.sort();
    assert_eq!(restored, ["b.txt", "sub/a.txt"], "{events:?}");
    assert!(skipped.is_empty());
    assert!(!ws.join("sub/a.txt").exists() && !ws.join("b.txt").exists());
    assert_eq!(h.read("ignored.txt"), "i\n", "an ignored file is not Codewhale's to take back");
    engine.shutdown().await;
}

#[tokio::test]
async fn outside_git_a_shell_command_records_no_files() {
    let h = Harness::new().await;
    let mut engine = h.spawn(ApprovalMode::Full);
    h.server.push_all([
        Reply::tool_call("s", "shell", json!({"command": "echo s > b.txt"})),
        Reply::text("done"),
    ]);
    assert_eq!(engine.turn("change things").await.status, TurnStatus::Completed);
    assert_eq!(h.read("b.txt"), "s\n");
    assert!(recorded(&session_file(h.home.path()), "s").is_empty());
    let events = run_op(&mut engine, Op::Undo { force: false }).await;
    assert!(
        events.iter().any(|e| matches!(e, Event::Notice { message, .. }
            if message.contains("nothing to undo that was checkpointed; 1 command ran since then; \
                what they changed cannot be taken back"))),
        "{events:?}"
    );
    engine.shutdown().await;
}

/// A file a command writes that is larger than a checkpoint keeps (10 MiB) is not copied into
/// the session's store; the model and the user read once that it is not kept for rewind.
#[tokio::test]
async fn a_big_file_a_command_writes_is_named_and_not_kept() {
    if !have_git() {
        return;
    }
    let h = Harness::new().await;
    let ws = h.workspace();
    assert!(git(&ws, &["init", "-q"]).status.success());
    let mut engine = h.spawn(ApprovalMode::Full);
    let write_big = "head -c 11534336 /dev/urandom > big.bin; echo small > small.txt";
    h.server.push_all([
        Reply::tool_call("s1", "shell", json!({"command": write_big})),
        Reply::tool_call("s2", "shell", json!({"command": "echo more >> big.bin"})),
        Reply::text("done"),
    ]);
    assert_eq!(engine.turn("make files").await.status, TurnStatus::Completed);
    engine.shutdown().await;
    let sent = h.tool_results_in_request(1);
    assert!(sent[0].1.contains("[big.bin is not kept for rewind: 11 MiB"), "{}", sent[0].1);
    let second = h.tool_results_in_request(2);
    assert!(!second[1].1.contains("not kept for rewind"), "named once: {}", second[1].1);
    let path = session_file(h.home.path());
    assert_eq!(recorded(&path, "s1"), ["small.txt"], "the big file is not recorded");
    let store = codewhale_engine::checkpoint::FileStore::beside(&path);
    assert!(store.size_bytes() < 1024 * 1024, "the store holds {} bytes", store.size_bytes());

    // `[checkpoints] max_file_bytes` lowers the limit.
    h.config("[checkpoints]\nmax_file_bytes = 1000\n");
    let mut engine =
        h.spawn_with(codewhale_engine::session::Resume::Last, ApprovalMode::Full, false);
    let write = "head -c 2000 /dev/urandom > mid.bin";
    h.server
        .push_all([Reply::tool_call("s3", "shell", json!({"command": write})), Reply::text("ok")]);
    assert_eq!(engine.turn("one more").await.status, TurnStatus::Completed);
    engine.shutdown().await;
    assert!(recorded(&path, "s3").is_empty(), "over the configured limit");
}

/// A snapshot lock left by a process killed mid-snapshot is repaired, not a silent end of file
/// checkpoints: the next command's changes are recorded.
#[tokio::test]
async fn a_stale_snapshot_lock_does_not_turn_checkpoints_off() {
    if !have_git() {
        return;
    }
    let h = Harness::new().await;
    let ws = h.workspace();
    assert!(git(&ws, &["init", "-q"]).status.success());
    let mut engine = h.spawn(ApprovalMode::Full);
    h.server.push_all([
        Reply::tool_call("s1", "shell", json!({"command": "echo one > a.txt"})),
        Reply::text("ok"),
    ]);
    assert_eq!(engine.turn("first").await.status, TurnStatus::Completed);
    engine.shutdown().await;
    let path = session_file(h.home.path());
    let lock = path.with_extension("files").join("snapshots").join("index.lock");
    assert!(lock.parent().unwrap().is_dir(), "{}", lock.display());
    std::fs::write(&lock, b"").unwrap();
    let mut engine =
        h.spawn_with(codewhale_engine::session::Resume::Last, ApprovalMode::Full, false);
    h.server.push_all([
        Reply::tool_call("s2", "shell", json!({"command": "echo two > a.txt"})),
        Reply::text("ok"),
    ]);
    assert_eq!(engine.turn("second").await.status, TurnStatus::Completed);
    engine.shutdown().await;
    assert_eq!(recorded(&path, "s2"), ["a.txt"], "the change after the stale lock is recorded");
    assert!(!lock.exists());
}

/// `write_file` and `edit_file` keep the same bound as commands: a file over `[checkpoints]
/// max_file_bytes` is not read into the store before the change, and the result names it once;
/// a new content over it is known by its hash alone, so the earlier one still comes back.
#[tokio::test]
async fn a_big_file_a_tool_writes_is_named_once_and_never_stored() {
    let h = Harness::new().await;
    h.config("[checkpoints]\nmax_file_bytes = 1000\n");
    h.write("big.txt", &"b".repeat(3_000));
    h.write("small.txt", "small\n");
    let mut engine = h.spawn(ApprovalMode::Full);
    h.server.push_all([
        Reply::tool_call(
            "w1",
            "write_file",
            json!({"path": "big.txt", "content": "x".repeat(2_000)}),
        ),
        Reply::tool_call(
            "w2",
            "write_file",
            json!({"path": "big.txt", "content": "y".repeat(2_000)}),
        ),
        Reply::tool_call(
            "w3",
            "write_file",
            json!({"path": "small.txt", "content": "z".repeat(2_000)}),
        ),
        Reply::text("done"),
    ]);
    assert_eq!(engine.turn("write them").await.status, TurnStatus::Completed);
    let sent = h.tool_results_in_request(1);
    assert!(sent[0].1.contains("[big.txt is not kept for rewind:"), "{}", sent[0].1);
    let sent = h.tool_results_in_request(2);
    assert!(!sent[1].1.contains("not kept for rewind"), "named once: {}", sent[1].1);
    let path = session_file(h.home.path());
    assert!(recorded(&path, "w1").is_empty() && recorded(&path, "w2").is_empty());
    assert_eq!(recorded(&path, "w3"), ["small.txt"]);
    let store = codewhale_engine::checkpoint::FileStore::beside(&path);
    assert!(store.size_bytes() < 1_000, "nothing big is stored: {} bytes", store.size_bytes());

    // The small file grew past the limit; /undo still brings back what it was.
    let events = run_op(&mut engine, Op::Undo { force: false }).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Notice { message, .. } if message.contains("small.txt"))),
        "{events:?}"
    );
    assert_eq!(h.read("small.txt"), "small\n");
    engine.shutdown().await;
}

/// After a code rewind, checking the left branch out again names the files its history shows
/// that the disk no longer holds, and offers them back (`--code` semantics, forwards): the disk
/// and the branch's history never disagree silently.
#[tokio::test]
async fn a_checkout_back_names_the_files_a_code_rewind_took_back_and_restores_them() {
    let h = Harness::new().await;
    h.no_branch_summaries();
    let mut engine = h.spawn(ApprovalMode::Full);
    h.server.push_all([
        Reply::text("a1"),
        Reply::tool_call("w1", "write_file", json!({"path": "made.txt", "content": "made\n"})),
        Reply::text("written"),
    ]);
    engine.turn("q1").await;
    engine.turn("make a file").await;
    let tip = {
        let journal = load_read_only(&session_file(h.home.path())).unwrap().journal;
        journal.head_id().to_string()
    };
    let q2 = user_ids(&h)[1].clone();
    let back =
        Op::TakeBack { to: q2, take: TakeBack::Both, fork: false, before: true, force: false };
    let events = run_op(&mut engine, back).await;
    assert_eq!(restored(&events).0, ["made.txt"], "{events:?}");
    assert!(!h.ws.path().join("made.txt").exists());

    let events = run_op(&mut engine, Op::Checkout { to: tip.clone() }).await;
    let message = events
        .iter()
        .find_map(|e| match e {
            Event::HeadMoved { message, .. } => Some(message.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{events:?}"));
    assert!(message.contains("made.txt") && message.contains("does not hold"), "{message}");
    let (from, files) = events
        .iter()
        .find_map(|e| match e {
            Event::BranchFiles { from, files } => Some((from.clone(), files.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(files.len(), 1);
    assert_eq!((files[0].path.as_str(), files[0].state), ("made.txt", RestoreState::Restore));
    assert!(!h.ws.path().join("made.txt").exists(), "nothing written without a yes");

    let events = run_op(&mut engine, Op::RestoreBranchFiles { from, force: false }).await;
    assert_eq!(restored(&events).0, ["made.txt"], "{events:?}");
    assert_eq!(h.read("made.txt"), "made\n");
    // The disk agrees with the branch now: checking it out again offers nothing.
    let events = run_op(&mut engine, Op::Checkout { to: tip }).await;
    assert!(!events.iter().any(|e| matches!(e, Event::BranchFiles { .. })), "{events:?}");
    engine.shutdown().await;
    reload_checked(&session_file(h.home.path()));
}
