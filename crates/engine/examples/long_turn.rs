//! One long uninterrupted turn against an in-process mock model, for `scripts/bench.sh
//! long-turn`: `long_turn [CALLS] [WINDOW] [openai|anthropic]` (default 200 calls, an 8,192-token
//! window, openai).
//!
//! The mock model answers `CALLS` `read_file` calls of a 1.5 KB file each, then a short text;
//! summary requests get a ten-heading note; a request longer than the window is rejected as a
//! provider would. Prints the turn's compaction passes, requests (and how many were summary
//! requests or trimmed), the notes committed in the session so far (and how many of them were
//! written in the background), the wall time, then the same for the next turn from a new engine (as
//! `codewhale exec --last` runs) — one line of `key=value` figures each.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use codewhale_engine::config::{Env, Overrides};
use codewhale_engine::protocol::{Event, Op, TurnStatus};
use codewhale_engine::session::Resume;
use codewhale_engine::{ApprovalMode, Engine, EngineParams, FrontEnd};
use codewhale_provider::test_support::{Fault, MockServer, Reply, TEST_API_KEY};
use serde_json::json;

const SUMMARY: &str = "## Objective\nRead every file.\n## User direction\nNone\n## Permissions \
and limits\nNone\n## Done\nRead the first files.\n## Changed files\nNone\n## Still running\nNone\n\
## Verification left\nNone\n## Open questions\nNone\n## Next action\nRead the next file.\n\
## Reference\nNone";

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let calls: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let window: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(8_192);
    let provider = args.get(3).cloned().unwrap_or_else(|| "openai".into());
    codewhale_engine::tokens::count("warm");
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    for k in 0..calls {
        let text: String = (0..30)
            .map(|l| {
                format!("file {k:03} line {l:02}: the value of item {k}-{l} is {}\n", k * 31 + l)
            })
            .collect();
        std::fs::write(ws.path().join(format!("f{k}.txt")), text).unwrap();
    }
    let server = MockServer::start().await.unwrap();
    let served = Arc::new(AtomicUsize::new(0));
    let count = served.clone();
    server.respond_with(move |r| {
        let body = r.body.to_string();
        let tokens = u64::from(codewhale_engine::tokens::count(&body));
        if tokens > window {
            return Reply::fault(Fault::overflow(window, tokens));
        }
        if body.contains("You are writing a handoff note") {
            return Reply::text(SUMMARY).with_usage(tokens, 200);
        }
        let n = count.fetch_add(1, Ordering::SeqCst);
        if n < calls {
            Reply::tool_call(format!("call-{n}"), "read_file", json!({"path": format!("f{n}.txt")}))
                .with_usage(tokens, 20)
        } else {
            Reply::text("Finished.").with_usage(tokens, 10)
        }
    });
    let params = |resume: Resume| {
        let (model, base_url) = match provider.as_str() {
            "anthropic" => ("claude-sonnet-4-5", server.anthropic_base_url()),
            _ => ("gpt-4.1", server.openai_base_url()),
        };
        EngineParams {
            home: home.path().to_path_buf(),
            workspace: ws.path().to_path_buf(),
            overrides: Overrides {
                provider: Some(provider.clone()),
                model: Some(model.into()),
                base_url: Some(base_url),
                context_window: Some(window),
                approval: Some(ApprovalMode::Full),
            },
            env: Env {
                openai_api_key: Some(TEST_API_KEY.into()),
                anthropic_api_key: Some(TEST_API_KEY.into()),
                ..Env::default()
            },
            resume,
            interactive: false,
            retry: None,
            front_end: FrontEnd::Cli,
            home_hint: None,
            sandbox_helper: None,
        }
    };
    for (label, resume, prompt) in [
        ("long turn", Resume::New, "read every file in turn"),
        ("next turn", Resume::Last, "continue please"),
    ] {
        let before = server.requests().len();
        let (handle, mut events) = Engine::spawn(params(resume)).unwrap();
        let start = Instant::now();
        handle.submit(Op::UserInput {
            text: prompt.into(),
            attachments: Vec::new(),
            images: Vec::new(),
        });
        let (mut passes, mut trimmed, mut status) = (0, 0, None);
        while let Some(msg) = events.recv().await {
            match msg.event {
                Event::CompactionStarted { .. } => passes += 1,
                Event::Notice { message, .. } if message.contains("leaves out") => trimmed += 1,
                Event::TurnFinished { status: s, .. } => {
                    status = Some(s);
                    break;
                }
                _ => {}
            }
        }
        let elapsed = start.elapsed();
        handle.submit(Op::Shutdown);
        while let Some(msg) = events.recv().await {
            if matches!(msg.event, Event::ShutdownComplete) {
                break;
            }
        }
        let records: Vec<(bool, bool)> = std::fs::read_dir(home.path().join("sessions"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
            .flat_map(|e| {
                std::fs::read_to_string(e.path())
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .filter(|l| l.contains("\"kind\":\"compaction\""))
            .map(|l| (l.contains("\"path\":\"summary\""), l.contains("\"background\":true")))
            .collect();
        let notes = records.iter().filter(|(summary, _)| *summary).count();
        let background = records.iter().filter(|(summary, bg)| *summary && *bg).count();
        let requests = &server.requests()[before..];
        let summaries = requests
            .iter()
            .filter(|r| r.body.to_string().contains("writing a handoff note"))
            .count();
        println!(
            "{label}: calls={calls} window={window} provider={provider} status={} passes={passes} \
             requests={} summary_requests={summaries} notes_in_session={notes} \
             background_notes_in_session={background} trim_notices={trimmed} \
             wall_ms={}",
            if status == Some(TurnStatus::Completed) { "completed" } else { "NOT completed" },
            requests.len(),
            elapsed.as_millis()
        );
    }
}
