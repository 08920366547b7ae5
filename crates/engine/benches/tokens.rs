//! Token counting throughput on prose, code, JSON and pathological inputs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr
)]

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

fn prose() -> String {
    "The engine keeps running sums so that every budget check costs the same, whether the \
     session holds ten entries or a hundred thousand. Counting happens once per entry. "
        .repeat(700)
}

fn code() -> String {
    "fn render(journal: &Journal, head: &str) -> View {\n    let spine = journal.spine(head);\n    \
     for (i, entry) in spine.iter().enumerate() {\n        if entry.is_visible() { out.push(i); }\n    }\n}\n"
        .repeat(500)
}

fn json() -> String {
    let item = serde_json::json!({"id": "01a228ea-7e2b-7749", "kind": "tool_result",
        "payload": {"tool_use_id": "call_1", "content": "src/lib.rs:12:pub fn x()", "is_error": false},
        "tokens": 42});
    let items: Vec<_> = (0..600).map(|_| item.clone()).collect();
    serde_json::to_string(&items).unwrap()
}

fn bench(c: &mut Criterion) {
    codewhale_engine::tokens::count("warm");
    let inputs = [
        ("prose", prose()),
        ("code", code()),
        ("json", json()),
        ("spaces_1m", " ".repeat(1_000_000)),
        ("unbroken_1m", "a".repeat(1_000_000)),
        ("base64_1m", {
            let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            (0..1_000_000usize).map(|i| alphabet[(i * 7919 + i / 13) % 64] as char).collect()
        }),
    ];
    let mut group = c.benchmark_group("count");
    group.sample_size(10);
    for (name, text) in &inputs {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group
            .bench_function(*name, |b| b.iter(|| codewhale_engine::tokens::count(black_box(text))));
    }
    group.finish();

    // The two exact o200k encoders side by side, each used directly on the whole text:
    // tiktoken-rs (its own `encode_ordinary`) and GitHub's `bpe-openai` (`count`). tiktoken-rs
    // is skipped on the pathological inputs, where it is quadratic or panics whole — which is
    // why Codewhale once fed it pieces.
    let tiktoken = tiktoken_rs::o200k_base().unwrap();
    let bpe = bpe_openai::o200k_base();
    let mut group = c.benchmark_group("encoder");
    group.sample_size(10);
    for (name, text) in &inputs {
        group.throughput(Throughput::Bytes(text.len() as u64));
        if matches!(*name, "prose" | "code" | "json") {
            group.bench_function(format!("tiktoken_rs/{name}"), |b| {
                b.iter(|| tiktoken.encode_ordinary(black_box(text)).len())
            });
        }
        group.bench_function(format!("bpe_openai/{name}"), |b| {
            b.iter(|| bpe.count(black_box(text.as_str())))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
