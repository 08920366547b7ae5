//! The long sessions the journal benchmarks and `bench-open.sh` open: shaped like a long coding
//! session, generated deterministically.
#![allow(dead_code, clippy::unwrap_used, clippy::print_stderr)]

use std::io::{BufWriter, Write};
use std::path::Path;

use codewhale_journal::{
    AssistantPayload, Block, CompactionPath, CompactionPayload, Covers, Entry, EntryId,
    HeaderPayload, ToolResultPayload, Trigger, UserPayload,
};
use serde_json::json;

pub struct Rng(pub u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Tool output that looks like source files, test logs and listings.
pub fn tool_output(rng: &mut Rng, bytes: usize) -> String {
    const LINES: &[&str] = &[
        "    let value = parse(&input)?; // \"quoted\" path\\to\\file",
        "test journal::load::torn_tail ... ok",
        "error[E0308]: mismatched types — expected `String`, found `&str`",
        "drwxr-xr-x  5 dev dev 4096 Nov 29 18:00 src",
        "\tfn main() { println!(\"héllo wörld\"); }",
        "{\"level\":\"info\",\"msg\":\"request finished\",\"ms\":12}",
        "    assert_eq!(left, right, \"values differ at index {i}\");",
    ];
    let mut out = String::with_capacity(bytes + 80);
    while out.len() < bytes {
        out.push_str(LINES[rng.below(LINES.len() as u64) as usize]);
        out.push('\n');
    }
    out
}

fn output_size(rng: &mut Rng, scale: f64) -> usize {
    let base = match rng.below(100) {
        0..=69 => 500 + rng.below(2_500),
        70..=94 => 3_000 + rng.below(17_000),
        _ => 20_000 + rng.below(40_000),
    };
    (base as f64 * scale) as usize
}

/// The shape of a generated session.
pub struct Shape<'a> {
    pub session_id: &'a str,
    pub cwd: &'a str,
    /// About how large the file grows.
    pub bytes: usize,
    /// How many entries it has (a few more: the last exchange is finished).
    pub entries: usize,
    /// A summary compaction every this many entries.
    pub compact_every: Option<usize>,
}

/// Writes a long session to `path` (user prompts, assistant responses with 1–3 parallel tool
/// calls, tool outputs of 0.3–60 KB scaled to reach `shape.bytes`); every entry has its count.
pub fn write_session(path: &Path, shape: &Shape<'_>) {
    let (target_bytes, target_entries, compact_every) =
        (shape.bytes, shape.entries, shape.compact_every);
    let mut out = BufWriter::new(std::fs::File::create(path).unwrap());
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let header = Entry::new(None, HeaderPayload::new(shape.session_id, shape.cwd));
    let root = header.id.clone();
    let mut head = header.id.clone();
    let mut written = 0usize;
    let mut count = 0usize;
    let mut first_user: Option<EntryId> = None;
    let emit =
        |out: &mut BufWriter<std::fs::File>, e: &Entry, written: &mut usize, count: &mut usize| {
            let line = e.to_line().unwrap();
            out.write_all(line.as_bytes()).unwrap();
            out.write_all(b"\n").unwrap();
            *written += line.len() + 1;
            *count += 1;
        };
    emit(&mut out, &header, &mut written, &mut count);
    let mut call = 0u64;
    while count < target_entries {
        let user = Entry::new(
            Some(head.clone()),
            UserPayload::text(format!(
                "Please look at module {} and make the failing test pass; keep the public API.",
                rng.below(500)
            )),
        )
        .with_tokens(20);
        first_user.get_or_insert(user.id.clone());
        head = user.id.clone();
        emit(&mut out, &user, &mut written, &mut count);
        for _round in 0..(1 + rng.below(6)) {
            let calls: Vec<String> = (0..(1 + rng.below(3)))
                .map(|_| {
                    call += 1;
                    format!("toolu_{call:012}")
                })
                .collect();
            let mut blocks = vec![Block::text("Let me check the relevant files first.")];
            blocks.extend(calls.iter().map(|c| {
                Block::tool_use(
                    c.clone(),
                    "read_file",
                    json!({"path": format!("src/module_{}.rs", c.len())}),
                )
            }));
            let a = Entry::new(Some(head.clone()), AssistantPayload::new(blocks)).with_tokens(60);
            head = a.id.clone();
            emit(&mut out, &a, &mut written, &mut count);
            for c in &calls {
                // Scale outputs so that the file reaches its size at its entry count.
                let per_entry = target_bytes.saturating_sub(written) as f64
                    / target_entries.saturating_sub(count).max(1) as f64;
                let scale = ((per_entry - 300.0) / 3_400.0).clamp(0.1, 3.0);
                let size = output_size(&mut rng, scale);
                let r = Entry::new(
                    Some(head.clone()),
                    ToolResultPayload::new(c.clone(), tool_output(&mut rng, size), false),
                )
                .with_tokens((size / 4) as u32);
                head = r.id.clone();
                emit(&mut out, &r, &mut written, &mut count);
            }
        }
        let done = Entry::new(
            Some(head.clone()),
            AssistantPayload::new(vec![Block::text(
                "Done: the test passes now. I changed the loop bound and added a regression test.",
            )]),
        )
        .with_tokens(25);
        head = done.id.clone();
        emit(&mut out, &done, &mut written, &mut count);
        if let (Some(every), Some(first)) = (compact_every, &first_user) {
            if count % every < 20 && count > every {
                let mut c = CompactionPayload::new(CompactionPath::Summary, Trigger::Auto);
                c.summary = Some("## Objective\nKeep the tests green.\n".repeat(100));
                c.note = format!("Codewhale handoff note.\n{}", c.summary.clone().unwrap());
                c.covers = Some(Covers::new(first.clone(), head.clone(), count as u64));
                let rec = Entry::new(Some(root.clone()), c).with_tokens(900);
                emit(&mut out, &rec, &mut written, &mut count);
            }
        }
    }
    if compact_every.is_some() {
        // The exchanges since the last compaction: what the view holds besides the checkpoint.
        for i in 0..8 {
            let user = Entry::new(Some(head.clone()), UserPayload::text(format!("Next step {i}?")))
                .with_tokens(10);
            head = user.id.clone();
            emit(&mut out, &user, &mut written, &mut count);
            call += 1;
            let c = format!("toolu_{call:012}");
            let blocks = vec![
                Block::text("Reading it."),
                Block::tool_use(c.clone(), "read_file", json!({"path": "src/lib.rs"})),
            ];
            let a = Entry::new(Some(head.clone()), AssistantPayload::new(blocks)).with_tokens(40);
            head = a.id.clone();
            emit(&mut out, &a, &mut written, &mut count);
            let r = Entry::new(
                Some(head.clone()),
                ToolResultPayload::new(c, tool_output(&mut rng, 2_000), false),
            )
            .with_tokens(500);
            head = r.id.clone();
            emit(&mut out, &r, &mut written, &mut count);
            let done =
                Entry::new(Some(head.clone()), AssistantPayload::new(vec![Block::text("Done.")]))
                    .with_tokens(5);
            head = done.id.clone();
            emit(&mut out, &done, &mut written, &mut count);
        }
    }
    out.flush().unwrap();
    drop(out);
    eprintln!("generated {}: {count} entries, {:.1} MB", path.display(), written as f64 / 1e6);
}
