//! No session is ever stuck on a long path: one turn of many tool calls, a big imported session,
//! a summary that has to be written in chunks — in both wire formats, through a mock model that
//! decides from what it is sent and rejects a request longer than its window. After each: the
//! next turn succeeds, a manual pass does not fail, every request fits, at most two passes ran
//! per turn, the journal holds everything verbatim and no request has an orphaned tool pair.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use codewhale_engine::protocol::{Event, TurnStatus};
use codewhale_engine::session::Resume;
use codewhale_engine::Engine;
use codewhale_journal::{check_file, Payload};
use codewhale_provider::test_support::{Fault, RecordedRequest, Reply};
use serde_json::json;

use super::common::{reload_checked, session_file, Harness, Running};
use super::compaction::{assert_no_orphans, is_summary_request, params, SUMMARY};

/// Tokens of a whole request body (a generous upper bound of what a provider counts).
fn body_tokens(r: &RecordedRequest) -> u64 {
    u64::from(codewhale_engine::tokens::count(&r.body.to_string()))
}

/// A model with a `window`: summary requests get [`SUMMARY`], the first `calls` other requests
/// a `read_file` of `f{n}.txt`, the rest a short answer; anything longer than the window is
/// rejected as a provider would. Every reply reports the request's size as its usage.
fn scripted_model(h: &Harness, window: u64, calls: usize) -> Arc<AtomicUsize> {
    let served = Arc::new(AtomicUsize::new(0));
    let count = served.clone();
    h.server.respond_with(move |r| {
        let tokens = body_tokens(r);
        if tokens > window {
            return Reply::fault(Fault::overflow(window, tokens));
        }
        if is_summary_request(&r.body) {
            return Reply::text(SUMMARY).with_usage(tokens, 200);
        }
        let n = count.fetch_add(1, Ordering::SeqCst);
        if n < calls {
            Reply::tool_call(format!("call-{n}"), "read_file", json!({"path": format!("f{n}.txt")}))
                .with_usage(tokens, 20)
        } else {
            Reply::text(format!("Finished after {n} steps.")).with_usage(tokens, 10)
        }
    });
    served
}

fn spawn_on(h: &Harness, provider: &str, window: u64, resume: Resume) -> Running {
    let mut p = params(h, provider, window);
    p.resume = resume;
    let (handle, events) = Engine::spawn(p).unwrap();
    Running { handle, events }
}

fn passes(events: &[Event]) -> usize {
    events.iter().filter(|e| matches!(e, Event::CompactionStarted { .. })).count()
}

fn assert_requests_fit(h: &Harness, window: u64) {
    for (n, r) in h.server.requests().iter().enumerate() {
        let tokens = body_tokens(r);
        assert!(tokens <= window, "request {n} has {tokens} tokens > {window}");
    }
}

/// One line of about 1.5 KB per file, each different.
fn write_files(h: &Harness, n: usize) {
    for k in 0..n {
        let text: String = (0..30)
            .map(|l| {
                format!("file {k:03} line {l:02}: the value of item {k}-{l} is {}\n", k * 31 + l)
            })
            .collect();
        h.write(&format!("f{k}.txt"), &text);
    }
}

/// A turn of `calls` tool calls at `window`, then the next turn from a new engine (as
/// `codewhale exec --last` runs) and a manual pass (as `codewhale compact --last`).
async fn long_turn(provider: &str, calls: usize, window: u64) {
    let h = Harness::new().await;
    write_files(&h, calls);
    scripted_model(&h, window, calls);
    let mut engine = spawn_on(&h, provider, window, Resume::New);
    let run = engine.turn("read every file f0.txt, f1.txt, ... in turn and report").await;
    let label = format!("{provider}, {calls} calls, window {window}");
    assert_eq!(run.status, TurnStatus::Completed, "{label}: {:?}", run.events.last());
    assert!(passes(&run.events) <= 2, "{label}: {} passes in one turn", passes(&run.events));
    let trim_notices = run
        .events
        .iter()
        .filter(|e| matches!(e, Event::Notice { message, .. } if message.contains("leaves out")))
        .count();
    assert!(trim_notices <= 1, "{label}: the trim is said once a turn, not {trim_notices} times");
    assert!(
        run.events.iter().all(|e| !matches!(e, Event::CompactionFailed { .. })),
        "{label}: {:?}",
        run.events.iter().find(|e| matches!(e, Event::CompactionFailed { .. }))
    );
    engine.shutdown().await;

    let mut engine = spawn_on(&h, provider, window, Resume::Last);
    let run = engine.turn("continue please").await;
    assert_eq!(run.status, TurnStatus::Completed, "{label}, next turn: {:?}", run.events.last());
    assert!(passes(&run.events) <= 2, "{label}: {} passes in the next turn", passes(&run.events));
    let done = super::compaction::compact(&mut engine, None).await;
    assert!(
        matches!(done, Event::CompactionFinished { .. } | Event::CompactionRefused { .. }),
        "{label}: the manual pass failed: {done:?}"
    );
    let run = engine.turn("and after that?").await;
    assert_eq!(run.status, TurnStatus::Completed, "{label}, last turn: {:?}", run.events.last());
    engine.shutdown().await;

    assert_requests_fit(&h, window);
    assert_no_orphans(&h);
    let path = session_file(h.home.path());
    let report = check_file(&path).unwrap();
    assert!(report.problems.is_empty(), "{label}: {:?}", report.problems);
    let journal = reload_checked(&path);
    let results = journal
        .entries()
        .iter()
        .filter(|e| matches!(&e.payload, Payload::ToolResult(r) if r.content.contains("line 29: the value")))
        .count();
    assert_eq!(results, calls, "{label}: every output is in the journal whole");
    // The last live request holds the last exchange and the user's message.
    let last =
        h.server.requests().into_iter().rev().find(|r| !is_summary_request(&r.body)).unwrap();
    let body = last.body.to_string();
    assert!(body.contains("and after that?"), "{label}");
    assert!(body.contains(&format!("call-{}", calls - 1)), "{label}: the last exchange is sent");
}

#[tokio::test]
async fn a_turn_of_forty_calls_at_8k() {
    for provider in ["openai", "anthropic", "openai-responses"] {
        long_turn(provider, 40, 8_192).await;
    }
}

#[tokio::test]
async fn a_turn_of_forty_calls_at_16k() {
    for provider in ["openai", "anthropic"] {
        long_turn(provider, 40, 16_000).await;
    }
}

#[tokio::test]
async fn a_turn_of_two_hundred_calls_at_8k() {
    for provider in ["openai", "anthropic"] {
        long_turn(provider, 200, 8_192).await;
    }
}

#[tokio::test]
async fn a_turn_of_two_hundred_calls_at_16k() {
    for provider in ["openai", "anthropic"] {
        long_turn(provider, 200, 16_000).await;
    }
}

/// The last assistant text and the last tool result of [`claude_session`].
const LAST_TEXT: &str = "Pushed the fix: commit 4f2a9c1 on main, all 412 tests pass.";
const LAST_RESULT_HEAD: &str = "PUSH-LOG-START";

/// A Claude Code session of about `megabytes` MB, shaped like a real one: typed prompts,
/// responses one block per line, results parented on their call's line, logs of several KB.
/// Its last exchange holds a 70 KB tool result and ends with [`LAST_TEXT`].
fn claude_session(path: &std::path::Path, megabytes: usize, cwd: &str) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let written = std::cell::Cell::new(0usize);
    let mut line = |v: serde_json::Value| {
        let mut s = v.to_string();
        s.push('\n');
        written.set(written.get() + s.len());
        out.write_all(s.as_bytes()).unwrap();
    };
    let base = |v: serde_json::Value| {
        let mut v = v;
        v["isSidechain"] = json!(false);
        v["cwd"] = json!(cwd);
        v["sessionId"] = json!("generated");
        v["version"] = json!("2.0.49");
        v["timestamp"] = json!("2025-11-23T04:53:40.000Z");
        v
    };
    let log: String =
        (0..120).map(|i| format!("test module_{i}::case_{i} ... ok (λ {i})\n")).collect();
    let mut parent = serde_json::Value::Null;
    let mut n = 0;
    loop {
        n += 1;
        let last = written.get() >= megabytes * 1_000_000;
        let u = format!("u-{n}");
        line(base(json!({"type": "user", "uuid": u, "parentUuid": parent,
            "message": {"role": "user", "content": format!("step {n}: run the tests and fix what fails")}})));
        let a = format!("a-{n}");
        line(base(
            json!({"type": "assistant", "uuid": a, "parentUuid": u, "message": {"id": format!("m{n}"),
            "role": "assistant", "model": "claude-sonnet-4-5", "content": [
            {"type": "tool_use", "id": format!("toolu_{n}"), "name": "Bash", "input": {"command": "cargo test"}}]}}),
        ));
        let output = if last {
            format!(
                "{LAST_RESULT_HEAD}\n{}PUSH-LOG-END",
                "remote: writing objects 100% done\n".repeat(2_000)
            )
        } else {
            log.clone()
        };
        let r = format!("r-{n}");
        line(base(json!({"type": "user", "uuid": r, "parentUuid": a, "message": {"role": "user",
            "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{n}"), "content": output}]}})));
        let f = format!("f-{n}");
        let text = if last { LAST_TEXT.to_owned() } else { format!("Step {n} passes now.") };
        line(base(
            json!({"type": "assistant", "uuid": f, "parentUuid": r, "message": {"id": format!("m{n}f"),
            "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn"}}),
        ));
        parent = json!(f);
        if last {
            break;
        }
    }
}

/// A 3 MB Claude Code session imported and continued at a 30k window: the request keeps the
/// imported session's last assistant text and its last tool result (bounded), and the session
/// goes on.
#[tokio::test]
async fn a_big_imported_session_continues_at_a_small_window() {
    for provider in ["openai", "anthropic"] {
        let h = Harness::new().await;
        let source = h.home.path().join("claude.jsonl");
        let workspace = h.workspace();
        claude_session(&source, 3, &workspace.display().to_string());
        let imported = codewhale_engine::offline::import::import(
            &codewhale_engine::offline::import::ImportParams {
                home: h.home.path(),
                workspace: &workspace,
                source: &source,
            },
        )
        .unwrap();
        assert!(imported.view_tokens > 100_000, "{}", imported.view_tokens);
        scripted_model(&h, 30_000, 0);
        let mut engine = spawn_on(&h, provider, 30_000, Resume::Id(imported.session_id.clone()));
        let run = engine.turn("continue please").await;
        assert_eq!(run.status, TurnStatus::Completed, "{provider}: {:?}", run.events);
        assert!(passes(&run.events) <= 2, "{provider}");
        assert!(
            run.events.iter().any(|e| matches!(e, Event::CompactionFinished { .. })),
            "{provider}: {:?}",
            run.events
        );
        let run = engine.turn("and now?").await;
        assert_eq!(run.status, TurnStatus::Completed, "{provider}: {:?}", run.events);
        engine.shutdown().await;
        assert_requests_fit(&h, 30_000);
        assert_no_orphans(&h);
        let live: Vec<String> = h
            .server
            .requests()
            .iter()
            .filter(|r| !is_summary_request(&r.body))
            .map(|r| r.body.to_string())
            .collect();
        let first = &live[0];
        assert!(first.contains("continue please"), "{provider}");
        assert!(first.contains(LAST_TEXT), "{provider}: the last assistant text is sent");
        assert!(first.contains(LAST_RESULT_HEAD), "{provider}: the last tool result is sent");
        assert!(first.contains("bytes cut"), "{provider}: ... bounded");
        let journal = reload_checked(&imported.path);
        assert!(journal.entries().iter().any(
            |e| matches!(&e.payload, Payload::ToolResult(r) if r.content.contains("PUSH-LOG-END"))
        ));
    }
}

/// A conversation far past the window with many exchanges before the cut: the summary is
/// written in chunks, the interim note folded into the next request, and the final request
/// keeps the newest exchanges — at most `compaction.max_summary_requests` (2) requests, the
/// oldest part covered by an extract and kept for recall, which the user is told in one line.
#[tokio::test]
async fn a_summary_too_big_for_one_request_is_written_in_chunks() {
    for provider in ["openai", "anthropic"] {
        let h = Harness::new().await;
        let calls = 60;
        write_files(&h, calls);
        // A wide window first: the whole turn fits and nothing compacts.
        scripted_model(&h, 200_000, calls);
        let mut engine = spawn_on(&h, provider, 200_000, Resume::New);
        let run = engine.turn("read every file").await;
        assert_eq!(run.status, TurnStatus::Completed, "{provider}");
        assert_eq!(passes(&run.events), 0);
        engine.shutdown().await;
        // Then a model with an 8k window: a manual pass must summarize 60 exchanges.
        let before = h.server.requests().len();
        let mut engine = spawn_on(&h, provider, 8_192, Resume::Last);
        let (done, steps) = super::compaction::compact_with_events(&mut engine, None).await;
        let Event::CompactionFinished { note, .. } = &done else { panic!("{provider}: {done:?}") };
        assert!(note.contains("Not read for this note: the oldest"), "{provider}: {note}");
        assert!(note.contains("`recall` finds them"), "{provider}: {note}");
        let told = steps.iter().any(|e| {
            matches!(e, Event::Notice { message, .. }
                if message.contains("are kept for recall; the note read the newest"))
        });
        assert!(told, "{provider}: {steps:?}");
        let progress: Vec<(u32, u32)> = steps
            .iter()
            .filter_map(|e| match e {
                Event::CompactionProgress { request, of, tokens } if *tokens > 0 => {
                    Some((*request, *of))
                }
                _ => None,
            })
            .collect();
        assert_eq!(progress, [(1, 2), (2, 2)], "{provider}: progress of each request");
        let run = engine.turn("what did you find?").await;
        assert_eq!(run.status, TurnStatus::Completed, "{provider}: {:?}", run.events);
        engine.shutdown().await;
        let summaries: Vec<String> = h.server.requests()[before..]
            .iter()
            .filter(|r| is_summary_request(&r.body))
            .map(|r| r.body.to_string())
            .collect();
        assert_eq!(summaries.len(), 2, "{provider}: the request limit holds");
        assert!(summaries[0].contains("a later note will fold yours in"), "{provider}");
        assert!(summaries[1].contains("Codewhale interim note"), "{provider}");
        let last = summaries.last().unwrap();
        assert!(
            last.contains("Codewhale interim note") && !last.contains("a later note will fold")
        );
        assert!(last.contains(&format!("call-{}", calls - 1)), "{provider}: the newest exchange");
        assert_requests_fit(&h, 200_000);
        for r in &h.server.requests()[before..] {
            assert!(body_tokens(r) <= 8_192, "{provider}: a request over the small window");
        }
        assert_no_orphans(&h);
    }
}

/// When it fits, the summary request is the live request plus the instruction: the same system
/// prompt and tools, and its messages begin with exactly the previous request's, so a provider
/// answers that part from its prompt cache.
#[tokio::test]
async fn the_summary_request_begins_with_the_previous_request() {
    for provider in ["openai", "anthropic"] {
        let h = Harness::new().await;
        write_files(&h, 6);
        scripted_model(&h, 100_000, 6);
        let mut engine = spawn_on(&h, provider, 100_000, Resume::New);
        assert_eq!(engine.turn("read the files").await.status, TurnStatus::Completed);
        assert_eq!(engine.turn("thanks; one more thing").await.status, TurnStatus::Completed);
        let done = super::compaction::compact(&mut engine, None).await;
        assert!(matches!(done, Event::CompactionFinished { .. }), "{provider}: {done:?}");
        engine.shutdown().await;
        let requests = h.server.requests();
        let (live, summary) =
            (&requests[requests.len() - 2].body, &requests[requests.len() - 1].body);
        assert!(is_summary_request(summary) && !is_summary_request(live));
        assert_eq!(live["tools"], summary["tools"], "{provider}: the same tools");
        assert_eq!(live["system"], summary["system"], "{provider}: the same system prompt");
        let messages = |b: &serde_json::Value| b["messages"].as_array().unwrap().clone();
        let (live, summary) = (messages(live), messages(summary));
        assert!(summary.len() > live.len() + 1, "{provider}: the reply, then the instruction");
        assert_eq!(summary[..live.len()], live[..], "{provider}: a shared prefix");
        let instruction = summary.last().unwrap().to_string();
        assert!(instruction.contains("You are writing a handoff note"), "{provider}");
        assert!(instruction.contains("Do not call any tool"), "{provider}");
    }
}

/// One reply of 64 calls (the most that run) whose outputs alone outgrow the window even at
/// 1 KB each: the protected round is cut below 1 KB per call rather than stranding the session,
/// and the next turns go on, in both wire formats.
#[tokio::test]
async fn one_reply_of_sixty_four_calls_never_strands_the_session() {
    const CALLS: usize = 64;
    const WINDOW: u64 = 16_000;
    for provider in ["openai", "anthropic"] {
        let h = Harness::new().await;
        write_files(&h, CALLS);
        let replied = Arc::new(AtomicUsize::new(0));
        let count = replied.clone();
        h.server.respond_with(move |r| {
            let tokens = body_tokens(r);
            if tokens > WINDOW {
                return Reply::fault(Fault::overflow(WINDOW, tokens));
            }
            if is_summary_request(&r.body) {
                return Reply::text(SUMMARY).with_usage(tokens, 200);
            }
            if count.fetch_add(1, Ordering::SeqCst) == 0 {
                let calls = (0..CALLS)
                    .map(|n| {
                        let path = format!("f{n}.txt");
                        codewhale_provider::test_support::ToolCall::new(
                            format!("call-{n}"),
                            "read_file",
                            json!({ "path": path }),
                        )
                    })
                    .collect();
                return Reply::tool_calls(calls).with_usage(tokens, 2_000);
            }
            Reply::text("Read them all.").with_usage(tokens, 10)
        });
        let mut engine = spawn_on(&h, provider, WINDOW, Resume::New);
        let run = engine.turn("read all 64 files at once").await;
        assert_eq!(run.status, TurnStatus::Completed, "{provider}: {:?}", run.events.last());
        let run = engine.turn("what did the last one say?").await;
        assert_eq!(run.status, TurnStatus::Completed, "{provider}: {:?}", run.events.last());
        engine.shutdown().await;
        assert_requests_fit(&h, WINDOW);
        assert_no_orphans(&h);
        let last =
            h.server.requests().into_iter().rev().find(|r| !is_summary_request(&r.body)).unwrap();
        let body = last.body.to_string();
        assert!(body.contains("what did the last one say?"), "{provider}");
        assert!(body.contains("call-63"), "{provider}: every call keeps its result");
    }
}
