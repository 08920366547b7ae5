//! The request the engine sends, usage and errors.

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::budget::Source;
use codewhale_engine::protocol::{ErrorKind, Event, TurnStatus};
use codewhale_provider::test_support::{Fault, Reply};

use super::common::{kinds, reload_checked, session_file, Harness};

#[tokio::test]
async fn the_request_carries_system_prompt_instructions_and_tools() {
    let h = Harness::new().await;
    h.write("AGENTS.md", "Always answer in haiku.");
    h.server.push(Reply::text("ok").with_usage(50_000, 3));
    let mut engine = h.spawn(ApprovalMode::Ask);
    let run = engine.turn("hello").await;
    let started = run.events.iter().position(|e| matches!(e, Event::TurnStarted)).unwrap();
    let usages: Vec<_> = run.events[started..]
        .iter()
        .filter_map(|e| match e {
            Event::Usage { reported_input, pressure, .. } => Some((*reported_input, *pressure)),
            _ => None,
        })
        .collect();
    // First an estimate when the message is appended, then the reported figure.
    assert_eq!(usages.len(), 2, "{usages:?}");
    assert_eq!((usages[0].0, usages[0].1.source), (None, Source::Estimated));
    let (reported, pressure) = usages[1];
    assert_eq!(reported, Some(50_000));
    // The report is the truth for the prompt; the reply joins it as "added since", calibrated.
    assert!((50_001..50_100).contains(&pressure.tokens), "{pressure:?}");
    assert_eq!(pressure.source, Source::Reported);
    engine.shutdown().await;
    let body = &h.server.requests()[0].body;
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("You are Codewhale") && system.contains("Always answer in haiku."));
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "read_file",
            "list_dir",
            "search",
            "write_file",
            "edit_file",
            "shell",
            "update_plan",
            "recall",
            "web_fetch",
            "task"
        ]
    );
}

#[tokio::test]
async fn a_context_overflow_fails_the_turn_with_a_clear_error() {
    let h = Harness::new().await;
    h.server.push(Reply::fault(Fault::overflow(8_000, 9_000)));
    let mut engine = h.spawn(ApprovalMode::Ask);
    let run = engine.turn("hello").await;
    assert_eq!(run.status, TurnStatus::Failed);
    let message = run
        .events
        .iter()
        .find_map(|e| match e {
            Event::Error { kind, message } if *kind == ErrorKind::ContextOverflow => {
                Some(message.clone())
            }
            _ => None,
        })
        .unwrap();
    assert!(message.contains("window"), "{message}");
    // Never answered, so taken back: offered for editing, and not merged into the next prompt.
    assert!(run.events.contains(&Event::MessageTakenBack { text: "hello".into() }));
    h.server.push(Reply::text("hi"));
    engine.turn("shorter").await;
    engine.shutdown().await;
    let journal = reload_checked(&session_file(h.home.path()));
    assert_eq!(kinds(&journal), ["user", "assistant"]);
    let sent = h.server.requests().last().unwrap().body["messages"].to_string();
    assert!(sent.contains("shorter") && !sent.contains("hello"), "{sent}");
    let kept = journal.entries().iter().any(|e| {
        matches!(&e.payload, codewhale_journal::Payload::User(u)
            if u.content.iter().filter_map(|b| b.as_text()).any(|t| t == "hello"))
    });
    assert!(kept, "the message stays in the file");
}

#[tokio::test]
async fn busy_ops_during_a_turn_are_answered_with_an_error() {
    let h = Harness::new().await;
    h.server.push(Reply::text("slow").slow(std::time::Duration::from_millis(300)));
    let mut engine = h.spawn(ApprovalMode::Ask);
    let turn = engine.submit(codewhale_engine::protocol::Op::UserInput {
        text: "a".into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    let busy = engine.submit(codewhale_engine::protocol::Op::UserInput {
        text: "b".into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    let run = engine.finish(turn).await;
    assert_eq!(run.status, TurnStatus::Completed);
    let _ = busy;
    assert!(run
        .events
        .iter()
        .any(|e| matches!(e, Event::Error { kind, .. } if *kind == ErrorKind::Busy)));
    engine.shutdown().await;
}

#[tokio::test]
async fn anthropic_thinking_signatures_and_tool_results_are_replayed_exactly() {
    let h = Harness::new().await;
    h.server.push(Reply::thinking("let me look", "c2lnLWFiYw==").then_tool_call(
        "toolu_1",
        "list_dir",
        serde_json::json!({"path": "."}),
    ));
    h.server.push(Reply::text("nothing there"));
    let mut engine = h.spawn_anthropic(ApprovalMode::Ask);
    let run = engine.turn("what is here?").await;
    assert_eq!((run.status, run.text.as_str()), (TurnStatus::Completed, "nothing there"));
    engine.shutdown().await;
    let second = &h.server.requests()[1].body;
    let system = second["system"].as_array().unwrap();
    assert!(system.last().unwrap()["cache_control"].is_object(), "{system:?}");
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(
        messages[1]["content"][0],
        serde_json::json!({"type": "thinking", "thinking": "let me look", "signature": "c2lnLWFiYw=="})
    );
    assert_eq!(messages[1]["content"][1]["id"], "toolu_1");
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_1");
    let journal = reload_checked(&session_file(h.home.path()));
    assert_eq!(kinds(&journal), ["user", "assistant", "tool_result", "assistant"]);
}
