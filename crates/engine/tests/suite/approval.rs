//! Approval modes through the whole turn: denied without a terminal, denied and approved by
//! the user, and auto-edit.

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::protocol::{ApprovalScope, Event, Grant, Op, TurnStatus};
use codewhale_engine::session::Resume;
use codewhale_provider::test_support::Reply;
use serde_json::json;

use super::common::{reload_checked, results, session_file, Harness};

#[tokio::test]
async fn without_a_terminal_a_write_in_ask_mode_is_denied_with_a_message() {
    let h = Harness::new().await;
    h.server.push(Reply::tool_call("w", "write_file", json!({"path": "x.txt", "content": "x"})));
    h.server.push(Reply::text("could not write"));
    let mut engine = h.spawn(ApprovalMode::Ask);
    let run = engine.turn("write x").await;
    assert_eq!(run.status, TurnStatus::Completed);
    engine.shutdown().await;
    assert!(!h.ws.path().join("x.txt").exists());
    let sent = h.tool_results_in_request(1);
    assert!(sent[0].1.starts_with("denied:") && sent[0].1.contains("--approval"), "{sent:?}");
    let journal = reload_checked(&session_file(h.home.path()));
    assert!(results(&journal)[0].2, "a denial is an error result");
}

#[tokio::test]
async fn auto_edit_writes_but_still_refuses_shell() {
    let h = Harness::new().await;
    h.server.push(Reply::tool_call("w", "write_file", json!({"path": "x.txt", "content": "x"})));
    h.server.push(Reply::tool_call("s", "shell", json!({"command": "touch y.txt"})));
    h.server.push(Reply::text("ok"));
    let mut engine = h.spawn(ApprovalMode::AutoEdit);
    engine.turn("go").await;
    engine.shutdown().await;
    assert_eq!(h.read("x.txt"), "x");
    assert!(!h.ws.path().join("y.txt").exists());
}

#[tokio::test]
async fn paths_outside_the_workspace_need_approval_even_for_reads() {
    let h = Harness::new().await;
    h.server.push(Reply::tool_call("r", "read_file", json!({"path": "/etc/hostname"})));
    h.server.push(Reply::text("ok"));
    let mut engine = h.spawn(ApprovalMode::AutoEdit);
    engine.turn("read it").await;
    engine.shutdown().await;
    assert!(h.tool_results_in_request(1)[0].1.starts_with("denied:"));
}

#[tokio::test]
async fn the_user_can_deny_and_approve_interactively() {
    let h = Harness::new().await;
    h.server.push(Reply::tool_call("s1", "shell", json!({"command": "touch denied.txt"})));
    h.server.push(Reply::tool_call("s2", "shell", json!({"command": "touch allowed.txt"})));
    h.server.push(Reply::tool_call("s3", "shell", json!({"command": "touch again.txt"})));
    h.server.push(Reply::text("done"));
    let mut engine = h.spawn_with(Resume::New, ApprovalMode::Ask, true);
    let turn = engine.submit(Op::UserInput {
        text: "touch files".into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    engine.until(|e| matches!(e, Event::ApprovalNeeded { call_id, .. } if call_id == "s1")).await;
    engine.submit(Op::Deny { call_id: "s1".into(), reason: Some("not that file".into()) });
    let asked = engine
        .until(|e| matches!(e, Event::ApprovalNeeded { call_id, .. } if call_id == "s2"))
        .await;
    let Some(Event::ApprovalNeeded { offers, .. }) = asked.last() else { unreachable!() };
    // `touch allowed.txt` has no subcommand: only the exact command can be allowed always.
    assert_eq!(
        offers.iter().map(|o| o.scope).collect::<Vec<_>>(),
        [ApprovalScope::Command],
        "{offers:?}"
    );
    engine.submit(Op::Approve { call_id: "s2".into(), scope: ApprovalScope::Command });
    // "Always" for that exact command does not cover another: the third call asks too.
    engine.until(|e| matches!(e, Event::ApprovalNeeded { call_id, .. } if call_id == "s3")).await;
    engine.submit(Op::Approve { call_id: "s3".into(), scope: ApprovalScope::Once });
    let run = engine.finish(turn).await;
    assert_eq!(run.status, TurnStatus::Completed);
    // The grant is listed, and can be revoked.
    let id = engine.submit(Op::ListGrants);
    let listed = engine.until(|e| matches!(e, Event::Grants { .. })).await;
    let Some(Event::Grants { grants, .. }) = listed.last() else { unreachable!() };
    assert_eq!(grants, &[Grant::Command("touch allowed.txt".into())]);
    let labels: Vec<String> = grants.iter().map(|g| format!("always for {g}")).collect();
    assert_eq!(labels, ["always for the command `touch allowed.txt`"]);
    let _ = id;
    engine.submit(Op::RevokeGrant { index: 1 });
    let listed = engine.until(|e| matches!(e, Event::Grants { .. })).await;
    assert!(matches!(listed.last(), Some(Event::Grants { grants, .. }) if grants.is_empty()));
    engine.shutdown().await;
    assert!(!h.ws.path().join("denied.txt").exists());
    assert!(h.ws.path().join("allowed.txt").exists());
    assert!(h.ws.path().join("again.txt").exists());
    let denied = &h.tool_results_in_request(1)[0].1;
    assert!(denied.contains("the user declined") && denied.contains("not that file"), "{denied}");
}

/// Shift+Tab while a call waits: the next call of the same turn is decided by the new mode, and
/// the mode stays for the next turn.
#[tokio::test]
async fn a_mode_chosen_during_a_turn_applies_from_the_next_call() {
    let h = Harness::new().await;
    h.server.push(Reply::tool_call("w1", "write_file", json!({"path": "a.txt", "content": "a"})));
    h.server.push(Reply::tool_call("w2", "write_file", json!({"path": "b.txt", "content": "b"})));
    h.server.push(Reply::text("both written"));
    h.server.push(Reply::tool_call("w3", "write_file", json!({"path": "c.txt", "content": "c"})));
    h.server.push(Reply::text("third written"));
    let mut engine = h.spawn_with(Resume::New, ApprovalMode::Ask, true);
    let turn = engine.submit(Op::UserInput {
        text: "write two".into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    engine.until(|e| matches!(e, Event::ApprovalNeeded { call_id, .. } if call_id == "w1")).await;
    engine.submit(Op::SetApproval { mode: ApprovalMode::AutoEdit });
    let said = engine.until(|e| matches!(e, Event::ApprovalChanged { .. })).await;
    let Some(Event::ApprovalChanged { mode, message }) = said.last() else { unreachable!() };
    assert_eq!(*mode, ApprovalMode::AutoEdit);
    assert!(message.contains("auto-edit"), "{message}");
    // The waiting call still needs its answer; the next one does not ask.
    engine.submit(Op::Approve { call_id: "w1".into(), scope: ApprovalScope::Once });
    let events = engine.finish(turn).await;
    assert_eq!(events.status, TurnStatus::Completed);
    assert!(
        !events
            .events
            .iter()
            .any(|e| matches!(e, Event::ApprovalNeeded { call_id, .. } if call_id == "w2")),
        "the second write ran without asking"
    );
    assert_eq!(h.read("b.txt"), "b");
    // The next turn keeps the mode.
    let run = engine.turn("one more").await;
    assert_eq!(run.status, TurnStatus::Completed);
    assert_eq!(h.read("c.txt"), "c");
    engine.shutdown().await;
}
