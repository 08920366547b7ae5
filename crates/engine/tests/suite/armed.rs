//! Compaction keeps working for the whole session and every summary paid for is used
//! (docs/compaction.md, *Triggers* and *Background compaction*), in both wire formats, through a
//! mock model that reads files in a loop, answers summary requests (fast or slowly) and rejects
//! a request longer than its window.
//!
//! - After a long tool loop has used both passes of its turn, every later turn of the same
//!   process that starts above the threshold compacts (nothing switches auto-compaction off).
//! - In loops of 40 and 200 calls at 8k and 16k, with a fast and a slow summarizer, summary
//!   requests never exceed the notes committed plus one (the one still in flight at the end).
//! - `/compact` on a young chat sends no request at all and says "nothing to compact".

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use codewhale_engine::protocol::{Event, TurnStatus};
use codewhale_engine::{Engine, FrontEnd};
use codewhale_provider::test_support::{Fault, RecordedRequest, Reply};
use serde_json::json;

use super::common::{reload_checked, session_file, Harness, Running};
use super::compaction::{assert_no_orphans, is_summary_request, params, SUMMARY};

const PROVIDERS: [&str; 2] = ["openai", "anthropic"];

fn body_tokens(r: &RecordedRequest) -> u64 {
    u64::from(codewhale_engine::tokens::count(&r.body.to_string()))
}

/// The model: summary requests answered with [`SUMMARY`] after `summary_delay`; the first
/// `calls` other requests a `read_file` of `f{n}.txt`, the rest a short answer; anything over
/// the window rejected as a provider would.
fn model(h: &Harness, window: u64, calls: usize, summary_delay: Duration) {
    let served = Arc::new(AtomicUsize::new(0));
    h.server.respond_with(move |r| {
        let tokens = body_tokens(r);
        if tokens > window {
            return Reply::fault(Fault::overflow(window, tokens));
        }
        if is_summary_request(&r.body) {
            return Reply::text(SUMMARY).with_usage(tokens, 200).after(summary_delay);
        }
        let n = served.fetch_add(1, Ordering::SeqCst);
        if n < calls {
            Reply::tool_call(format!("call-{n}"), "read_file", json!({"path": format!("f{n}.txt")}))
                .with_usage(tokens, 20)
        } else {
            Reply::text(format!("Done after {n} steps.")).with_usage(tokens, 10)
        }
    });
}

/// `n` files of about 2.5 KB, each different.
fn write_files(h: &Harness, n: usize) {
    for k in 0..n {
        let text: String = (0..50)
            .map(|l| {
                format!("file {k:03} line {l:02}: item {k}-{l} has the value {}\n", k * 53 + l)
            })
            .collect();
        h.write(&format!("f{k}.txt"), &text);
    }
}

/// An engine as the terminal UI runs it (one process, many turns).
fn interactive(h: &Harness, provider: &str, window: u64) -> Running {
    let mut p = params(h, provider, window);
    p.front_end = FrontEnd::Tui;
    p.interactive = true;
    Engine::spawn(p).unwrap().into()
}

fn started(events: &[Event]) -> usize {
    events.iter().filter(|e| matches!(e, Event::CompactionStarted { .. })).count()
}

/// The last usage figure and the threshold, as the gauge shows them.
fn pressure(events: &[Event]) -> Option<(u64, u64)> {
    events.iter().rev().find_map(|e| match e {
        Event::Usage { pressure, threshold, .. } => Some((pressure.tokens, *threshold)),
        _ => None,
    })
}

fn summary_requests(h: &Harness) -> usize {
    h.server.requests().iter().filter(|r| is_summary_request(&r.body)).count()
}

fn notes_committed(h: &Harness) -> usize {
    let journal = reload_checked(&session_file(h.home.path()));
    journal.compactions().filter(|(_, r)| r.summary.is_some()).count()
}

#[tokio::test]
async fn after_a_long_loop_used_its_passes_every_later_turn_over_the_threshold_compacts() {
    for provider in PROVIDERS {
        let h = Harness::new().await;
        write_files(&h, 40);
        model(&h, 16_000, 40, Duration::ZERO);
        let mut engine = interactive(&h, provider, 16_000);
        let run = engine.turn("read every file f0.txt, f1.txt, ... in turn and report").await;
        assert_eq!(run.status, TurnStatus::Completed, "{provider}: {:?}", run.events.last());
        assert!(started(&run.events) <= 2, "{provider}: at most two passes in a turn");
        let mut before = pressure(&run.events).expect("a usage figure");
        for (k, text) in ["and the totals?", "thanks, one more check"].iter().enumerate() {
            let run = engine.turn(&format!("{text} {}", "please be thorough ".repeat(200))).await;
            assert_eq!(run.status, TurnStatus::Completed, "{provider} turn {k}");
            let (tokens, threshold) = before;
            if tokens >= threshold {
                assert!(
                    started(&run.events) >= 1,
                    "{provider}: turn {k} started at {tokens} over {threshold} and did not try \
                     to compact: {:?}",
                    run.events
                );
            }
            before = pressure(&run.events).expect("a usage figure");
        }
        engine.shutdown().await;
        assert!(notes_committed(&h) >= 2, "{provider}: the loop turn compacted");
        assert_no_orphans(&h);
    }
}

/// One loop of `calls` calls at `window`: summary requests ≤ notes committed + 1.
async fn every_summary_is_used(provider: &str, calls: usize, window: u64, delay: Duration) {
    let h = Harness::new().await;
    write_files(&h, calls);
    model(&h, window, calls, delay);
    let mut engine = interactive(&h, provider, window);
    let run = engine.turn("read every file in turn and report").await;
    let label = format!("{provider}, {calls} calls at {window}, summaries after {delay:?}");
    assert_eq!(run.status, TurnStatus::Completed, "{label}: {:?}", run.events.last());
    engine.shutdown().await;
    let (requests, notes) = (summary_requests(&h), notes_committed(&h));
    assert!(notes >= 1, "{label}: no note was committed");
    assert!(requests <= notes + 1, "{label}: {requests} summary requests for {notes} notes");
    assert_no_orphans(&h);
}

#[tokio::test]
async fn every_summary_request_ends_in_a_note_with_a_fast_summarizer() {
    for provider in PROVIDERS {
        for (calls, window) in [(40, 8_192), (40, 16_000), (200, 8_192), (200, 16_000)] {
            every_summary_is_used(provider, calls, window, Duration::ZERO).await;
        }
    }
}

#[tokio::test]
async fn every_summary_request_ends_in_a_note_with_a_slow_summarizer() {
    for provider in PROVIDERS {
        for (calls, window) in [(40, 8_192), (40, 16_000), (200, 16_000)] {
            every_summary_is_used(provider, calls, window, Duration::from_millis(1_500)).await;
        }
    }
}

#[tokio::test]
async fn compact_on_a_young_chat_sends_nothing_and_says_so_at_once() {
    for provider in PROVIDERS {
        let h = Harness::new().await;
        let mut engine = interactive(&h, provider, 200_000);
        for k in 0..4 {
            h.server.push(Reply::text(format!("answer {k}")));
            let run = engine.turn(&format!("question {k}")).await;
            assert_eq!(run.status, TurnStatus::Completed);
        }
        let sent = h.server.requests().len();
        let done = super::compaction::compact(&mut engine, None).await;
        let Event::CompactionRefused { reason } = &done else { panic!("{provider}: {done:?}") };
        assert!(reason.contains("would not make the conversation smaller"), "{reason}");
        assert_eq!(h.server.requests().len(), sent, "{provider}: no request was paid for");
        engine.shutdown().await;
    }
}
