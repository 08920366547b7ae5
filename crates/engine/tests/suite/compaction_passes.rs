//! Compaction passes that fail, are refused or repeat: nothing changes unless a record is
//! written, and repeated passes extend one checkpoint. Helpers live in `compaction.rs`.

use codewhale_engine::compaction::checkpoint::{HEADER, MARKER};
use codewhale_engine::protocol::{AnchorChange, CompactionKind, ErrorKind, Event, Op, TurnStatus};
use codewhale_journal::{render, Payload};
use codewhale_provider::test_support::{Fault, Reply};
use serde_json::json;

use super::common::{reload_checked, session_file, Harness};
use super::compaction::{
    assert_no_orphans, compact, compactions, prose, request_text, spawn, summary_requests, SUMMARY,
    WINDOW,
};

#[tokio::test]
async fn an_overflowing_summary_request_is_planned_again_below_the_limit() {
    let h = Harness::new().await;
    h.hosted_api();
    let mut engine = spawn(&h, "openai", WINDOW);
    for k in 0..4 {
        h.server.push(Reply::text(prose(&format!("answer {k}"), 300)).with_usage(2_000, 1_500));
        engine.turn(&format!("question {k}")).await;
    }
    // The limit leaves the retried request room for a few exchanges beside the system prompt
    // and the tool schemas.
    h.server.push(Reply::fault(Fault::overflow(9_000, 10_000)));
    h.server.push(Reply::text(SUMMARY));
    let done = compact(&mut engine, None).await;
    assert!(matches!(done, Event::CompactionFinished { .. }), "{done:?}");
    let first = request_text(&h, 4);
    let second = request_text(&h, 5);
    let tokens = |text: &str| u64::from(codewhale_engine::tokens::count(text));
    assert!(first.contains("answer 0") && second.len() < first.len(), "a shorter request");
    assert!(tokens(&second) < 9_000, "planned below the limit: {}", tokens(&second));
    assert!(second.contains("You are writing a handoff note"), "the instruction stays");
    engine.shutdown().await;
    assert_eq!(compactions(&h).len(), 1);
    // The limit the provider stated is the session's window from now on.
    let journal = reload_checked(&session_file(h.home.path()));
    let learned = journal.entries().iter().any(|e| {
        matches!(&e.payload, Payload::System(s)
            if s.context_window == Some(9_000) && s.window_source.as_deref() == Some("overflow"))
    });
    assert!(learned, "the window is journaled");
    assert_no_orphans(&h);
}

#[tokio::test]
async fn unusable_summaries_retry_once_then_fail_with_nothing_changed() {
    for (first, second) in
        [("", "No summary available."), ("I'm sorry, I can't help with that.", "## Objective\nx")]
    {
        let h = Harness::new().await;
        h.hosted_api();
        let mut engine = spawn(&h, "openai", WINDOW);
        for k in 0..4 {
            h.server.push(Reply::text(prose(&format!("answer {k}"), 300)).with_usage(2_000, 1_500));
            engine.turn(&format!("question {k}")).await;
        }
        let view_before = {
            let j = reload_checked(&session_file(h.home.path()));
            render(&j, j.head_id().as_str())
        };
        h.server.push(Reply::text(first));
        h.server.push(Reply::text(second));
        let event = compact(&mut engine, None).await;
        assert!(matches!(event, Event::CompactionFailed { .. }), "{event:?}");
        assert!(
            request_text(&h, 5).contains("could not be used as a handoff note"),
            "strict retry"
        );
        // The next user message still works, on the unchanged view.
        h.server.push(Reply::text("still here").with_usage(2_000, 5));
        let run = engine.turn("are you there?").await;
        assert_eq!(run.text, "still here");
        engine.shutdown().await;
        let journal = reload_checked(&session_file(h.home.path()));
        assert_eq!(journal.compactions().count(), 0);
        let notices = journal.entries().iter().filter(|e| matches!(&e.payload, Payload::System(s) if s.text.contains("compaction (manual) failed"))).count();
        assert_eq!(notices, 1);
        let view_after = render(&journal, journal.head_id().as_str());
        assert_eq!(view_after.items[..view_before.items.len()], view_before.items[..]);
        assert_no_orphans(&h);
    }
}

#[tokio::test]
async fn a_provider_error_in_the_middle_of_a_pass_changes_nothing() {
    let h = Harness::new().await;
    h.hosted_api();
    let mut engine = spawn(&h, "openai", WINDOW);
    for k in 0..4 {
        h.server.push(Reply::text(prose(&format!("answer {k}"), 300)).with_usage(2_000, 1_500));
        engine.turn(&format!("question {k}")).await;
    }
    h.server.push(Reply::fault(Fault::Unauthorized));
    let event = compact(&mut engine, None).await;
    let Event::CompactionFailed { reason } = event else { panic!("{event:?}") };
    assert!(reason.contains("summary request failed"), "{reason}");
    h.server.push(Reply::text("fine").with_usage(2_000, 5));
    assert_eq!(engine.turn("next").await.status, TurnStatus::Completed);
    engine.shutdown().await;
    assert_eq!(compactions(&h).len(), 0);
    assert_no_orphans(&h);
}

#[tokio::test]
async fn five_compactions_in_a_row_extend_one_checkpoint() {
    let h = Harness::new().await;
    h.hosted_api();
    let anchors = "Never push to main.\n---\nUse rustls, not openssl.\n";
    h.write(".codewhale/anchors.md", anchors);
    let mut engine = spawn(&h, "openai", WINDOW);
    let mut asked = Vec::new();
    for pass in 0..5 {
        for k in 0..3 {
            let question = format!("question {pass}.{k}");
            h.server.push(
                Reply::text(prose(&format!("answer {pass}.{k}"), 300)).with_usage(2_000, 1_500),
            );
            engine.turn(&question).await;
            asked.push(question);
        }
        h.server.push(Reply::text(format!("{SUMMARY}\npass {pass}")));
        let event = compact(&mut engine, Some("the parser")).await;
        let Event::CompactionFinished { tokens_before, tokens_after, .. } = event else {
            panic!("pass {pass}: {event:?}")
        };
        assert!(tokens_after < tokens_before, "pass {pass}: {tokens_after} >= {tokens_before}");

        let journal = reload_checked(&session_file(h.home.path()));
        let view = render(&journal, journal.head_id().as_str());
        let checkpoints: Vec<_> = view
            .items
            .iter()
            .filter(|i| i.blocks().get(1).and_then(|b| b.as_text()) == Some(MARKER))
            .collect();
        assert_eq!(checkpoints.len(), 1, "pass {pass}: exactly one checkpoint");
        let note = checkpoints[0].blocks()[0].as_text().unwrap();
        assert!(note.starts_with(HEADER));
        assert!(note.contains(anchors.trim_end()), "pass {pass}: anchors verbatim");
        assert!(note.contains(&format!("pass {pass}")));
        assert!(
            note.chars().count() <= 12_000 + 4_000,
            "note stays bounded: {}",
            note.chars().count()
        );
        let records: Vec<_> = journal.compactions().map(|(_, r)| r.clone()).collect();
        assert_eq!(records.len(), pass + 1);
        let first = records[0].covers.as_ref().unwrap().first.clone();
        let last = records.last().unwrap();
        assert_eq!(last.covers.as_ref().unwrap().first, first, "covers extended, not nested");
        assert_eq!(last.focus.as_deref(), Some("the parser"));
        assert!(last.summary.as_ref().unwrap().chars().count() <= 12_000);
        if pass > 0 {
            let prev = &records[pass - 1];
            assert_ne!(prev.covers.as_ref().unwrap().last, last.covers.as_ref().unwrap().last);
            assert!(last.covers.as_ref().unwrap().count > prev.covers.as_ref().unwrap().count);
        }
        let texts: Vec<String> = view
            .items
            .iter()
            .flat_map(|i| i.blocks().iter().filter_map(|b| b.as_text().map(str::to_owned)))
            .collect();
        for id in &last.retained_ids {
            let entry = journal.get(id.as_str()).unwrap();
            let Payload::User(u) = &entry.payload else { panic!("retained a non-user entry") };
            let text = u.content[0].as_text().unwrap();
            assert!(texts.iter().any(|t| t == text), "retained text {text} verbatim");
        }
    }
    // The summary request folds in the previous note.
    let last_summary = *summary_requests(&h).last().unwrap();
    assert!(request_text(&h, last_summary).contains("Codewhale handoff note."), "the earlier note");
    assert!(request_text(&h, last_summary).contains("Focus the note on: the parser"));
    engine.shutdown().await;
    assert_no_orphans(&h);
}

#[tokio::test]
async fn huge_own_messages_are_bounded_once_and_not_recompacted_every_turn() {
    let h = Harness::new().await;
    // The replies report fixed prompt sizes, as a hosted API would (no silent cut suspected).
    h.hosted_api();
    // U = 6,000, threshold 4,800: the user's own message (with the system prompt) is past the
    // threshold but within the window.
    let mut engine = spawn(&h, "openai", 8_000);
    for k in 0..2 {
        h.server.push(Reply::text(prose(&format!("ok {k}"), 40)).with_usage(1_000, 200));
        engine.turn(&format!("small {k}")).await;
    }
    let paste = prose("my huge paste", 800);
    h.server.push(Reply::text("ok 2").with_usage(4_000, 5));
    let run = engine.turn(&paste).await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    // The paste is protected, so the pass bounded it to fit under the threshold: the model
    // reads its start and a marker naming the entry that holds it whole. No note is asked
    // for: with the paste kept, a note of the two small turns before it would leave no room
    // for the next turn (no request is paid for nothing).
    let sent = request_text(&h, h.server.requests().len() - 1);
    assert!(sent.contains(&paste[..1000]) && !sent.contains(&paste), "the paste is cut");
    assert!(sent.contains("bytes cut; recall entry"), "{sent}");
    for k in 3..6 {
        h.server.push(Reply::text(format!("ok {k}")).with_usage(4_100, 5));
        let run = engine.turn(&format!("small {k}")).await;
        assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
        assert!(
            !run.events.iter().any(|e| matches!(e, Event::CompactionStarted { .. })),
            "turn {k} recompacted"
        );
    }
    assert!(summary_requests(&h).is_empty());
    engine.shutdown().await;
    assert_eq!(compactions(&h).len(), 1);
    let journal = reload_checked(&session_file(h.home.path()));
    assert!(
        journal.entries().iter().any(|e| matches!(&e.payload, Payload::User(u)
            if u.content.iter().any(|b| b.as_text() == Some(paste.as_str())))),
        "the journal keeps the paste verbatim"
    );
    assert_no_orphans(&h);
}

#[tokio::test]
async fn fewer_than_four_messages_are_refused_with_a_notice() {
    let h = Harness::new().await;
    let mut engine = spawn(&h, "openai", WINDOW);
    h.server.push(Reply::text("hi"));
    engine.turn("hello").await;
    let event = compact(&mut engine, None).await;
    let Event::CompactionRefused { reason } = event else { panic!("{event:?}") };
    assert!(reason.contains("at least 4"), "{reason}");
    engine.shutdown().await;
    let journal = reload_checked(&session_file(h.home.path()));
    assert_eq!(journal.compactions().count(), 0);
    assert!(journal.entries().iter().any(
        |e| matches!(&e.payload, Payload::System(s) if s.text.contains("nothing to compact"))
    ));
}

#[tokio::test]
async fn a_failed_pass_over_the_window_sends_a_trimmed_request_and_records_it() {
    let h = Harness::new().await;
    let mut engine = spawn(&h, "openai", WINDOW);
    for k in 0..4 {
        h.server.push(
            Reply::text(prose(&format!("answer {k}"), 300)).with_usage(2_000 + k * 2_000, 1_500),
        );
        engine.turn(&format!("question {k}")).await;
    }
    // The provider reports a prompt past usable input (15,000); the auto pass then fails.
    h.server.push(Reply::text(prose("answer 4", 300)).with_usage(16_000, 1_500));
    engine.turn("question 4").await;
    h.server.push(Reply::text(""));
    h.server.push(Reply::text("No summary available."));
    h.server.push(Reply::text("trimmed answer").with_usage(9_000, 5));
    let run = engine.turn("question 5").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    assert!(run.events.iter().any(|e| matches!(e, Event::CompactionFailed { .. })));
    assert!(run
        .events
        .iter()
        .any(|e| matches!(e, Event::Notice { message, .. } if message.contains("leaves out"))));
    let sent = request_text(&h, h.server.requests().len() - 1);
    // The oldest exchange is left out, but what the user said in it is retained, as a note
    // would retain it.
    assert!(!sent.contains("answer 0") && sent.contains("question 5"));
    assert!(sent.contains("question 0"));
    engine.shutdown().await;
    let journal = reload_checked(&session_file(h.home.path()));
    let last = journal.get(journal.head_id().as_str()).unwrap();
    let Payload::Assistant(a) = &last.payload else { panic!("{last:?}") };
    let first = a.reads.as_ref().unwrap().trimmed_before.clone().unwrap();
    let Payload::User(u) = &journal.get(first.as_str()).unwrap().payload else { panic!() };
    assert!(u.content[0].as_text().unwrap().starts_with("question"));
    assert_eq!(journal.compactions().count(), 0);
    assert_no_orphans(&h);
}

#[tokio::test]
async fn large_old_tool_output_is_pruned_without_a_model_call() {
    let h = Harness::new().await;
    // Dense text in short lines, about 12.5k tokens per read: the sixth read crosses the
    // threshold, and pruning the two oldest (past the newest 40k tokens of output) suffices.
    let dense: String = (0..1_650u64)
        .map(|i| {
            format!(
                "{:08x}{}",
                i.wrapping_mul(2_654_435_761),
                if i % 16 == 15 { '\n' } else { ' ' }
            )
        })
        .collect();
    for k in 0..6 {
        h.write(&format!("f{k}.txt"), &dense);
    }
    // Anchors the view does not carry yet: a prune-only pass restates nothing, so it must not
    // be refused for them.
    h.write(".codewhale/anchors.md", "Never push to main.\n");
    // The scripted replies are for the turn alone: no note is written in the background.
    std::fs::write(h.home.path().join("config.toml"), "[compaction]\nbackground = false\n")
        .unwrap();
    h.hosted_api();
    // W = 100,000 → U = 83,616, threshold 66,892, prune target 53,513.
    let mut engine = spawn(&h, "openai", 100_000);
    let mut events = Vec::new();
    for k in 0..6 {
        let call = format!("read_{k}");
        h.server.push(
            Reply::tool_call(call.as_str(), "read_file", json!({"path": format!("f{k}.txt")}))
                .with_usage(1_000, 5),
        );
        h.server.push(Reply::text(format!("read {k}")).with_usage(1_000, 5));
        let run = engine.turn(&format!("read f{k}")).await;
        assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
        events.extend(run.events);
    }
    h.server.push(Reply::text("after the prune").with_usage(1_000, 5));
    let run = engine.turn("what did you see?").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    events.extend(run.events);
    let usage: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            Event::Usage { pressure, .. } => Some(pressure.tokens),
            _ => None,
        })
        .collect();
    let starts = events.iter().filter(|e| matches!(e, Event::CompactionStarted { .. })).count();
    assert_eq!(starts, 1, "pressures {usage:?}");
    let path = events.iter().find_map(|e| match e {
        Event::CompactionFinished { path, .. } => Some(*path),
        _ => None,
    });
    assert_eq!(path, Some(CompactionKind::PruneOnly), "{events:?}");
    assert!(summary_requests(&h).is_empty(), "no model call");
    let sent = request_text(&h, h.server.requests().len() - 1);
    assert!(sent.contains("output pruned by compaction"));
    assert!(!sent.contains(MARKER), "no checkpoint: nothing was summarized");
    engine.shutdown().await;
    let records = compactions(&h);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].path.as_str(), "prune-only");
    assert!(records[0].covers.is_none() && !records[0].pruned_ids.is_empty());
    assert_no_orphans(&h);
}

#[tokio::test]
async fn a_transient_error_in_the_summary_request_is_retried() {
    let h = Harness::new().await;
    h.hosted_api();
    let mut engine = spawn(&h, "openai", WINDOW);
    for k in 0..4 {
        h.server.push(Reply::text(prose(&format!("answer {k}"), 300)).with_usage(2_000, 1_500));
        engine.turn(&format!("question {k}")).await;
    }
    h.server.push(Reply::fault(Fault::ServerError(503)));
    h.server.push(Reply::text(SUMMARY));
    assert!(matches!(compact(&mut engine, None).await, Event::CompactionFinished { .. }));
    engine.shutdown().await;
    assert_eq!(compactions(&h).len(), 1);
    assert_no_orphans(&h);
}

#[tokio::test]
async fn an_anchor_op_pins_the_note_and_the_model_sees_it_at_once() {
    let h = Harness::new().await;
    let mut engine = spawn(&h, "openai", WINDOW);
    engine.submit(Op::AddAnchor { text: "Never push to main.".into() });
    let events =
        engine.until(|e| matches!(e, Event::AnchorChanged { .. } | Event::Error { .. })).await;
    assert!(matches!(events.last(), Some(Event::AnchorChanged {
        change: AnchorChange::Pinned { index: 1, text }, message
    }) if message.contains("anchor 1 pinned") && text == "Never push to main."));
    assert_eq!(
        std::fs::read_to_string(h.ws.path().join(".codewhale/anchors.md")).unwrap(),
        "Never push to main.\n"
    );
    h.server.push(Reply::text("noted"));
    engine.turn("hello").await;
    assert!(request_text(&h, 0).contains("Never push to main."));
    engine.submit(Op::RemoveAnchor { index: 3 });
    let done = |e: &Event| matches!(e, Event::AnchorChanged { .. } | Event::Error { .. });
    let events = engine.until(done).await;
    assert!(matches!(events.last(), Some(Event::Error { kind, .. }) if *kind == ErrorKind::Anchor));
    engine.submit(Op::RemoveAnchor { index: 1 });
    let events = engine.until(done).await;
    assert!(
        matches!(events.last(), Some(Event::AnchorChanged { message, .. }) if message.contains("removed"))
    );
    engine.shutdown().await;
    let journal = reload_checked(&session_file(h.home.path()));
    assert!(journal.entries().iter().any(|e| matches!(&e.payload, Payload::User(u) if u.anchor)));
}

#[tokio::test]
async fn the_summary_uses_the_configured_compaction_model() {
    let h = Harness::new().await;
    h.hosted_api();
    h.write(".codewhale/config.toml", "[compaction]\ncompaction_model = \"gpt-4.1-mini\"\n");
    let mut engine = spawn(&h, "openai", WINDOW);
    for k in 0..4 {
        h.server.push(Reply::text(prose(&format!("answer {k}"), 300)).with_usage(2_000, 1_500));
        engine.turn(&format!("question {k}")).await;
    }
    h.server.push(Reply::text(SUMMARY));
    assert!(matches!(compact(&mut engine, None).await, Event::CompactionFinished { .. }));
    engine.shutdown().await;
    let requests = h.server.requests();
    assert_eq!(requests[4].body["model"], "gpt-4.1-mini");
    assert_eq!(requests[3].body["model"], "gpt-4.1");
    assert_eq!(compactions(&h)[0].model.as_deref(), Some("gpt-4.1-mini"));
}

/// Another summarizing model shares no cache with the session: the kept tail it reads is
/// bounded, while the session's own model would get the live request's messages unchanged.
#[tokio::test]
async fn another_compaction_model_reads_the_kept_tail_bounded() {
    let h = Harness::new().await;
    h.hosted_api();
    h.write(".codewhale/config.toml", "[compaction]\ncompaction_model = \"gpt-4.1-mini\"\n");
    h.write("big.txt", &"a line of the big file\n".repeat(600));
    let mut engine = spawn(&h, "openai", WINDOW);
    for k in 0..3 {
        h.server.push(Reply::text(prose(&format!("answer {k}"), 300)).with_usage(2_000, 1_500));
        engine.turn(&format!("question {k}")).await;
    }
    h.server.push(Reply::tool_call("big-1", "read_file", json!({"path": "big.txt"})));
    h.server.push(Reply::text("Read it."));
    engine.turn("read big.txt").await;
    h.server.push(Reply::text(SUMMARY));
    assert!(matches!(compact(&mut engine, None).await, Event::CompactionFinished { .. }));
    engine.shutdown().await;
    let requests = h.server.requests();
    let (live, summary) = (&requests[requests.len() - 2].body, &requests[requests.len() - 1].body);
    assert_eq!(summary["model"], "gpt-4.1-mini");
    let result = |body: &serde_json::Value| {
        let messages = body["messages"].as_array().unwrap();
        let m = messages.iter().find(|m| m["tool_call_id"] == "big-1").unwrap();
        m["content"].as_str().unwrap().to_owned()
    };
    assert!(!result(live).contains("bytes cut"), "the live request has it whole");
    let sent = result(summary);
    assert!(sent.contains("bytes cut") && sent.len() < 9_000, "{} bytes", sent.len());
    assert!(request_text(&h, requests.len() - 1).contains("answer 0"), "the covered part too");
}

#[tokio::test]
async fn an_overlong_summary_is_capped_from_reference_first() {
    let h = Harness::new().await;
    h.hosted_api();
    let mut engine = spawn(&h, "openai", WINDOW);
    for k in 0..4 {
        h.server.push(Reply::text(prose(&format!("answer {k}"), 300)).with_usage(2_000, 1_500));
        engine.turn(&format!("question {k}")).await;
    }
    let long = format!("{SUMMARY}\n{}", "reference line\n".repeat(2_000));
    h.server.push(Reply::text(long));
    assert!(matches!(compact(&mut engine, None).await, Event::CompactionFinished { .. }));
    engine.shutdown().await;
    let record = compactions(&h).remove(0);
    let summary = record.summary.unwrap();
    assert!(summary.chars().count() <= 12_000, "{}", summary.chars().count());
    assert!(
        summary.contains("## Next action\nContinue with the next step."),
        "earlier sections kept"
    );
    assert!(summary.contains("shortened by Codewhale"));
    assert!(record.note.contains(&summary));
}
