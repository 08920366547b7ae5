//! `/btw` (docs/commands.md): a side question answered from the conversation as the model has
//! it, journaled as a `side` entry every view skips — the next request is byte for byte the one
//! it would have been without it — with its cost, and shown again after a resume.

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::protocol::{Event, HistoryItem, Op, TurnStatus};
use codewhale_engine::session::Resume;
use codewhale_journal::{check_file, Payload};
use codewhale_provider::test_support::Reply;

use super::common::{reload_checked, session_file, Harness};

async fn first_turn(h: &Harness, engine: &mut super::common::Running) {
    h.server.push(Reply::text("The parser is in src/parse.rs.").with_usage(1_200, 40));
    assert_eq!(engine.turn("where is the parser?").await.status, TurnStatus::Completed);
}

#[tokio::test]
async fn a_side_question_leaves_the_next_request_unchanged() {
    // Without the side question: the request the second turn sends.
    let plain = Harness::new().await;
    let mut engine = plain.spawn(ApprovalMode::Ask);
    first_turn(&plain, &mut engine).await;
    plain.server.push(Reply::text("It returns Eof."));
    engine.turn("what does it return at the end?").await;
    engine.shutdown().await;
    // The workspace differs: its path, in the system prompt, is the only word set aside.
    let expected = plain.server.requests()[1].body.to_string();
    let expected = expected.replace(&plain.workspace().display().to_string(), "WS");

    let h = Harness::new().await;
    let mut engine = h.spawn(ApprovalMode::Ask);
    first_turn(&h, &mut engine).await;
    h.server.push(Reply::text("  About 300 lines.\n").with_usage(1_250, 12));
    engine.submit(Op::SideQuestion { question: "how long is that file?".into() });
    let events =
        engine.until(|e| matches!(e, Event::SideAnswer { .. } | Event::Error { .. })).await;
    let Some(Event::SideAnswer { question, answer, model, input_tokens, output_tokens, .. }) =
        events.last()
    else {
        panic!("{events:?}")
    };
    assert_eq!(
        (question.as_str(), answer.as_str()),
        ("how long is that file?", "About 300 lines.")
    );
    assert_eq!((model.as_str(), *input_tokens, *output_tokens), ("gpt-4.1", 1_250, 12));
    // The side request: the conversation, then the question; no tool may be called.
    let side = h.server.requests()[1].body.clone();
    let messages = side["messages"].as_array().unwrap();
    assert!(messages.last().unwrap().to_string().contains("how long is that file?"));
    assert!(side.to_string().contains("The parser is in src/parse.rs."));
    assert_eq!(side["tool_choice"], "none", "{side}");

    h.server.push(Reply::text("It returns Eof."));
    engine.turn("what does it return at the end?").await;
    let next = h.server.requests()[2].body.to_string();
    let next = next.replace(&h.workspace().display().to_string(), "WS");
    assert!(next.contains("\"WS\"") || next.contains("`WS`"), "the path was set aside");
    assert_eq!(next, expected, "the next request is unchanged");

    // Shown again where it was asked, from the history page.
    engine.submit(Op::GetHistory { before: None, limit: 50 });
    let page = engine.until(|e| matches!(e, Event::History { .. })).await;
    let Some(Event::History { page }) = page.last() else { unreachable!() };
    assert!(
        page.items
            .iter()
            .any(|i| matches!(i, HistoryItem::Side { answer, .. } if answer == "About 300 lines.")),
        "{page:?}"
    );
    engine.shutdown().await;

    let path = session_file(h.home.path());
    let report = check_file(&path).unwrap();
    assert!(report.problems.is_empty() && report.warnings.is_empty(), "{report:?}");
    let journal = reload_checked(&path);
    let side = journal
        .entries()
        .into_iter()
        .find_map(|e| match &e.payload {
            Payload::Side(s) => Some((e.parent.clone(), s.clone())),
            _ => None,
        })
        .expect("a side entry");
    let (parent, payload) = side;
    assert_eq!(payload.question, "how long is that file?");
    assert_eq!(payload.answer, "About 300 lines.");
    assert_eq!(payload.model.as_deref(), Some("gpt-4.1"));
    assert_eq!(payload.usage.map(|u| u.output_tokens), Some(12));
    let reads = payload.reads.unwrap();
    assert_eq!(Some(reads.head.clone()), parent, "answered from HEAD, on the chain");

    // Resumed, the page still shows it.
    let mut engine = h.spawn_with(Resume::Last, ApprovalMode::Ask, false);
    let opened = engine.until(|e| matches!(e, Event::History { .. })).await;
    let Some(Event::History { page }) = opened.last() else { unreachable!() };
    assert!(page.items.iter().any(|i| matches!(i, HistoryItem::Side { .. })), "{page:?}");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_failed_side_question_keeps_nothing() {
    let h = Harness::new().await;
    let mut engine = h.spawn(ApprovalMode::Ask);
    first_turn(&h, &mut engine).await;
    engine.submit(Op::SideQuestion { question: "   ".into() });
    let events = engine.until(|e| matches!(e, Event::Error { .. })).await;
    assert!(
        matches!(events.last(), Some(Event::Error { message, .. }) if message.contains("no question"))
    );
    engine.shutdown().await;
    let journal = reload_checked(&session_file(h.home.path()));
    assert!(!journal.entries().iter().any(|e| matches!(e.payload, Payload::Side(_))));
}
