//! MCP servers in sessions: a real Python `mcp` SDK server (installed by
//! `scripts/mcp-test-servers.sh`; the tests say so and pass without running when it is
//! missing), the mock provider, real journals. Each test ends with no orphaned tool pair in any
//! request.

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::protocol::{Event, Op, TurnStatus};
use codewhale_engine::session::Resume;
use codewhale_provider::test_support::Reply;
use serde_json::json;

use super::common::{reload_checked, results, session_file, Harness};
use super::compaction::{assert_no_orphans, compact, prose, spawn, SUMMARY, WINDOW};

use codewhale_mcp::test_support::{python, test_server};

/// Configures the test server as `py` in the user's config; `add` runs without asking.
fn configure(h: &Harness, python: &str) {
    let config = format!(
        "[mcp_servers.py]\ncommand = {python:?}\nargs = [{:?}, \"stdio\"]\nread_only_tools = [\"add\"]\n",
        test_server()
    );
    std::fs::write(h.home.path().join("config.toml"), config).unwrap();
}

fn tool_names(h: &Harness, n: usize) -> Vec<String> {
    h.server.requests()[n].body["tools"]
        .as_array()
        .map(|tools| {
            tools.iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_owned)).collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn an_mcp_result_reaches_the_next_request_and_unapproved_calls_are_denied() {
    let Some(python) = python() else { return };
    let h = Harness::new().await;
    configure(&h, &python);
    h.server.push(
        Reply::tool_call("call_1", "mcp__py__add", json!({"a": 2, "b": 3})).with_usage(900, 20),
    );
    h.server.push(
        Reply::tool_call("call_2", "mcp__py__echo", json!({"message": "hi"})).with_usage(950, 20),
    );
    h.server.push(Reply::text("done").with_usage(1000, 5));
    // Ask mode without a terminal: `add` is read-only by configuration, `echo` would ask.
    let mut engine = h.spawn(ApprovalMode::Ask);
    let run = engine.turn("add two and three").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    let names = tool_names(&h, 0);
    assert!(
        names.iter().any(|n| n == "mcp__py__add") && names.contains(&"read_file".to_owned()),
        "{names:?}"
    );
    let schema = &h.server.requests()[0].body["tools"];
    let add = schema
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp__py__add")
        .unwrap();
    assert_eq!(add["function"]["parameters"]["type"], "object");
    assert_eq!(h.tool_results_in_request(1), [("call_1".to_owned(), "5".to_owned())]);
    let denied = &h.tool_results_in_request(2)[1].1;
    assert!(denied.contains("needs the user's approval"), "{denied}");
    // The schemas are their own line of the context report.
    engine.submit(Op::GetContext);
    let events = engine.until(|e| matches!(e, Event::ContextReport { .. })).await;
    let Some(Event::ContextReport { report }) = events.last() else { unreachable!() };
    assert!(report.tokens.tools > 100 && report.tokens.system > 0, "{:?}", report.tokens);
    // `/mcp`: the server, ready, with its tools under the names the model sees.
    engine.submit(Op::ListMcpServers);
    let events = engine.until(|e| matches!(e, Event::McpServers { .. })).await;
    let Some(Event::McpServers { servers }) = events.last() else { unreachable!() };
    assert_eq!((servers[0].name.as_str(), servers[0].status.word()), ("py", "ready"));
    assert!(servers[0].tools.iter().any(|t| t.name == "mcp__py__add" && t.read_only));
    engine.shutdown().await;
    assert_no_orphans(&h);
    let journal = reload_checked(&session_file(h.home.path()));
    assert_eq!(results(&journal).len(), 2);
}

#[tokio::test]
async fn a_resumed_session_whose_server_is_gone_gets_clear_results() {
    let Some(python) = python() else { return };
    let h = Harness::new().await;
    configure(&h, &python);
    h.server.push(
        Reply::tool_call("call_1", "mcp__py__add", json!({"a": 1, "b": 1})).with_usage(900, 20),
    );
    h.server.push(Reply::text("two").with_usage(1000, 5));
    let mut engine = h.spawn(ApprovalMode::Full);
    engine.turn("add one and one").await;
    engine.shutdown().await;
    // The server is removed from the configuration; the model still asks for it.
    std::fs::write(h.home.path().join("config.toml"), "").unwrap();
    h.server.push(
        Reply::tool_call("call_2", "mcp__py__add", json!({"a": 2, "b": 2})).with_usage(1100, 20),
    );
    h.server.push(Reply::text("it is gone").with_usage(1200, 5));
    let mut engine = h.spawn_with(Resume::Last, ApprovalMode::Full, false);
    let run = engine.turn("again").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    assert!(!tool_names(&h, 2).iter().any(|n| n.starts_with("mcp__")));
    let result = &h.tool_results_in_request(3)[1].1;
    assert!(result.contains("the MCP server `py` is not available"), "{result}");
    engine.shutdown().await;
    assert_no_orphans(&h);
}

#[tokio::test]
async fn a_crash_mid_call_is_an_error_result_and_a_notice() {
    let Some(python) = python() else { return };
    let h = Harness::new().await;
    configure(&h, &python);
    h.server.push(Reply::tool_call("call_1", "mcp__py__crash", json!({})).with_usage(900, 20));
    h.server.push(Reply::text("it crashed").with_usage(1000, 5));
    let mut engine = h.spawn(ApprovalMode::Full);
    let run = engine.turn("crash it").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    let told = run.events.iter().any(|e| {
        matches!(e, Event::Notice { message, .. } if message.starts_with("MCP server `py` stopped"))
    });
    assert!(told, "the user hears that the server stopped: {:?}", run.events);
    let (_, content, is_error) = results(&reload_checked(&session_file(h.home.path()))).remove(0);
    assert!(is_error && content.contains("MCP server `py`"), "{content}");
    engine.shutdown().await;
    assert_no_orphans(&h);
}

#[tokio::test]
async fn a_compaction_covers_mcp_calls_like_any_other() {
    let Some(python) = python() else { return };
    let h = Harness::new().await;
    configure(&h, &python);
    h.hosted_api();
    let mut engine = spawn(&h, "openai", WINDOW);
    for k in 0..3 {
        h.server.push(
            Reply::tool_call(
                format!("call_{k}"),
                "mcp__py__echo",
                json!({"message": prose(&format!("round {k}"), 120)}),
            )
            .with_usage(2_000, 20),
        );
        h.server.push(Reply::text(prose(&format!("echoed {k}"), 120)).with_usage(2_100, 10));
        let run = engine.turn(&format!("echo round {k}")).await;
        assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    }
    h.server.push(Reply::text(SUMMARY));
    let event = compact(&mut engine, None).await;
    assert!(matches!(event, Event::CompactionFinished { .. }), "{event:?}");
    h.server.push(Reply::text("after").with_usage(1_500, 5));
    engine.turn("go on").await;
    engine.shutdown().await;
    assert_no_orphans(&h);
    let last = h.server.requests().last().unwrap().body.to_string();
    assert!(last.contains("Codewhale handoff note"), "the checkpoint replaces the covered calls");
    assert!(last.contains("echo round 2"), "the user's words survive");
}

/// The status `/mcp` reports for the one configured server.
async fn status(engine: &mut super::common::Running) -> String {
    engine.submit(Op::ListMcpServers);
    let events = engine.until(|e| matches!(e, Event::McpServers { .. })).await;
    let Some(Event::McpServers { servers }) = events.last() else { unreachable!() };
    servers[0].status.word().to_owned()
}

#[tokio::test]
async fn a_one_turn_session_starts_a_cached_server_only_when_its_tool_is_called() {
    let Some(python) = python() else { return };
    let h = Harness::new().await;
    configure(&h, &python);
    // The first session lists the server's tools, which caches them.
    h.server.push(Reply::text("hello").with_usage(900, 5));
    let mut engine = h.spawn(ApprovalMode::Full);
    engine.turn("hi").await;
    engine.shutdown().await;
    // The next one-turn session offers the cached tools without starting the server...
    h.server.push(Reply::text("no tools needed").with_usage(950, 5));
    h.server.push(
        Reply::tool_call("call_1", "mcp__py__add", json!({"a": 2, "b": 3})).with_usage(1000, 20),
    );
    h.server.push(Reply::text("five").with_usage(1100, 5));
    let mut engine = h.spawn(ApprovalMode::Full);
    let run = engine.turn("just talk").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    assert!(tool_names(&h, 1).iter().any(|n| n == "mcp__py__add"), "{:?}", tool_names(&h, 1));
    assert_eq!(status(&mut engine).await, "idle", "a turn that calls no tool starts nothing");
    // ...and the model's first call starts it and gets its result.
    let run = engine.turn("add two and three").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    assert_eq!(h.tool_results_in_request(3), [("call_1".to_owned(), "5".to_owned())]);
    assert_eq!(status(&mut engine).await, "ready");
    engine.shutdown().await;
    assert_no_orphans(&h);
}
