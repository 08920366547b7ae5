//! `web_fetch` against a real HTTP server on the loopback interface (a private address: the
//! tests list it in `web_fetch_allow` where the fetch must run): pages, bounds, redirects.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

/// A page with what a reader never sees.
const PAGE: &str = r#"<!doctype html><html><head><title>Widget docs</title>
<style>.x { display: none }</style><script>window.TRACKER = "tracking-code";</script></head>
<body><nav><a href="/">Home</a></nav><h1>Widgets</h1><p>A widget <em>spins</em>.</p>
<script>document.write("INJECTED")</script><pre><code>widget.spin()</code></pre></body></html>"#;

/// A server answering by path; it counts the requests it read. `/big` sends 50 MB (and stops
/// when the client goes away).
async fn server() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
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
                let head = String::from_utf8_lossy(&head).into_owned();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let reply = |status: &str, kind: &str, body: &str, extra: &str| {
                    format!(
                        "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\
                         {extra}connection: close\r\n\r\n{body}",
                        body.len()
                    )
                };
                let text = match path.as_str() {
                    "/page" => reply("200 OK", "text/html; charset=utf-8", PAGE, ""),
                    "/notes.txt" => reply("200 OK", "text/plain", "plain notes\nline two", ""),
                    "/missing" => reply("404 Not Found", "text/html", "<h1>Not here</h1>", ""),
                    "/image" => reply("200 OK", "image/png", "\u{0}\u{1}PNG", ""),
                    "/to-page" => reply("302 Found", "text/plain", "", "location: /page\r\n"),
                    "/to-localhost" => {
                        let to = format!("location: http://localhost:{port}/page\r\n");
                        reply("302 Found", "text/plain", "", &to)
                    }
                    "/loop" => reply("302 Found", "text/plain", "", "location: /loop\r\n"),
                    "/big" => {
                        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\
                                    content-length: 52428800\r\nconnection: close\r\n\r\n";
                        if socket.write_all(head.as_bytes()).await.is_err() {
                            return;
                        }
                        let chunk = vec![b'a'; 64 * 1024];
                        for _ in 0..800 {
                            if socket.write_all(&chunk).await.is_err() {
                                return;
                            }
                        }
                        return;
                    }
                    _ => reply("404 Not Found", "text/plain", "no", ""),
                };
                let _ = socket.write_all(text.as_bytes()).await;
            });
        }
    });
    (format!("http://127.0.0.1:{port}"), count)
}

fn allowing(hosts: &[&str]) -> ToolsConfig {
    ToolsConfig {
        web_fetch: None,
        web_fetch_allow: hosts.iter().map(|h| (*h).to_owned()).collect(),
        ..ToolsConfig::default()
    }
}

async fn fetch_with(url: &str, tools: &ToolsConfig, input: Value) -> ToolOutput {
    let first = target(url, tools).await.unwrap();
    let approved = first.clone();
    let follow = move |next: &Target| next.allowed || (next.host == approved.host && !next.private);
    run(&input, first, &follow, tools, &CancellationToken::new()).await
}

#[tokio::test]
async fn a_local_server_is_private_unless_listed() {
    let (base, _) = server().await;
    let t = target(&format!("{base}/page"), &ToolsConfig::default()).await.unwrap();
    assert!(t.private && !t.allowed, "{t:?}");
    assert_eq!(t.host, "127.0.0.1");
    let listed = target(&format!("{base}/page"), &allowing(&["127.0.0.1"])).await.unwrap();
    assert!(!listed.private && listed.allowed, "{listed:?}");
    let port = listed.port;
    let other_port = allowing(&[&format!("127.0.0.1:{}", port.wrapping_add(1))]);
    assert!(target(&format!("{base}/page"), &other_port).await.unwrap().private);
    let none = ToolsConfig::default();
    let localhost = target(&format!("http://LocalHost:{port}/page"), &none).await.unwrap();
    assert!(localhost.private && localhost.host == "localhost", "{localhost:?}");
    for bad in ["ftp://example.com/x", "file:///etc/passwd", "not a url", "http://"] {
        assert!(target(bad, &ToolsConfig::default()).await.is_err(), "{bad}");
    }
}

#[tokio::test]
async fn html_comes_back_as_markdown_without_scripts_or_styles() {
    let (base, _) = server().await;
    let tools = allowing(&["127.0.0.1"]);
    let out =
        fetch_with(&format!("{base}/page"), &tools, json!({"url": format!("{base}/page")})).await;
    assert!(!out.is_error, "{}", out.content);
    let text = &out.content;
    assert!(text.starts_with(&format!("{base}/page · 200 OK · text/html")), "{text}");
    assert!(text.contains("# Widget docs") && text.contains("# Widgets"), "{text}");
    assert!(text.contains("A widget *spins*.") || text.contains("A widget _spins_."), "{text}");
    assert!(text.contains("widget.spin()"), "{text}");
    for hidden in ["tracking-code", "INJECTED", "display: none"] {
        assert!(!text.contains(hidden), "{hidden}: {text}");
    }
    let plain = fetch_with(&format!("{base}/notes.txt"), &tools, json!({"url": "x"})).await;
    assert!(plain.content.ends_with("plain notes\nline two"), "{}", plain.content);
    let missing = fetch_with(&format!("{base}/missing"), &tools, json!({"url": "x"})).await;
    assert!(missing.is_error && missing.content.contains("404"), "{}", missing.content);
    let image = fetch_with(&format!("{base}/image"), &tools, json!({"url": "x"})).await;
    assert!(image.content.contains("returns text only"), "{}", image.content);
}

#[tokio::test]
async fn a_50_mb_body_costs_one_mebibyte_and_max_chars_cuts_the_text() {
    let (base, _) = server().await;
    let tools = allowing(&["127.0.0.1"]);
    let out = fetch_with(&format!("{base}/big"), &tools, json!({"url": "x"})).await;
    assert!(
        out.content.contains("only the first 1024 KiB of the body were read"),
        "{}",
        &out.content[..200]
    );
    assert!(
        out.content.contains("bytes cut; call again with a larger max_chars"),
        "default max_chars"
    );
    let body_chars = out.content.chars().filter(|c| *c == 'a').count();
    assert!((20_000..20_100).contains(&body_chars), "{body_chars}");
    let small =
        fetch_with(&format!("{base}/big"), &tools, json!({"url": "x", "max_chars": 500})).await;
    assert!(small.content.len() < 1_000, "{}", small.content.len());
}

#[tokio::test]
async fn redirects_are_followed_within_the_rules_and_at_most_five_times() {
    let (base, count) = server().await;
    let tools = allowing(&["127.0.0.1"]);
    let out = fetch_with(&format!("{base}/to-page"), &tools, json!({"url": "x"})).await;
    assert!(
        out.content.contains("(redirected from") && out.content.contains("# Widgets"),
        "{}",
        out.content
    );
    // To a private host the approval did not cover: not followed, and the model is told.
    let before = count.load(Ordering::SeqCst);
    let out = fetch_with(&format!("{base}/to-localhost"), &tools, json!({"url": "x"})).await;
    assert!(out.is_error, "{}", out.content);
    assert!(
        out.content.contains("is a private address") && out.content.contains("not followed"),
        "{}",
        out.content
    );
    assert_eq!(count.load(Ordering::SeqCst), before + 1, "the redirect's target was never asked");
    let out = fetch_with(&format!("{base}/loop"), &tools, json!({"url": "x"})).await;
    assert!(out.content.contains("redirected more than 5 times"), "{}", out.content);
}

#[test]
fn allow_entries_are_spelled_as_urls_spell_hosts() {
    use crate::config::web_fetch_entry;
    assert_eq!(web_fetch_entry("Docs.RS").unwrap(), "docs.rs");
    assert_eq!(web_fetch_entry("localhost:8080").unwrap(), "localhost:8080");
    assert_eq!(web_fetch_entry("[::1]:3000").unwrap(), "[::1]:3000");
    assert_eq!(web_fetch_entry("::1").unwrap(), "[::1]");
    assert_eq!(web_fetch_entry("127.1").unwrap(), "127.0.0.1");
    for bad in ["https://docs.rs", "docs.rs/path", "", "host:99999", "a b"] {
        assert!(web_fetch_entry(bad).is_err(), "{bad}");
    }
    let tools = allowing(&["docs.rs", "localhost:8080"]);
    assert!(tools.allows_fetch("docs.rs", 443) && tools.allows_fetch("localhost", 8080));
    assert!(!tools.allows_fetch("localhost", 8081));
}
