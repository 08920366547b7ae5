//! The session `context --json`'s memory is measured on (docs/performance.md, *Opening a long session, end to end*): a long coding session compacted once, generated deterministically from a seed.
//!
//! Turns of four entries — a user text of 8–200 words, an assistant text of 5–120 words with one
//! `read_file` call, the call's result of 1–32 KiB (log-uniform), a short answer — until the
//! file holds `entries` entries; then one summary record covering all but the last 40 entries,
//! and a last user message. 100,000 entries make about 280 MB. With `counts`, every entry carries
//! its count; without, none does (the record neither), as entries `exec` writes before the
//! encoder is built, or another tool's, come: a report counts what it shows itself then.
#![allow(dead_code, clippy::unwrap_used, clippy::print_stderr)]

use std::io::{BufWriter, Write};
use std::path::Path;

use codewhale_journal::{
    AssistantPayload, Block, CompactionPath, CompactionPayload, Covers, Entry, EntryId,
    HeaderPayload, ToolResultPayload, Trigger, UserPayload,
};
use serde_json::json;

/// The shape's parameters.
pub struct ReportShape<'a> {
    pub session_id: &'a str,
    pub cwd: &'a str,
    /// Entries before the summary record and the last message.
    pub entries: usize,
    pub seed: u64,
    /// Whether entries carry their counts.
    pub counts: bool,
}

/// xorshift64*: small, seeded, the same sequence on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const WORDS: &[&str] = &[
    "the",
    "module",
    "test",
    "fails",
    "when",
    "parser",
    "reads",
    "an",
    "empty",
    "line",
    "please",
    "check",
    "journal",
    "index",
    "window",
    "budget",
    "compaction",
    "note",
    "keep",
    "public",
    "API",
    "rename",
    "function",
    "error",
    "handling",
    "async",
    "stream",
    "buffer",
    "offset",
    "retry",
    "server",
    "request",
    "reply",
    "tokens",
    "cache",
    "path",
    "file",
    "write",
    "read",
    "lock",
    "session",
    "résumé",
    "naïve",
    "größe",
    "config",
    "flag",
    "value",
    "\"quoted\"",
    "back\\slash",
];

fn words(rng: &mut Rng, low: u64, high: u64) -> String {
    let n = rng.between(low, high);
    let mut out = String::new();
    for i in 0..n {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(WORDS[rng.between(0, WORDS.len() as u64 - 1) as usize]);
    }
    out
}

/// A file's content of about `bytes` as the journal holds it (JSON-escaped): source lines, logs
/// and JSON with escapes.
fn file_content(rng: &mut Rng, bytes: usize) -> String {
    let escaped = |line: &str| line.len() + line.matches(['"', '\\', '\t']).count() + 2;
    const LINES: &[&str] = &[
        "    let value = parse(&input)?; // \"quoted\" path\\to\\file",
        "test journal::load::torn_tail ... ok",
        "error[E0308]: mismatched types — expected `String`, found `&str`",
        "\tfn main() { println!(\"héllo wörld\"); }",
        "{\"level\":\"info\",\"msg\":\"request finished\",\"ms\":12}",
        "    assert_eq!(left, right, \"values differ at index {i}\");",
        "pub struct Reader<'a> { buf: &'a [u8], pos: usize }",
    ];
    let mut out = String::with_capacity(bytes + 80);
    let mut size = 0;
    while size < bytes {
        let line = LINES[rng.between(0, LINES.len() as u64 - 1) as usize];
        out.push_str(line);
        out.push('\n');
        size += escaped(line);
    }
    out
}

/// Writes the session to `path`; returns (entries, bytes).
pub fn write_report_session(path: &Path, shape: &ReportShape<'_>) -> (usize, u64) {
    let mut out = BufWriter::new(std::fs::File::create(path).unwrap());
    let mut rng = Rng(shape.seed.max(1));
    let mut written = 0u64;
    let mut lines: Vec<EntryId> = Vec::with_capacity(shape.entries + 2);
    let counts = shape.counts;
    let mut emit = |out: &mut BufWriter<std::fs::File>, e: &Entry| {
        let mut e = e.clone();
        if !counts {
            e.tokens = None;
        }
        let line = e.to_line().unwrap();
        out.write_all(line.as_bytes()).unwrap();
        out.write_all(b"\n").unwrap();
        written += line.len() as u64 + 1;
    };
    let header = Entry::new(None, HeaderPayload::new(shape.session_id, shape.cwd));
    emit(&mut out, &header);
    let mut head = header.id.clone();
    let tokens = |bytes: usize| (bytes / 4).max(1) as u32;
    let mut call = 0u64;
    while lines.len() + 4 <= shape.entries {
        let text = words(&mut rng, 8, 200);
        let user = Entry::new(Some(head.clone()), UserPayload::text(text.clone()))
            .with_tokens(tokens(text.len()));
        head = user.id.clone();
        lines.push(user.id.clone());
        emit(&mut out, &user);
        call += 1;
        let id = format!("call_{call:08}");
        let said = words(&mut rng, 5, 120);
        let blocks = vec![
            Block::text(said.clone()),
            Block::tool_use(
                id.clone(),
                "read_file",
                json!({"path": format!("src/module_{}.rs", rng.between(0, 999))}),
            ),
        ];
        let asked = Entry::new(Some(head.clone()), AssistantPayload::new(blocks))
            .with_tokens(tokens(said.len() + 40));
        head = asked.id.clone();
        lines.push(asked.id.clone());
        emit(&mut out, &asked);
        // 1–32 KiB, log-uniform.
        let size = (1024.0 * 32f64.powf(rng.unit())) as usize;
        let content = file_content(&mut rng, size);
        let result = Entry::new(Some(head.clone()), ToolResultPayload::new(id, content, false))
            .with_tokens(tokens(size));
        head = result.id.clone();
        lines.push(result.id.clone());
        emit(&mut out, &result);
        let answer = words(&mut rng, 3, 12);
        let done = Entry::new(Some(head.clone()), AssistantPayload::new(vec![Block::text(answer)]))
            .with_tokens(10);
        head = done.id.clone();
        lines.push(done.id.clone());
        emit(&mut out, &done);
    }
    // One summary covering all but the last 40 entries.
    let covered = lines.len().saturating_sub(40).max(1);
    let mut record = CompactionPayload::new(CompactionPath::Summary, Trigger::Auto);
    let summary = "## Objective\nKeep the tests green while the parser is rewritten.\n".repeat(40);
    record.note = format!("Codewhale handoff note.\n{summary}");
    record.summary = Some(summary);
    record.covers = Some(Covers::new(lines[0].clone(), lines[covered - 1].clone(), covered as u64));
    let record = Entry::new(Some(head.clone()), record).with_tokens(700);
    head = record.id.clone();
    emit(&mut out, &record);
    let last = words(&mut rng, 8, 200);
    let user =
        Entry::new(Some(head), UserPayload::text(last.clone())).with_tokens(tokens(last.len()));
    emit(&mut out, &user);
    out.flush().unwrap();
    (lines.len() + 3, written)
}
