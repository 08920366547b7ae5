//! A parent with subagents against an in-process mock model, for `scripts/bench.sh subagents`:
//! `subagents [CHILDREN] [CALLS] [WINDOW]` (default 3 children of 40 calls each at an 8,192-token
//! window).
//!
//! The parent's first reply makes CHILDREN `task` calls at once; each child reads CALLS files of
//! about 1.5 KB one call per reply, then answers; summary requests get a ten-heading note; a
//! request longer than the window is rejected as a provider would. Prints one line of
//! `key=value` figures: the turn's status, wall time, the process's peak resident memory, all
//! requests and the summary requests among them, the notes each child committed, and the
//! requests whose view carried an orphaned tool call or result (always 0).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use codewhale_engine::config::{Env, Overrides};
use codewhale_engine::protocol::{Event, Op};
use codewhale_engine::session::Resume;
use codewhale_engine::{ApprovalMode, Engine, EngineParams, FrontEnd};
use codewhale_provider::test_support::{Fault, MockServer, Reply, ToolCall, TEST_API_KEY};
use serde_json::{json, Value};

const SUMMARY: &str = "## Objective\nRead every file.\n## User direction\nNone\n## Permissions \
and limits\nNone\n## Done\nRead the first files.\n## Changed files\nNone\n## Still running\nNone\n\
## Verification left\nNone\n## Open questions\nNone\n## Next action\nRead the next file.\n\
## Reference\nNone";

/// The child a request belongs to: its prompt, `CHILD-<n>:`, is its user message.
fn child_of(body: &Value) -> Option<usize> {
    let messages = body["messages"].as_array()?;
    messages.iter().filter(|m| m["role"] == "user").find_map(|m| {
        let text = m["content"].to_string();
        let at = text.find("CHILD-")?;
        text[at + 6..].split(':').next()?.parse().ok()
    })
}

/// Whether a request's tool calls and results all have their partner.
fn paired(body: &Value) -> bool {
    let mut open: Vec<String> = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            open.push(call["id"].as_str().unwrap_or_default().to_owned());
        }
        if let Some(id) = m["tool_call_id"].as_str() {
            match open.iter().position(|o| o == id) {
                Some(i) => drop(open.remove(i)),
                None => return false,
            }
        }
    }
    open.is_empty()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let children: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let calls: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(40);
    let window: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(8_192);
    codewhale_engine::tokens::count("warm");
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    for c in 0..children {
        for k in 0..calls {
            let text: String = (0..30)
                .map(|l| format!("child {c} file {k:03} line {l:02}: item {k}-{l} is {}\n", k + l))
                .collect();
            std::fs::write(ws.path().join(format!("c{c}-{k}.txt")), text).unwrap();
        }
    }
    let server = MockServer::start().await.unwrap();
    let made = Arc::new(Mutex::new(HashMap::<usize, usize>::new()));
    let seen = made.clone();
    server.respond_with(move |r| {
        let tokens = u64::from(codewhale_engine::tokens::count(&r.body.to_string()));
        if tokens > window {
            return Reply::fault(Fault::overflow(window, tokens));
        }
        if r.body.to_string().contains("You are writing a handoff note") {
            return Reply::text(SUMMARY).with_usage(tokens, 200);
        }
        let Some(child) = child_of(&r.body) else {
            let answered = r.body["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
            if answered {
                return Reply::text("All read.").with_usage(tokens, 5);
            }
            let tasks = (0..children)
                .map(|c| {
                    let input = json!({"description": format!("read part {c}"),
                                       "prompt": format!("CHILD-{c}: read every file")});
                    ToolCall::new(format!("task-{c}"), "task", input)
                })
                .collect();
            return Reply::tool_calls(tasks).with_usage(tokens, 40);
        };
        let mut made = seen.lock().unwrap();
        let n = made.entry(child).or_default();
        *n += 1;
        if *n <= calls {
            let path = format!("c{child}-{}.txt", *n - 1);
            Reply::tool_call(format!("c{child}-call-{n}"), "read_file", json!({"path": path}))
                .with_usage(tokens, 20)
        } else {
            Reply::text(format!("Child {child} read {calls} files.")).with_usage(tokens, 10)
        }
    });
    let params = EngineParams {
        home: home.path().to_path_buf(),
        workspace: ws.path().to_path_buf(),
        overrides: Overrides {
            provider: Some("openai".into()),
            model: Some("gpt-4.1".into()),
            base_url: Some(server.openai_base_url()),
            context_window: Some(window),
            approval: Some(ApprovalMode::Full),
        },
        env: Env { openai_api_key: Some(TEST_API_KEY.into()), ..Env::default() },
        resume: Resume::New,
        interactive: false,
        retry: None,
        front_end: FrontEnd::Cli,
        home_hint: None,
        sandbox_helper: None,
    };
    let (handle, mut events) = Engine::spawn(params).unwrap();
    let start = Instant::now();
    handle.submit(Op::UserInput {
        text: "split the reading".into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    let mut status = None;
    let mut compactions: Vec<u32> = Vec::new();
    while let Some(msg) = events.recv().await {
        match msg.event {
            Event::SubagentFinished { compactions: n, .. } => compactions.push(n),
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
    let requests = server.requests();
    let summaries =
        requests.iter().filter(|r| r.body.to_string().contains("writing a handoff note")).count();
    let orphaned = requests.iter().filter(|r| !paired(&r.body)).count();
    let peak_kb = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        })
        .unwrap_or_else(|| "?".into());
    println!(
        "subagents: children={children} calls={calls} window={window} status={} wall_ms={} \
         peak_rss_kb={peak_kb} requests={} summary_requests={summaries} \
         notes_per_child={compactions:?} orphaned_requests={orphaned}",
        status.map_or("none".to_owned(), |s| format!("{s:?}").to_lowercase()),
        elapsed.as_millis(),
        requests.len(),
    );
}
