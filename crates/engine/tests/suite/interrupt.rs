//! Interrupts in every phase leave a journal that reloads and renders valid.

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::protocol::{ErrorKind, Event, Op, TurnStatus};
use codewhale_engine::session::{Resume, INTERRUPTED_RESULT};
use codewhale_journal::Payload;
use codewhale_provider::test_support::{Reply, ToolCall};
use serde_json::json;

use super::common::{kinds, reload_checked, results, session_file, spine, Harness};

#[tokio::test]
async fn while_streaming_the_partial_reply_is_kept() {
    let h = Harness::new().await;
    h.server.push(Reply::text("partial answer").then_text(" more").hang_after(2));
    let mut engine = h.spawn(ApprovalMode::Full);
    let turn = engine.submit(Op::UserInput {
        text: "talk".into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    engine.until(|e| matches!(e, Event::TextDelta { .. })).await;
    engine.submit(Op::Interrupt);
    let run = engine.finish(turn).await;
    assert_eq!(run.status, TurnStatus::Interrupted);
    assert!(run.text.starts_with("partial"), "{}", run.text);
    engine.shutdown().await;
    let journal = reload_checked(&session_file(h.home.path()));
    assert_eq!(kinds(&journal), ["user", "assistant"]);
    let Payload::Assistant(a) = &spine(&journal)[1].payload else { panic!() };
    assert!(a.interrupted);
}

#[tokio::test]
async fn while_a_tool_runs_the_call_and_the_rest_get_results() {
    let h = Harness::new().await;
    h.server.push(Reply::tool_calls(vec![
        ToolCall::new("slow", "shell", json!({"command": "sleep 30"})),
        ToolCall::new("next", "read_file", json!({"path": "x"})),
    ]));
    let mut engine = h.spawn(ApprovalMode::Full);
    let turn = engine.submit(Op::UserInput {
        text: "wait".into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    engine
        .until(|e| matches!(e, Event::ToolCallStarted { call_id, .. } if call_id == "slow"))
        .await;
    engine.submit(Op::Interrupt);
    let run = engine.finish(turn).await;
    assert_eq!(run.status, TurnStatus::Interrupted);
    engine.shutdown().await;
    let journal = reload_checked(&session_file(h.home.path()));
    let r = results(&journal);
    assert_eq!(r.len(), 2);
    assert!(r[0].1.contains("interrupted by the user") && r[0].2);
    assert_eq!((r[1].1.as_str(), r[1].2), (INTERRUPTED_RESULT, true));
}

#[tokio::test]
async fn while_awaiting_approval_the_call_gets_an_interrupted_result() {
    let h = Harness::new().await;
    h.server.push(Reply::tool_call("ask", "shell", json!({"command": "touch x"})));
    let mut engine = h.spawn_with(Resume::New, ApprovalMode::Ask, true);
    let turn = engine.submit(Op::UserInput {
        text: "do".into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    engine.until(|e| matches!(e, Event::ApprovalNeeded { .. })).await;
    engine.submit(Op::Interrupt);
    let run = engine.finish(turn).await;
    assert_eq!(run.status, TurnStatus::Interrupted);
    engine.shutdown().await;
    assert!(!h.ws.path().join("x").exists());
    let journal = reload_checked(&session_file(h.home.path()));
    assert_eq!(results(&journal), [("ask".to_owned(), INTERRUPTED_RESULT.to_owned(), true)]);
}

#[tokio::test]
async fn a_dropped_stream_keeps_the_partial_text_and_fails_the_turn() {
    let h = Harness::new().await;
    // Slow frames make the server flush its headers and first frames before the drop, so the
    // failure happens mid-stream rather than before the reply started (which would be retried).
    let reply = Reply::text("half").then_text(" of").then_text(" it");
    h.server.push(reply.slow(std::time::Duration::from_millis(20)).drop_after(3));
    let mut engine = h.spawn(ApprovalMode::Full);
    let run = engine.turn("hi").await;
    assert_eq!(run.status, TurnStatus::Failed);
    assert!(run.text.starts_with("half"), "{:?}", run.events);
    let is_stream_error = |e: &Event| matches!(e, Event::Error { kind, .. } if matches!(kind, ErrorKind::Network | ErrorKind::Protocol));
    assert!(run.events.iter().any(is_stream_error), "{:?}", run.events);
    engine.shutdown().await;
    let journal = reload_checked(&session_file(h.home.path()));
    assert_eq!(kinds(&journal), ["user", "assistant"]);
    assert!(journal.entries().iter().any(|e| e.kind() == "system"));
}
