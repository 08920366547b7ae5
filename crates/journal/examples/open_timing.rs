//! Times opening a journal read-only and rendering HEAD's view, then decoding the tool output
//! the view holds.
//!
//! `cargo run --release -p codewhale-journal --example open_timing -- FILE [ROUNDS]`
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let path = args.next().ok_or("usage: open_timing FILE [ROUNDS]")?;
    let rounds: usize = args.next().and_then(|r| r.to_str()?.parse().ok()).unwrap_or(3);
    let path = std::path::Path::new(&path);
    for round in 0..rounds {
        let t0 = Instant::now();
        let loaded = codewhale_journal::load_read_only(path)?;
        let t1 = Instant::now();
        let j = &loaded.journal;
        let view = codewhale_journal::render(j, j.head_id().as_str());
        let t2 = Instant::now();
        let decoded: usize =
            view.items.iter().filter_map(|i| i.tool_result()).map(|r| r.content.len()).sum();
        let t3 = Instant::now();
        println!(
            "round {round}: {} entries | load {:?} | render {:?} ({} items) | decode the view's \
             tool output ({} MB) {:?}",
            j.len(),
            t1 - t0,
            t2 - t1,
            view.items.len(),
            decoded / 1_000_000,
            t3 - t2,
        );
    }
    Ok(())
}
