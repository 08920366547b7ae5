//! Opening a large session and listing many: the figures in docs/performance.md (## Journal).
//!
//! Generates, into a temp dir, a 200 MB / 100,000-entry journal shaped like a long coding
//! session (user prompts, assistant responses with parallel tool calls, tool outputs of
//! realistic and varied size with escapes and non-ASCII text), once without compactions (the
//! worst case: the whole history is in the view) and once with a summary compaction every 5,000
//! entries, plus 1,000 small sessions for listing. Then measures:
//! - `open_200mb_{no_compaction,compacted}/read_only+render`: `load_read_only` + `render(head)`
//!   (what `context` and `journal check` do);
//! - `open_200mb_{no_compaction,compacted}/locked+render`: `JournalFile::open` (lock, tail
//!   check, writer thread) + `render(head)`, what resuming a session does.
//!   Closing and dropping the session are not timed;
//! - `list_1000/warm` and `list_1000/cold`: `list_sessions` over 1,000 sessions of 10–200
//!   entries, with the entry-count cache present / deleted.
//!
//! `CODEWHALE_BENCH_DIR=DIR` keeps the generated files in DIR and reuses them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use codewhale_journal::{
    list_sessions, load_read_only, render, AssistantPayload, Block, CompactionPath,
    CompactionPayload, Covers, Entry, EntryId, HeaderPayload, JournalFile, ToolResultPayload,
    Trigger, UserPayload,
};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::json;

const TARGET_BYTES: usize = 200 * 1024 * 1024;
const TARGET_ENTRIES: usize = 100_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Tool output that looks like source files, test logs and listings.
fn tool_output(rng: &mut Rng, bytes: usize) -> String {
    const LINES: &[&str] = &[
        "    let value = parse(&input)?; // \"quoted\" path\\to\\file",
        "test journal::load::torn_tail ... ok",
        "error[E0308]: mismatched types — expected `String`, found `&str`",
        "drwxr-xr-x  5 dev dev 4096 Nov 29 18:00 src",
        "\tfn main() { println!(\"héllo wörld\"); }",
        "{\"level\":\"info\",\"msg\":\"request finished\",\"ms\":12}",
        "    assert_eq!(left, right, \"values differ at index {i}\");",
    ];
    let mut out = String::with_capacity(bytes + 80);
    while out.len() < bytes {
        out.push_str(LINES[rng.below(LINES.len() as u64) as usize]);
        out.push('\n');
    }
    out
}

fn output_size(rng: &mut Rng, scale: f64) -> usize {
    let base = match rng.below(100) {
        0..=69 => 500 + rng.below(2_500),
        70..=94 => 3_000 + rng.below(17_000),
        _ => 20_000 + rng.below(40_000),
    };
    (base as f64 * scale) as usize
}

/// Writes a long session; returns its path.
fn write_session(dir: &Path, compact_every: Option<usize>) -> std::path::PathBuf {
    let path = dir.join(format!("big-{}.jsonl", compact_every.unwrap_or(0)));
    if path.exists() {
        return path;
    }
    let mut out = BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let header = Entry::new(None, HeaderPayload::new("bench", "/home/dev/project"));
    let root = header.id.clone();
    let mut head = header.id.clone();
    let mut written = 0usize;
    let mut count = 0usize;
    let mut first_user: Option<EntryId> = None;
    let emit =
        |out: &mut BufWriter<std::fs::File>, e: &Entry, written: &mut usize, count: &mut usize| {
            let line = e.to_line().unwrap();
            out.write_all(line.as_bytes()).unwrap();
            out.write_all(b"\n").unwrap();
            *written += line.len() + 1;
            *count += 1;
        };
    emit(&mut out, &header, &mut written, &mut count);
    let mut call = 0u64;
    while count < TARGET_ENTRIES {
        let user = Entry::new(
            Some(head.clone()),
            UserPayload::text(format!(
                "Please look at module {} and make the failing test pass; keep the public API.",
                rng.below(500)
            )),
        )
        .with_tokens(20);
        first_user.get_or_insert(user.id.clone());
        head = user.id.clone();
        emit(&mut out, &user, &mut written, &mut count);
        for _round in 0..(1 + rng.below(6)) {
            let calls: Vec<String> = (0..(1 + rng.below(3)))
                .map(|_| {
                    call += 1;
                    format!("toolu_{call:012}")
                })
                .collect();
            let mut blocks = vec![Block::text("Let me check the relevant files first.")];
            blocks.extend(calls.iter().map(|c| {
                Block::tool_use(
                    c.clone(),
                    "read_file",
                    json!({"path": format!("src/module_{}.rs", c.len())}),
                )
            }));
            let a = Entry::new(Some(head.clone()), AssistantPayload::new(blocks)).with_tokens(60);
            head = a.id.clone();
            emit(&mut out, &a, &mut written, &mut count);
            for c in &calls {
                // Scale outputs so that the file reaches ~200 MB at ~100k entries.
                let per_entry = TARGET_BYTES.saturating_sub(written) as f64
                    / TARGET_ENTRIES.saturating_sub(count).max(1) as f64;
                let scale = ((per_entry - 300.0) / 3_400.0).clamp(0.1, 3.0);
                let size = output_size(&mut rng, scale);
                let r = Entry::new(
                    Some(head.clone()),
                    ToolResultPayload::new(c.clone(), tool_output(&mut rng, size), false),
                )
                .with_tokens((size / 4) as u32);
                head = r.id.clone();
                emit(&mut out, &r, &mut written, &mut count);
            }
        }
        let done = Entry::new(
            Some(head.clone()),
            AssistantPayload::new(vec![Block::text(
                "Done: the test passes now. I changed the loop bound and added a regression test.",
            )]),
        )
        .with_tokens(25);
        head = done.id.clone();
        emit(&mut out, &done, &mut written, &mut count);
        if let (Some(every), Some(first)) = (compact_every, &first_user) {
            if count % every < 20 && count > every {
                let mut c = CompactionPayload::new(CompactionPath::Summary, Trigger::Auto);
                c.summary = Some("## Objective\nKeep the tests green.\n".repeat(100));
                c.note = format!("Codewhale handoff note.\n{}", c.summary.clone().unwrap());
                c.covers = Some(Covers::new(first.clone(), head.clone(), count as u64));
                let rec = Entry::new(Some(root.clone()), c).with_tokens(900);
                emit(&mut out, &rec, &mut written, &mut count);
            }
        }
    }
    out.flush().unwrap();
    drop(out);
    println!("generated {}: {count} entries, {:.1} MB", path.display(), written as f64 / 1e6);
    path
}

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
        let path = write_session(dir, compact_every);
        let name = match compact_every {
            None => "open_200mb_no_compaction",
            Some(_) => "open_200mb_compacted",
        };
        let mut g = c.benchmark_group(name);
        g.sample_size(10).measurement_time(Duration::from_secs(30));
        // Timed: open + render. Not timed: closing and dropping the session.
        g.bench_function("read_only+render", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let t = Instant::now();
                    let loaded = load_read_only(&path).unwrap();
                    let view = render(&loaded.journal, loaded.journal.head_id().as_str());
                    total += t.elapsed();
                    drop((view, loaded));
                }
                total
            })
        });
        g.bench_function("locked+render", |b| {
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
