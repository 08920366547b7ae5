//! Small windows and local servers (docs/compaction.md, *Small local models*).
//!
//! Silent truncation: a server that, like Ollama past
//! its `num_ctx`, keeps only the newest part of an over-long prompt and answers 200 with the kept
//! count. Codewhale notices the first cut that loses more than tokenizer noise (a first
//! overshoot by a few tokens looks like ordinary growth), learns the window (journaled, so a
//! reopened session keeps it), tells the user once how to raise it, and fits every later request.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use codewhale_engine::protocol::{Event, TurnStatus};
use codewhale_engine::{Engine, FrontEnd};
use codewhale_provider::test_support::Reply;

use super::common::{reload_checked, session_file, Harness, Running};
use super::compaction::{assert_no_orphans, is_summary_request, params, prose, SUMMARY};

/// What the server holds, in its own count (o200k of the request body here): LM Studio's and
/// llama.cpp's common default. (At 4k the fixed prefix alone leaves a note too little room:
/// docs/compaction.md, *Small local models*.)
const NUM_CTX: u64 = 8_192;

fn body_tokens(r: &codewhale_provider::test_support::RecordedRequest) -> u64 {
    u64::from(codewhale_engine::tokens::count(&r.body.to_string()))
}

#[tokio::test]
async fn a_server_that_silently_keeps_only_its_window_is_caught_once_and_then_fitted() {
    for provider in ["openai"] {
        let h = Harness::new().await;
        // A server on a random port that answers like Ollama: any OpenAI-compatible server
        // that is not a hosted API may cut silently (hosted APIs reject).
        // Asked when the cut is caught, it states the window it runs the model with.
        h.server.serve_get("/api/version", serde_json::json!({"version": "0.12.0"}));
        let ps = serde_json::json!({"models": [{"name": "gpt-4.1", "context_length": NUM_CTX}]});
        h.server.serve_get("/api/ps", ps);
        let cut = Arc::new(AtomicUsize::new(0));
        let counted = cut.clone();
        h.server.respond_with(move |r| {
            let tokens = body_tokens(r);
            let kept = if tokens > NUM_CTX {
                counted.fetch_add(1, Ordering::SeqCst);
                NUM_CTX - 10
            } else {
                tokens
            };
            if is_summary_request(&r.body) {
                return Reply::text(SUMMARY).with_usage(kept, 150);
            }
            Reply::text(prose("answer", 60)).with_usage(kept, 150)
        });
        // The window is not known (a local model): the catalog's fallback of 32k.
        let mut p = params(&h, provider, 32_768);
        p.front_end = FrontEnd::Tui;
        let mut engine: Running = Engine::spawn(p).unwrap().into();
        let mut notices = Vec::new();
        let mut cut_when_told = None;
        for k in 0..15 {
            let run = engine.turn(&prose(&format!("question {k}"), 60)).await;
            assert_eq!(run.status, TurnStatus::Completed, "{provider} turn {k}: {:?}", run.events);
            let told: Vec<String> = run
                .events
                .into_iter()
                .filter_map(|e| match e {
                    Event::Notice { message, .. } if message.contains("kept only part") => {
                        Some(message)
                    }
                    _ => None,
                })
                .collect();
            if !told.is_empty() {
                cut_when_told = Some(cut.load(Ordering::SeqCst));
            }
            notices.extend(told);
        }
        engine.shutdown().await;
        assert_eq!(notices.len(), 1, "{provider}: said once: {notices:?}");
        // A first overshoot of a few tokens looks like any growth; the first cut that loses
        // more is caught, and none follows it.
        let when_told = cut_when_told.unwrap();
        assert!(when_told <= 2, "{provider}: {when_told} requests cut before it was caught");
        assert_eq!(cut.load(Ordering::SeqCst), when_told, "{provider}: a cut after the notice");
        assert!(notices[0].contains("OLLAMA_CONTEXT_LENGTH") && notices[0].contains("--ctx-size"));
        // The window the server states wins over the count it reported, journaled once with
        // its source and its cause.
        let journal = reload_checked(&session_file(h.home.path()));
        let learned: Vec<&codewhale_journal::SystemPayload> = journal
            .entries()
            .iter()
            .filter_map(|e| match &e.payload {
                codewhale_journal::Payload::System(s) if s.context_window.is_some() => Some(s),
                _ => None,
            })
            .collect();
        assert_eq!(learned.len(), 1, "{provider}: {learned:?}");
        assert_eq!(learned[0].context_window, Some(NUM_CTX));
        assert_eq!(learned[0].window_source.as_deref(), Some("probe:ollama-ps"));
        assert!(learned[0].text.contains("silent truncation"), "{}", learned[0].text);
        assert!(notices[0].contains("Ollama's /api/ps"), "{}", notices[0]);
        assert_no_orphans(&h);
    }
}

/// A 4,096-token window (Ollama's default), 15 one-turn processes of about 200 tokens each, as
/// `codewhale exec --last` runs them: the compact prefix leaves the conversation room, notes are
/// committed, no message is left out after the first note, no request is rejected as too long,
/// and every summary request sent ends in a committed note.
#[tokio::test]
async fn a_four_thousand_token_window_commits_notes_and_drops_nothing() {
    let h = Harness::new().await;
    h.server.respond_with(move |r| {
        let tokens = body_tokens(r);
        if tokens > 4_096 {
            return Reply::fault(codewhale_provider::test_support::Fault::overflow(4_096, tokens));
        }
        if is_summary_request(&r.body) {
            return Reply::text(SUMMARY).with_usage(tokens, 150);
        }
        Reply::text(prose("answer", 20)).with_usage(tokens, 100)
    });
    for k in 0..15 {
        let mut p = params(&h, "openai", 4_096);
        if k > 0 {
            p.resume = codewhale_engine::session::Resume::Last;
        }
        let mut engine: Running = Engine::spawn(p).unwrap().into();
        let run = engine.turn(&prose(&format!("question {k}"), 25)).await;
        assert_eq!(run.status, TurnStatus::Completed, "turn {k}: {:?}", run.events.last());
        engine.shutdown().await;
    }
    let journal = reload_checked(&session_file(h.home.path()));
    let notes = journal.compactions().filter(|(_, r)| r.summary.is_some()).count();
    assert!(notes >= 2, "{notes} notes in 15 turns");
    let summaries = h.server.requests().iter().filter(|r| is_summary_request(&r.body)).count();
    assert!(summaries <= notes + 1, "{summaries} summary requests for {notes} notes");
    let rejected = h.server.requests().iter().filter(|r| body_tokens(r) > 4_096).count();
    assert_eq!(rejected, 0, "a request was too long for the window");
    // After the first note no request leaves a message out.
    let first_note = journal
        .entries()
        .iter()
        .position(|e| matches!(e.payload, codewhale_journal::Payload::Compaction(_)))
        .unwrap();
    let trimmed_after = journal.entries()[first_note..].iter().any(|e| {
        matches!(&e.payload, codewhale_journal::Payload::Assistant(a)
            if a.reads.as_ref().is_some_and(|r| r.trimmed_before.is_some()))
    });
    assert!(!trimmed_after, "a request left messages out after the first note");
    assert_no_orphans(&h);
}

/// Project instructions that crowd a small window are never cut; one notice says so when the
/// session opens, naming what to do.
#[tokio::test]
async fn instructions_that_crowd_a_small_window_are_named_once() {
    let h = Harness::new().await;
    let house_style = prose("Always follow the house style", 60);
    h.write("AGENTS.md", &house_style);
    h.server.push(Reply::text("ok").with_usage(2_000, 5));
    let mut engine: Running = Engine::spawn(params(&h, "openai", 4_096)).unwrap().into();
    // The opening notices come before the turn's own events.
    let run = engine.turn("hi").await;
    engine.shutdown().await;
    let crowded: Vec<&String> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Notice { message, .. } if message.contains("leaving the conversation") => {
                Some(message)
            }
            _ => None,
        })
        .collect();
    assert_eq!(crowded.len(), 1, "{:?}", run.events);
    assert!(crowded[0].contains("AGENTS.md"), "{}", crowded[0]);
    // Never cut: the model reads the instructions whole.
    let sent = h.server.requests()[0].body.to_string();
    assert!(sent.contains(house_style.trim()), "the instructions are sent whole");
}

/// `/model` against a local server lists the server's own models first, the one in use marked,
/// then the catalog's; a hosted API's list is not asked for.
#[tokio::test]
async fn the_model_list_starts_with_the_local_servers_own_models() {
    let h = Harness::new().await;
    h.server.serve_models(&["qwen2.5-coder:7b", "gpt-4.1"]);
    let mut engine: Running = Engine::spawn(params(&h, "openai", 8_192)).unwrap().into();
    engine.submit(codewhale_engine::protocol::Op::ListModels);
    let events = engine.until(|e| matches!(e, Event::Models { .. })).await;
    let Some(Event::Models { models }) = events.last() else { panic!() };
    assert_eq!(models[0].id, "qwen2.5-coder:7b");
    assert!(models[0].from_server && !models[0].current);
    assert!(models[1].from_server && models[1].current, "{:?}", models[1]);
    assert_eq!(models[1].context_window, 8_192, "the session's window for the one in use");
    assert!(models[2..].iter().all(|m| !m.from_server && m.id != "gpt-4.1"));
    assert_eq!(models.iter().filter(|m| m.current).count(), 1);
    engine.shutdown().await;
}

/// `/model`'s list shows a window nobody knows as unknown (0, drawn `?`), the model in use
/// included: the session's guessed default is not a window anyone stated.
#[tokio::test]
async fn the_model_list_says_an_unknown_window_is_unknown() {
    let h = Harness::new().await;
    h.server.serve_models(&["my-local-model"]);
    let mut p = params(&h, "openai", 1);
    p.overrides.model = Some("my-local-model".into());
    p.overrides.context_window = None;
    let mut engine: Running = Engine::spawn(p).unwrap().into();
    engine.submit(codewhale_engine::protocol::Op::ListModels);
    let events = engine.until(|e| matches!(e, Event::Models { .. })).await;
    let Some(Event::Models { models }) = events.last() else { panic!() };
    let current = models.iter().find(|m| m.current).unwrap();
    assert_eq!((current.id.as_str(), current.context_window), ("my-local-model", 0));
    engine.shutdown().await;
}

/// A local model the catalog does not know: the server is asked what window it runs it with —
/// Ollama (recognised by `/api/version`) through `/api/ps`, llama.cpp through `/props` — and
/// `/status` says where the figure came from. Nothing is POSTed to ask.
#[tokio::test]
async fn the_window_of_a_local_model_comes_from_its_server() {
    for (routes, window, from) in [
        (
            vec![
                ("/api/version", serde_json::json!({"version": "0.12.0"})),
                (
                    "/api/ps",
                    serde_json::json!({"models": [
                        {"name": "qwen2.5-coder:7b", "model": "qwen2.5-coder:7b", "context_length": 4096}
                    ]}),
                ),
            ],
            4_096,
            "Ollama's /api/ps",
        ),
        (
            vec![("/props", serde_json::json!({"default_generation_settings": {"n_ctx": 8192}}))],
            8_192,
            "llama.cpp's /props",
        ),
    ] {
        let h = Harness::new().await;
        for (path, json) in routes {
            h.server.serve_get(path, json);
        }
        let mut p = params(&h, "openai", 1);
        p.overrides.model = Some("qwen2.5-coder:7b".into());
        p.overrides.context_window = None;
        let mut engine: Running = Engine::spawn(p).unwrap().into();
        // Asked in the background: the gauge follows when the answer is in.
        let expected = window;
        engine.until(|e| matches!(e, Event::Usage { window, .. } if *window == expected)).await;
        engine.submit(codewhale_engine::protocol::Op::GetStatus);
        let events = engine.until(|e| matches!(e, Event::Status { .. })).await;
        let Some(Event::Status { status }) = events.last() else { panic!() };
        assert_eq!(status.context_window, window);
        assert_eq!(status.window_from.as_deref(), Some(from));
        assert!(!status.window_unverified);
        engine.shutdown().await;
        assert!(h.server.requests().is_empty(), "nothing was POSTed to the model API");
    }
}

/// Project instructions that take the shared prefix past a third of the window: summary
/// requests go without the prefix (no tool schemas, no instructions), with the calls and
/// results of the transcript as text, and still end in committed notes, in both wire formats.
#[tokio::test]
async fn a_crowded_prefix_is_left_out_of_summary_requests() {
    for provider in ["openai", "anthropic"] {
        let h = Harness::new().await;
        let house_style = prose("Always follow the house style", 420);
        h.write("AGENTS.md", &house_style);
        h.write("notes.txt", &prose("notes", 20));
        h.server.respond_with(move |r| {
            let tokens = body_tokens(r);
            if tokens > NUM_CTX {
                return Reply::fault(codewhale_provider::test_support::Fault::overflow(
                    NUM_CTX, tokens,
                ));
            }
            if is_summary_request(&r.body) {
                return Reply::text(SUMMARY).with_usage(tokens, 150);
            }
            // A read of notes.txt after each user message, then an answer.
            let last = r.body["messages"].as_array().and_then(|m| m.last()).cloned();
            let after_result = last.is_some_and(|m| {
                m["role"] == "tool"
                    || m["content"]
                        .as_array()
                        .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
            });
            if after_result {
                Reply::text(prose("answer", 20)).with_usage(tokens, 100)
            } else {
                let n = r.body.to_string().len();
                Reply::tool_call(
                    format!("read-{n}"),
                    "read_file",
                    serde_json::json!({"path": "notes.txt"}),
                )
                .with_usage(tokens, 20)
            }
        });
        for k in 0..12 {
            let mut p = params(&h, provider, NUM_CTX);
            if k > 0 {
                p.resume = codewhale_engine::session::Resume::Last;
            }
            let mut engine: Running = Engine::spawn(p).unwrap().into();
            let run = engine.turn(&prose(&format!("question {k}"), 25)).await;
            assert_eq!(
                run.status,
                TurnStatus::Completed,
                "{provider} turn {k}: {:?}",
                run.events.last()
            );
            engine.shutdown().await;
        }
        let requests = h.server.requests();
        let summaries: Vec<_> = requests.iter().filter(|r| is_summary_request(&r.body)).collect();
        assert!(!summaries.is_empty(), "{provider}: no summary request");
        for s in &summaries {
            let body = s.body.to_string();
            assert!(s.body.get("tools").is_none(), "{provider}: tools in a lean request");
            assert!(!body.contains("house style"), "{provider}: the instructions were sent");
            assert!(
                body.contains("[call read-") && body.contains("[result of call read-"),
                "{provider}"
            );
        }
        // The live requests keep their prefix whole.
        let live = requests.iter().rev().find(|r| !is_summary_request(&r.body)).unwrap();
        assert!(live.body.to_string().contains(house_style.trim()), "{provider}");
        let journal = reload_checked(&session_file(h.home.path()));
        let notes = journal.compactions().filter(|(_, r)| r.summary.is_some()).count();
        assert!(
            notes >= 1 && summaries.len() <= notes + 1,
            "{provider}: {} for {notes}",
            summaries.len()
        );
        assert!(
            requests.iter().all(|r| body_tokens(r) <= NUM_CTX),
            "{provider}: a request was too long"
        );
        assert_no_orphans(&h);
    }
}

/// At 4,096, 8,192 and 16,384 tokens, 30 one-turn runs of about 200-token messages, every other
/// one with a `read_file` before the answer: notes are committed at the crossings, every summary
/// request ends in a note (at most one more), none is rejected as too long and none leaves a
/// message out (`scripts/bench.sh small-windows` prints the same figures).
#[tokio::test]
async fn thirty_turns_of_chat_and_tools_at_each_small_window() {
    for window in [4_096u64, 8_192, 16_384] {
        let h = Harness::new().await;
        h.write("notes.txt", &prose("notes", 60));
        h.server.respond_with(move |r| {
            let tokens = body_tokens(r);
            if tokens > window {
                return Reply::fault(codewhale_provider::test_support::Fault::overflow(
                    window, tokens,
                ));
            }
            if is_summary_request(&r.body) {
                return Reply::text(SUMMARY).with_usage(tokens, 200);
            }
            let body = r.body.to_string();
            let last = r.body["messages"].as_array().and_then(|m| m.last()).cloned();
            let after_result = last.is_some_and(|m| m["role"] == "tool");
            if body.contains("please read notes.txt") && !after_result {
                let id = format!("read-{}", body.len());
                return Reply::tool_call(id, "read_file", serde_json::json!({"path": "notes.txt"}))
                    .with_usage(tokens, 20);
            }
            Reply::text(prose("answer", 20)).with_usage(tokens, 130)
        });
        for k in 0..30 {
            let mut p = params(&h, "openai", window);
            if k > 0 {
                p.resume = codewhale_engine::session::Resume::Last;
            }
            let mut engine: Running = Engine::spawn(p).unwrap().into();
            let ask = if k % 2 == 1 { " — please read notes.txt first" } else { "" };
            let run = engine.turn(&format!("{}{ask}", prose(&format!("question {k}"), 30))).await;
            assert_eq!(
                run.status,
                TurnStatus::Completed,
                "{window} turn {k}: {:?}",
                run.events.last()
            );
            engine.shutdown().await;
        }
        let journal = reload_checked(&session_file(h.home.path()));
        let notes = journal.compactions().filter(|(_, r)| r.summary.is_some()).count();
        let requests = h.server.requests();
        let summaries = requests.iter().filter(|r| is_summary_request(&r.body)).count();
        assert!(notes >= 2, "{window}: {notes} notes in 30 turns");
        assert!(summaries <= notes + 1, "{window}: {summaries} summary requests for {notes} notes");
        assert!(requests.iter().all(|r| body_tokens(r) <= window), "{window}: one was too long");
        let trimmed = journal.entries().iter().any(|e| {
            matches!(&e.payload, codewhale_journal::Payload::Assistant(a)
                if a.reads.as_ref().is_some_and(|r| r.trimmed_before.is_some()))
        });
        assert!(!trimmed, "{window}: a request left messages out");
        assert_no_orphans(&h);
    }
}
