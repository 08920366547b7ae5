//! A manual compaction pass on long uncompacted sessions (10k, 50k and 100k entries): its
//! local work must stay linear in the session (docs/performance.md, "Compaction pass").
//!
//! Each sample copies a generated session, opens it (not timed), then times `/compact` from
//! the op to `CompactionFinished`: render, prune and cut planning, sizing the summary input,
//! the summary request to an in-process mock provider (an instant reply), the note, the
//! record, the survival check of the new view, the append and its sync. The mock's own work
//! is a few milliseconds of the total.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codewhale_engine::config::{Env, Overrides};
use codewhale_engine::protocol::{Event, Op};
use codewhale_engine::session::Resume;
use codewhale_engine::{Engine, EngineParams, FrontEnd};
use codewhale_journal::{
    AssistantPayload, Block, Entry, HeaderPayload, JournalFile, ToolResultPayload, UserPayload,
};
use codewhale_provider::test_support::{MockServer, Reply, TEST_API_KEY};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::json;

const SUMMARY: &str = "## Objective\nShip it.\n## User direction\nNone\n## Permissions and \
limits\nNone\n## Done\nNone\n## Changed files\nNone\n## Still running\nNone\n## Verification \
left\nNone\n## Open questions\nNone\n## Next action\nGo on.\n## Reference\nNone";

/// A session of about `n` entries shaped like coding work: a prompt, then calls with outputs of
/// 0.3–3 KB, then an answer; every entry with its stored count.
fn write_session(dir: &Path, ws: &Path, n: usize) -> PathBuf {
    let header = HeaderPayload::new(format!("bench-{n}"), ws.display().to_string());
    let mut file = JournalFile::create_session(dir, header).unwrap();
    let mut parent = file.journal().head_id().clone();
    let mut push = |file: &mut JournalFile, payload: codewhale_journal::Payload, t| {
        let e = Entry::new(Some(parent.clone()), payload).with_tokens(t);
        parent = e.id.clone();
        file.append(e).unwrap();
    };
    let line = "    let value = parse(&input)?; // a line of a source file\n";
    let mut i = 0;
    while i < n {
        push(&mut file, UserPayload::text(format!("task {i}: fix the next test")).into(), 12);
        for k in 0..3 {
            let id = format!("c{i}-{k}");
            let call = Block::tool_use(&id, "read_file", json!({"path": format!("src/f{k}.rs")}));
            push(&mut file, AssistantPayload::new(vec![call]).into(), 20);
            let out = line.repeat(5 + (i + k) % 50);
            let tokens = (out.len() / 4) as u32;
            push(&mut file, ToolResultPayload::new(id, out, false).into(), tokens);
        }
        push(&mut file, AssistantPayload::new(vec![Block::text("Fixed it.")]).into(), 6);
        i += 8;
    }
    let path = file.path().to_owned();
    file.close().unwrap();
    path
}

fn bench(c: &mut Criterion) {
    codewhale_engine::tokens::count("warm");
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let server = runtime.block_on(MockServer::start()).unwrap();
    // A long session's summary input is cut into chunks: every summary request is answered.
    server.respond_with(|_| Reply::text(SUMMARY));
    let data = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(tempfile::tempdir().unwrap().keep()).unwrap();
    let mut group = c.benchmark_group("compaction_pass");
    group.sample_size(10).measurement_time(Duration::from_secs(30));
    for n in [10_000usize, 50_000, 100_000] {
        let source = write_session(data.path(), &ws, n);
        group.bench_with_input(BenchmarkId::new("manual", n), &n, |b, _| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let home = tempfile::tempdir().unwrap();
                    let sessions = home.path().join("sessions");
                    std::fs::create_dir_all(&sessions).unwrap();
                    std::fs::copy(&source, sessions.join(source.file_name().unwrap())).unwrap();
                    total += runtime.block_on(one_pass(home.path(), &ws, &server, n));
                }
                total
            })
        });
    }
    group.finish();
}

/// Opens the session (not timed) and times one manual pass on it.
async fn one_pass(home: &Path, ws: &Path, server: &MockServer, n: usize) -> Duration {
    let (handle, mut events) = Engine::spawn(EngineParams {
        home: home.to_path_buf(),
        workspace: ws.to_path_buf(),
        overrides: Overrides {
            provider: Some("openai".into()),
            model: Some("gpt-4.1".into()),
            base_url: Some(server.openai_base_url()),
            context_window: Some(200_000),
            approval: None,
        },
        env: Env { openai_api_key: Some(TEST_API_KEY.into()), ..Env::default() },
        resume: Resume::Id(format!("bench-{n}")),
        interactive: false,
        retry: None,
        front_end: FrontEnd::Cli,
        home_hint: None,
        sandbox_helper: None,
    })
    .unwrap();
    let start = Instant::now();
    handle.submit(Op::Compact { focus: None });
    let mut elapsed = None;
    while let Some(msg) = events.recv().await {
        match msg.event {
            Event::CompactionFinished { .. } => {
                elapsed = Some(start.elapsed());
                handle.submit(Op::Shutdown);
            }
            Event::CompactionFailed { reason } | Event::CompactionRefused { reason } => {
                panic!("the pass did not compact: {reason}")
            }
            Event::ShutdownComplete => break,
            _ => {}
        }
    }
    elapsed.expect("the pass finished")
}

criterion_group!(benches, bench);
criterion_main!(benches);
