//! Times `recall` on a long session (`scripts/bench-recall.sh`): loads the file read-only,
//! renders HEAD's view, times one walk for the live plan, then runs a query and an entry
//! lookup by id RUNS times each and prints the median and the slowest (and the CPU time per
//! run), with how many entries were in scope.
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
    let scope = recall::scope(&journal, &view, None);
    println!("entries in scope: {} of {}", scope.len(), journal.len());
    let redactor = Redactor::default();
    let ctx = RecallContext {
        journal: &journal,
        view: &view,
        room_chars: 1 << 20,
        redactor: &redactor,
        trim: None,
    };
    let time = |input: serde_json::Value| -> (Vec<Duration>, f64, String) {
        let mut out = String::new();
        let cpu_before = cpu_seconds();
        let times = (0..runs)
            .map(|_| {
                let t = Instant::now();
                out = recall::run(&ctx, &input).unwrap_or_else(|e| e);
                t.elapsed()
            })
            .collect();
        let cpu = (cpu_seconds() - cpu_before) / runs as f64;
        (times, cpu, out)
    };
    let report = |name: &str, mut times: Vec<Duration>, cpu: f64| {
        times.sort();
        println!(
            "{name}: median {:.3}s, slowest {:.3}s ({runs} runs; {cpu:.3}s of CPU per run, all \
             threads)",
            times[times.len() / 2].as_secs_f64(),
            times[times.len() - 1].as_secs_f64()
        );
    };
    // Finding the live plan walks the whole spine when the session has none (the worst case).
    let t = Instant::now();
    let head = journal.head_position();
    let found = codewhale_engine::plan::live_plan(&journal, head, None);
    println!("live plan walk: {:.3}s (plan: {})", t.elapsed().as_secs_f64(), found.plan.is_some());
    let (times, cpu, out) = time(serde_json::json!({"query": query}));
    report("query", times, cpu);
    println!("{}", out.lines().next().unwrap_or_default());
    let oldest = scope.first().map(|(p, _)| journal.id_at(*p).to_string()).unwrap_or_default();
    let (times, cpu, out) = time(serde_json::json!({"entry": oldest}));
    report("entry by id", times, cpu);
    println!("{}", out.lines().next().unwrap_or_default());
    Ok(())
}

/// The CPU time this process has used (user and system, every thread), from
/// `/proc/self/stat` in clock ticks of 10 ms; 0 where that file does not exist. On a loaded
/// machine it says what a run costs apart from waiting for a core.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // The fields after the command name (which is in parentheses and may hold spaces).
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime: fields 14 and 15 of the line, 11 and 12 (from 0) after the name.
    (ticks(11) + ticks(12)) / 100.0
}
