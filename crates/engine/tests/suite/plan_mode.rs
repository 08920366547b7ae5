//! Plan mode through whole turns (docs/configuration.md, *Plan mode*): the file tools' writes
//! are refused before any question, reads run, the model is told by synthetic user texts in
//! the journal (never by the system prompt), and "Carry out the plan." starts the plan in the
//! mode chosen. Commands: without a sandbox (as here: no helper) they are refused in plan mode;
//! the sandboxed path is tested with the real binary (the `codewhale` crate's plan-mode tests).

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::protocol::{Event, Op, TurnStatus};
use codewhale_engine::session::Resume;
use codewhale_journal::Payload;
use codewhale_provider::test_support::{Reply, ToolCall};
use serde_json::json;

use super::common::{reload_checked, session_file, Harness};

/// Words of the note that says plan mode began, and of the one that says it ended.
const ENTERED: &str = "Plan mode is on: investigate and plan";
const LEFT: &str = "Plan mode is off";

/// The user-role texts of request `n`, in order (consecutive user entries are one message).
fn user_texts(h: &Harness, n: usize) -> Vec<String> {
    let body = &h.server.requests()[n].body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[tokio::test]
async fn plan_mode_refuses_writes_before_any_question_and_tells_the_model_by_the_journal() {
    let h = Harness::new().await;
    h.write("a.txt", "old\n");
    h.server.push(Reply::tool_calls(vec![
        ToolCall::new("w", "write_file", json!({"path": "x.txt", "content": "x"})),
        ToolCall::new(
            "e",
            "edit_file",
            json!({"path": "a.txt", "old_string": "old", "new_string": "new"}),
        ),
        ToolCall::new("r", "read_file", json!({"path": "a.txt"})),
        ToolCall::new("s", "shell", json!({"command": "touch y.txt"})),
    ]));
    let plan = json!({"steps": [{"step": "Rename the type", "status": "pending"}]});
    h.server.push(Reply::tool_call("p", "update_plan", plan));
    h.server.push(Reply::text("The plan is ready."));
    // A terminal to ask on: nothing may be asked all the same.
    let mut engine = h.spawn_with(Resume::New, ApprovalMode::Plan, true);
    let run = engine.turn("plan the rename").await;
    assert_eq!(run.status, TurnStatus::Completed);
    assert!(
        !run.events.iter().any(|e| matches!(e, Event::ApprovalNeeded { .. })),
        "{:?}",
        run.events
    );
    assert!(!h.ws.path().join("x.txt").exists());
    assert!(!h.ws.path().join("y.txt").exists());
    assert_eq!(h.read("a.txt"), "old\n");
    let results = h.tool_results_in_request(1);
    let by_id = |id: &str| results.iter().find(|(i, _)| i == id).unwrap().1.clone();
    for id in ["w", "e"] {
        let text = by_id(id);
        assert!(text.contains("plan mode: the workspace is read-only"), "{id}: {text}");
    }
    assert!(by_id("r").contains("old"), "reads run");
    let shell = by_id("s");
    assert!(shell.contains("plan mode needs the sandbox"), "{shell}");

    // Told by a synthetic user text before the message; the system prompt is the one any
    // session sends, so its cached prefix holds.
    let texts = user_texts(&h, 0).join("\n");
    let note = texts.find(ENTERED).expect("the note");
    let message = texts.find("plan the rename").unwrap();
    assert!(note < message, "{texts}");
    let system = h.server.requests()[0].body["messages"][0].to_string();
    assert!(!system.contains("Plan mode"), "{system}");

    // "Plan ready — start in: auto-edit": the mode switches, the model is told plan mode
    // ended, and "Carry out the plan." is the next turn's message.
    h.server.push(Reply::tool_call("w2", "write_file", json!({"path": "x.txt", "content": "x"})));
    h.server.push(Reply::text("done"));
    let id = engine.submit(Op::CarryOutPlan { mode: ApprovalMode::AutoEdit });
    let run = engine.finish(id).await;
    assert_eq!(run.status, TurnStatus::Completed);
    assert!(run
        .events
        .iter()
        .any(|e| matches!(e, Event::ApprovalChanged { mode: ApprovalMode::AutoEdit, .. })));
    assert_eq!(h.read("x.txt"), "x", "auto-edit writes");
    let texts = user_texts(&h, 3).join("\n");
    let left = texts.find(LEFT).expect("the note it ended");
    let carry = texts.find("Carry out the plan.").unwrap();
    assert!(left < carry, "{texts}");
    assert_eq!(texts.matches(ENTERED).count(), 1, "told once");
    engine.shutdown().await;

    // In the journal: the two notes flagged, "Carry out the plan." synthetic, not the user's.
    let journal = reload_checked(&session_file(h.home.path()));
    let users: Vec<_> = journal
        .spine(journal.head_id().as_str())
        .into_iter()
        .filter_map(|e| match &e.payload {
            Payload::User(u) => Some(u.clone()),
            _ => None,
        })
        .collect();
    let flagged: Vec<Option<bool>> =
        users.iter().filter(|u| u.plan_mode.is_some()).map(|u| u.plan_mode).collect();
    assert_eq!(flagged, [Some(true), Some(false)]);
    let text_of = |u: &codewhale_journal::UserPayload| -> String {
        u.content.iter().filter_map(|b| b.as_text()).collect()
    };
    let carry = users.iter().find(|u| text_of(u).contains("Carry out the plan.")).unwrap();
    assert!(carry.synthetic && !carry.is_plain(), "{carry:?}");
}

/// A mode that changes back and forth while idle costs nothing: the model is told only what
/// differs from what it was last told, when the next request is built.
#[tokio::test]
async fn the_model_is_told_only_when_the_mode_it_knows_changes() {
    let h = Harness::new().await;
    h.server.push(Reply::text("one"));
    h.server.push(Reply::text("two"));
    let mut engine = h.spawn_with(Resume::New, ApprovalMode::Ask, true);
    engine.submit(Op::SetApproval { mode: ApprovalMode::Plan });
    engine.submit(Op::SetApproval { mode: ApprovalMode::Ask });
    assert_eq!(engine.turn("first").await.status, TurnStatus::Completed);
    assert!(!user_texts(&h, 0).iter().any(|t| t.contains("Plan mode")));
    engine.submit(Op::SetApproval { mode: ApprovalMode::Plan });
    assert_eq!(engine.turn("second").await.status, TurnStatus::Completed);
    let texts = user_texts(&h, 1).join("\n");
    assert_eq!(texts.matches(ENTERED).count(), 1, "{texts}");
    engine.shutdown().await;
}
