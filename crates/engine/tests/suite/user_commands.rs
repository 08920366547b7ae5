//! What the user asks of the workspace directly, through the engine: `!CMD` (the user's own
//! command runs without asking, its output streams, and it is journaled as a synthetic
//! `user_shell` entry the model reads with the next message, merged into that message's
//! request, and shown in history pages as its own item) and `/diff`.

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::protocol::{CallEnd, Event, HistoryItem, Op, TurnStatus};
use codewhale_journal::{load_read_only, Payload};
use codewhale_provider::test_support::Reply;

use super::common::{session_file, Harness};

#[tokio::test]
async fn the_users_command_runs_unasked_and_the_model_reads_it_with_the_next_message() {
    let h = Harness::new().await;
    h.server.push(Reply::text("Two tests failed, I see."));
    // Ask mode with nobody to ask: a model's shell call would be denied; the user's is not.
    let mut engine = h.spawn(ApprovalMode::Ask);
    engine.submit(Op::UserShell { command: "echo ran-by-user; exit 2".into() });
    let events = engine.until(|e| matches!(e, Event::UserShellFinished { .. })).await;
    let Some(Event::UserShellFinished { output, end, exit_code, command, .. }) = events.last()
    else {
        unreachable!()
    };
    assert_eq!(command, "echo ran-by-user; exit 2");
    assert_eq!((*end, *exit_code), (CallEnd::Failed, Some(2)));
    assert!(output.contains("ran-by-user"), "{output}");
    assert!(events.iter().any(|e| matches!(e, Event::UserShellStarted { .. })));
    assert!(
        events.iter().any(
            |e| matches!(e, Event::ToolOutputDelta { text, .. } if text.contains("ran-by-user"))
        ),
        "the output streams"
    );
    // Sent right after the command ended: the engine is idle again.
    let run = engine.turn("why did it fail?").await;
    assert_eq!(run.status, TurnStatus::Completed);
    let messages = &h.server.requests()[0].body["messages"];
    let sent = messages.to_string();
    assert!(sent.contains("The user ran this shell command in the workspace themselves"), "{sent}");
    assert!(sent.contains("ran-by-user"), "{sent}");
    assert!(sent.contains("why did it fail?"), "{sent}");
    // One user message holds both: the command's output first, then the question.
    let users: Vec<_> =
        messages.as_array().unwrap().iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 1, "{sent}");
    // The history page shows the command as its own item, not as the user's words.
    engine.submit(Op::GetHistory { before: None, limit: 50 });
    let events = engine.until(|e| matches!(e, Event::History { .. })).await;
    let Some(Event::History { page }) = events.last() else { unreachable!() };
    let shell = page
        .items
        .iter()
        .find_map(|i| match i {
            HistoryItem::UserShell { command, output, exit_code, .. } => {
                Some((command.clone(), output.clone(), *exit_code))
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(shell.0, "echo ran-by-user; exit 2");
    assert!(shell.1.starts_with("ran-by-user"), "{}", shell.1);
    assert_eq!(shell.2, Some(2));
    let as_user_words = page
        .items
        .iter()
        .any(|i| matches!(i, HistoryItem::User { text, .. } if text.contains("ran-by-user")));
    assert!(!as_user_words);
    engine.shutdown().await;
    let journal = load_read_only(&session_file(h.home.path())).unwrap().journal;
    let entry = journal
        .entries()
        .iter()
        .find_map(|e| match &e.payload {
            Payload::User(u) if u.user_shell.is_some() => Some(u.clone()),
            _ => None,
        })
        .unwrap();
    assert!(entry.synthetic);
    let shell = entry.user_shell.unwrap();
    assert_eq!(shell.exit_code, Some(2));
    assert_eq!(shell.end, Some(codewhale_journal::CallEnd::Failed));
}

/// An interrupted `!sleep 100` is journaled as `end: interrupted`, as a tool result would be,
/// and the history page carries that `end`: the front end shows "interrupted" live and after
/// a resume alike.
#[tokio::test]
async fn an_interrupted_user_command_is_journaled_and_paged_as_interrupted() {
    let h = Harness::new().await;
    let mut engine = h.spawn(ApprovalMode::Ask);
    engine.submit(Op::UserShell { command: "echo started; sleep 100".into() });
    // It runs: its first output arrived.
    let running =
        |e: &Event| matches!(e, Event::ToolOutputDelta { text, .. } if text.contains("started"));
    engine.until(running).await;
    engine.submit(Op::Interrupt);
    let events = engine.until(|e| matches!(e, Event::UserShellFinished { .. })).await;
    let Some(Event::UserShellFinished { end, .. }) = events.last() else { unreachable!() };
    assert_eq!(*end, CallEnd::Interrupted);
    engine.submit(Op::GetHistory { before: None, limit: 50 });
    let events = engine.until(|e| matches!(e, Event::History { .. })).await;
    let Some(Event::History { page }) = events.last() else { unreachable!() };
    let paged = page.items.iter().find_map(|i| match i {
        HistoryItem::UserShell { end, .. } => Some(*end),
        _ => None,
    });
    assert_eq!(paged, Some(CallEnd::Interrupted));
    engine.shutdown().await;
    // Reopened from the file alone, the page says the same.
    let journal = load_read_only(&session_file(h.home.path())).unwrap().journal;
    let journaled = journal.entries().iter().find_map(|e| match &e.payload {
        Payload::User(u) => u.user_shell.as_ref().and_then(|s| s.end.clone()),
        _ => None,
    });
    assert_eq!(journaled, Some(codewhale_journal::CallEnd::Interrupted));
}

/// `/diff` outside git: the files the session's tools changed, from before their first change.
#[tokio::test]
async fn the_workspace_diff_outside_git_shows_what_the_tools_changed() {
    let h = Harness::new().await;
    h.write("notes.md", "old line\n");
    h.server.push(Reply::tool_call(
        "w",
        "write_file",
        serde_json::json!({"path": "notes.md", "content": "new line\n"}),
    ));
    h.server.push(Reply::tool_call(
        "w2",
        "write_file",
        serde_json::json!({"path": "notes.md", "content": "newer line\n"}),
    ));
    h.server.push(Reply::text("edited"));
    let mut engine = h.spawn(ApprovalMode::AutoEdit);
    engine.turn("edit the notes").await;
    engine.submit(Op::GetDiff);
    let events = engine.until(|e| matches!(e, Event::WorkspaceDiff { .. })).await;
    let Some(Event::WorkspaceDiff { diff, files, since }) = events.last() else { unreachable!() };
    assert_eq!(*files, 1);
    assert!(diff.contains("-old line\n+newer line\n"), "from the first before to now: {diff}");
    assert!(since.contains("not a git work tree"), "{since}");
    engine.shutdown().await;
}
