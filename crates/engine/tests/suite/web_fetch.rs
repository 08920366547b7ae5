//! `web_fetch` through whole turns (docs/tools.md, *`web_fetch`*), against a real HTTP server on
//! the loopback interface — a private address, so it asks in every mode, `full` included, and
//! is refused where nobody can be asked, unless `[tools] web_fetch_allow` lists it;
//! `[tools] web_fetch = false` removes the tool.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::protocol::{ApprovalScope, Event, Op, TurnStatus};
use codewhale_engine::session::Resume;
use codewhale_provider::test_support::Reply;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::common::Harness;

const PAGE: &str = "<!doctype html><html><head><title>Guide</title><script>var t = \
\"TRACKER\";</script><style>p { color: red }</style></head><body><h1>Install</h1><p>Run \
<code>make</code>.</p></body></html>";

/// A server that answers every GET with [`PAGE`]; its URL and how many requests it read.
async fn page_server() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                seen.fetch_add(1, Ordering::SeqCst);
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{PAGE}",
                    PAGE.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    (format!("http://127.0.0.1:{port}/guide"), count)
}

fn fetch(url: &str) -> Reply {
    Reply::tool_call("f", "web_fetch", json!({ "url": url }))
}

#[tokio::test]
async fn a_private_address_is_refused_without_a_terminal_even_in_full() {
    let h = Harness::new().await;
    let (url, count) = page_server().await;
    h.server.push(fetch(&url));
    h.server.push(Reply::text("could not fetch"));
    let mut engine = h.spawn(ApprovalMode::Full);
    assert_eq!(engine.turn("read the guide").await.status, TurnStatus::Completed);
    engine.shutdown().await;
    let result = &h.tool_results_in_request(1)[0].1;
    assert!(result.starts_with("denied:") && result.contains("web_fetch_allow"), "{result}");
    assert!(result.contains("private address"), "{result}");
    assert_eq!(count.load(Ordering::SeqCst), 0, "nothing was fetched");
}

#[tokio::test]
async fn a_private_address_asks_in_full_with_no_always() {
    let h = Harness::new().await;
    let (url, count) = page_server().await;
    h.server.push(fetch(&url));
    h.server.push(Reply::text("read it"));
    let mut engine = h.spawn_with(Resume::New, ApprovalMode::Full, true);
    let turn = engine.submit(Op::UserInput {
        text: "read the guide".into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    let asked = engine.until(|e| matches!(e, Event::ApprovalNeeded { .. })).await;
    let Some(Event::ApprovalNeeded { reason, offers, .. }) = asked.last() else { unreachable!() };
    assert!(
        reason.starts_with("fetch 127.0.0.1:") && reason.contains("private address"),
        "{reason}"
    );
    assert!(offers.is_empty(), "no grant covers a private address: {offers:?}");
    engine.submit(Op::Approve { call_id: "f".into(), scope: ApprovalScope::Once });
    assert_eq!(engine.finish(turn).await.status, TurnStatus::Completed);
    engine.shutdown().await;
    assert_eq!(count.load(Ordering::SeqCst), 1);
    let result = &h.tool_results_in_request(1)[0].1;
    assert!(result.contains("# Install") && result.contains("Run `make`."), "{result}");
}

#[tokio::test]
async fn a_listed_host_is_fetched_without_asking_as_markdown() {
    let h = Harness::new().await;
    h.config("[tools]\nweb_fetch_allow = [\"127.0.0.1\"]\n");
    let (url, count) = page_server().await;
    h.server.push(fetch(&url));
    h.server.push(Reply::text("it says run make"));
    let mut engine = h.spawn(ApprovalMode::Plan);
    assert_eq!(engine.turn("read the guide").await.status, TurnStatus::Completed);
    engine.shutdown().await;
    assert_eq!(count.load(Ordering::SeqCst), 1);
    let result = &h.tool_results_in_request(1)[0].1;
    assert!(result.starts_with(&format!("{url} · 200 OK · text/html")), "{result}");
    assert!(result.contains("# Install") && result.contains("Run `make`."), "{result}");
    assert!(!result.contains("TRACKER") && !result.contains("color: red"), "{result}");
}

#[tokio::test]
async fn web_fetch_false_removes_the_tool() {
    let h = Harness::new().await;
    h.config("[tools]\nweb_fetch = false\n");
    h.server.push(Reply::text("hello"));
    let mut engine = h.spawn(ApprovalMode::Ask);
    engine.turn("hi").await;
    engine.shutdown().await;
    let tools = h.server.requests()[0].body["tools"].to_string();
    assert!(tools.contains("read_file") && !tools.contains("web_fetch"), "{tools}");

    let h = Harness::new().await;
    h.server.push(Reply::text("hello"));
    let mut engine = h.spawn(ApprovalMode::Ask);
    engine.turn("hi").await;
    engine.shutdown().await;
    assert!(h.server.requests()[0].body["tools"].to_string().contains("web_fetch"), "offered");
}
