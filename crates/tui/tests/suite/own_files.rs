//! Codewhale's own machinery against the real binary (docs/security.md, *Codewhale's own
//! files*, *Private by default*, *What reaches the terminal*): a FIFO where a checkpoint, a
//! rewind or a restore intent looks, a forged intent, a blob swapped for a link, the modes of
//! what Codewhale creates, secret files kept out of the store, and the model's control
//! characters on the way to the terminal. Each hang is bounded by a timeout that fails the
//! test.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use super::support::{text, write_in};
use codewhale_provider::test_support::{MockServer, Reply, ToolCall, TEST_API_KEY};
use serde_json::{json, Value};
use tempfile::TempDir;

struct Setup {
    server: MockServer,
    home: TempDir,
    ws: TempDir,
}

impl Setup {
    async fn new() -> Setup {
        Setup {
            server: MockServer::start().await.unwrap(),
            home: tempfile::tempdir().unwrap(),
            ws: tempfile::tempdir().unwrap(),
        }
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let base = self.server.openai_base_url();
        let mut cmd = super::cli::codewhale(self.home.path(), self.ws.path());
        cmd.args(args)
            .args(["--provider", "openai", "--model", "gpt-4.1", "--base-url", &base])
            .env("OPENAI_API_KEY", TEST_API_KEY)
            .stdin(std::process::Stdio::null());
        cmd
    }

    /// `codewhale ARGS`, which must end within a minute (a hang fails the test).
    async fn run(&self, args: &[&str]) -> Output {
        let run = self.command(args).output();
        tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .unwrap_or_else(|_| panic!("codewhale {args:?} did not finish within a minute"))
            .unwrap()
    }

    fn session(&self) -> PathBuf {
        super::pty::journals(&self.home).remove(0)
    }

    fn lines(&self) -> Vec<Value> {
        std::fs::read_to_string(self.session())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn first_user(&self) -> String {
        let lines = self.lines();
        lines.iter().find(|l| l["kind"] == "user").unwrap()["id"].as_str().unwrap().to_owned()
    }
}

fn fifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let made = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The text of every tool result the second request carried.
fn results_sent(server: &MockServer) -> String {
    server.requests()[1].raw.clone()
}

/// `write_file pipe` after `mkfifo pipe` hung the session forever: its "before" checkpoint
/// opened the FIFO for a read. Now the tool refuses it at once, in DESIGN's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_file_on_a_named_pipe_is_refused_at_once() {
    let s = Setup::new().await;
    fifo(&s.ws.path().join("pipe"));
    s.server.push_all([
        Reply::tool_calls(vec![
            ToolCall::new("w", "write_file", json!({"path": "pipe", "content": "x"})),
            ToolCall::new(
                "e",
                "edit_file",
                json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
            ),
        ]),
        Reply::text("refused"),
    ]);
    let out = s.run(&["exec", "--approval", "auto-edit", "write to the pipe"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sent = results_sent(&s.server);
    assert_eq!(sent.matches("pipe is a named pipe, not a file").count(), 2, "{sent}");
}

/// `rewind --code` hashed each file by reading it whole (a FIFO hung it): a file a tool wrote
/// that is now a FIFO is left as changed by someone else, at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_over_a_fifo_finishes_and_leaves_it() {
    let s = Setup::new().await;
    s.server.push_all([
        Reply::tool_call("w", "write_file", json!({"path": "a.txt", "content": "new\n"})),
        Reply::text("wrote it"),
    ]);
    let out = s.run(&["exec", "--approval", "full", "write a.txt"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::fs::remove_file(s.ws.path().join("a.txt")).unwrap();
    fifo(&s.ws.path().join("a.txt"));
    let user = s.first_user();
    let out = s.run(&["rewind", "--last", "--to", &user, "--code"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("a.txt"), "{}", text(&out.stderr));
}

/// A FIFO left as the restore intent hung every open of the session (and ignored SIGTERM); a
/// huge one was read whole. Each is set aside with one sentence and the session opens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_intent_that_is_a_fifo_or_huge_is_set_aside() {
    let s = Setup::new().await;
    s.server.push_all([Reply::text("one"), Reply::text("two"), Reply::text("three")]);
    let out = s.run(&["exec", "hello"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let intent = s.session().with_extension("files").join("restore-intent.json");
    fifo(&intent);
    let out = s.run(&["exec", "--last", "again"]).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("that Codewhale did not write") && stderr.contains("FIFO"), "{stderr}");
    assert!(!intent.exists(), "set aside");
    let huge = std::fs::File::create(&intent).unwrap();
    huge.set_len(2 << 30).unwrap();
    let out = s.run(&["exec", "--last", "and again"]).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("that Codewhale did not write"), "{stderr}");
    assert_eq!(text(&out.stdout), "three\n");
}

/// A forged intent naming `.git/hooks/pre-commit` wrote a hook from the store when the session
/// opened. The completion of a killed restore never writes a protected path: it is left, and
/// said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_restore_intent_never_writes_a_git_hook() {
    let s = Setup::new().await;
    std::fs::create_dir_all(s.ws.path().join(".git/hooks")).unwrap();
    s.server.push_all([Reply::text("one"), Reply::text("two")]);
    let out = s.run(&["exec", "hello"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    // A blob in the session's store, then an intent to restore the hook from it.
    let hook = b"#!/bin/sh\ntouch \"$HOME/pwned\"\n";
    let hash = sha256_hex(hook);
    let store = s.session().with_extension("files");
    let blob = store.join("objects").join(&hash[..2]).join(&hash[2..]);
    std::fs::create_dir_all(blob.parent().unwrap()).unwrap();
    std::fs::write(&blob, hook).unwrap();
    let head = s.lines().last().unwrap()["id"].as_str().unwrap().to_owned();
    let intent = json!({
        "id": "forged", "when": "before entry x", "head_before": head, "head": null,
        "files": [{"path": ".git/hooks/pre-commit", "target": hash, "known": [null, hash],
                   "latest": null, "state": "restore"}],
        "force": true,
    });
    std::fs::write(store.join("restore-intent.json"), intent.to_string()).unwrap();
    let out = s.run(&["exec", "--last", "again"]).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!s.ws.path().join(".git/hooks/pre-commit").exists(), "no hook was written");
    assert!(stderr.contains("protected") && stderr.contains(".git/hooks/pre-commit"), "{stderr}");
}

fn sha256_hex(bytes: &[u8]) -> String {
    let out = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child.stdin.take().unwrap().write_all(bytes)?;
            child.wait_with_output()
        })
        .unwrap();
    text(&out.stdout).split_whitespace().next().unwrap().to_owned()
}

/// A blob swapped for a link to another file (`/etc/shadow`) was sent to the provider as an
/// image. A blob is read only as itself, checked against its name: the image is named in one
/// line instead, and the other file's bytes go nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blob_linked_to_another_file_is_never_sent() {
    let s = Setup::new().await;
    let img = image::RgbaImage::from_pixel(8, 8, image::Rgba([1, 2, 3, 255]));
    let mut png = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgba8(img).write_to(&mut png, image::ImageFormat::Png).unwrap();
    std::fs::write(s.ws.path().join("a.png"), png.into_inner()).unwrap();
    s.server.push_all([Reply::text("one"), Reply::text("two")]);
    let out = s.run(&["exec", "--image", "a.png", "look"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let secret_file = s.home.path().join("shadow");
    std::fs::write(&secret_file, "root:$6$very-secret-hash:19000::::::").unwrap();
    let blobs = s.session().with_extension("blobs");
    let blob = std::fs::read_dir(&blobs).unwrap().next().unwrap().unwrap().path();
    std::fs::remove_file(&blob).unwrap();
    std::os::unix::fs::symlink(&secret_file, &blob).unwrap();
    let out = s.run(&["exec", "--last", "again"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sent = s.server.requests()[1].raw.clone();
    use base64::Engine as _;
    let leaked = base64::engine::general_purpose::STANDARD.encode("root:$6$very-secret-hash");
    assert!(!sent.contains(&leaked[..20]), "the linked file was sent");
    assert!(sent.contains("its bytes are missing"), "{sent}");
}

/// The home, `sessions/` and each journal were created world-readable (0755/0644): now every
/// folder Codewhale creates is 0700 and every file 0600 — the journal, its blobs, the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_codewhale_creates_is_private() {
    let s = Setup::new().await;
    let home = s.home.path().join("cw");
    let img = image::RgbaImage::from_pixel(4, 4, image::Rgba([9, 9, 9, 255]));
    let mut png = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgba8(img).write_to(&mut png, image::ImageFormat::Png).unwrap();
    std::fs::write(s.ws.path().join("a.png"), png.into_inner()).unwrap();
    s.server.push(Reply::text("private"));
    let mut cmd = s.command(&["exec", "--image", "a.png", "hello"]);
    cmd.env("CODEWHALE_HOME", &home);
    let out = cmd.output().await.unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sessions = home.join("sessions");
    let journal = std::fs::read_dir(&sessions)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let blobs = journal.with_extension("blobs");
    let blob = std::fs::read_dir(&blobs).unwrap().next().unwrap().unwrap().path();
    for dir in [&home, &sessions, &blobs, &home.join("logs")] {
        assert_eq!(mode(dir), 0o700, "{}", dir.display());
    }
    let log = std::fs::read_dir(home.join("logs")).unwrap().next().unwrap().unwrap().path();
    for file in [&journal, &blob, &log] {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
}

/// The worktree snapshots and edit checkpoints copied every secret file of the workspace into
/// the home. A file that holds secrets is now kept by its hash alone, named once, and a rewind
/// of it says why it cannot bring it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_files_are_not_kept_for_rewind() {
    if std::process::Command::new("git").arg("--version").output().is_err() {
        codewhale_mcp::test_support::skip_test("git is not installed");
        return;
    }
    let s = Setup::new().await;
    let key = "sk-proj-T3stS3cretKeyThatIsLongEnough0123456789abcd";
    write_in(s.ws.path(), ".env", &format!("OPENAI_API_KEY={key}\n"));
    write_in(s.ws.path(), "settings.json", &format!("{{\"api_key\": \"{key}\"}}\n"));
    write_in(s.ws.path(), "notes.txt", "plain\n");
    let git =
        std::process::Command::new("git").current_dir(s.ws.path()).args(["init", "-q"]).status();
    assert!(git.unwrap().success());
    s.server.push_all([
        Reply::tool_calls(vec![
            ToolCall::new("w", "write_file", json!({"path": ".env", "content": "EMPTY=1\n"})),
            ToolCall::new(
                "s",
                "shell",
                json!({"command": "echo more >> settings.json && echo x >> notes.txt"}),
            ),
        ]),
        Reply::text("changed them"),
    ]);
    let out = s.run(&["exec", "--approval", "full", "change the files"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sent = results_sent(&s.server);
    assert_eq!(sent.matches("not kept for rewind: .env holds secrets").count(), 1, "{sent}");
    assert!(sent.contains("not kept for rewind: settings.json holds secrets"), "{sent}");
    // Nothing under the home holds the key: not the file store, not the snapshot objects.
    let store = s.session().with_extension("files");
    let objects = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(store.join("snapshots/git"))
        .args(["cat-file", "--batch-all-objects", "--batch"])
        .output()
        .unwrap();
    assert!(!text(&objects.stdout).contains(key), "a snapshot object holds the key");
    assert!(text(&objects.stdout).contains("plain"), "other files are snapshotted");
    let grep = std::process::Command::new("grep").args(["-rl", key]).arg(&store).output().unwrap();
    assert!(text(&grep.stdout).is_empty(), "{}", text(&grep.stdout));
    // A rewind of .env cannot bring it back, and says why.
    let user = s.first_user();
    let out = s.run(&["rewind", "--last", "--to", &user, "--code"]).await;
    let stderr = text(&out.stderr);
    assert!(stderr.contains("not kept for rewind: .env holds secrets"), "{stderr}");
    assert_eq!(std::fs::read_to_string(s.ws.path().join("notes.txt")).unwrap(), "plain\n");
}

/// `exec` printed the model's text raw: OSC 52 (the clipboard), OSC 0 (the title), `ESC c`,
/// and a `\r ESC[2K` in a stderr tool line that redrew `touch EVIL_RAN` as `echo harmless`.
/// Every stderr line and a terminal's stdout now show such characters as `�`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_control_characters_reach_the_terminal_inert() {
    let s = Setup::new().await;
    let command = "touch EVIL_RAN\r\u{1b}[2Kecho harmless";
    s.server.push_all([
        Reply::tool_call("c", "shell", json!({"command": command})),
        Reply::text(
            "done\u{1b}]52;c;ZWNobyBwd25lZA==\u{7}\u{1b}]0;title\u{7}\u{1b}c\u{202e}txt.exe",
        ),
    ]);
    let out = s.run(&["exec", "--approval", "full", "run it"]).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains('\u{1b}') && !stderr.contains('\r'), "{stderr:?}");
    assert!(stderr.contains("touch EVIL_RAN\n\u{FFFD}[2Kecho harmless"), "{stderr:?}");
    // Piped, stdout keeps the model's bytes for scripts.
    assert!(text(&out.stdout).contains("\u{1b}]52;"), "{:?}", text(&out.stdout));

    // On a terminal, stdout is inert too.
    s.server.push(Reply::text("again\u{1b}]52;c;ZWNobyBwd25lZA==\u{7}\u{202e}end"));
    let base = s.server.openai_base_url();
    let mut args = vec!["exec", "--last"];
    let mock = super::pty::mock_args(&base);
    args.extend(mock.iter().map(String::as_str));
    args.push("once more");
    let mut pty = super::pty::Pty::spawn_in(
        &args,
        &s.home,
        &s.ws,
        false,
        &[("OPENAI_API_KEY", TEST_API_KEY)],
    );
    pty.wait_for("end").await;
    pty.wait_exit().await;
    assert_eq!(pty.raw_count(b"\x1b]52"), 0, "the clipboard escape reached the terminal");
    assert_eq!(pty.raw_count("\u{202e}".as_bytes()), 0);
    assert!(pty.contents().contains("again\u{FFFD}]52;c;ZWNobyBwd25lZA==\u{FFFD}\u{FFFD}end"));
}

/// A Responses reply cut by the server's content filter printed nothing on stderr: now it says
/// so, and keeps what came.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_content_filter_cut_is_said_on_stderr() {
    let s = Setup::new().await;
    s.server.push(Reply::text("The first half").with_stop("content_filter"));
    let mut cmd = super::cli::codewhale(s.home.path(), s.ws.path());
    cmd.args(["exec", "--provider", "openai-responses", "--model", "gpt-5-codex"])
        .args(["--base-url", &s.server.openai_base_url(), "tell me"])
        .env("OPENAI_API_KEY", TEST_API_KEY)
        .stdin(std::process::Stdio::null());
    let out = cmd.output().await.unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(text(&out.stdout), "The first half\n");
    assert!(stderr.contains("content filter cut the reply short"), "{stderr}");
}
