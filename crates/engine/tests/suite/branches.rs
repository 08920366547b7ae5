//! HEAD moves and model switches through the engine's ops: `fork`, `checkout`, `rewind` and
//! `switch_model`, each checked against what the mock provider receives and what the journal
//! holds after a reload.

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::protocol::{Event, Op, TurnStatus};
use codewhale_engine::session::Resume;
use codewhale_engine::Engine;
use codewhale_journal::{load_read_only, render, HeadReason, Journal, Payload};
use codewhale_provider::test_support::Reply;

use super::common::{reload_checked, session_file, spine, Harness, Running};

/// Submits a branch op and returns its reply: `Ok(notice)` or `Err(error message)`.
async fn move_head(engine: &mut Running, op: Op) -> Result<String, String> {
    let id = engine.submit(op);
    loop {
        let msg = engine.next().await;
        if msg.id != id {
            continue;
        }
        match msg.event {
            Event::Notice { message, .. }
            | Event::HeadMoved { message, .. }
            | Event::ModelSwitched { message, .. } => return Ok(message),
            Event::Error { message, .. } => return Err(message),
            _ => {}
        }
    }
}

/// Runs one turn that the mock answers with `answer`; the turn must complete.
async fn turn(h: &Harness, engine: &mut Running, text: &str, answer: &str) -> Vec<Event> {
    h.server.push(Reply::text(answer).with_usage(2_000, 5));
    let run = engine.turn(text).await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    run.events
}

/// The text contents of the `n`-th request's messages, in order (system prompt excluded).
fn sent(h: &Harness, n: usize) -> Vec<String> {
    h.server.requests()[n].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

/// The journal as it is on disk now (the engine keeps it open; reading needs no lock).
fn on_disk(h: &Harness) -> Journal {
    load_read_only(&session_file(h.home.path())).unwrap().journal
}

/// The ids of the spine's model-visible entries, root first.
fn spine_ids(journal: &Journal) -> Vec<String> {
    spine(journal).iter().map(|e| e.id.to_string()).collect()
}

/// The text blocks of a user or assistant entry, joined.
fn text_of(payload: &Payload) -> String {
    let blocks = match payload {
        Payload::User(u) => &u.content,
        Payload::Assistant(a) => &a.content,
        _ => return String::new(),
    };
    blocks.iter().filter_map(|b| b.as_text()).collect()
}

/// The `(to, reason)` of every `head` record, in file order.
fn head_records(journal: &Journal) -> Vec<(String, HeadReason)> {
    journal
        .entries()
        .iter()
        .filter_map(|e| match &e.payload {
            Payload::Head(h) => Some((h.to.to_string(), h.reason.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn fork_isolates_the_new_branch_and_checkout_restores_the_old_one() {
    let h = Harness::new().await;
    h.no_branch_summaries();
    let mut engine = h.spawn(ApprovalMode::Ask);
    turn(&h, &mut engine, "q1", "a1").await;
    turn(&h, &mut engine, "q2", "a2").await;
    let before = on_disk(&h);
    let old = spine_ids(&before);
    let old_view = render(&before, old[3].as_str());

    let notice = move_head(&mut engine, Op::Fork { at: old[0].clone() }).await.unwrap();
    assert!(notice.starts_with("forked at"), "{notice}");
    turn(&h, &mut engine, "q3", "a3").await;
    // A fork at a user message goes to before it: q1 went back to the composer and is never
    // glued to the next prompt.
    assert_eq!(sent(&h, 2), ["q3"], "the other branch's messages stay out of the request");

    let notice = move_head(&mut engine, Op::Checkout { to: old[3].clone() }).await.unwrap();
    assert!(notice.starts_with("checked out"), "{notice}");
    let journal = on_disk(&h);
    assert_eq!(journal.head_id().as_str(), old[3]);
    assert_eq!(render(&journal, journal.head_id().as_str()), old_view, "same view from data");
    turn(&h, &mut engine, "q4", "a4").await;
    assert_eq!(sent(&h, 3), ["q1", "a1", "q2", "a2", "q4"]);
    engine.shutdown().await;

    let journal = reload_checked(&session_file(h.home.path()));
    assert_eq!(
        head_records(&journal),
        [
            (before.header_entry().id.to_string(), HeadReason::Fork),
            (old[3].clone(), HeadReason::Checkout)
        ]
    );
    // The forked branch is still whole and still renders on its own.
    let forked = journal
        .entries()
        .into_iter()
        .find(|e| matches!(e.payload, Payload::Assistant(_)) && text_of(&e.payload) == "a3")
        .unwrap();
    let view = render(&journal, forked.id.as_str());
    codewhale_journal::check_view(&view).unwrap();
    assert_eq!(view.items.len(), 2, "q3, a3");
}

#[tokio::test]
async fn rewind_moves_back_on_the_branch_and_refuses_other_branches() {
    let h = Harness::new().await;
    h.no_branch_summaries();
    let mut engine = h.spawn(ApprovalMode::Ask);
    turn(&h, &mut engine, "q1", "a1").await;
    turn(&h, &mut engine, "q2", "a2").await;
    let ids = spine_ids(&on_disk(&h));

    let notice = move_head(&mut engine, Op::Rewind { to: ids[1].clone() }).await.unwrap();
    assert!(notice.starts_with("rewound to"), "{notice}");
    turn(&h, &mut engine, "q5", "a5").await;
    assert_eq!(sent(&h, 2), ["q1", "a1", "q5"]);

    // a2 is on the branch HEAD left: rewinding to it is refused and writes nothing.
    let err = move_head(&mut engine, Op::Rewind { to: ids[3].clone() }).await.unwrap_err();
    assert!(err.contains("not on the current branch"), "{err}");
    let err = move_head(&mut engine, Op::Checkout { to: "no-such-entry".into() }).await;
    assert!(err.unwrap_err().contains("no entry no-such-entry"));
    engine.shutdown().await;

    let journal = reload_checked(&session_file(h.home.path()));
    assert_eq!(head_records(&journal), [(ids[1].clone(), HeadReason::Rewind)]);
    let texts: Vec<String> = spine(&journal).iter().map(|e| text_of(&e.payload)).collect();
    assert_eq!(texts, ["q1", "a1", "q5", "a5"]);
}

#[tokio::test]
async fn switch_model_changes_the_next_request_and_the_journaled_model() {
    let h = Harness::new().await;
    let mut engine = h.spawn(ApprovalMode::Ask);
    turn(&h, &mut engine, "q1", "a1").await;
    let notice =
        move_head(&mut engine, Op::SwitchModel { model: "gpt-4o-mini".into() }).await.unwrap();
    assert_eq!(notice, "model switched to gpt-4o-mini");
    turn(&h, &mut engine, "q2", "a2").await;
    engine.shutdown().await;

    let requests = h.server.requests();
    assert_eq!(requests[0].body["model"], "gpt-4.1");
    assert_eq!(requests[1].body["model"], "gpt-4o-mini");
    assert_eq!(sent(&h, 1), ["q1", "a1", "q2"], "the conversation carries over");
    let journal = reload_checked(&session_file(h.home.path()));
    let models: Vec<String> = spine(&journal)
        .iter()
        .filter_map(|e| match &e.payload {
            Payload::Assistant(a) => a.model.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(models, ["gpt-4.1", "gpt-4o-mini"]);
    assert!(head_records(&journal).is_empty(), "a model switch is not a HEAD move");
}

#[tokio::test]
async fn pressure_after_a_head_move_forgets_the_old_branch_report() {
    let h = Harness::new().await;
    h.no_branch_summaries();
    // Window 20,000: usable 15,000, threshold 12,000.
    let mut params = h.params(Resume::New, ApprovalMode::Ask, false);
    params.overrides.context_window = Some(20_000);
    let (handle, events) = Engine::spawn(params).unwrap();
    let mut engine = Running { handle, events };
    turn(&h, &mut engine, "q1", "a1").await;
    // The provider reports a prompt past the threshold for the long branch.
    h.server.push(Reply::text("a2").with_usage(13_000, 5));
    let run = engine.turn("q2").await;
    assert_eq!(run.status, TurnStatus::Completed);
    let ids = spine_ids(&on_disk(&h));

    move_head(&mut engine, Op::Fork { at: ids[1].clone() }).await.unwrap();
    let events = turn(&h, &mut engine, "q3", "a3").await;
    let compaction = events.iter().find(|e| {
        matches!(
            e,
            Event::CompactionStarted { .. }
                | Event::CompactionRefused { .. }
                | Event::CompactionFailed { .. }
        )
    });
    assert!(compaction.is_none(), "the short branch is far below the threshold: {compaction:?}");
    let over = events.iter().any(|e| {
        matches!(e, Event::Notice { message, .. } if message.contains("past the compaction threshold"))
    });
    assert!(!over, "{events:?}");
    engine.shutdown().await;
    reload_checked(&session_file(h.home.path()));
}
