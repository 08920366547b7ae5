//! Compaction end to end: real HTTP to the mock provider, real journal files. This file holds
//! the triggers (auto, mid-tool-loop, reactive), the snapshot and the shared helpers.
//!
//! Every test ends with [`assert_no_orphans`] over the mock server's request log: no request
//! ever sent may hold a tool call without its result or a result without its call.

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::compaction::checkpoint::MARKER;
use codewhale_engine::config::{Env, Overrides};
use codewhale_engine::protocol::{CompactionKind, CompactionTrigger, Event, Op, TurnStatus};
use codewhale_engine::session::Resume;
use codewhale_engine::{Engine, EngineParams};
use codewhale_journal::CompactionPath;
use codewhale_provider::test_support::{Fault, OverflowShape, Reply, TEST_API_KEY};
use codewhale_provider::RetryPolicy;
use serde_json::{json, Value};

use super::common::{reload_checked, session_file, Harness, Running};

/// W = 20,000 → R = 5,000, U = 15,000, threshold 12,000, kept tail ≈ 3,750 tokens.
pub(super) const WINDOW: u64 = 20_000;

pub(super) const SUMMARY: &str = "## Objective\nKeep the parser tests green.\n## User direction\n\
\"use the existing parser\"\n## Permissions and limits\nNone\n## Done\nRead the sources.\n\
## Changed files\nNone\n## Still running\nNone\n## Verification left\nRun cargo test.\n\
## Open questions\nNone\n## Next action\nContinue with the next step.\n## Reference\nsrc/lib.rs";

pub(super) fn params(h: &Harness, provider: &str, window: u64) -> EngineParams {
    let (model, base_url) = match provider {
        "anthropic" => ("claude-sonnet-4-5", h.server.anthropic_base_url()),
        _ => ("gpt-4.1", h.server.openai_base_url()),
    };
    EngineParams {
        home: h.home.path().to_path_buf(),
        workspace: h.ws.path().to_path_buf(),
        overrides: Overrides {
            provider: Some(provider.into()),
            model: Some(model.into()),
            base_url: Some(base_url),
            context_window: Some(window),
            approval: Some(ApprovalMode::Full),
        },
        env: Env {
            openai_api_key: Some(TEST_API_KEY.into()),
            anthropic_api_key: Some(TEST_API_KEY.into()),
            ..Env::default()
        },
        resume: Resume::New,
        interactive: false,
        retry: Some(RetryPolicy::fast()),
        front_end: codewhale_engine::FrontEnd::Cli,
        home_hint: None,
        sandbox_helper: None,
    }
}

pub(super) fn spawn(h: &Harness, provider: &str, window: u64) -> Running {
    let (handle, events) = Engine::spawn(params(h, provider, window)).unwrap();
    Running { handle, events }
}

/// About `n` × 5 tokens of prose tagged with `tag`.
pub(super) fn prose(tag: &str, n: usize) -> String {
    format!("{tag}: {}", "lorem ipsum dolor sit amet ".repeat(n))
}

pub(super) fn is_summary_request(body: &Value) -> bool {
    body.to_string().contains("You are writing a handoff note")
}

pub(super) fn summary_requests(h: &Harness) -> Vec<usize> {
    h.server
        .requests()
        .iter()
        .enumerate()
        .filter(|(_, r)| is_summary_request(&r.body))
        .map(|(i, _)| i)
        .collect()
}

/// Tool call and result ids of a request body, in order, for both wire formats.
pub(super) fn tool_ids(body: &Value) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    // The Responses API: `function_call` and `function_call_output` items.
    for item in body["input"].as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("function_call") => out.push((true, item["call_id"].as_str().unwrap().to_owned())),
            Some("function_call_output") => {
                out.push((false, item["call_id"].as_str().unwrap().to_owned()))
            }
            _ => {}
        }
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            out.push((true, call["id"].as_str().unwrap().to_owned()));
        }
        if let Some(id) = m["tool_call_id"].as_str() {
            out.push((false, id.to_owned()));
        }
        for block in m["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("tool_use") => out.push((true, block["id"].as_str().unwrap().to_owned())),
                Some("tool_result") => {
                    out.push((false, block["tool_use_id"].as_str().unwrap().to_owned()))
                }
                _ => {}
            }
        }
    }
    out
}

/// No request ever sent holds a call without its result or a result without its call.
pub(super) fn assert_no_orphans(h: &Harness) {
    for (n, request) in h.server.requests().iter().enumerate() {
        let ids = tool_ids(&request.body);
        for (i, (is_call, id)) in ids.iter().enumerate() {
            let partner = if *is_call {
                ids[i + 1..].iter().any(|(c, other)| !c && other == id)
            } else {
                ids[..i].iter().any(|(c, other)| *c && other == id)
            };
            assert!(
                partner,
                "request {n}: orphaned tool {} {id}",
                if *is_call { "call" } else { "result" }
            );
        }
    }
}

/// The text of request `n`'s body.
pub(super) fn request_text(h: &Harness, n: usize) -> String {
    h.server.requests()[n].body.to_string()
}

pub(super) async fn compact(engine: &mut Running, focus: Option<&str>) -> Event {
    compact_with_events(engine, focus).await.0
}

/// `/compact`: how it ended, and every event until then.
pub(super) async fn compact_with_events(
    engine: &mut Running,
    focus: Option<&str>,
) -> (Event, Vec<Event>) {
    engine.submit(Op::Compact { focus: focus.map(str::to_owned) });
    let events = engine
        .until(|e| {
            matches!(
                e,
                Event::CompactionFinished { .. }
                    | Event::CompactionFailed { .. }
                    | Event::CompactionRefused { .. }
            )
        })
        .await;
    (events.last().cloned().unwrap(), events)
}

pub(super) fn compactions(h: &Harness) -> Vec<codewhale_journal::CompactionPayload> {
    let journal = reload_checked(&session_file(h.home.path()));
    journal.compactions().map(|(_, r)| r.clone()).collect()
}

#[tokio::test]
async fn auto_compaction_triggers_at_the_threshold_and_not_before() {
    let h = Harness::new().await;
    let mut engine = spawn(&h, "openai", WINDOW);
    for k in 0..3 {
        h.server.push(
            Reply::text(prose(&format!("answer {k}"), 300)).with_usage(1_000 + k * 2_000, 1_500),
        );
        let run = engine.turn(&format!("question {k}")).await;
        assert!(!run.events.iter().any(|e| matches!(e, Event::CompactionStarted { .. })));
    }
    // The provider reports a prompt close to the threshold: the next request crosses it.
    h.server.push(Reply::text(prose("answer 3", 300)).with_usage(11_000, 1_500));
    let run = engine.turn("question 3").await;
    assert!(!run.events.iter().any(|e| matches!(e, Event::CompactionStarted { .. })));
    let pressure = run.events.iter().rev().find_map(|e| match e {
        Event::Usage { pressure, threshold, .. } => Some((pressure.tokens, *threshold)),
        _ => None,
    });
    let (pressure, threshold) = pressure.unwrap();
    assert!(pressure >= threshold, "{pressure} < {threshold}");
    assert!(summary_requests(&h).is_empty());

    h.server.push(Reply::text(SUMMARY).with_usage(3_000, 200));
    h.server.push(Reply::text("fresh answer").with_usage(4_000, 10));
    let run = engine.turn("question 4").await;
    assert_eq!(run.status, TurnStatus::Completed);
    let started = run
        .events
        .iter()
        .position(|e| matches!(e, Event::CompactionStarted { trigger } if *trigger == CompactionTrigger::Auto));
    let finished = run.events.iter().find_map(|e| match e {
        Event::CompactionFinished { tokens_before, tokens_after, path, .. } => {
            Some((*tokens_before, *tokens_after, *path))
        }
        _ => None,
    });
    assert!(started.is_some());
    let (before, after, path) = finished.unwrap();
    assert_eq!(path, CompactionKind::Summary);
    assert!(after < before, "{after} >= {before}");
    assert_eq!(summary_requests(&h), vec![4]);
    let sent = request_text(&h, 5);
    assert!(sent.contains("Codewhale handoff note.") && sent.contains(MARKER));
    assert!(sent.contains("question 4") && sent.contains("Keep the parser tests green."));
    assert!(!sent.contains("answer 0"), "the oldest answer is covered");
    // The summary request is the live request plus the instruction: the same tools, and its
    // messages begin with exactly the previous request's (docs/compaction.md, *The summary
    // request*).
    let requests = h.server.requests();
    let (live, summary) = (&requests[3].body, &requests[4].body);
    assert_eq!(live["tools"], summary["tools"], "the same tools");
    let messages = |b: &serde_json::Value| b["messages"].as_array().unwrap().clone();
    let (live_messages, summary_messages) = (messages(live), messages(summary));
    // Here the view plus the instruction is over the window, so the long answers are bounded
    // in the summary input; every message that was not is the live request's, in order.
    for (i, live) in live_messages.iter().enumerate() {
        if !summary_messages[i].to_string().contains("bytes cut") {
            assert!(summary_messages[i] == *live, "message {i} differs from the live request");
        }
    }
    assert!(summary_messages.last().unwrap().to_string().contains("writing a handoff note"));
    engine.shutdown().await;
    let records = compactions(&h);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].trigger.as_str(), "auto");
    assert_no_orphans(&h);
}

#[tokio::test]
async fn mid_tool_loop_compaction_keeps_the_pending_round_intact() {
    let h = Harness::new().await;
    h.hosted_api();
    h.write("notes.txt", &prose("file", 200));
    let mut engine = spawn(&h, "openai", WINDOW);
    for k in 0..3 {
        h.server.push(Reply::text(prose(&format!("answer {k}"), 300)).with_usage(2_000, 1_500));
        engine.turn(&format!("question {k}")).await;
    }
    // Inside one turn: a read, then a reported prompt past the threshold, then another read.
    h.server.push(
        Reply::tool_call("call_a", "read_file", json!({"path": "notes.txt"})).with_usage(5_000, 20),
    );
    h.server.push(
        Reply::tool_call("call_b", "read_file", json!({"path": "notes.txt"}))
            .with_usage(11_500, 20),
    );
    h.server.push(Reply::text(SUMMARY));
    h.server.push(Reply::text("all read").with_usage(4_000, 5));
    let run = engine.turn("read the notes twice").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    assert_eq!(summary_requests(&h), vec![5]);
    let sent = request_text(&h, 6);
    for needle in ["read the notes twice", "call_a", "call_b", "Codewhale handoff note."] {
        assert!(sent.contains(needle), "{needle} missing after the mid-loop pass");
    }
    engine.shutdown().await;
    assert_no_orphans(&h);
}

#[tokio::test]
async fn reactive_compaction_after_an_overflow_in_every_shape_then_the_retry_succeeds() {
    let shapes = [
        OverflowShape::Wire,
        OverflowShape::LlamaCpp,
        OverflowShape::Vllm,
        OverflowShape::LmStudio,
        OverflowShape::Ollama,
        OverflowShape::OpenRouter,
        OverflowShape::DeepSeek,
    ];
    for shape in shapes {
        let h = Harness::new().await;
        h.hosted_api();
        let mut engine = spawn(&h, "openai", WINDOW);
        for k in 0..3 {
            h.server.push(Reply::text(prose(&format!("answer {k}"), 300)).with_usage(2_000, 1_500));
            engine.turn(&format!("question {k}")).await;
        }
        h.server.push(Reply::fault(Fault::overflow_as(shape, 16_000, 17_000)));
        h.server.push(Reply::text(SUMMARY));
        h.server.push(Reply::text("after the retry").with_usage(3_000, 5));
        let run = engine.turn("question 3").await;
        assert_eq!(run.status, TurnStatus::Completed, "{shape:?}: {:?}", run.events);
        assert_eq!(run.text, "after the retry");
        assert!(
            run.events.iter().any(
                |e| matches!(e, Event::CompactionStarted { trigger } if *trigger == CompactionTrigger::Reactive)
            ),
            "{shape:?}"
        );
        assert_eq!(summary_requests(&h), vec![4], "{shape:?}");
        assert!(request_text(&h, 5).contains(MARKER));
        engine.shutdown().await;
        assert_eq!(compactions(&h)[0].trigger.as_str(), "reactive");
        assert_no_orphans(&h);
    }
}

/// Over the Responses API, an overflow (a `response.failed` event in a 200 stream, as the
/// recorded stream has it, or an HTTP 400) compacts reactively: the summary request goes over
/// the same wire, and the retry carries the checkpoint.
#[tokio::test]
async fn a_responses_overflow_compacts_reactively_and_the_retry_succeeds() {
    for overflow in [
        Reply::sse_file("responses_failed_overflow.sse"),
        Reply::fault(Fault::overflow(16_000, 17_000)),
    ] {
        let h = Harness::new().await;
        let mut engine = spawn(&h, "openai-responses", WINDOW);
        for k in 0..3 {
            h.server.push(Reply::text(prose(&format!("answer {k}"), 300)).with_usage(2_000, 1_500));
            engine.turn(&format!("question {k}")).await;
        }
        h.server.push(overflow);
        h.server.push(Reply::text(SUMMARY));
        h.server.push(Reply::text("after the retry").with_usage(3_000, 5));
        let run = engine.turn("question 3").await;
        assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
        assert_eq!(run.text, "after the retry");
        let reactive = run.events.iter().any(|e| {
            matches!(e, Event::CompactionStarted { trigger } if *trigger == CompactionTrigger::Reactive)
        });
        assert!(reactive, "{:?}", run.events);
        assert_eq!(summary_requests(&h), vec![4]);
        let requests = h.server.requests();
        assert!(requests.iter().all(|r| r.path == "/v1/responses"), "one wire throughout");
        assert!(request_text(&h, 5).contains(MARKER));
        engine.shutdown().await;
        assert_eq!(compactions(&h)[0].trigger.as_str(), "reactive");
        assert_no_orphans(&h);
    }
}

#[tokio::test]
async fn anthropic_overflow_compacts_and_thinking_signatures_stay_byte_identical() {
    let h = Harness::new().await;
    let mut engine = spawn(&h, "anthropic", WINDOW);
    for k in 0..3 {
        h.server.push(
            Reply::thinking(format!("pondering {k}"), format!("sig+/={k}\\u00e9"))
                .then_text(prose(&format!("answer {k}"), 300))
                .with_usage(2_000, 1_500),
        );
        engine.turn(&format!("question {k}")).await;
    }
    h.server.push(Reply::fault(Fault::overflow(16_000, 17_000)));
    h.server.push(Reply::text(SUMMARY));
    h.server.push(Reply::text("after").with_usage(3_000, 5));
    let run = engine.turn("question 3").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    let before = h.server.requests()[3].body.clone();
    let after = h.server.requests()[5].body.clone();
    let signatures = |body: &Value| -> Vec<String> {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "thinking")
            .map(|b| b["signature"].as_str().unwrap().to_owned())
            .collect()
    };
    let kept = signatures(&after);
    assert!(!kept.is_empty(), "the latest answer is kept with its thinking");
    for sig in &kept {
        assert!(signatures(&before).contains(sig), "signature {sig} changed");
    }
    let checkpoint = after["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m.to_string().contains(MARKER))
        .unwrap();
    assert!(
        checkpoint.to_string().contains("cache_control"),
        "the checkpoint is a cache breakpoint"
    );
    engine.shutdown().await;
    assert_no_orphans(&h);
}

#[tokio::test]
async fn what_is_sent_after_compact() {
    let h = Harness::new().await;
    h.hosted_api();
    h.write(".codewhale/anchors.md", "Keep the public API stable.\n");
    h.write("src/lib.rs", "pub fn parse() {}\n");
    let mut engine = spawn(&h, "openai", WINDOW);
    h.server.push(
        Reply::tool_call("call_1", "read_file", json!({"path": "src/lib.rs"}))
            .with_usage(2_000, 10),
    );
    h.server.push(Reply::text(prose("answer 0", 300)).with_usage(2_500, 1_500));
    engine.turn("question 0").await;
    h.server.push(Reply::text(prose("answer 1", 300)).with_usage(3_000, 1_500));
    engine.turn("question 1").await;
    h.server
        .push(Reply::tool_call("call_2", "list_dir", json!({"path": "src"})).with_usage(3_500, 10));
    h.server.push(Reply::text(prose("answer 2", 300)).with_usage(4_000, 1_500));
    engine.turn("question 2").await;
    h.server.push(Reply::text(SUMMARY));
    assert!(matches!(compact(&mut engine, None).await, Event::CompactionFinished { .. }));
    h.server.push(Reply::text("done").with_usage(3_000, 5));
    engine.turn("question 3").await;
    engine.shutdown().await;
    let requests = h.server.requests();
    let body = &requests.last().unwrap().body;
    let workspace = h.workspace().display().to_string();
    let lines: Vec<String> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let content = match &m["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let content = if m["role"] == "system" {
                "<system prompt>".to_owned()
            } else {
                content.replace(&workspace, "<workspace>")
            };
            let calls = m["tool_calls"]
                .as_array()
                .map(|c| format!(" calls={}", Value::Array(c.clone())))
                .unwrap_or_default();
            format!("{}: {content}{calls}", m["role"].as_str().unwrap())
        })
        .collect();
    insta::assert_snapshot!(lines.join("\n"));
    assert_no_orphans(&h);
    let records = compactions(&h);
    assert_eq!(records[0].path, CompactionPath::Summary);
    assert_eq!(records[0].files_touched, vec!["src/lib.rs".to_owned()]);
}
