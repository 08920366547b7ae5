//! Branch summaries (docs/journal-format.md, *`branch_summary`*): leaving a branch tip that holds a
//! tool call or more than one user turn after the branch point writes a `branch_summary` in the
//! background, on both wire formats (a one-turn chat branch writes none); the model reads it as "What was tried on a branch you left: …"; it fails open (a
//! provider error, an empty or over-long reply, the timeout, HEAD moving again: no entry); a turn
//! sent meanwhile waits for it; and every compaction keeps it verbatim — through three passes in a
//! row.

use std::time::Duration;

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::protocol::{BranchSummaryState, Event, Op, TakeBack, TurnStatus};
use codewhale_journal::{
    check_file, load_read_only, render, ItemKind, Journal, Payload, BRANCH_SUMMARY_PREFIX,
};
use codewhale_provider::test_support::{Fault, Reply};

use super::common::{reload_checked, session_file, Harness, Running};
use super::compaction::{compact, prose, spawn, SUMMARY, WINDOW};

/// Words of the summarizer's instruction (assets/prompts/branch-summary.md).
const INSTRUCTION: &str = "You write a short account of a branch of a coding conversation";

fn on_disk(h: &Harness) -> Journal {
    load_read_only(&session_file(h.home.path())).unwrap().journal
}

/// The ids of the plain user messages on HEAD's spine, and of the last assistant entry.
fn ids(h: &Harness) -> (Vec<String>, String) {
    let journal = on_disk(h);
    let spine = journal.spine(journal.head_id().as_str());
    let users = spine
        .iter()
        .filter(|e| matches!(&e.payload, Payload::User(u) if u.is_plain()))
        .map(|e| e.id.to_string())
        .collect();
    let last = spine.iter().rev().find(|e| matches!(e.payload, Payload::Assistant(_))).unwrap();
    (users, last.id.to_string())
}

fn summaries(journal: &Journal) -> Vec<(String, codewhale_journal::BranchSummaryPayload)> {
    journal
        .entries()
        .into_iter()
        .filter_map(|e| match &e.payload {
            Payload::BranchSummary(b) => Some((e.id.to_string(), b.clone())),
            _ => None,
        })
        .collect()
}

/// Rewinds to before the user message `to` (the conversation only).
fn rewind(to: &str) -> Op {
    Op::TakeBack {
        to: to.into(),
        take: TakeBack::Conversation,
        fork: false,
        before: true,
        force: false,
    }
}

/// Waits for the branch summary to be written or dropped; returns the state and its text.
async fn summary_end(engine: &mut Running) -> (BranchSummaryState, String) {
    loop {
        if let Event::BranchSummary { state, summary, reason } = engine.next().await.event {
            if state != BranchSummaryState::Writing {
                return (state, summary.or(reason).unwrap_or_default());
            }
        }
    }
}

/// Two turns, the second with a tool call: leaving it is worth a summary.
async fn two_turns(h: &Harness, engine: &mut Running) {
    h.server.push(Reply::text("looking at the parser"));
    assert_eq!(engine.turn("fix the parser").await.status, TurnStatus::Completed);
    h.server.push(Reply::tool_call("r1", "read_file", serde_json::json!({"path": "parser.rs"})));
    h.server.push(Reply::text("nom fails on nested groups"));
    assert_eq!(engine.turn("try nom").await.status, TurnStatus::Completed);
}

/// Two chat turns, no tool call: the second is a one-turn chat branch.
async fn two_chat_turns(h: &Harness, engine: &mut Running) {
    h.server.push(Reply::text("looking at the parser"));
    assert_eq!(engine.turn("fix the parser").await.status, TurnStatus::Completed);
    h.server.push(Reply::text("nom fails on nested groups"));
    assert_eq!(engine.turn("try nom").await.status, TurnStatus::Completed);
}

async fn appended_after_a_rewind_and_read_by_the_model(provider: &str) {
    let h = Harness::new().await;
    let mut engine = match provider {
        "anthropic" => h.spawn_anthropic(ApprovalMode::Ask),
        _ => h.spawn(ApprovalMode::Ask),
    };
    two_turns(&h, &mut engine).await;
    let (users, tip) = ids(&h);
    // The branch point: the reply before "try nom".
    let a1 = on_disk(&h).get(&users[1]).unwrap().parent.clone().unwrap().to_string();
    h.server.push(Reply::text("  Tried nom: it failed on nested groups.\n"));
    engine.submit(rewind(&users[1]));
    let (state, text) = summary_end(&mut engine).await;
    assert_eq!(
        (state, text.as_str()),
        (BranchSummaryState::Written, "Tried nom: it failed on nested groups.")
    );

    // The summarizer read the branch left, with the request before it, and no tools.
    let request = &h.server.requests()[3];
    let body = request.body.to_string();
    assert!(body.contains(INSTRUCTION), "{body}");
    assert!(
        body.contains("[user] try nom") && body.contains("nom fails on nested groups"),
        "{body}"
    );
    assert!(body.contains("fix the parser"), "the request before the branch: {body}");
    assert!(request.body.get("tools").is_none(), "{body}");

    // On HEAD (it moved), with the fields docs/journal-format.md names.
    let journal = on_disk(&h);
    let found = summaries(&journal);
    assert_eq!(found.len(), 1);
    let (id, payload) = &found[0];
    assert_eq!(journal.head_id().as_str(), id);
    assert_eq!(journal.get(id).unwrap().parent.as_ref().unwrap().as_str(), a1);
    assert_eq!(payload.branch_id.as_str(), users[1]);
    assert_eq!(payload.from.as_ref().unwrap().as_str(), a1);
    assert_eq!(payload.tip.as_ref().unwrap().as_str(), tip);
    assert_eq!(payload.parent_branch_id, None, "the session's first branch");

    h.server.push(Reply::text("writing a hand-made parser"));
    assert_eq!(engine.turn("try a hand-written parser").await.status, TurnStatus::Completed);
    let sent = h.server.last_request().unwrap().body["messages"].to_string();
    let text = format!("{BRANCH_SUMMARY_PREFIX}Tried nom: it failed on nested groups.");
    assert!(sent.contains(&text), "the model reads it: {sent}");
    assert!(!sent.contains("nom fails on nested groups"), "not the branch itself: {sent}");
    engine.shutdown().await;

    let path = session_file(h.home.path());
    let report = check_file(&path).unwrap();
    assert!(report.problems.is_empty() && report.warnings.is_empty(), "{report:?}");
    reload_checked(&path);
}

#[tokio::test]
async fn a_rewind_leaving_two_messages_writes_a_summary_the_model_reads_openai() {
    appended_after_a_rewind_and_read_by_the_model("openai").await;
}

#[tokio::test]
async fn a_rewind_leaving_two_messages_writes_a_summary_the_model_reads_anthropic() {
    appended_after_a_rewind_and_read_by_the_model("anthropic").await;
}

#[tokio::test]
async fn leaving_fewer_than_two_messages_writes_no_summary() {
    let h = Harness::new().await;
    let mut engine = h.spawn(ApprovalMode::Ask);
    two_turns(&h, &mut engine).await;
    let (_, tip) = ids(&h);
    // Back to before the last reply: one message left behind.
    engine.submit(rewind(&tip));
    let marker = engine.submit(Op::GetContext);
    loop {
        let msg = engine.next().await;
        let unexpected = matches!(msg.event, Event::BranchSummary { .. } | Event::Error { .. });
        assert!(!unexpected, "{:?}", msg.event);
        if msg.id == marker {
            break;
        }
    }
    assert_eq!(h.server.requests().len(), 3, "no summary request");
    assert!(summaries(&on_disk(&h)).is_empty());
    engine.shutdown().await;
}

/// Esc Esc on the last message of a chat (one user turn and its reply, no tool call): the turn
/// is dropped, as Claude Code and Codex drop it — no summary request, no entry, and the next
/// request does not tell the model "What was tried on a branch you left".
#[tokio::test]
async fn editing_a_one_turn_chat_branch_writes_no_summary() {
    let h = Harness::new().await;
    let mut engine = h.spawn(ApprovalMode::Ask);
    two_chat_turns(&h, &mut engine).await;
    let (users, _) = ids(&h);
    engine.submit(rewind(&users[1]));
    let marker = engine.submit(Op::GetContext);
    loop {
        let msg = engine.next().await;
        let unexpected = matches!(msg.event, Event::BranchSummary { .. } | Event::Error { .. });
        assert!(!unexpected, "{:?}", msg.event);
        if msg.id == marker {
            break;
        }
    }
    assert_eq!(h.server.requests().len(), 2, "no summary request");
    h.server.push(Reply::text("trying pest"));
    assert_eq!(engine.turn("try pest").await.status, TurnStatus::Completed);
    let sent = h.server.last_request().unwrap().body["messages"].to_string();
    assert!(!sent.contains(BRANCH_SUMMARY_PREFIX.trim()), "{sent}");
    assert!(!sent.contains("try nom"), "the dropped turn: {sent}");
    assert!(summaries(&on_disk(&h)).is_empty());
    engine.shutdown().await;
}

#[tokio::test]
async fn it_fails_open_on_a_provider_error_an_empty_reply_and_an_over_long_one() {
    let h = Harness::new().await;
    let mut engine = h.spawn(ApprovalMode::Ask);
    h.server.push(Reply::text("a1"));
    engine.turn("q1").await;
    let bad = [
        (Reply::fault(Fault::Status { status: 400, body: "{}".into() }), "request failed"),
        (Reply::text("   "), "empty"),
        (Reply::text("x".repeat(2_001)), "2001 characters"),
    ];
    for (n, (reply, why)) in bad.into_iter().enumerate() {
        // A call makes the branch left worth a summary.
        let read = serde_json::json!({"path": "notes.txt"});
        h.server.push(Reply::tool_call(format!("r{n}"), "read_file", read));
        h.server.push(Reply::text(format!("answer {n}")));
        engine.turn(&format!("attempt {n}")).await;
        let (users, _) = ids(&h);
        h.server.push(reply);
        engine.submit(rewind(users.last().unwrap()));
        let (state, reason) = summary_end(&mut engine).await;
        assert_eq!(state, BranchSummaryState::Dropped, "{reason}");
        assert!(reason.contains(why), "{why}: {reason}");
    }
    // No entry, and the session goes on.
    assert!(summaries(&on_disk(&h)).is_empty());
    h.server.push(Reply::text("still here"));
    assert_eq!(engine.turn("go on").await.status, TurnStatus::Completed);
    engine.shutdown().await;
    reload_checked(&session_file(h.home.path()));
}

#[tokio::test]
async fn the_engine_answers_while_it_is_written_and_a_turn_sent_meanwhile_reads_it() {
    let h = Harness::new().await;
    let mut engine = h.spawn(ApprovalMode::Ask);
    two_turns(&h, &mut engine).await;
    let (users, _) = ids(&h);
    h.server.push(Reply::text("Tried nom; it failed.").after(Duration::from_millis(800)));
    h.server.push(Reply::text("a hand-made parser then"));
    engine.submit(rewind(&users[1]));
    engine
        .until(|e| matches!(e, Event::BranchSummary { state: BranchSummaryState::Writing, .. }))
        .await;
    // Not blocked: a question is answered while the summary is being written.
    let asked = engine.submit(Op::GetContext);
    loop {
        let msg = engine.next().await;
        assert!(!matches!(msg.event, Event::BranchSummary { .. }), "answered first");
        if msg.id == asked {
            break;
        }
    }
    let turn = engine.submit(Op::UserInput {
        text: "try by hand".into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    let run = engine.finish(turn).await;
    assert_eq!(run.status, TurnStatus::Completed);
    let written = run
        .events
        .iter()
        .position(|e| matches!(e, Event::BranchSummary { state: BranchSummaryState::Written, .. }));
    let started = run.events.iter().position(|e| matches!(e, Event::TurnStarted));
    assert!(written.unwrap() < started.unwrap(), "{:?}", run.events);
    let sent = h.server.last_request().unwrap().body["messages"].to_string();
    assert!(sent.contains("What was tried on a branch you left: Tried nom; it failed."), "{sent}");
    // In the journal the summary comes before the message.
    let journal = on_disk(&h);
    let spine = journal.spine(journal.head_id().as_str());
    let kinds: Vec<&str> = spine.iter().rev().take(3).map(|e| e.kind()).collect();
    assert_eq!(kinds, ["assistant", "user", "branch_summary"]);
    engine.shutdown().await;
}

#[tokio::test]
async fn a_head_move_or_the_timeout_drops_it() {
    let h = Harness::new().await;
    h.config("[compaction]\nbranch_summary_timeout_sec = 0.3\n");
    let mut engine = h.spawn(ApprovalMode::Ask);
    two_turns(&h, &mut engine).await;
    let (users, tip) = ids(&h);
    // HEAD moves on before the summary is written: it is for a branch HEAD left too.
    h.server.push(Reply::text("late").after(Duration::from_millis(200)));
    engine.submit(rewind(&users[1]));
    engine
        .until(|e| matches!(e, Event::BranchSummary { state: BranchSummaryState::Writing, .. }))
        .await;
    engine.submit(Op::Checkout { to: tip.clone() });
    let (state, reason) = summary_end(&mut engine).await;
    assert_eq!(state, BranchSummaryState::Dropped);
    assert!(reason.contains("HEAD moved again"), "{reason}");
    // Past its timeout: dropped, said why.
    h.server.push(Reply::text("much too late").after(Duration::from_secs(1)));
    engine.submit(rewind(&users[1]));
    let (state, reason) = summary_end(&mut engine).await;
    assert_eq!(state, BranchSummaryState::Dropped);
    assert!(reason.contains("took longer than 0.3 s"), "{reason}");
    // The moment the late reply was due has passed, and the client had hung up on it (the server
    // counts both dropped summaries' bodies as abandoned when it tries to send them): nothing
    // can arrive now, and nothing was written.
    let abandoned = tokio::time::timeout(Duration::from_secs(20), h.server.wait_for_disconnects(2));
    assert!(abandoned.await.is_ok(), "a dropped summary's request was still being read");
    assert!(summaries(&on_disk(&h)).is_empty());
    engine.shutdown().await;
    reload_checked(&session_file(h.home.path()));
}

#[tokio::test]
async fn a_branch_summary_is_read_by_the_model_and_kept_through_three_compactions() {
    let h = Harness::new().await;
    h.hosted_api();
    let mut engine = spawn(&h, "openai", WINDOW);
    h.server.push(Reply::text(prose("answer 0", 300)).with_usage(2_000, 1_500));
    engine.turn("question 0").await;
    h.server.push(Reply::text(prose("nom", 50)).with_usage(2_000, 1_500));
    engine.turn("try nom").await;
    h.server.push(Reply::text(prose("nested", 50)).with_usage(2_000, 1_500));
    engine.turn("and nested groups?").await;
    let (users, _) = ids(&h);
    h.server.push(Reply::text("nom failed on nested groups"));
    engine.submit(rewind(&users[1]));
    assert_eq!(summary_end(&mut engine).await.0, BranchSummaryState::Written);
    let path = session_file(h.home.path());
    let summary_id = summaries(&on_disk(&h))[0].0.clone();
    let text = format!("{BRANCH_SUMMARY_PREFIX}nom failed on nested groups");

    for pass in 0..3 {
        for k in 0..3 {
            let answer = prose(&format!("answer {pass}.{k}"), 300);
            h.server.push(Reply::text(answer).with_usage(2_000, 1_500));
            engine.turn(&format!("question {pass}.{k}")).await;
        }
        h.server.push(Reply::text(format!("{SUMMARY}\npass {pass}")));
        let event = compact(&mut engine, None).await;
        assert!(matches!(event, Event::CompactionFinished { .. }), "pass {pass}: {event:?}");
        let journal = reload_checked(&path);
        let view = render(&journal, journal.head_id().as_str());
        let kept: Vec<_> =
            view.items.iter().filter(|i| i.kind == ItemKind::BranchSummary).collect();
        assert_eq!(kept.len(), 1, "pass {pass}: the summary is in the view once");
        assert_eq!(kept[0].blocks()[0].as_text(), Some(text.as_str()), "pass {pass}: verbatim");
        let record = journal.compactions().last().unwrap().1.clone();
        assert!(
            record.retained_ids.iter().any(|id| id.as_str() == summary_id),
            "pass {pass}: retained"
        );
    }
    h.server.push(Reply::text("go on"));
    engine.turn("next").await;
    let sent = h.server.last_request().unwrap().body["messages"].to_string();
    assert!(sent.contains(&text), "the model reads it: {sent}");
    engine.shutdown().await;
    let report = check_file(&path).unwrap();
    assert!(report.problems.is_empty(), "{report:?}");
}
