//! Measures the terminal UI while a long reply streams (`scripts/bench.sh stream`): the real
//! `codewhale` binary in a pseudo-terminal of 120×40, a scripted 70 KB markdown reply from the
//! in-process mock provider (one SSE chunk of about one 16-byte delta every 5 ms, ~22 s), and
//! a VT100 parser reading the screen back.
//!
//! It reports the CPU the codewhale process uses (utime + stime from `/proc`) while idle and
//! while the reply streams, and how long a typed key and a Backspace take to be on screen — from
//! the write to the pseudo-terminal to the read that shows the change — when idle and while a
//! second copy of the reply streams.
//!
//! Usage: `stream_bench BINARY [KEYS]` (KEYS: key presses per phase, default 60).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{Read as _, Write};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use codewhale_provider::test_support::{MockServer, Reply, TEST_API_KEY};
use portable_pty::{native_pty_system, CommandBuilder, PtySize};

const ROWS: u16 = 40;
const COLS: u16 = 120;
/// Typed into the composer after [`BASE`] (the reply never holds these capitals, so their
/// presence on the screen is the composer's).
const MARK: &str = "QZJXJXJXJX";
/// What the composer holds before the measured keys.
const BASE: usize = 2;
const WAIT: Duration = Duration::from_secs(120);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the reader thread watches for after every read: `needle` on screen (or gone).
struct Probe {
    needle: String,
    present: bool,
    sent: Instant,
    done: mpsc::Sender<Duration>,
}

struct Term {
    screen: Arc<Mutex<vt100::Parser>>,
    probe: Arc<Mutex<Option<Probe>>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    pid: u32,
}

impl Term {
    fn contains(&self, needle: &str) -> bool {
        lock(&self.screen).screen().contents().contains(needle)
    }

    fn wait_for(&self, needle: &str) -> anyhow::Result<()> {
        let start = Instant::now();
        while !self.contains(needle) {
            if start.elapsed() > WAIT {
                bail!("{needle:?} never appeared:\n{}", lock(&self.screen).screen().contents());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    fn send(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        let mut w = lock(&self.writer);
        w.write_all(bytes)?;
        w.flush()?;
        Ok(())
    }

    /// Writes `bytes` and returns how long until `needle` is on screen (`present`) or gone.
    fn key(&mut self, bytes: &[u8], needle: &str, present: bool) -> anyhow::Result<Duration> {
        let (done, seen) = mpsc::channel();
        let sent = Instant::now();
        *lock(&self.probe) = Some(Probe { needle: needle.to_owned(), present, sent, done });
        self.send(bytes)?;
        seen.recv_timeout(Duration::from_secs(5)).context("a key never showed on screen")
    }

    /// CPU seconds the process used so far (all its threads).
    fn cpu(&self) -> anyhow::Result<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid))?;
        // Fields after the command name (which is in parentheses and may hold spaces).
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
        // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
        Ok((ticks(11) + ticks(12)) / clock_ticks())
    }
}

fn clock_ticks() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

fn spawn(
    binary: &str,
    url: &str,
    home: &std::path::Path,
    ws: &std::path::Path,
) -> anyhow::Result<Term> {
    let pair = native_pty_system().openpty(PtySize {
        rows: ROWS,
        cols: COLS,
        pixel_width: 0,
        pixel_height: 0,
    })?;
    let mut cmd = CommandBuilder::new(binary);
    cmd.args(["--provider", "openai", "--base-url", url, "--model", "gpt-4.1"]);
    cmd.cwd(ws);
    cmd.env("CODEWHALE_HOME", home);
    cmd.env("HOME", home);
    cmd.env("OPENAI_API_KEY", TEST_API_KEY);
    cmd.env("TERM", "xterm-256color");
    let child = pair.slave.spawn_command(cmd)?;
    let pid = child.process_id().context("no pid for the child")?;
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader()?;
    let writer = Arc::new(Mutex::new(pair.master.take_writer()?));
    let answers = Arc::clone(&writer);
    let screen = Arc::new(Mutex::new(vt100::Parser::new(ROWS, COLS, 0)));
    let probe: Arc<Mutex<Option<Probe>>> = Arc::new(Mutex::new(None));
    let (sink, watch) = (Arc::clone(&screen), Arc::clone(&probe));
    std::thread::spawn(move || {
        let _keep = (pair.master, child);
        let mut buf = [0u8; 65536];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            let data = &buf[..n];
            let mut parser = lock(&sink);
            parser.process(data);
            if data.windows(3).any(|w| w == b"\x1b[c") {
                // A terminal's answer to the device-attributes query that ends start-up.
                let mut w = lock(&answers);
                let _ = w.write_all(b"\x1b[?62;22c");
                let _ = w.flush();
            }
            let mut pending = lock(&watch);
            let met = pending
                .as_ref()
                .is_some_and(|p| parser.screen().contents().contains(&p.needle) == p.present);
            if met {
                if let Some(p) = pending.take() {
                    let _ = p.done.send(p.sent.elapsed());
                }
            }
        }
    });
    Ok(Term { screen, probe, writer, pid })
}

/// A markdown reply of about `bytes` bytes: sections of prose, lists, a table and code fences,
/// ending with `end`.
fn reply_text(bytes: usize, end: &str) -> String {
    let mut out = String::new();
    let mut n = 0;
    while out.len() < bytes {
        n += 1;
        out.push_str(&format!(
            "## Step {n}: reading the module\n\nThe parser keeps its state in a small struct, and \
             each call to `next` advances it by one token. This section looks at how the \
             buffer grows, why the lookahead is bounded, and what happens at the end of the \
             input, with *emphasis* and **strong** words in between.\n\n\
             - the buffer is reused between calls\n- the lookahead is one byte\n  - nested: \
             it never allocates\n- errors carry the line number\n\n\
             | field | type | note |\n|-------|------|------|\n| pos | usize | byte offset |\n\
             | line | u32 | for errors |\n\n```rust\nfn next(&mut self) -> Option<Token> {{\n    \
             let byte = *self.input.get(self.pos)?;\n    self.pos += 1;\n    match byte {{\n        \
             b'\\n' => {{ self.line += 1; Some(Token::Newline) }}\n        b' ' | b'\\t' => \
             self.next(),\n        _ => Some(Token::Byte(byte)),\n    }}\n}}\n```\n\n\
             > a note: step {n} changes nothing else in the module.\n\n"
        ));
    }
    out.push_str(end);
    out.push('\n');
    out
}

/// The reply as OpenAI SSE with 16-byte deltas.
fn sse(text: &str) -> String {
    let mut out = String::new();
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        let v = serde_json::json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk",
            "created": 1_764_000_000u64, "model": "gpt-4.1",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {v}\n\n")
    };
    out.push_str(&chunk(serde_json::json!({"role": "assistant", "content": ""}), None));
    let mut rest = text;
    while !rest.is_empty() {
        let at = rest.ceil_char_boundary(16);
        let (piece, tail) = rest.split_at(at);
        out.push_str(&chunk(serde_json::json!({"content": piece}), None));
        rest = tail;
    }
    out.push_str(&chunk(serde_json::json!({}), Some("stop")));
    out.push_str("data: [DONE]\n\n");
    out
}

fn stats(name: &str, mut samples: Vec<Duration>) {
    if samples.is_empty() {
        println!("  {name}: no samples");
        return;
    }
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!(
        "  {name}: median {:.1} ms, p95 {:.1} ms, max {:.1} ms ({} keys)",
        ms(at(0.5)),
        ms(at(0.95)),
        ms(at(1.0)),
        samples.len()
    );
}

/// Types MARK one key at a time and takes it back with Backspace, `keys` presses in all, at
/// uneven intervals so the keys fall at every phase of the frame clock.
fn type_keys(term: &mut Term, keys: usize) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
    let (mut typed, mut erased) = (Vec::new(), Vec::new());
    let mut seed = 0x2545_f491_u64;
    term.send(&MARK.as_bytes()[..BASE])?;
    term.wait_for(&MARK[..BASE])?;
    let mut len = BASE;
    let mut growing = true;
    for _ in 0..keys {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_millis(60 + (seed >> 33) % 90));
        if growing {
            len += 1;
            typed.push(term.key(&MARK.as_bytes()[len - 1..len], &MARK[..len], true)?);
            growing = len < MARK.len();
        } else {
            erased.push(term.key(b"\x7f", &MARK[..len], false)?);
            len -= 1;
            growing = len == BASE;
        }
    }
    // The base goes too, unmeasured: the composer is empty again.
    term.send(&b"\x7f".repeat(len))?;
    std::thread::sleep(Duration::from_millis(200));
    Ok((typed, erased))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let binary = args.next().context("usage: stream_bench BINARY [KEYS]")?;
    let keys: usize = args.next().and_then(|k| k.parse().ok()).unwrap_or(60);
    let server = MockServer::start().await?;
    let replies = ["That is the whole first reply.", "That is the whole second reply."];
    let text = reply_text(70_000, replies[0]);
    for end in replies {
        let text = reply_text(70_000, end);
        let body = sse(&text);
        // About one delta per chunk: the SSE events average this many bytes.
        let size = body.len() / (text.len() / 16).max(1);
        server.push(Reply::raw_sse(body).with_chunk_size(size).slow(Duration::from_millis(5)));
    }
    let url = server.openai_base_url();
    let dir = tempfile::tempdir()?;
    let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&ws)?;
    let result =
        tokio::task::spawn_blocking(move || run(&binary, &url, &home, &ws, keys, text.len()))
            .await?;
    drop(server);
    result
}

fn run(
    binary: &str,
    url: &str,
    home: &std::path::Path,
    ws: &std::path::Path,
    keys: usize,
    reply_bytes: usize,
) -> anyhow::Result<()> {
    let mut term = spawn(binary, url, home, ws)?;
    term.wait_for("gpt-4.1")?;
    std::thread::sleep(Duration::from_secs(2));
    let (c0, t0) = (term.cpu()?, Instant::now());
    std::thread::sleep(Duration::from_secs(5));
    let idle = (term.cpu()? - c0) / t0.elapsed().as_secs_f64();
    let (idle_typed, idle_erased) = type_keys(&mut term, keys)?;

    term.send(b"show me the first reply\r")?;
    term.wait_for("Step 1: reading")?;
    let (c0, t0) = (term.cpu()?, Instant::now());
    term.wait_for("That is the whole first reply.")?;
    let streamed = t0.elapsed().as_secs_f64();
    let streaming = (term.cpu()? - c0) / streamed;
    std::thread::sleep(Duration::from_secs(2));
    let (c1, t1) = (term.cpu()?, Instant::now());
    std::thread::sleep(Duration::from_secs(5));
    let idle_after = (term.cpu()? - c1) / t1.elapsed().as_secs_f64();

    term.send(b"and the second\r")?;
    term.wait_for("the second")?;
    std::thread::sleep(Duration::from_millis(500));
    let (busy_typed, busy_erased) = type_keys(&mut term, keys)?;
    let still_streaming = !term.contains("That is the whole second reply.");
    term.wait_for("That is the whole second reply.")?;

    println!(
        "codewhale TUI, {COLS}x{ROWS} pseudo-terminal, a {reply_bytes}-byte markdown reply in \
         16-byte deltas every 5 ms"
    );
    println!(
        "  CPU while the reply streams: {:.1} % of a core over {streamed:.1} s",
        streaming * 100.0
    );
    println!(
        "  CPU idle: {:.1} % before the reply, {:.1} % after it",
        idle * 100.0,
        idle_after * 100.0
    );
    stats("key, idle", idle_typed);
    stats("Backspace, idle", idle_erased);
    stats("key, while streaming", busy_typed);
    stats("Backspace, while streaming", busy_erased);
    if !still_streaming {
        println!("  (the second reply ended before the last key: fewer keys, or a slower stream)");
    }
    term.send(b"\x03")?;
    std::thread::sleep(Duration::from_millis(200));
    term.send(b"\x03")?;
    std::thread::sleep(Duration::from_millis(500));
    Ok(())
}
