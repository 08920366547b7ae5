//! The protocol's promises beyond a plain turn: a `/compact` is cancellable and writes nothing
//! when cancelled; read-only questions asked during a turn are answered when it ends; a failed
//! turn's notice follows the results of its interrupted calls; an output that cannot be read
//! back fails the turn instead of changing the prompt; a window the provider states is
//! journaled and survives a resume.

use std::time::Duration;

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::protocol::{ErrorKind, Event, Op, TurnStatus};
use codewhale_engine::Resume;
use codewhale_journal::{load_read_only, Payload};
use codewhale_provider::test_support::{Fault, Reply};
use serde_json::json;

use super::common::{reload_checked, session_file, Harness};
use super::compaction::{prose, SUMMARY};

#[tokio::test]
async fn a_cancelled_compaction_writes_nothing_and_the_session_goes_on() {
    let h = Harness::new().await;
    h.hosted_api();
    let mut engine = h.spawn(ApprovalMode::Full);
    for tag in ["one", "two", "three"] {
        h.server.push(Reply::text(prose(tag, 200)).with_usage(3_000, 9));
        engine.turn(&prose(tag, 200)).await;
    }
    let lines_before = std::fs::read_to_string(session_file(h.home.path())).unwrap().len();
    // The summarizer never finishes.
    h.server.push(Reply::text(SUMMARY).hang_after(1));
    let compact = engine.submit(Op::Compact { focus: None });
    engine.until(|e| matches!(e, Event::CompactionStarted { .. })).await;
    // Asked meanwhile: answered once the pass ends, not refused.
    let context = engine.submit(Op::GetContext);
    tokio::time::sleep(Duration::from_millis(100)).await;
    engine.submit(Op::Interrupt);
    let mut cancelled = false;
    let mut report = false;
    while !(cancelled && report) {
        let msg = engine.next().await;
        match msg.event {
            Event::CompactionCancelled if msg.id == compact => cancelled = true,
            Event::ContextReport { .. } if msg.id == context => {
                assert!(cancelled, "the report came after the pass ended");
                report = true;
            }
            Event::CompactionFinished { .. } | Event::CompactionFailed { .. } => {
                panic!("the pass was not cancelled: {:?}", msg.event)
            }
            Event::Error { kind: ErrorKind::Busy, .. } => panic!("the question was refused"),
            _ => {}
        }
    }
    let after = std::fs::read_to_string(session_file(h.home.path())).unwrap();
    assert_eq!(after.len(), lines_before, "nothing was written: {after}");
    h.server.push(Reply::text("still here"));
    let run = engine.turn("go on").await;
    assert_eq!((run.status, run.text.as_str()), (TurnStatus::Completed, "still here"));
    engine.shutdown().await;
    let journal = reload_checked(&session_file(h.home.path()));
    assert_eq!(journal.compactions().count(), 0);
}

#[tokio::test]
async fn a_failed_turns_notice_follows_the_results_of_its_interrupted_calls() {
    let h = Harness::new().await;
    // The reply streams a complete call (its block ended), then the connection drops before
    // the reply ends: 11 frames are the text block, the whole tool_use block and a delta.
    let reply = Reply::text("Reading it.")
        .then_tool_call("c1", "read_file", json!({"path": "a.txt"}))
        .then_text(" and more")
        .slow(Duration::from_millis(20))
        .drop_after(11);
    h.server.push(reply);
    // Anthropic's stream ends each block explicitly, so the call is complete in the partial.
    let mut engine = h.spawn_anthropic(ApprovalMode::Full);
    let run = engine.turn("read a.txt").await;
    assert_eq!(run.status, TurnStatus::Failed, "{:?}", run.events);
    engine.shutdown().await;
    let journal = reload_checked(&session_file(h.home.path()));
    let kinds: Vec<&str> =
        journal.entries().iter().skip(1).map(|e| e.kind()).filter(|k| *k != "head").collect();
    let call = journal
        .entries()
        .iter()
        .position(|e| match &e.payload {
            Payload::Assistant(a) => a.content.iter().any(|b| b.as_tool_use().is_some()),
            _ => false,
        })
        .unwrap_or_else(|| panic!("the partial reply kept the complete call: {kinds:?}"));
    let result = journal.entries().iter().position(|e| e.kind() == "tool_result").unwrap();
    let notice = journal.entries().iter().rposition(|e| e.kind() == "system").unwrap();
    assert!(call < result && result < notice, "{kinds:?}");
    assert_eq!(result, call + 1, "nothing between the call and its result: {kinds:?}");
}

#[tokio::test]
async fn an_output_that_cannot_be_read_back_fails_the_turn_without_a_request() {
    let h = Harness::new().await;
    let text = format!("{}\n", "the file's long line of content ".repeat(100));
    h.write("big.txt", &text);
    h.server.push(Reply::tool_call("c1", "read_file", json!({"path": "big.txt"})));
    h.server.push(Reply::text("read it"));
    let mut engine = h.spawn(ApprovalMode::Full);
    engine.turn("read big.txt").await;
    engine.shutdown().await;

    // Reopened, the output stays in the file until a request needs it; damage it meanwhile.
    let mut engine = h.spawn_with(Resume::Last, ApprovalMode::Full, false);
    let path = session_file(h.home.path());
    let bytes = std::fs::read(&path).unwrap();
    let at = String::from_utf8_lossy(&bytes).find("content the file").unwrap();
    let mut damaged = bytes.clone();
    damaged[at..at + 2].copy_from_slice(b"\\q");
    std::fs::write(&path, &damaged).unwrap();
    let requests = h.server.requests().len();
    let run = engine.turn("and now?").await;
    assert_eq!(run.status, TurnStatus::Failed);
    let message = run
        .events
        .iter()
        .find_map(|e| match e {
            Event::Error { kind: ErrorKind::Journal, message } => Some(message.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{:?}", run.events));
    assert!(message.contains("cannot be read back"), "{message}");
    assert!(message.contains("journal check"), "{message}");
    assert_eq!(h.server.requests().len(), requests, "no request was sent");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_window_the_provider_states_is_journaled_and_used_after_a_resume() {
    let h = Harness::new().await;
    h.server.push(Reply::fault(Fault::overflow(8_000, 9_000)));
    let mut engine = h.spawn(ApprovalMode::Full);
    engine.turn("hello").await;
    engine.shutdown().await;
    let journal = load_read_only(&session_file(h.home.path())).unwrap().journal;
    let learned = journal.entries().iter().find_map(|e| match &e.payload {
        Payload::System(s) => s.context_window,
        _ => None,
    });
    assert_eq!(learned, Some(8_000));

    let mut engine = h.spawn_with(Resume::Last, ApprovalMode::Full, false);
    let window = engine.until(|e| matches!(e, Event::Usage { .. })).await.into_iter().find_map(
        |e| match e {
            Event::Usage { window, .. } => Some(window),
            _ => None,
        },
    );
    assert_eq!(window, Some(8_000));
    engine.shutdown().await;
}

#[tokio::test]
async fn opening_in_the_background_says_how_large_the_session_is_first() {
    let h = Harness::new().await;
    h.server.push(Reply::text("first answer"));
    let mut engine = h.spawn(ApprovalMode::Full);
    engine.turn("first question").await;
    engine.shutdown().await;
    let bytes = std::fs::metadata(session_file(h.home.path())).unwrap().len();

    let params = h.params(Resume::Last, ApprovalMode::Full, false);
    let (handle, events) = codewhale_engine::Engine::spawn_opening(params);
    let mut engine = super::common::Running::from((handle, events));
    let first = engine.next().await.event;
    assert!(matches!(&first, Event::SessionOpening { bytes: b, .. } if *b == bytes), "{first:?}");
    let opened = engine.until(|e| matches!(e, Event::Usage { .. })).await;
    assert!(matches!(opened[0], Event::SessionConfigured { resumed: true, .. }), "{opened:?}");
    assert!(opened.iter().any(|e| matches!(e, Event::History { page } if page.items.len() == 2)));
    engine.shutdown().await;

    // A session that cannot be opened is an error event, then the end of the stream.
    let params = h.params(Resume::Id("no-such-session".into()), ApprovalMode::Full, false);
    let (_handle, mut events) = codewhale_engine::Engine::spawn_opening(params);
    let error = events.recv().await.unwrap().event;
    assert!(matches!(error, Event::Error { kind: ErrorKind::SessionNotFound, .. }), "{error:?}");
    assert_eq!(events.recv().await.unwrap().event, Event::ShutdownComplete);
    assert!(events.recv().await.is_none());
}
