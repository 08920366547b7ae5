//! A mock model provider as a process, for measuring `codewhale exec` end to end, and another
//! tool's one-prompt run next to it (`scripts/bench-exec.sh`).
//!
//! Usage: `mock_provider` — answers every request with the same short text and its usage:
//! `/v1/chat/completions` in the Chat Completions shape, `/v1/messages` in the Anthropic shape,
//! `/v1/responses` in the Responses API shape (what Codex speaks); a summary request gets a
//! ten-heading note. Prints its base URL (`http://127.0.0.1:PORT/v1`) on the first line of
//! stdout and runs until stdin closes; then prints, on stdout, one line of figures: `requests=N
//! summary_requests=N summary_input_tokens=N probes=N` (o200k counts of the summary requests'
//! bodies; `probes`: the requests of a local server's own API it received, such as `GET
//! /api/version` or `GET /props`, which it answers with 404s).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{BufRead as _, Write as _};

use codewhale_provider::test_support::{MockServer, Reply};

const ANSWER: &str = "Done: the answer is 42.";

const SUMMARY: &str = "## Objective\nFinish the work.\n## User direction\nNone\n## Permissions \
and limits\nNone\n## Done\nMost of it.\n## Changed files\nNone\n## Still running\nNone\n\
## Verification left\nNone\n## Open questions\nNone\n## Next action\nGo on.\n## Reference\nNone";

/// One streamed Responses API reply: the events a client needs to show the text and finish
/// the turn (`response.completed` with usage ends it).
fn responses_stream() -> String {
    let message = serde_json::json!({
        "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
    });
    let events = [
        serde_json::json!({"type": "response.created",
            "response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}}),
        serde_json::json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}}),
        serde_json::json!({"type": "response.output_text.delta", "item_id": "msg_1",
            "output_index": 0, "content_index": 0, "delta": ANSWER}),
        serde_json::json!({"type": "response.output_item.done", "output_index": 0, "item": message}),
        serde_json::json!({"type": "response.completed", "response": {
            "id": "resp_1", "object": "response", "status": "completed", "output": [message],
            "usage": {"input_tokens": 2_000, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 2_009}}}),
    ];
    events
        .iter()
        .map(|event| format!("event: {}\ndata: {event}\n\n", event["type"].as_str().unwrap_or("")))
        .collect()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let server = MockServer::start().await?;
    let stream = responses_stream();
    let summary_tokens = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = summary_tokens.clone();
    server.respond_with(move |request| {
        let body = request.body.to_string();
        if body.contains("You are writing a handoff note") {
            let tokens = u64::from(codewhale_engine::tokens::count(&body));
            counted.fetch_add(tokens, std::sync::atomic::Ordering::Relaxed);
            return Reply::text(SUMMARY).with_usage(tokens, 60);
        }
        if request.path.ends_with("/responses") {
            Reply::raw_sse(stream.clone())
        } else {
            Reply::text(ANSWER).with_usage(2_000, 9)
        }
    });
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
    let requests = server.requests();
    let summaries = requests
        .iter()
        .filter(|r| r.body.to_string().contains("You are writing a handoff note"))
        .count();
    let probes = server.probes().len();
    writeln!(
        out,
        "requests={} summary_requests={summaries} summary_input_tokens={} probes={probes}",
        requests.len(),
        summary_tokens.load(std::sync::atomic::Ordering::Relaxed)
    )?;
    Ok(())
}
