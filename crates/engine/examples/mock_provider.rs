//! A mock OpenAI-compatible provider as a process, for measuring `codewhale exec` end to end
//! (`scripts/bench-exec.sh`).
//!
//! Usage: `mock_provider [REPLIES]` — serves REPLIES (default 100) scripted text answers with
//! usage, prints its base URL (`http://127.0.0.1:PORT/v1`) on the first line of stdout, and
//! runs until stdin closes.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{BufRead as _, Write as _};

use codewhale_provider::test_support::{MockServer, Reply};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let replies: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(100);
    let server = MockServer::start().await?;
    for _ in 0..replies {
        server.push(Reply::text("Done: the answer is 42.").with_usage(2_000, 9));
    }
    let mut out = std::io::stdout();
    writeln!(out, "{}", server.openai_base_url())?;
    out.flush()?;
    // Serve until whoever started us closes our stdin.
    tokio::task::spawn_blocking(|| {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            if line.is_err() {
                break;
            }
        }
    })
    .await
    .map_err(std::io::Error::other)?;
    Ok(())
}
