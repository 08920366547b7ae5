//! Small windows, for `scripts/bench.sh small-windows [TURNS] [openai|anthropic]`: at each of
//! 4,096, 8,192, 16,384 and 32,768 tokens, `TURNS` (default 30) one-turn runs on one session, as
//! `codewhale exec --last` makes them — every other one a `read_file` of a 1.5 KB file before the
//! answer, the others chat, each user message about 200 tokens — against an in-process mock model
//! that rejects a request longer than the window. Prints one line per window: the fixed prefix
//! (system prompt and tool schemas), the summary requests and the notes committed (and their
//! ratio), the requests that left messages out (`reads.trimmed_before`), the requests rejected
//! as too long, and turns that did not complete.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use codewhale_engine::config::{Env, Overrides};
use codewhale_engine::protocol::{Event, Op, TurnStatus};
use codewhale_engine::session::Resume;
use codewhale_engine::{ApprovalMode, Engine, EngineParams, FrontEnd};
use codewhale_provider::test_support::{Fault, MockServer, Reply, TEST_API_KEY};
use serde_json::json;

const SUMMARY: &str = "## Objective\nAnswer the questions.\n## User direction\nNone\n## \
Permissions and limits\nNone\n## Done\nAnswered the first questions.\n## Changed files\nNone\n\
## Still running\nNone\n## Verification left\nNone\n## Open questions\nNone\n## Next action\n\
Answer the next question.\n## Reference\nNone";

fn prose(tag: &str, words: usize) -> String {
    format!("{tag}: {}", "lorem ipsum dolor sit amet ".repeat(words / 5))
}

fn is_summary(body: &str) -> bool {
    body.contains("You are writing a handoff note")
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let turns: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(30);
    let provider = args.get(2).cloned().unwrap_or_else(|| "openai".into());
    // `CODEWHALE_LOG=codewhale_engine=info` shows the engine's log.
    if let Ok(filter) = std::env::var("CODEWHALE_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .try_init();
    }
    let windows: Vec<u64> = match std::env::var("CODEWHALE_WINDOWS") {
        Ok(list) => list.split(',').filter_map(|w| w.trim().parse().ok()).collect(),
        Err(_) => vec![4_096, 8_192, 16_384, 32_768],
    };
    codewhale_engine::tokens::count("warm");
    for window in windows {
        run(window, turns, &provider).await;
    }
}

async fn run(window: u64, turns: usize, provider: &str) {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let file: String =
        (0..30).map(|l| format!("line {l:02}: the value of item {l} is {}\n", l * 31)).collect();
    std::fs::write(ws.path().join("notes.txt"), file).unwrap();
    let server = MockServer::start().await.unwrap();
    server.respond_with(move |r| {
        let body = r.body.to_string();
        let tokens = u64::from(codewhale_engine::tokens::count(&body));
        if tokens > window {
            return Reply::fault(Fault::overflow(window, tokens));
        }
        if is_summary(&body) {
            return Reply::text(SUMMARY).with_usage(tokens, 200);
        }
        let last = r.body["messages"].as_array().and_then(|m| m.last()).cloned();
        let after_result = last.as_ref().is_some_and(|m| {
            m["role"] == "tool"
                || m["content"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
        });
        let asks_read = body.contains("please read notes.txt");
        if asks_read && !after_result {
            let id = format!("read-{}", body.len());
            return Reply::tool_call(id, "read_file", json!({"path": "notes.txt"}))
                .with_usage(tokens, 20);
        }
        Reply::text(prose("answer", 100)).with_usage(tokens, 130)
    });
    let (model, base_url) = match provider {
        "anthropic" => ("claude-sonnet-4-5", server.anthropic_base_url()),
        _ => ("gpt-4.1", server.openai_base_url()),
    };
    let params = |resume: Resume| EngineParams {
        home: home.path().to_path_buf(),
        workspace: ws.path().to_path_buf(),
        overrides: Overrides {
            provider: Some(provider.to_owned()),
            model: Some(model.into()),
            base_url: Some(base_url.clone()),
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
    };
    let (mut prefix, mut failed) = (0u64, 0usize);
    for k in 0..turns {
        let resume = if k == 0 { Resume::New } else { Resume::Last };
        let (handle, mut events) = Engine::spawn(params(resume)).unwrap();
        let ask = if k % 2 == 1 { " — please read notes.txt first" } else { "" };
        let text = format!("{}{ask}", prose(&format!("question {k}"), 150));
        handle.submit(Op::UserInput { text, attachments: Vec::new(), images: Vec::new() });
        while let Some(msg) = events.recv().await {
            if let Event::TurnFinished { status, .. } = msg.event {
                failed += usize::from(status != TurnStatus::Completed);
                break;
            }
        }
        if k == 0 {
            handle.submit(Op::GetContext);
            while let Some(msg) = events.recv().await {
                if let Event::ContextReport { report } = msg.event {
                    prefix = report.tokens.system + report.tokens.tools;
                    break;
                }
            }
        }
        handle.submit(Op::Shutdown);
        while let Some(msg) = events.recv().await {
            if matches!(msg.event, Event::ShutdownComplete) {
                break;
            }
        }
    }
    let lines: Vec<serde_json::Value> = std::fs::read_dir(home.path().join("sessions"))
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
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect();
    let notes = lines
        .iter()
        .filter(|l| l["kind"] == "compaction" && l["payload"]["path"] == "summary")
        .count();
    let trimmed: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["kind"] == "assistant" && l["payload"]["reads"]["trimmed_before"].is_string())
        .collect();
    let requests = server.requests();
    let summaries = requests.iter().filter(|r| is_summary(&r.body.to_string())).count();
    let rejected = requests
        .iter()
        .filter(|r| u64::from(codewhale_engine::tokens::count(&r.body.to_string())) > window)
        .count();
    let per_note =
        if notes == 0 { "-".to_owned() } else { format!("{:.2}", summaries as f64 / notes as f64) };
    println!(
        "window={window} provider={provider} turns={turns} fixed_prefix_tokens={prefix} \
         summary_requests={summaries} notes={notes} summary_requests_per_note={per_note} \
         requests_leaving_messages_out={} rejected_too_long={rejected} turns_failed={failed}",
        trimmed.len()
    );
}
