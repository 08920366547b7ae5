//! The floor of a one-prompt `codewhale exec` (`scripts/bench-exec.sh`): what any client must
//! do for the same round trip, and nothing else. A process starts, sends one streamed Chat
//! Completions request to the mock provider over a plain TCP connection, reads the stream to
//! its end, appends two journal-sized lines to a new file with one `sync_data` (the user entry
//! and the reply), prints the reply's text and exits. No configuration, no TLS, no async
//! runtime, no parsing beyond finding the text.
//!
//! Usage: `exec_floor BASE_URL DIR` (BASE_URL as the mock prints it, `http://127.0.0.1:PORT/v1`).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{Read as _, Write as _};
use std::net::TcpStream;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(dir)) = (args.next(), args.next()) else {
        eprintln!("usage: exec_floor BASE_URL DIR");
        std::process::exit(2);
    };
    let rest = url.strip_prefix("http://").unwrap_or(&url);
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let body = r#"{"model":"gpt-4.1","stream":true,"messages":[{"role":"user","content":"say the answer"}]}"#;
    let request = format!(
        "POST /{path}/chat/completions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer sk-bench\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(host)?;
    stream.write_all(request.as_bytes())?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    // The text of every `"content":"..."` delta, unescaped only as far as the mock's replies need.
    let mut text = String::new();
    for piece in response.split("\"content\":\"").skip(1) {
        if let Some(end) = piece.find('"') {
            text.push_str(&piece[..end]);
        }
    }
    let journal = std::path::Path::new(&dir).join("floor.jsonl");
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(journal)?;
    let user =
        r#"{"v":1,"kind":"user","payload":{"content":[{"type":"text","text":"say the answer"}]}}"#;
    let reply = format!(
        "{{\"v\":1,\"kind\":\"assistant\",\"payload\":{{\"content\":[{{\"type\":\"text\",\"text\":{text:?}}}]}}}}"
    );
    file.write_all(format!("{user}\n{reply}\n").as_bytes())?;
    file.sync_data()?;
    println!("{text}");
    Ok(())
}
