//! Terminal UI benchmarks: what one keystroke costs in the `@` file picker over a large tree,
//! and laying out a long composer draft.
//!
//! `cargo bench -p codewhale-tui --bench ui` (or `scripts/bench.sh -p codewhale-tui`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use codewhale_tui::tui::composer::Composer;
use codewhale_tui::tui::mentions::{best_matches, index, SHOWN};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

/// `n` paths shaped like a large monorepo's: nested directories, varied names.
fn paths(n: usize) -> Vec<String> {
    let areas = ["crates", "services", "web/src", "docs", "tools", "vendor/lib"];
    let names = ["parser", "lexer", "server", "client", "config", "render", "store", "auth"];
    (0..n)
        .map(|i| {
            let area = areas[i % areas.len()];
            let name = names[(i / 7) % names.len()];
            format!("{area}/module_{}/{name}_{i}/{}.rs", i % 97, names[i % names.len()])
        })
        .collect()
}

fn picker(c: &mut Criterion) {
    let mut group = c.benchmark_group("mentions");
    let tree = paths(100_000);
    for query in ["", "lex", "srvcfg", "crates/module_42/parser"] {
        group.bench_with_input(BenchmarkId::new("match_100k", query), &query, |b, q| {
            b.iter(|| best_matches(&tree, q, SHOWN))
        });
    }
    // The first scan: a real directory tree of 20,000 files.
    let dir = tempfile::tempdir().unwrap();
    for p in paths(20_000) {
        let path = dir.path().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x").unwrap();
    }
    group.sample_size(10);
    group.bench_function("index_20k_files", |b| b.iter(|| index(dir.path())));
    group.finish();
}

fn composer(c: &mut Criterion) {
    let mut draft = Composer::default();
    draft.insert_str(&"漢字 and words, mixed with emoji 👩‍💻 and more text. ".repeat(400));
    c.bench_function("composer_layout_20k_chars", |b| b.iter(|| draft.layout(100).rows.len()));
}

criterion_group!(benches, picker, composer);
criterion_main!(benches);
