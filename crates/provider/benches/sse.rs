//! The SSE parser next to `eventsource-stream` (STYLE 18: a hand-written parser stays only
//! where a benchmark shows it pays). Both parse the same bodies, cut into the same chunks,
//! and must agree on every event before anything is timed.
//!
//! Bodies: every recorded stream in `fixtures/sse/` repeated to about 4 MB (small deltas, as a
//! long reply streams them), and one tool call whose arguments hold a 2 MB file in one `data`
//! line (the case the line bound exists for). Chunks of 1,400 bytes stand for TCP segments;
//! 16 KiB for what a busy connection delivers at once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::convert::Infallible;

use bytes::Bytes;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use eventsource_stream::Eventsource as _;
use futures::StreamExt as _;

use codewhale_provider::test_support::sse::{SseEvent, SseParser};

fn recorded() -> Vec<u8> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/sse");
    let mut one = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sse"))
        .collect();
    names.sort();
    for path in names {
        one.extend(std::fs::read(path).unwrap());
        one.extend_from_slice(b"\n\n");
    }
    one.repeat((4 << 20) / one.len() + 1)
}

fn big_line() -> Vec<u8> {
    let file = "fn main() { println!(\\\"hello\\\"); }\\n".repeat((2 << 20) / 36);
    format!(
        "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":1,\
         \"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"{file}\"}}}}\n\n"
    )
    .into_bytes()
}

fn ours(chunks: &[Bytes]) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    for chunk in chunks {
        parser.feed(chunk, &mut out).unwrap();
    }
    parser.finish(&mut out).unwrap();
    out
}

fn theirs(chunks: &[Bytes]) -> Vec<SseEvent> {
    let stream = futures::stream::iter(chunks.iter().cloned().map(Ok::<_, Infallible>));
    futures::executor::block_on(
        stream
            .eventsource()
            .map(|e| {
                let e = e.unwrap();
                // The crate names every unnamed event "message"; ours leaves it unnamed.
                let event = (e.event != "message").then_some(e.event);
                SseEvent { event, data: e.data }
            })
            .collect(),
    )
}

fn bench(c: &mut Criterion) {
    let bodies = [("recorded_4mb", recorded()), ("one_2mb_line", big_line())];
    for (name, body) in &bodies {
        for size in [1400, 16 * 1024] {
            let chunks: Vec<Bytes> = body.chunks(size).map(Bytes::copy_from_slice).collect();
            let (a, b) = (ours(&chunks), theirs(&chunks));
            assert_eq!(a.len(), b.len(), "{name}: the two parsers disagree on the events");
            assert!(a == b, "{name}: the two parsers disagree on an event");
            let mut group = c.benchmark_group(format!("sse_{name}_{size}"));
            group.throughput(Throughput::Bytes(body.len() as u64));
            group.sample_size(20);
            group.bench_function("codewhale", |bench| bench.iter(|| ours(black_box(&chunks))));
            group.bench_function("eventsource_stream", |bench| {
                bench.iter(|| theirs(black_box(&chunks)))
            });
            group.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
