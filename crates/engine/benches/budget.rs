//! The per-request budget check (`turn::before_request`) on sessions of 100 and 100,000
//! entries: it must not grow with the session.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr
)]

use codewhale_engine::compaction::compactor::Compactor;
use codewhale_engine::config::{Config, ResolvedProvider};
use codewhale_engine::events::{self, ApprovalGate};
use codewhale_engine::protocol::SubmissionId;
use codewhale_engine::session::{Resume, Session, SessionParams};
use codewhale_engine::turn::{before_request, TurnCtx};
use codewhale_journal::{AssistantPayload, Block, Entry, HeaderPayload, JournalFile, UserPayload};
use codewhale_provider::{CancellationToken, ProviderKind};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

/// A session file of `n` entries (alternating user/assistant, each with its stored count).
fn session_of(home: &std::path::Path, ws: &std::path::Path, n: usize) {
    let header = HeaderPayload::new(format!("bench-{n}"), ws.display().to_string());
    let mut file = JournalFile::create_session(&home.join("sessions"), header).unwrap();
    let mut parent = file.journal().head_id().clone();
    for i in 0..n {
        let entry = if i % 2 == 0 {
            Entry::new(Some(parent), UserPayload::text(format!("question {i}")))
        } else {
            Entry::new(
                Some(parent),
                AssistantPayload::new(vec![Block::text(format!("answer {i}"))]),
            )
        };
        let entry = entry.with_tokens(8);
        parent = entry.id.clone();
        file.append(entry).unwrap();
    }
    file.close().unwrap();
}

fn bench(c: &mut Criterion) {
    codewhale_engine::tokens::count("warm");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut group = c.benchmark_group("before_request");
    for n in [100usize, 100_000] {
        let home = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(tempfile::tempdir().unwrap().keep()).unwrap();
        session_of(home.path(), &ws, n);
        let mut session = runtime.block_on(async {
            Session::open(SessionParams {
                home: home.path().to_path_buf(),
                workspace: ws.clone(),
                config: Config { context_window: Some(10_000_000), ..Config::default() },
                provider: ResolvedProvider {
                    kind: ProviderKind::OpenAi,
                    model: "gpt-4.1".into(),
                    base_url: "http://127.0.0.1:9/v1".into(),
                    api_key: None,
                    server: None,
                },
                model_explicit: true,
                resume: Resume::Id(format!("bench-{n}")),
                retry: None,
                front_end: codewhale_engine::FrontEnd::Cli,
                home_hint: None,
                sandbox_helper: None,
            })
            .unwrap()
        });
        let (sink, _rx) = events::channel();
        let gate = ApprovalGate::new(false);
        let mut compactor = Compactor::open(&session);
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                runtime.block_on(async {
                    let mut ctx = TurnCtx::new(
                        &mut session,
                        &mut compactor,
                        &sink,
                        &gate,
                        SubmissionId(1),
                        CancellationToken::new(),
                    );
                    before_request(&mut ctx).await.unwrap();
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
