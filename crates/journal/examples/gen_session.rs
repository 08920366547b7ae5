//! Writes a long generated session (the shape the journal benchmarks open), for measuring the
//! command line on it (`scripts/bench-open.sh`).
//!
//! `cargo run --release -p codewhale-journal --example gen_session -- FILE SESSION_ID CWD
//! MEGABYTES ENTRIES [COMPACT_EVERY]`
#![allow(clippy::unwrap_used)]

#[path = "../benches/support/gen.rs"]
mod gen;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const USAGE: &str = "usage: gen_session FILE SESSION_ID CWD MEGABYTES ENTRIES [COMPACT_EVERY]";
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 5 {
        return Err(USAGE.into());
    }
    let number =
        |s: &str| s.parse::<usize>().map_err(|_| format!("{s:?} is not a number; {USAGE}"));
    let shape = gen::Shape {
        session_id: &args[1],
        cwd: &args[2],
        bytes: number(&args[3])? * 1_000_000,
        entries: number(&args[4])?,
        compact_every: args.get(5).map(|s| number(s)).transpose()?,
    };
    gen::write_session(std::path::Path::new(&args[0]), &shape);
    Ok(())
}
