//! Opening a large session and listing many: the figures in docs/performance.md (## Journal).
//!
//! Generates, into a temp dir, a 200 MB / 100,000-entry journal shaped like a long coding
//! session (user prompts, assistant responses with parallel tool calls, tool outputs of
//! realistic and varied size with escapes and non-ASCII text), once without compactions (the
//! worst case: the whole history is in the view) and once with a summary compaction every 5,000
//! entries, plus 1,000 small sessions for listing. Then measures:
//! - `open_200mb_{no_compaction,compacted}/read_only+render/full_scan`: `load_read_only` +
//!   `render(head)` with no index sidecar (the first open of a file: every line read);
//! - `.../read_only+render/indexed`: the same through the sidecar (what `context` does);
//! - `.../locked+render/indexed`: `JournalFile::open` (lock, tail check, writer thread) +
//!   `render(head)`, what resuming a session does.
//!   Closing and dropping the session are not timed;
//! - `list_1000/warm` and `list_1000/cold`: `list_sessions` over 1,000 sessions of 10–200
//!   entries, with the entry-count cache present / deleted.
//!
//! `CODEWHALE_BENCH_DIR=DIR` keeps the generated files in DIR and reuses them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::time::{Duration, Instant};

use codewhale_journal::{
    list_sessions, load_read_only, render, Entry, HeaderPayload, JournalFile, ToolResultPayload,
    UserPayload,
};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

#[path = "support/gen.rs"]
mod gen;

use gen::{tool_output, write_session, Rng, Shape};

fn write_many(dir: &Path, n: usize) {
    let mut rng = Rng(42);
    for i in 0..n {
        let id = format!("session-{i:04}");
        let mut f = JournalFile::create_session(
            dir,
            HeaderPayload::new(id, format!("/home/dev/p{}", i % 7)),
        )
        .unwrap();
        for _ in 0..(5 + rng.below(100)) {
            let head = f.journal().head_id().clone();
            f.append(Entry::new(Some(head), UserPayload::text("a prompt about the code"))).unwrap();
            let head = f.journal().head_id().clone();
            f.append(Entry::new(
                Some(head),
                ToolResultPayload::new("t", tool_output(&mut rng, 600), false),
            ))
            .unwrap();
        }
        f.close().unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    // CODEWHALE_BENCH_DIR keeps the generated journals (and reuses them) for profiling.
    let keep = std::env::var_os("CODEWHALE_BENCH_DIR").map(std::path::PathBuf::from);
    let dir = keep.as_deref().unwrap_or(tmp.path());
    std::fs::create_dir_all(dir).unwrap();
    for compact_every in [None, Some(5_000)] {
        let path = dir.join(format!("big-{}.jsonl", compact_every.unwrap_or(0)));
        if !path.exists() {
            let shape = Shape {
                session_id: "bench",
                cwd: "/home/dev/project",
                bytes: 200 << 20,
                entries: 100_000,
                compact_every,
            };
            write_session(&path, &shape);
        }
        let index = codewhale_journal::index_path(&path);
        let name = match compact_every {
            None => "open_200mb_no_compaction",
            Some(_) => "open_200mb_compacted",
        };
        let mut g = c.benchmark_group(name);
        g.sample_size(10).measurement_time(Duration::from_secs(30));
        // Timed: open + render. Not timed: removing the sidecar, closing and dropping.
        let (path_ref, index_ref) = (&path, &index);
        let open_render = |without_index: bool| {
            let (path, index) = (path_ref, index_ref);
            move |b: &mut criterion::Bencher<'_>| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        if without_index {
                            let _ = std::fs::remove_file(index);
                        }
                        let t = Instant::now();
                        let loaded = load_read_only(path).unwrap();
                        let view = render(&loaded.journal, loaded.journal.head_id().as_str());
                        total += t.elapsed();
                        drop((view, loaded));
                    }
                    total
                })
            }
        };
        // The first open of a file without a sidecar: every line read and validated (the
        // sidecar it writes is part of the time).
        g.bench_function("read_only+render/full_scan", open_render(true));
        // Every later open: the sidecar, the view's lines, nothing else.
        g.bench_function("read_only+render/indexed", open_render(false));
        g.bench_function("locked+render/indexed", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let t = Instant::now();
                    let (f, _) = JournalFile::open(&path).unwrap();
                    let view = render(f.journal(), f.journal().head_id().as_str());
                    total += t.elapsed();
                    drop(view);
                    f.close().unwrap();
                }
                total
            })
        });
        g.finish();
        if keep.is_none() {
            std::fs::remove_file(&path).unwrap();
            let _ = std::fs::remove_file(&index);
        }
    }

    let many = dir.join("sessions");
    if !many.exists() {
        write_many(&many, 1_000);
    }
    let mut g = c.benchmark_group("list_1000");
    g.sample_size(20).measurement_time(Duration::from_secs(10));
    g.bench_function("warm", |b| b.iter(|| list_sessions(&many).unwrap().sessions.len()));
    g.bench_function("cold", |b| {
        b.iter_batched(
            || {
                let _ = std::fs::remove_file(many.join(".index.json"));
            },
            |_| list_sessions(&many).unwrap().sessions.len(),
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
