//! Compaction in the shapes real sessions take, for `scripts/bench.sh rounds [RUNS]
//! [openai|anthropic|openai-responses]`, against an in-process mock model that rejects a request
//! longer than its window and reports the prompt sizes it is sent:
//!
//! - `ab`: the A/B pair at `--context-window 7000` — seven chat turns with replies of about
//!   1,100 tokens in one interactive session, once as a plain chat (`chat-first`) and once with
//!   the first message making one `read_file` call (`tool-first`);
//! - `3k`: 15 one-turn runs (as `codewhale exec --last` makes them) of about 200 tokens at a
//!   3,000-token window, stated by the server (llama.cpp's `/props`) on the OpenAI wire and
//!   configured on the others.
//!
//! One line per run: the notes committed, the summary requests sent, the requests that left
//! messages out (`reads.trimmed_before`) — all of them and those after the first note —, the
//! passes the survival contract refused, and the requests rejected as too long.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use codewhale_engine::config::{Env, Overrides};
use codewhale_engine::protocol::{Event, Op, TurnStatus};
use codewhale_engine::session::Resume;
use codewhale_engine::{ApprovalMode, Engine, EngineParams, FrontEnd};
use codewhale_provider::test_support::{Fault, MockServer, Reply, TEST_API_KEY};
use serde_json::{json, Value};

const SUMMARY: &str = "## Objective\nAnswer the questions.\n## User direction\nNone\n## \
Permissions and limits\nNone\n## Done\nAnswered the first questions.\n## Changed files\nNone\n\
## Still running\nNone\n## Verification left\nNone\n## Open questions\nNone\n## Next action\n\
Answer the next question.\n## Reference\nNone";

fn prose(tag: &str, units: usize) -> String {
    format!("{tag}: {}", "lorem ipsum dolor sit amet ".repeat(units))
}

fn is_summary(body: &str) -> bool {
    body.contains("You are writing a handoff note")
}

fn tokens(body: &str) -> u64 {
    u64::from(codewhale_engine::tokens::count(body))
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let provider = args.get(2).cloned().unwrap_or_else(|| "openai".into());
    if let Ok(filter) = std::env::var("CODEWHALE_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .try_init();
    }
    codewhale_engine::tokens::count("warm");
    for run in 0..runs {
        for tool_first in [false, true] {
            let figures = ab(&provider, tool_first).await;
            let variant = if tool_first { "tool-first" } else { "chat-first" };
            println!("run={run} scenario=ab variant={variant} provider={provider} {figures}");
        }
        let figures = three_k(&provider).await;
        println!("run={run} scenario=3k provider={provider} {figures}");
    }
}

/// A session's home, workspace and mock server.
struct Bench {
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
    server: MockServer,
}

impl Bench {
    async fn new() -> Bench {
        Bench {
            home: tempfile::tempdir().unwrap(),
            ws: tempfile::tempdir().unwrap(),
            server: MockServer::start().await.unwrap(),
        }
    }

    fn params(&self, provider: &str, window: Option<u64>, resume: Resume) -> EngineParams {
        let (model, base_url) = match provider {
            "anthropic" => ("claude-sonnet-4-5", self.server.anthropic_base_url()),
            _ => ("gpt-4.1", self.server.openai_base_url()),
        };
        EngineParams {
            home: self.home.path().to_path_buf(),
            workspace: self.ws.path().to_path_buf(),
            overrides: Overrides {
                provider: Some(provider.to_owned()),
                model: Some(model.into()),
                base_url: Some(base_url),
                context_window: window,
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
    }

    /// The figures of the run, read from the journal and the requests the server received.
    fn figures(&self, window: u64, failed: usize) -> String {
        let lines: Vec<Value> = std::fs::read_dir(self.home.path().join("sessions"))
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
        let trimmed = |l: &&Value| {
            l["kind"] == "assistant" && l["payload"]["reads"]["trimmed_before"].is_string()
        };
        let first_note = lines.iter().position(|l| l["kind"] == "compaction");
        let trimmed_after = first_note.map_or(0, |at| lines[at..].iter().filter(trimmed).count());
        let refused = lines
            .iter()
            .filter(|l| {
                l["kind"] == "system"
                    && l["payload"]["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("survival contract"))
            })
            .count();
        let requests = self.server.requests();
        let summaries = requests.iter().filter(|r| is_summary(&r.body.to_string())).count();
        let rejected = requests.iter().filter(|r| tokens(&r.body.to_string()) > window).count();
        format!(
            "notes={notes} summary_requests={summaries} trimmed_requests={} \
             trimmed_after_first_note={trimmed_after} contract_refusals={refused} \
             rejected_too_long={rejected} turns_failed={failed}",
            lines.iter().filter(trimmed).count()
        )
    }
}

/// Submits `text` and waits for its turn; whether it completed.
async fn turn(
    handle: &codewhale_engine::EngineHandle,
    events: &mut codewhale_engine::EventReceiver,
    text: String,
) -> bool {
    handle.submit(Op::UserInput { text, attachments: Vec::new(), images: Vec::new() });
    while let Some(msg) = events.recv().await {
        if let Event::TurnFinished { status, .. } = msg.event {
            return status == TurnStatus::Completed;
        }
    }
    false
}

async fn shutdown(
    handle: &codewhale_engine::EngineHandle,
    events: &mut codewhale_engine::EventReceiver,
) {
    handle.submit(Op::Shutdown);
    while let Some(msg) = events.recv().await {
        if matches!(msg.event, Event::ShutdownComplete) {
            break;
        }
    }
}

/// The A/B pair: seven turns at 7,000 tokens in one interactive session.
async fn ab(provider: &str, tool_first: bool) -> String {
    const WINDOW: u64 = 7_000;
    let bench = Bench::new().await;
    std::fs::write(bench.ws.path().join("notes.txt"), prose("notes", 60)).unwrap();
    let first = "question 0: what do the notes say?";
    bench.server.respond_with(move |r| {
        let body = r.body.to_string();
        let n = tokens(&body);
        if n > WINDOW {
            return Reply::fault(Fault::overflow(WINDOW, n));
        }
        if is_summary(&body) {
            return Reply::text(SUMMARY).with_usage(n, 300);
        }
        if tool_first && body.contains(first) && !body.contains("read-notes") {
            return Reply::tool_call("read-notes", "read_file", json!({"path": "notes.txt"}))
                .with_usage(n, 20);
        }
        Reply::text(prose("answer", 220)).with_usage(n, 1_100)
    });
    let mut params = bench.params(provider, Some(WINDOW), Resume::New);
    params.front_end = FrontEnd::Tui;
    params.interactive = true;
    let (handle, mut events) = Engine::spawn(params).unwrap();
    let mut failed = 0;
    for k in 0..7 {
        let text = if k == 0 { first.to_owned() } else { format!("question {k}: and then?") };
        failed += usize::from(!turn(&handle, &mut events, text).await);
    }
    shutdown(&handle, &mut events).await;
    bench.figures(WINDOW, failed)
}

/// 15 one-turn runs at a 3,000-token window.
async fn three_k(provider: &str) -> String {
    const WINDOW: u64 = 3_000;
    let bench = Bench::new().await;
    bench.server.respond_with(move |r| {
        let body = r.body.to_string();
        let n = tokens(&body);
        if n > WINDOW {
            return Reply::fault(Fault::overflow(WINDOW, n));
        }
        if is_summary(&body) {
            return Reply::text(SUMMARY).with_usage(n, 200);
        }
        Reply::text(prose("answer", 20)).with_usage(n, 100)
    });
    // The OpenAI wire reaches a local server, which states its window; the others configure it.
    let configured = if provider == "openai" {
        let props = json!({"default_generation_settings": {"n_ctx": WINDOW}});
        bench.server.serve_get("/props", props);
        None
    } else {
        Some(WINDOW)
    };
    let mut failed = 0;
    for k in 0..15 {
        let resume = if k == 0 { Resume::New } else { Resume::Last };
        let (handle, mut events) =
            Engine::spawn(bench.params(provider, configured, resume)).unwrap();
        let text = prose(&format!("question {k}"), 20);
        failed += usize::from(!turn(&handle, &mut events, text).await);
        shutdown(&handle, &mut events).await;
    }
    bench.figures(WINDOW, failed)
}
