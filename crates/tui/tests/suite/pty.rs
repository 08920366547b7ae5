//! The pseudo-terminal harness: the real `codewhale` binary in a PTY, keys typed as bytes,
//! the screen read back through a VT100 parser. The harness answers the terminal queries a
//! real terminal answers (device attributes, and the keyboard-enhancement flags when asked to
//! play a terminal that supports them), so start-up never waits for a reply that cannot come.

use std::io::{Read as _, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codewhale_provider::test_support::TEST_API_KEY;
use portable_pty::{native_pty_system, Child, CommandBuilder, MasterPty, PtySize};
use tempfile::TempDir;

/// A note the engine's survival contract accepts, as the model's summary.
pub const SUMMARY: &str = "## Objective\nKeep the parser tests green.\n## User direction\n\
\"use the existing parser\"\n## Permissions and limits\nNone\n## Done\nRead the sources.\n\
## Changed files\nNone\n## Still running\nNone\n## Verification left\nRun cargo test.\n\
## Open questions\nNone\n## Next action\nContinue with the next step.\n## Reference\nsrc/lib.rs";

pub const ROWS: u16 = 30;
pub const COLS: u16 = 100;
pub const WAIT: Duration = Duration::from_secs(30);

/// A running `codewhale` in a pseudo-terminal.
/// The most bytes of output [`Pty`] keeps raw.
const RAW_CAP: usize = 16 << 20;

pub struct Pty {
    pub screen: Arc<Mutex<vt100::Parser>>,
    /// Every byte the program wrote (the first [`RAW_CAP`]), for what a screen does not show:
    /// a notification, the bell.
    raw: Arc<Mutex<Vec<u8>>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    /// Set once the program's side of the terminal closed and all it wrote was read.
    ended: Arc<AtomicBool>,
    pub child: Box<dyn Child + Send + Sync>,
    _master: Box<dyn MasterPty + Send>,
}

impl Pty {
    /// Starts `codewhale ARGS` in `ws` with `home` as its home, in a terminal that does not
    /// support keyboard enhancement (like most).
    pub fn spawn(args: &[&str], home: &TempDir, ws: &TempDir) -> Pty {
        Pty::spawn_in(args, home, ws, false, &[])
    }

    /// Like [`Pty::spawn`]; `enhanced` plays a terminal with the kitty keyboard protocol, and
    /// `env` adds variables.
    pub fn spawn_in(
        args: &[&str],
        home: &TempDir,
        ws: &TempDir,
        enhanced: bool,
        env: &[(&str, &str)],
    ) -> Pty {
        Pty::spawn_program(env!("CARGO_BIN_EXE_codewhale"), args, home, ws, enhanced, env)
    }

    /// Like [`Pty::spawn`] in a terminal of `rows` × [`COLS`].
    pub fn spawn_rows(args: &[&str], home: &TempDir, ws: &TempDir, rows: u16) -> Pty {
        let program = env!("CARGO_BIN_EXE_codewhale");
        Pty::spawn_sized(program, args, home, ws, false, &[], rows)
    }

    /// Runs `program ARGS` (a shell that starts codewhale, say) the same way.
    pub fn spawn_program(
        program: &str,
        args: &[&str],
        home: &TempDir,
        ws: &TempDir,
        enhanced: bool,
        env: &[(&str, &str)],
    ) -> Pty {
        Pty::spawn_sized(program, args, home, ws, enhanced, env, ROWS)
    }

    fn spawn_sized(
        program: &str,
        args: &[&str],
        home: &TempDir,
        ws: &TempDir,
        enhanced: bool,
        env: &[(&str, &str)],
        rows: u16,
    ) -> Pty {
        let pair = native_pty_system()
            .openpty(PtySize { rows, cols: COLS, pixel_width: 0, pixel_height: 0 })
            .unwrap();
        let mut cmd = CommandBuilder::new(program);
        cmd.args(args);
        cmd.cwd(ws.path());
        for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"]
        {
            cmd.env_remove(var);
        }
        cmd.env("CODEWHALE_HOME", home.path());
        cmd.env("HOME", home.path());
        cmd.env("TMPDIR", super::cli::child_tmp(home.path()));
        cmd.env("OPENAI_API_KEY", TEST_API_KEY);
        cmd.env("TERM", "xterm-256color");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer: Arc<Mutex<Box<dyn Write + Send>>> =
            Arc::new(Mutex::new(pair.master.take_writer().unwrap()));
        let screen = Arc::new(Mutex::new(vt100::Parser::new(rows, COLS, 0)));
        let sink = Arc::clone(&screen);
        let raw = Arc::new(Mutex::new(Vec::new()));
        let raw_sink = Arc::clone(&raw);
        let answers = Arc::clone(&writer);
        let ended = Arc::new(AtomicBool::new(false));
        let ended_sink = Arc::clone(&ended);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            let mut tail: Vec<u8> = Vec::new();
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().process(&buf[..n]);
                {
                    let mut raw = raw_sink.lock().unwrap();
                    let room = RAW_CAP.saturating_sub(raw.len());
                    raw.extend_from_slice(&buf[..n.min(room)]);
                }
                tail.extend_from_slice(&buf[..n]);
                // The cursor position report a terminal sends for `ESC [ 6 n`.
                if let Some(at) = find(&tail, b"\x1b[6n") {
                    let (row, col) = sink.lock().unwrap().screen().cursor_position();
                    let reply = format!("\x1b[{};{}R", row + 1, col + 1);
                    let mut w = answers.lock().unwrap();
                    let _ = w.write_all(reply.as_bytes());
                    let _ = w.flush();
                    tail.drain(..at + 4);
                }
                // Primary device attributes end every query; answer the flags query first.
                if let Some(at) = find(&tail, b"\x1b[c") {
                    let asked_flags = find(&tail[..at], b"\x1b[?u").is_some();
                    let mut reply: Vec<u8> = Vec::new();
                    if asked_flags && enhanced {
                        reply.extend_from_slice(b"\x1b[?0u");
                    }
                    reply.extend_from_slice(b"\x1b[?62;22c");
                    let mut w = answers.lock().unwrap();
                    let _ = w.write_all(&reply);
                    let _ = w.flush();
                    tail.drain(..at + 3);
                }
                let keep = tail.len().saturating_sub(16);
                tail.drain(..keep);
            }
            ended_sink.store(true, Ordering::SeqCst);
        });
        Pty { screen, raw, writer, ended, child, _master: pair.master }
    }

    /// How often `needle` occurs in what the program wrote.
    pub fn raw_count(&self, needle: &[u8]) -> usize {
        let raw = self.raw.lock().unwrap();
        raw.windows(needle.len()).filter(|w| *w == needle).count()
    }

    /// Waits until the program has written `needle`, like [`Pty::wait_for`] for the screen.
    pub async fn wait_for_bytes(&self, needle: &[u8]) {
        let start = Instant::now();
        while self.raw_count(needle) == 0 {
            assert!(
                start.elapsed() < WAIT,
                "{:?} was never written; screen:\n{}",
                String::from_utf8_lossy(needle),
                self.contents()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    pub async fn wait_for(&self, needle: &str) {
        let start = Instant::now();
        while !self.contents().contains(needle) {
            assert!(
                start.elapsed() < WAIT,
                "{needle:?} never appeared; screen:\n{}",
                self.contents()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until `needle` is no longer on the screen.
    pub async fn wait_gone(&self, needle: &str) {
        let start = Instant::now();
        while self.contents().contains(needle) {
            assert!(start.elapsed() < WAIT, "{needle:?} never went; screen:\n{}", self.contents());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the last frame the program started drawing is whole on the screen (frames
    /// are synchronized updates, DEC mode 2026): what one key changed is then all there.
    pub async fn wait_frame_end(&self) {
        const BEGIN: &[u8] = b"\x1b[?2026h";
        const END: &[u8] = b"\x1b[?2026l";
        let start = Instant::now();
        loop {
            let whole = {
                let raw = self.raw.lock().unwrap();
                let last = |needle: &[u8]| raw.windows(needle.len()).rposition(|w| w == needle);
                last(END).is_some() && last(BEGIN) < last(END)
            };
            if whole {
                return;
            }
            assert!(start.elapsed() < WAIT, "a frame never ended; screen:\n{}", self.contents());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until everything the program wrote has been read onto the screen: its side of the
    /// terminal closed (it exited) and the reader reached the end.
    pub async fn wait_output_end(&self) {
        let start = Instant::now();
        while !self.ended.load(Ordering::SeqCst) {
            assert!(start.elapsed() < WAIT, "the output never ended; screen:\n{}", self.contents());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends `prompt` with Enter, then waits for `answer` and for the composer to be ready again.
    pub async fn ask(&mut self, prompt: &str, answer: &str) {
        self.send(format!("{prompt}\r").as_bytes());
        self.wait_for(answer).await;
        self.wait_for("ready").await;
    }

    /// Presses `key` (PgUp, PgDn, ...) up to `tries` times until `needle` is on screen, each
    /// press only once the last one moved the screen, so no press is still on its way when it
    /// returns.
    pub async fn scroll_to(&mut self, needle: &str, key: &[u8], tries: usize) {
        for _ in 0..tries {
            let before = self.contents();
            if before.contains(needle) {
                return;
            }
            self.send(key);
            let start = Instant::now();
            while self.contents() == before {
                assert!(start.elapsed() < WAIT, "{key:?} did not scroll; screen:\n{before}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        self.wait_for(needle).await;
    }

    pub fn send(&mut self, bytes: &[u8]) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(bytes).unwrap();
        w.flush().unwrap();
    }

    pub async fn wait_exit(&mut self) -> portable_pty::ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < WAIT, "codewhale did not exit; screen:\n{}", self.contents());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The command-line flags that point codewhale at the mock server at `base_url`.
pub fn mock_args(base_url: &str) -> Vec<String> {
    ["--provider", "openai", "--model", "gpt-4.1", "--base-url", base_url]
        .map(str::to_owned)
        .to_vec()
}

/// The session files in `home`.
pub fn journals(home: &TempDir) -> Vec<PathBuf> {
    std::fs::read_dir(home.path().join("sessions"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect()
}
