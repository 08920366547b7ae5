//! Windows the catalog does not know (docs/compaction.md, *Triggers* and *Small local models*),
//! in every wire format: a provider whose overflow error names no window, and a server that
//! states a 3,000-token window. The session always goes on, no request is sent twice, and a
//! small window does not compact on every turn.

use codewhale_engine::protocol::{CompactionKind, Event, TurnStatus};
use codewhale_engine::session::Resume;
use codewhale_engine::{Engine, EngineParams, FrontEnd};
use codewhale_journal::Payload;
use codewhale_provider::test_support::{Fault, RecordedRequest, Reply};

use super::common::{reload_checked, session_file, Harness, Running};
use super::compaction::{assert_no_orphans, compact, is_summary_request, params, prose, SUMMARY};

const PROVIDERS: [&str; 3] = ["openai", "anthropic", "openai-responses"];

fn body_tokens(r: &RecordedRequest) -> u64 {
    u64::from(codewhale_engine::tokens::count(&r.body.to_string()))
}

/// The engine's parameters for `provider` with the window left to the catalog (or the server):
/// gpt-5-codex (400k in the catalog) on the Responses API, as in the field.
fn unconfigured(h: &Harness, provider: &str) -> EngineParams {
    let mut p = params(h, provider, 0);
    p.overrides.context_window = None;
    if provider == "openai-responses" {
        p.overrides.model = Some("gpt-5-codex".into());
    }
    p
}

/// A 400 that says the request is too long and names no window, in `provider`'s shape.
fn bare_overflow(provider: &str) -> Reply {
    let body = match provider {
        "anthropic" => serde_json::json!({"type": "error", "error": {
            "type": "invalid_request_error", "message": "prompt is too long"}}),
        _ => serde_json::json!({"error": {
            "message": "Your input exceeds the context window of this model. Please adjust your \
                        input and try again.",
            "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}),
    };
    Reply::fault(Fault::Status { status: 400, body: body.to_string() })
}

/// A server that rejects anything past 6,000 tokens with a bare overflow, 10 turns of about 800
/// tokens each: every turn is answered, the window learned is journaled as
/// `overflow-unnumbered`, no request is sent twice, and `/compact` works.
#[tokio::test]
async fn an_overflow_that_names_no_window_teaches_one() {
    const LIMIT: u64 = 6_000;
    for provider in PROVIDERS {
        let h = Harness::new().await;
        let shape = provider.to_owned();
        h.server.respond_with(move |r| {
            let tokens = body_tokens(r);
            if tokens > LIMIT {
                return bare_overflow(&shape);
            }
            if is_summary_request(&r.body) {
                return Reply::text(SUMMARY).with_usage(tokens, 300);
            }
            Reply::text(prose("answer", 140)).with_usage(tokens, 700)
        });
        let mut p = unconfigured(&h, provider);
        p.front_end = FrontEnd::Tui;
        let mut engine: Running = Engine::spawn(p).unwrap().into();
        for k in 0..10 {
            let run = engine.turn(&prose(&format!("question {k}"), 20)).await;
            assert_eq!(run.status, TurnStatus::Completed, "{provider} turn {k}: {:?}", run.events);
        }
        let done = compact(&mut engine, Some("the answers")).await;
        assert!(
            matches!(done, Event::CompactionFinished { path: CompactionKind::Summary, .. }),
            "{provider}: {done:?}"
        );
        engine.shutdown().await;
        let requests = h.server.requests();
        let rejected: Vec<&RecordedRequest> =
            requests.iter().filter(|r| body_tokens(r) > LIMIT).collect();
        assert!(!rejected.is_empty(), "{provider}: the limit was never reached");
        assert!(rejected.len() <= 4, "{provider}: {} requests rejected", rejected.len());
        // Never the same request twice.
        for (i, r) in requests.iter().enumerate() {
            assert!(
                requests[i + 1..].iter().all(|later| later.raw != r.raw),
                "{provider}: request {i} was sent again"
            );
        }
        let journal = reload_checked(&session_file(h.home.path()));
        let learned: Vec<(u64, u64)> = journal
            .entries()
            .iter()
            .filter_map(|e| match &e.payload {
                Payload::System(s) if s.window_source.as_deref() == Some("overflow-unnumbered") => {
                    Some((s.context_window?, s.window_before?))
                }
                _ => None,
            })
            .collect();
        assert!(!learned.is_empty(), "{provider}: no window was journaled");
        let (window, before) = *learned.last().unwrap();
        assert!(window <= LIMIT && window < before, "{provider}: {learned:?}");
        assert_no_orphans(&h);
    }
}

/// The same server for one-turn processes (`exec --last` after `exec --last`): the window one
/// process learned is the next one's.
#[tokio::test]
async fn a_window_learned_from_a_bare_overflow_holds_in_the_next_process() {
    const LIMIT: u64 = 5_000;
    let h = Harness::new().await;
    h.server.respond_with(move |r| {
        let tokens = body_tokens(r);
        if tokens > LIMIT {
            return bare_overflow("openai-responses");
        }
        if is_summary_request(&r.body) {
            return Reply::text(SUMMARY).with_usage(tokens, 300);
        }
        Reply::text(prose("answer", 140)).with_usage(tokens, 700)
    });
    for k in 0..10 {
        let mut p = unconfigured(&h, "openai-responses");
        if k > 0 {
            p.resume = Resume::Last;
        }
        let mut engine: Running = Engine::spawn(p).unwrap().into();
        let run = engine.turn(&prose(&format!("question {k}"), 20)).await;
        assert_eq!(run.status, TurnStatus::Completed, "turn {k}: {:?}", run.events);
        engine.shutdown().await;
    }
    let rejected = h.server.requests().iter().filter(|r| body_tokens(r) > LIMIT).count();
    assert!((1..=3).contains(&rejected), "{rejected} requests rejected in 10 processes");
}

/// What a session of one-turn processes left: notes, summary requests, requests trimmed after
/// the first note, requests over the window.
#[derive(Debug)]
struct Run {
    notes: usize,
    summaries: usize,
    trimmed_after_note: usize,
    over_window: usize,
}

/// 15 turns of about 200 tokens at a 3,000-token window, one process each: 1 to 4 notes (each
/// pass buys room for a few turns instead of leaving the view just under the threshold),
/// nothing trimmed after the first, nothing over the window. The window is stated by the server
/// (llama.cpp's `/props`) on the OpenAI wire, configured on the others.
#[tokio::test]
async fn fifteen_turns_at_a_three_thousand_token_window_compact_a_few_times() {
    const WINDOW: u64 = 3_000;
    for provider in PROVIDERS {
        let h = Harness::new().await;
        h.server.respond_with(move |r| {
            let tokens = body_tokens(r);
            if tokens > WINDOW {
                return Reply::fault(Fault::overflow(WINDOW, tokens));
            }
            if is_summary_request(&r.body) {
                return Reply::text(SUMMARY).with_usage(tokens, 200);
            }
            Reply::text(prose("answer", 20)).with_usage(tokens, 100)
        });
        if provider == "openai" {
            let props = serde_json::json!({"default_generation_settings": {"n_ctx": WINDOW}});
            h.server.serve_get("/props", props);
            // The server's answer is in the probe cache before the turns start, as after any
            // earlier run: a background probe slower than a loaded machine's short process is
            // not what this test measures.
            // The answer is filed in the cache before it is used: an idle engine's usage at the
            // stated window is the marker.
            let mut engine: Running = Engine::spawn(unconfigured(&h, provider)).unwrap().into();
            engine.until(|e| matches!(e, Event::Usage { window, .. } if *window == WINDOW)).await;
            engine.shutdown().await;
        }
        for k in 0..15 {
            let mut p = if provider == "openai" {
                unconfigured(&h, provider)
            } else {
                params(&h, provider, WINDOW)
            };
            if k > 0 {
                p.resume = Resume::Last;
            }
            let mut engine: Running = Engine::spawn(p).unwrap().into();
            let run = engine.turn(&prose(&format!("question {k}"), 20)).await;
            assert_eq!(run.status, TurnStatus::Completed, "{provider} turn {k}: {:?}", run.events);
            engine.shutdown().await;
        }
        let run = three_k_run(&h, WINDOW);
        assert!((1..=4).contains(&run.notes), "{provider}: {run:?}");
        assert_eq!(run.trimmed_after_note, 0, "{provider}: {run:?}");
        assert_eq!(run.over_window, 0, "{provider}: {run:?}");
        // A pass may read the conversation in two requests (a chunk and the final one).
        assert!(run.summaries <= 2 * run.notes + 1, "{provider}: {run:?}");
        assert_no_orphans(&h);
    }
}

fn three_k_run(h: &Harness, window: u64) -> Run {
    let journal = reload_checked(&session_file(h.home.path()));
    let entries = journal.entries();
    let notes = journal.compactions().filter(|(_, r)| r.summary.is_some()).count();
    let first_note = entries.iter().position(|e| matches!(e.payload, Payload::Compaction(_)));
    let trimmed_after_note = first_note.map_or(0, |at| {
        entries[at..]
            .iter()
            .filter(|e| {
                matches!(&e.payload, Payload::Assistant(a)
                    if a.reads.as_ref().is_some_and(|r| r.trimmed_before.is_some()))
            })
            .count()
    });
    let requests = h.server.requests();
    Run {
        notes,
        summaries: requests.iter().filter(|r| is_summary_request(&r.body)).count(),
        trimmed_after_note,
        over_window: requests.iter().filter(|r| body_tokens(r) > window).count(),
    }
}

/// `/compact` on a conversation just under a limit no error names: the summary request (the
/// conversation plus the instruction) is rejected, the window it teaches is journaled, and the
/// pass plans again under it — a shorter request, never the same one again.
#[tokio::test]
async fn a_summary_request_rejected_without_a_window_is_planned_again_shorter() {
    const LIMIT: u64 = 6_000;
    for provider in PROVIDERS {
        let h = Harness::new().await;
        let shape = provider.to_owned();
        h.server.respond_with(move |r| {
            let tokens = body_tokens(r);
            if tokens > LIMIT {
                return bare_overflow(&shape);
            }
            if is_summary_request(&r.body) {
                return Reply::text(SUMMARY).with_usage(tokens, 300);
            }
            Reply::text(prose("answer", 140)).with_usage(tokens, 700)
        });
        let mut engine: Running = Engine::spawn(unconfigured(&h, provider)).unwrap().into();
        // Turns (about 800 tokens each) until the next one would reach the limit.
        for k in 0..20 {
            engine.turn(&prose(&format!("question {k}"), 20)).await;
            let last = h.server.requests().last().map(body_tokens).unwrap_or(0);
            if last + 1_000 > LIMIT {
                break;
            }
        }
        let sent = h.server.requests().len();
        assert!(h.server.requests().iter().all(|r| body_tokens(r) <= LIMIT), "{provider}");
        let done = compact(&mut engine, None).await;
        assert!(
            matches!(done, Event::CompactionFinished { path: CompactionKind::Summary, .. }),
            "{provider}: {done:?}"
        );
        engine.shutdown().await;
        let summaries: Vec<RecordedRequest> = h.server.requests()[sent..].to_vec();
        assert!(summaries.iter().all(|r| is_summary_request(&r.body)), "{provider}");
        assert!(summaries.len() >= 2, "{provider}: the first summary request was rejected");
        assert!(summaries.len() <= 4, "{provider}: {} summary requests", summaries.len());
        assert!(body_tokens(&summaries[0]) > LIMIT);
        for pair in summaries.windows(2) {
            assert!(body_tokens(&pair[1]) < body_tokens(&pair[0]), "{provider}: not shorter");
        }
        let journal = reload_checked(&session_file(h.home.path()));
        let learned = journal.entries().iter().any(|e| {
            matches!(&e.payload, Payload::System(s)
                if s.window_source.as_deref() == Some("overflow-unnumbered"))
        });
        assert!(learned, "{provider}: the window is journaled");
    }
}
