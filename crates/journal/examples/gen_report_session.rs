//! Writes the session `context --json`'s memory is measured on (`benches/support/report_shape.rs`:
//! turns of a user text, an assistant text with one `read_file` call, its 1–32 KiB result and a
//! short answer; one summary covering all but the last 40 entries; a last user message).
//!
//! `cargo run --release -p codewhale-journal --example gen_report_session -- FILE SESSION_ID CWD
//! [ENTRIES] [SEED] [counts|no-counts]` (default 100,000 entries, seed 50, counts).
#![allow(clippy::print_stderr)]

#[path = "../benches/support/report_shape.rs"]
mod report_shape;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const USAGE: &str =
        "usage: gen_report_session FILE SESSION_ID CWD [ENTRIES] [SEED] [counts|no-counts]";
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        return Err(USAGE.into());
    }
    let number = |s: &str| s.parse::<u64>().map_err(|_| format!("{s:?} is not a number; {USAGE}"));
    let entries = args.get(3).map(|s| number(s)).transpose()?.unwrap_or(100_000);
    let seed = args.get(4).map(|s| number(s)).transpose()?.unwrap_or(50);
    let shape = report_shape::ReportShape {
        session_id: &args[1],
        cwd: &args[2],
        entries: usize::try_from(entries)?,
        seed,
        counts: match args.get(5).map(String::as_str) {
            None | Some("counts") => true,
            Some("no-counts") => false,
            Some(other) => {
                return Err(format!("{other:?} is not counts or no-counts; {USAGE}").into())
            }
        },
    };
    let (count, bytes) = report_shape::write_report_session(std::path::Path::new(&args[0]), &shape);
    eprintln!("generated {}: {count} entries, {:.1} MB", args[0], bytes as f64 / 1e6);
    Ok(())
}
