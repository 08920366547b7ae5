//! Times `recall` on a long session (`scripts/bench-recall.sh`): loads the file read-only,
//! renders HEAD's view, times one walk for the live plan, then runs a query and an entry
//! lookup by id RUNS times each and prints the median and the slowest, with how many entries were in
//! scope.
//!
//! `cargo run --release -p codewhale-engine --example recall_timing -- FILE QUERY [RUNS]`
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use codewhale_engine::recall::{self, RecallContext};
use codewhale_engine::redact::Redactor;
use codewhale_journal::{load_read_only, render};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const USAGE: &str = "usage: recall_timing FILE QUERY [RUNS]";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(file), Some(query)) = (args.first(), args.get(1)) else { return Err(USAGE.into()) };
    let runs: usize = args.get(2).map_or(Ok(5), |s| s.parse()).map_err(|_| USAGE)?;
    let started = Instant::now();
    let journal = load_read_only(std::path::Path::new(file))?.journal;
    let view = render(&journal, journal.head_id().as_str());
    println!("open and render: {:.3}s", started.elapsed().as_secs_f64());
    let scope = recall::scope(&journal, &view);
    println!("entries in scope: {} of {}", scope.len(), journal.len());
    let redactor = Redactor::default();
    let ctx =
        RecallContext { journal: &journal, view: &view, room_chars: 1 << 20, redactor: &redactor };
    let time = |input: serde_json::Value| -> (Vec<Duration>, String) {
        let mut out = String::new();
        let times = (0..runs)
            .map(|_| {
                let t = Instant::now();
                out = recall::run(&ctx, &input).unwrap_or_else(|e| e);
                t.elapsed()
            })
            .collect();
        (times, out)
    };
    let report = |name: &str, mut times: Vec<Duration>| {
        times.sort();
        println!(
            "{name}: median {:.3}s, slowest {:.3}s ({runs} runs)",
            times[times.len() / 2].as_secs_f64(),
            times[times.len() - 1].as_secs_f64()
        );
    };
    // Finding the live plan walks the whole spine when the session has none (the worst case).
    let t = Instant::now();
    let head = journal.head_position();
    let found = codewhale_engine::plan::live_plan(&journal, head, None);
    println!("live plan walk: {:.3}s (plan: {})", t.elapsed().as_secs_f64(), found.plan.is_some());
    let (times, out) = time(serde_json::json!({"query": query}));
    report("query", times);
    println!("{}", out.lines().next().unwrap_or_default());
    let oldest = scope.first().map(|(p, _)| journal.id_at(*p).to_string()).unwrap_or_default();
    let (times, out) = time(serde_json::json!({"entry": oldest}));
    report("entry by id", times);
    println!("{}", out.lines().next().unwrap_or_default());
    Ok(())
}
