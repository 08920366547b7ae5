//! Small helpers the command-line suites share: a mock server with a home and a workspace,
//! output as text, files in a workspace, the journals a home holds.

use std::path::Path;

use codewhale_provider::test_support::MockServer;
use tempfile::TempDir;

/// A mock server, a Codewhale home and a workspace, each its own.
pub struct Scene {
    pub server: MockServer,
    pub home: TempDir,
    pub ws: TempDir,
}

impl Scene {
    pub async fn new() -> Scene {
        Scene {
            server: MockServer::start().await.unwrap(),
            home: tempfile::tempdir().unwrap(),
            ws: tempfile::tempdir().unwrap(),
        }
    }

    /// `codewhale` with this home, in this workspace (no subcommand, no provider yet).
    pub fn command(&self) -> tokio::process::Command {
        super::cli::codewhale(self.home.path(), self.ws.path())
    }
}

/// Process output as text (lossy: a test reads it, nothing parses it strictly).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Writes `text` to `rel` under `ws`, creating its directories.
pub fn write_in(ws: &Path, rel: &str, text: &str) {
    let path = ws.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Every session journal under `home`, concatenated.
pub fn session_texts(home: &Path) -> String {
    std::fs::read_dir(home.join("sessions"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

/// Runs `cmd` until the process reaches the pause point `at` (`CODEWHALE_PAUSE_AT`), then
/// kills it with SIGKILL: a kill in the middle of a multi-step operation.
pub async fn kill_at(mut cmd: tokio::process::Command, at: &str) {
    use tokio::io::AsyncBufReadExt as _;
    cmd.env(codewhale_engine::pause_point::VAR, at)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let paused = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains(&format!("paused at {at}")) {
                return true;
            }
        }
        false
    };
    let paused = tokio::time::timeout(std::time::Duration::from_secs(60), paused).await;
    assert_eq!(paused, Ok(true), "the process never reached {at}");
    child.kill().await.unwrap();
}

/// Lines a command writes into a FIFO, handed over as they come: a marker a test waits for,
/// never a file it polls.
pub struct Marks {
    pub path: std::path::PathBuf,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl Marks {
    /// A FIFO named `name` in `dir`, read from now on.
    pub fn new(dir: &Path, name: &str) -> Marks {
        use std::io::BufRead as _;
        let path = dir.join(name);
        let made = std::process::Command::new("mkfifo").arg(&path).status().unwrap();
        assert!(made.success(), "mkfifo {}", path.display());
        // Opened for reading and writing: the open does not wait for a writer, and a writer
        // closing it is no end of file.
        let fifo = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(fifo).lines() {
                let Ok(line) = line else { return };
                if tx.send(line.trim().to_owned()).is_err() {
                    return;
                }
            }
        });
        Marks { path, lines }
    }

    /// Waits (30 s at most) for `count` more lines that `matches`.
    pub async fn until(&mut self, count: usize, matches: impl Fn(&str) -> bool) {
        let wait = async {
            let mut seen = 0;
            while seen < count {
                let line = self.lines.recv().await.expect("the FIFO's reader ended");
                seen += usize::from(matches(&line));
            }
        };
        let waited = tokio::time::timeout(std::time::Duration::from_secs(30), wait).await;
        assert!(waited.is_ok(), "{} never got {count} such lines", self.path.display());
    }
}
