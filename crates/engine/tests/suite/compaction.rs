//! Compaction end to end: real HTTP to the mock provider, real journal files.
//!
//! Every test ends with [`assert_no_orphans`] over the mock server's request log: no request
//! ever sent may hold a tool call without its result or a result without its call.

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::compaction::checkpoint::{HEADER, MARKER};
use codewhale_engine::config::{Env, Overrides};
use codewhale_engine::journal::{render, CompactionPath, Payload};
use codewhale_engine::protocol::{Event, Op, TurnStatus};
use codewhale_engine::session::Resume;
use codewhale_engine::{Engine, EngineParams};
use codewhale_provider::test_support::{Fault, OverflowShape, Reply, TEST_API_KEY};
use codewhale_provider::RetryPolicy;
use serde_json::{json, Value};

use super::common::{reload_checked, session_file, Harness, Running};

/// W = 20,000 → R = 5,000, U = 15,000, threshold 12,000, kept tail ≈ 3,750 tokens.
const WINDOW: u64 = 20_000;

pub const SUMMARY: &str = "## Objective\nKeep the parser tests green.\n## User direction\n\
\"use the existing parser\"\n## Permissions and limits\nNone\n## Done\nRead the sources.\n\
## Changed files\nNone\n## Still running\nNone\n## Verification left\nRun cargo test.\n\
## Open questions\nNone\n## Next action\nContinue with the next step.\n## Reference\nsrc/lib.rs";

fn params(h: &Harness, provider: &str, window: u64) -> EngineParams {
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
    }
}

fn spawn(h: &Harness, provider: &str, window: u64) -> Running {
    let (handle, events) = Engine::spawn(params(h, provider, window)).unwrap();
    Running { handle, events }
}

/// About `n` × 5 tokens of prose tagged with `tag`.
fn prose(tag: &str, n: usize) -> String {
    format!("{tag}: {}", "lorem ipsum dolor sit amet ".repeat(n))
}

fn is_summary_request(body: &Value) -> bool {
    body.to_string().contains("You are writing a handoff note")
}

fn summary_requests(h: &Harness) -> Vec<usize> {
    h.server
        .requests()
        .iter()
        .enumerate()
        .filter(|(_, r)| is_summary_request(&r.body))
        .map(|(i, _)| i)
        .collect()
}

/// Tool call and result ids of a request body, in order, for both wire formats.
fn tool_ids(body: &Value) -> Vec<(bool, String)> {
    let mut out = Vec::new();
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
fn assert_no_orphans(h: &Harness) {
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
fn request_text(h: &Harness, n: usize) -> String {
    h.server.requests()[n].body.to_string()
}

async fn compact(engine: &mut Running, focus: Option<&str>) -> Event {
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
    events.last().cloned().unwrap()
}

fn compactions(h: &Harness) -> Vec<codewhale_engine::journal::CompactionPayload> {
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
        .position(|e| matches!(e, Event::CompactionStarted { trigger } if trigger == "auto"));
    let finished = run.events.iter().find_map(|e| match e {
        Event::CompactionFinished { tokens_before, tokens_after, path, .. } => {
            Some((*tokens_before, *tokens_after, path.clone()))
        }
        _ => None,
    });
    assert!(started.is_some());
    let (before, after, path) = finished.unwrap();
    assert_eq!(path, "summary");
    assert!(after < before, "{after} >= {before}");
    assert_eq!(summary_requests(&h), vec![4]);
    let sent = request_text(&h, 5);
    assert!(sent.contains("Codewhale handoff note.") && sent.contains(MARKER));
    assert!(sent.contains("question 4") && sent.contains("Keep the parser tests green."));
    assert!(!sent.contains("answer 0"), "the oldest answer is covered");
    assert!(!request_text(&h, 4).contains("\"tools\""), "the summary request has no tools");
    engine.shutdown().await;
    let records = compactions(&h);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].trigger.as_str(), "auto");
    assert_no_orphans(&h);
}

#[tokio::test]
async fn mid_tool_loop_compaction_keeps_the_pending_round_intact() {
    let h = Harness::new().await;
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
                |e| matches!(e, Event::CompactionStarted { trigger } if trigger == "reactive")
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
async fn an_overflowing_summary_request_drops_the_oldest_exchanges() {
    let h = Harness::new().await;
    let mut engine = spawn(&h, "openai", WINDOW);
    for k in 0..4 {
        h.server.push(Reply::text(prose(&format!("answer {k}"), 300)).with_usage(2_000, 1_500));
        engine.turn(&format!("question {k}")).await;
    }
    h.server.push(Reply::fault(Fault::overflow(8_000, 9_000)));
    h.server.push(Reply::text(SUMMARY));
    assert!(matches!(compact(&mut engine, None).await, Event::CompactionFinished { .. }));
    let first = request_text(&h, 4);
    let second = request_text(&h, 5);
    assert!(first.contains("answer 0") && !second.contains("answer 0"), "the oldest exchange went");
    assert!(second.contains("You are writing a handoff note"), "the instruction stays");
    engine.shutdown().await;
    assert_eq!(compactions(&h).len(), 1);
    assert_no_orphans(&h);
}

#[tokio::test]
async fn unusable_summaries_retry_once_then_fail_with_nothing_changed() {
    for (first, second) in
        [("", "No summary available."), ("I'm sorry, I can't help with that.", "## Objective\nx")]
    {
        let h = Harness::new().await;
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
    assert!(request_text(&h, last_summary).contains("[earlier handoff note]"));
    assert!(request_text(&h, last_summary).contains("Focus the note on: the parser"));
    engine.shutdown().await;
    assert_no_orphans(&h);
}

#[tokio::test]
async fn huge_own_messages_do_not_recompact_on_every_turn() {
    let h = Harness::new().await;
    // U = 6,000, threshold 4,800: the user's own message alone is past it.
    let mut engine = spawn(&h, "openai", 8_000);
    for k in 0..2 {
        h.server.push(Reply::text(prose(&format!("ok {k}"), 40)).with_usage(1_000, 200));
        engine.turn(&format!("small {k}")).await;
    }
    h.server.push(Reply::text(SUMMARY));
    h.server.push(Reply::text("ok 2").with_usage(7_000, 5));
    let run = engine.turn(&prose("my huge paste", 1_200)).await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    for k in 3..6 {
        h.server.push(Reply::text(format!("ok {k}")).with_usage(7_100, 5));
        let run = engine.turn(&format!("small {k}")).await;
        assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
        assert!(
            !run.events.iter().any(|e| matches!(e, Event::CompactionStarted { .. })),
            "turn {k} recompacted"
        );
    }
    assert_eq!(summary_requests(&h).len(), 1);
    engine.shutdown().await;
    assert_eq!(compactions(&h).len(), 1);
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
    assert!(journal
        .entries()
        .iter()
        .any(|e| matches!(&e.payload, Payload::System(s) if s.text.contains("refused"))));
}

#[tokio::test]
async fn what_is_sent_after_compact() {
    let h = Harness::new().await;
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
