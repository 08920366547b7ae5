//! Writes a large Claude Code session for the import benchmark: `gen_claude FILE MEGABYTES`.
//!
//! Shaped like a long real session: typed prompts, responses split one block per line (signed
//! thinking, text, one to three parallel calls), results parented on their call's line, large
//! tool outputs (logs and source text with escapes and non-ASCII), progress lines, a sidechain
//! every so often, and a compact boundary with its summary every 500 exchanges.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::io::{BufWriter, Write};

use serde_json::json;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(mb)) = (args.get(1), args.get(2).and_then(|m| m.parse::<u64>().ok()))
    else {
        eprintln!("usage: gen_claude FILE MEGABYTES");
        std::process::exit(2);
    };
    let target = mb * 1_000_000;
    let mut out = Out { file: BufWriter::new(std::fs::File::create(path)?), written: 0 };
    let base = json!({"isSidechain": false, "userType": "external", "cwd": "/home/u/proj",
        "sessionId": "bench", "version": "2.0.49", "gitBranch": "main"});
    let env = |extra: serde_json::Value| {
        let mut v = base.clone();
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    let log: String = (0..400)
        .map(|i| format!("test module_{i}::case_{i} ... ok \"quoted\" \\ tab\t ünïcode λ\n"))
        .collect();
    let mut parent = serde_json::Value::Null;
    let mut n = 0u64;
    let mut id = 0u64;
    let mut next = || {
        id += 1;
        format!("{id:08x}-0000-4000-8000-000000000000")
    };
    while out.written < target {
        n += 1;
        let u = next();
        out.line(env(json!({"type": "user", "uuid": u, "parentUuid": parent, "timestamp": "2025-11-23T04:53:40.000Z",
            "message": {"role": "user", "content": format!("step {n}: run the tests and fix what fails")}})))?;
        let mid = format!("msg_{n}");
        let t = next();
        out.line(env(json!({"type": "assistant", "uuid": t, "parentUuid": u, "timestamp": "2025-11-23T04:53:41.000Z",
            "message": {"id": mid, "role": "assistant", "model": "claude-sonnet-4-5", "content": [
                {"type": "thinking", "thinking": "Look at the failing test first.", "signature": "EqMBCkYIBxgCKkBsig=="}],
                "usage": {"input_tokens": 5, "output_tokens": 8}}})))?;
        let mut prev = t;
        let calls = 1 + n % 3;
        let mut call_lines = Vec::new();
        for c in 0..calls {
            let a = next();
            out.line(env(json!({"type": "assistant", "uuid": a, "parentUuid": prev, "timestamp": "2025-11-23T04:53:42.000Z",
                "message": {"id": mid, "role": "assistant", "model": "claude-sonnet-4-5", "content": [
                    {"type": "tool_use", "id": format!("toolu_{n}_{c}"), "name": "Bash", "input": {"command": "cargo test"}}]}})))?;
            call_lines.push(a.clone());
            prev = a;
        }
        out.line(env(json!({"type": "progress", "uuid": next(), "parentUuid": prev, "data": {"type": "bash_progress"}})))?;
        for (c, a) in call_lines.iter().enumerate() {
            let r = next();
            out.line(env(json!({"type": "user", "uuid": r, "parentUuid": a, "sourceToolAssistantUUID": a, "timestamp": "2025-11-23T04:53:43.000Z",
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{n}_{c}"), "content": log}]}})))?;
            prev = r;
        }
        if n.is_multiple_of(50) {
            out.line(env(json!({"type": "user", "uuid": next(), "parentUuid": null, "isSidechain": true, "agentId": "a1",
                "message": {"role": "user", "content": "explore"}})))?;
        }
        let f = next();
        out.line(env(json!({"type": "assistant", "uuid": f, "parentUuid": prev, "timestamp": "2025-11-23T04:53:44.000Z",
            "message": {"id": format!("msg_{n}_f"), "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": format!("Step {n} passes now.")}], "stop_reason": "end_turn"}})))?;
        parent = json!(f);
        if n.is_multiple_of(500) {
            let b = next();
            out.line(env(json!({"type": "system", "subtype": "compact_boundary", "uuid": b, "parentUuid": null,
                "logicalParentUuid": parent, "compactMetadata": {"trigger": "auto", "preTokens": 160000}})))?;
            let s = next();
            out.line(env(json!({"type": "user", "uuid": s, "parentUuid": b, "isCompactSummary": true,
                "message": {"role": "user", "content": format!("This session is being continued. Summary of steps 1 to {n}.")}})))?;
            parent = json!(s);
        }
    }
    out.file.flush()
}

struct Out {
    file: BufWriter<std::fs::File>,
    written: u64,
}

impl Out {
    fn line(&mut self, v: serde_json::Value) -> std::io::Result<()> {
        let mut s = v.to_string();
        s.push('\n');
        self.written += s.len() as u64;
        self.file.write_all(s.as_bytes())
    }
}
