//! An MCP server over HTTP that answers forever (docs/security.md, *Network reads*): one
//! message is read through 32 MiB, then the server fails alone with a reason. The peak
//! resident memory of a fresh process is measured through the kernel's own accounting
//! (`codewhale_provider::test_support::peak`), never time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use codewhale_mcp::{ServerConfig, Servers, Status, Transport};
use codewhale_provider::test_support::peak;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const MIB: u64 = 1 << 20;

/// Serves every connection on a local port with `head` then 64 KiB pieces of `piece`, 192 MiB
/// in all (finite: a client without a bound shows its cost instead of exhausting the machine).
async fn flood(head: &'static str, piece: Vec<u8>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let piece = Arc::new(piece);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let piece = piece.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let chunk = [format!("{:x}\r\n", piece.len()).as_bytes(), &piece, b"\r\n"].concat();
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                for _ in 0..(192 * MIB / piece.len() as u64) {
                    if socket.write_all(&chunk).await.is_err() {
                        return;
                    }
                }
                let _ = socket.write_all(b"0\r\n\r\n").await;
            });
        }
    });
    port
}

/// Starts one HTTP server at `port` and says how it ended.
async fn connect(port: u16) -> String {
    let config = ServerConfig::new(
        "flood",
        Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            bearer_token_env_var: None,
            headers: Vec::new(),
            env_headers: Vec::new(),
        },
    );
    let cache = tempfile::tempdir().unwrap();
    let servers = Servers::new(
        vec![config],
        std::env::temp_dir(),
        Some(cache.path().to_path_buf()),
        Arc::new(|_: &str| None),
    );
    servers.start(Arc::new(|_| {}));
    let offered = servers.offered().await;
    let status = servers.reports().into_iter().find(|r| r.name == "flood").unwrap().status;
    servers.shutdown().await;
    match status {
        Status::Failed(reason) => format!("failed: {reason}"),
        other => format!("{other:?} offering {}", offered.len()),
    }
}

fn attack(head: &'static str, piece: Vec<u8>) -> String {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async move { connect(flood(head, piece).await).await })
}

const JSON_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

#[test]
fn an_endless_json_answer_costs_its_bound_and_fails_the_server_alone() {
    let measured = peak::measure(
        module_path!(),
        "an_endless_json_answer_costs_its_bound_and_fails_the_server_alone",
        || {
            let mut piece = b"{\"jsonrpc\": \"2.0\", \"id\": 0, \"result\": \"".to_vec();
            piece.resize(64 * 1024, b'x');
            attack(JSON_HEAD, piece)
        },
    );
    let Some(peak) = measured.unwrap() else { return };
    assert!(peak.growth < 96 * MIB, "peak grew by {} MiB: {peak:?}", peak.growth / MIB);
    assert!(peak.said.starts_with("failed: "), "{peak:?}");
}

#[test]
fn an_endless_sse_event_costs_its_bound_and_fails_the_server_alone() {
    let measured = peak::measure(
        module_path!(),
        "an_endless_sse_event_costs_its_bound_and_fails_the_server_alone",
        || {
            let mut piece = b"data: ".to_vec();
            piece.resize(64 * 1024 - 1, b'x');
            piece.push(b'\n');
            attack(SSE_HEAD, piece)
        },
    );
    let Some(peak) = measured.unwrap() else { return };
    assert!(peak.growth < 96 * MIB, "peak grew by {} MiB: {peak:?}", peak.growth / MIB);
    assert!(peak.said.starts_with("failed: "), "{peak:?}");
}
