//! Background compaction against an in-process mock model, for `scripts/bench.sh background`:
//! `background [TURNS] [THINK_MS] [SUMMARY_MS] [openai|anthropic] [RUNS]` (default 16 turns,
//! 2,500 ms between turns, a 3,000 ms summary reply, openai, 3 sessions per setting).
//!
//! The same scripted session runs `RUNS` times with `compaction.background` on, then off: a 20,000-token
//! window (threshold 12,000, early mark 9,000), each reply about 1,500 tokens of prose at full
//! speed, so the session crosses the threshold twice; summary requests are answered with a
//! ten-heading note after `SUMMARY_MS`. Between turns the user "reads and types" for `THINK_MS`
//! (not counted in any turn's time). Prints, per run, the median ordinary turn, each crossing
//! turn (a turn that wrote a compaction record) and its ratio to the median, and the summary
//! requests with their prompt tokens (reported by the mock: the request's o200k size) — the
//! difference between the two settings is what background compaction costs in tokens. A last
//! line per setting gives the medians over all its sessions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codewhale_engine::config::{Env, Overrides};
use codewhale_engine::protocol::{Event, Op};
use codewhale_engine::session::Resume;
use codewhale_engine::{ApprovalMode, Engine, EngineParams, FrontEnd};
use codewhale_provider::test_support::{MockServer, Reply, TEST_API_KEY};

const SUMMARY: &str = "## Objective\nKeep the parser tests green.\n## User direction\nNone\n\
## Permissions and limits\nNone\n## Done\nRead the sources.\n## Changed files\nNone\n\
## Still running\nNone\n## Verification left\nRun cargo test.\n## Open questions\nNone\n\
## Next action\nContinue with the next step.\n## Reference\nsrc/lib.rs";

struct Args {
    turns: usize,
    think: Duration,
    summary: Duration,
    provider: String,
    runs: usize,
}

/// One session's figures.
struct Figures {
    ordinary: Vec<f64>,
    crossing: Vec<f64>,
    summaries: usize,
    summary_tokens: u64,
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

#[tokio::main]
async fn main() {
    let a: Vec<String> = std::env::args().collect();
    let num = |i: usize, default: u64| a.get(i).and_then(|v| v.parse().ok()).unwrap_or(default);
    let args = Args {
        turns: num(1, 16) as usize,
        think: Duration::from_millis(num(2, 2_500)),
        summary: Duration::from_millis(num(3, 3_000)),
        provider: a.get(4).cloned().unwrap_or_else(|| "openai".into()),
        runs: num(5, 3).max(1) as usize,
    };
    codewhale_engine::tokens::count("warm");
    for background in [true, false] {
        let mut all = Vec::new();
        for _ in 0..args.runs {
            all.push(run(&args, background).await);
        }
        let mut ordinary: Vec<f64> = all.iter().flat_map(|f| f.ordinary.clone()).collect();
        let mut crossing: Vec<f64> = all.iter().flat_map(|f| f.crossing.clone()).collect();
        let worst = crossing.iter().copied().fold(0.0, f64::max);
        let (ordinary, crossing_median) = (median(&mut ordinary), median(&mut crossing));
        let sessions = all.len() as f64;
        println!(
            "summary background={background} sessions={} crossings={} \
             median_ordinary_ms={ordinary:.1} median_crossing_ms={crossing_median:.1} \
             ratio={:.2}x slowest_crossing_ms={worst:.1} summary_requests_per_session={:.1} \
             summary_prompt_tokens_per_session={:.0}",
            all.len(),
            crossing.len(),
            crossing_median / ordinary.max(0.001),
            all.iter().map(|f| f.summaries).sum::<usize>() as f64 / sessions,
            all.iter().map(|f| f.summary_tokens).sum::<u64>() as f64 / sessions,
        );
    }
}

async fn run(args: &Args, background: bool) -> Figures {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    if !background {
        std::fs::write(home.path().join("config.toml"), "[compaction]\nbackground = false\n")
            .unwrap();
    }
    let server = MockServer::start().await.unwrap();
    let summary_tokens = Arc::new(AtomicU64::new(0));
    let counted = summary_tokens.clone();
    let delay = args.summary;
    let answer = format!("answer: {}", "lorem ipsum dolor sit amet ".repeat(300));
    server.respond_with(move |r| {
        let tokens = u64::from(codewhale_engine::tokens::count(&r.raw));
        if r.raw.contains("You are writing a handoff note") {
            counted.fetch_add(tokens, Ordering::SeqCst);
            return Reply::text(SUMMARY).with_usage(tokens, 300).after(delay);
        }
        Reply::text(answer.clone()).with_usage(tokens, 1_500)
    });
    let (model, base_url) = match args.provider.as_str() {
        "anthropic" => ("claude-sonnet-4-5", server.anthropic_base_url()),
        _ => ("gpt-4.1", server.openai_base_url()),
    };
    let params = EngineParams {
        home: home.path().to_path_buf(),
        workspace: ws.path().to_path_buf(),
        overrides: Overrides {
            provider: Some(args.provider.clone()),
            model: Some(model.into()),
            base_url: Some(base_url),
            context_window: Some(20_000),
            approval: Some(ApprovalMode::Full),
        },
        env: Env {
            openai_api_key: Some(TEST_API_KEY.into()),
            anthropic_api_key: Some(TEST_API_KEY.into()),
            ..Env::default()
        },
        resume: Resume::New,
        interactive: false,
        retry: None,
        front_end: FrontEnd::Tui,
        home_hint: None,
        sandbox_helper: None,
    };
    let (handle, mut events) = Engine::spawn(params).unwrap();
    let mut ordinary = Vec::new();
    let mut crossing = Vec::new();
    // Whether the note was ready before the turn began (the event comes while the user types).
    let mut ready = false;
    for k in 0..args.turns {
        let start = Instant::now();
        handle.submit(Op::UserInput {
            text: format!("question {k}"),
            attachments: Vec::new(),
            images: Vec::new(),
        });
        let (mut compacted, mut started, mut ready_at_start) = (None, false, false);
        while let Some(msg) = events.recv().await {
            match msg.event {
                Event::BackgroundNote { state } => {
                    ready = state == Some(codewhale_engine::protocol::BackgroundState::Ready)
                }
                Event::TurnStarted if !started => {
                    started = true;
                    ready_at_start = ready;
                }
                Event::CompactionFinished { background, .. } => compacted = Some(background),
                Event::TurnFinished { .. } => break,
                _ => {}
            }
        }
        let ms = start.elapsed().as_secs_f64() * 1_000.0;
        match compacted {
            Some(from_background) => crossing.push((k, ms, from_background, ready_at_start)),
            None => ordinary.push(ms),
        }
        tokio::time::sleep(args.think).await;
    }
    handle.submit(Op::Shutdown);
    while let Some(msg) = events.recv().await {
        if matches!(msg.event, Event::ShutdownComplete) {
            break;
        }
    }
    let median = median(&mut ordinary);
    let prompts: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.raw.contains("You are writing a handoff note"))
        .map(|r| codewhale_engine::tokens::count(&r.raw).to_string())
        .collect();
    let summaries = prompts.len();
    let crossings: Vec<String> = crossing
        .iter()
        .map(|(k, ms, bg, ready)| {
            let how = match (bg, ready) {
                (true, true) => "background, ready before the turn",
                (true, false) => "background, waited for",
                _ => "foreground",
            };
            format!("turn{k}={ms:.1}ms({how},{:.2}x)", ms / median.max(0.001))
        })
        .collect();
    println!(
        "background={background} provider={} turns={} think_ms={} summary_ms={} \
         median_ordinary_ms={median:.1} crossings=[{}] summary_requests={summaries} \
         summary_prompt_tokens={} each=[{}]",
        args.provider,
        args.turns,
        args.think.as_millis(),
        args.summary.as_millis(),
        crossings.join(" "),
        summary_tokens.load(Ordering::SeqCst),
        prompts.join(" ")
    );
    Figures {
        ordinary,
        crossing: crossing.iter().map(|c| c.1).collect(),
        summaries,
        summary_tokens: summary_tokens.load(Ordering::SeqCst),
    }
}
