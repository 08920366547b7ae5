//! A hostile repository and a rude environment against the real binary: files a clone can
//! hold (a symlink to `/dev/zero`, FIFOs, hidden TOML syntax, a redaction pattern that eats
//! the conversation, a hardlink into the Codewhale home), secrets behind a tool's line prefix,
//! and SIGTERM/SIGHUP sent to `exec` in the middle of a turn.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use super::support::{text, Marks};
use codewhale_provider::test_support::{MockServer, Reply, TEST_API_KEY};
use serde_json::json;
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
        let mut cmd = super::cli::codewhale(self.home.path(), self.ws.path());
        cmd.env("OPENAI_BASE_URL", self.server.openai_base_url())
            .env("OPENAI_API_KEY", TEST_API_KEY)
            .arg("exec")
            .args(["--model", "gpt-4.1"])
            .args(args)
            .stdin(std::process::Stdio::null());
        cmd
    }

    /// `codewhale exec ARGS` started, its output collected.
    fn spawn(&self, args: &[&str]) -> tokio::process::Child {
        let mut cmd = self.command(args);
        cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        cmd.spawn().unwrap()
    }

    /// `codewhale exec ARGS`, which must end within a minute (a hang fails the test).
    async fn exec(&self, args: &[&str]) -> Output {
        let run = self.command(args).output();
        tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .expect("exec did not finish within a minute")
            .unwrap()
    }

    fn write(&self, rel: &str, text: &str) {
        super::support::write_in(self.ws.path(), rel, text);
    }

    fn session_text(&self) -> String {
        super::support::session_texts(self.home.path())
    }
}

fn fifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let made = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

/// `AGENTS.md -> /dev/zero` (a committed symlink survives `git clone`) and FIFOs as the config
/// and `instructions.md` grew memory without end or hung before any question: now each is
/// skipped with one notice and the turn runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cloned_repository_cannot_hang_or_exhaust_exec() {
    let s = Setup::new().await;
    std::os::unix::fs::symlink("/dev/zero", s.ws.path().join("AGENTS.md")).unwrap();
    fifo(&s.ws.path().join(".codewhale/config.toml"));
    fifo(&s.ws.path().join(".codewhale/instructions.md"));
    s.server.push(Reply::text("still here"));
    let out = s.exec(&["hello"]).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(text(&out.stdout), "still here\n");
    for (file, kind) in
        [("AGENTS.md", "a device"), ("config.toml", "a FIFO"), ("instructions.md", "a FIFO")]
    {
        let said = stderr.lines().filter(|l| l.contains(file) && l.contains(kind)).count();
        assert_eq!(said, 1, "one notice for {file}: {stderr}");
    }
    // A gigabyte-sized instruction file is read only up to its 64 KiB bound.
    std::fs::remove_file(s.ws.path().join("AGENTS.md")).unwrap();
    let big = std::fs::File::create(s.ws.path().join("AGENTS.md")).unwrap();
    big.set_len(1 << 30).unwrap();
    s.server.push(Reply::text("bounded"));
    let out = s.exec(&["--last", "again"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let body = &s.server.requests()[1].body;
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("longer than 64 KiB"), "the instructions were cut");
    assert!(system.len() < 200 * 1024, "{} bytes of system prompt", system.len());
}

/// `[redaction] patterns = ["[a-z]"]` in a cloned repository turned every prompt and reply
/// into markers; untrusted, it is never used and one notice says so. The same pattern in the
/// user's own config is refused at start, naming it and the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redaction_pattern_cannot_destroy_the_conversation() {
    let s = Setup::new().await;
    s.write(".codewhale/config.toml", "[redaction]\npatterns = [\"[a-z]\"]\n");
    s.server.push(Reply::text("a readable answer"));
    let out = s.exec(&["a readable question"]).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(text(&out.stdout), "a readable answer\n");
    let journal = s.session_text();
    assert!(journal.contains("a readable question") && journal.contains("a readable answer"));
    assert!(!journal.contains("[REDACTED:custom:"), "{journal}");
    assert_eq!(stderr.matches("ignoring redaction.patterns from").count(), 1, "{stderr}");

    std::fs::remove_file(s.ws.path().join(".codewhale/config.toml")).unwrap();
    let user = s.home.path().join("config.toml");
    std::fs::write(
        &user,
        "model = \"gpt-4.1\"\n[redaction]\npatterns = [\"ACME-[0-9]{6}\", \"[a-z]\"]\n",
    )
    .unwrap();
    let out = s.exec(&["--last", "and now?"]).await;
    let stderr = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("\"[a-z]\"") && stderr.contains("ordinary paragraph"), "{stderr}");
    assert!(stderr.contains(&format!("{}:3", user.display())), "{stderr}");
    assert_eq!(s.server.requests().len(), 1, "nothing was sent");
}

/// `read_file`'s gutter and `search`'s `path:line:` hid `NAME=value` lines from redaction:
/// 12 secrets of one run reached the journal and the provider.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_behind_a_tools_line_prefix_are_redacted() {
    let s = Setup::new().await;
    let secrets = [
        "sk_live_51HabcdefGHIJKLmnop",
        "abcdef123456ghij",
        "hunter2hunter2",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEK/+",
    ];
    s.write(
        "config/app.env",
        &format!(
            "STRIPE_SECRET={}\nMY_API_KEY={}\npassword: {}\nAWS_SECRET_ACCESS_KEY={}\n",
            secrets[0], secrets[1], secrets[2], secrets[3]
        ),
    );
    s.server.push(Reply::tool_call("r1", "read_file", json!({"path": "config/app.env"})));
    s.server.push(Reply::tool_call("g1", "search", json!({"pattern": "[=:]"})));
    s.server.push(Reply::text("looked"));
    let out = s.exec(&["look at the settings"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let journal = s.session_text();
    let requests: String = s.server.requests().iter().map(|r| r.body.to_string()).collect();
    for secret in secrets {
        assert!(!journal.contains(secret), "{secret} in the journal");
        assert!(!requests.contains(secret), "{secret} in a request");
    }
    assert!(journal.matches("[REDACTED:").count() >= 8, "{journal}");
}

/// Under `auto-edit`, `write_file` on a hardlink in the workspace wrote `approval = "full"`
/// into `$CODEWHALE_HOME/config.toml` without asking. Now it is asked about (and, without a
/// terminal, denied); a hardlink to any other file asks as an outside path does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hardlink_cannot_carry_a_write_out_of_the_workspace() {
    let s = Setup::new().await;
    let config = s.home.path().join("config.toml");
    std::fs::write(&config, "model = \"gpt-4.1\"\n").unwrap();
    std::fs::hard_link(&config, s.ws.path().join("notes.toml")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let other = outside.path().join("other.txt");
    std::fs::write(&other, "untouched\n").unwrap();
    std::fs::hard_link(&other, s.ws.path().join("other.txt")).unwrap();
    s.server.push(Reply::tool_calls(vec![
        codewhale_provider::test_support::ToolCall::new(
            "w1",
            "write_file",
            json!({"path": "notes.toml", "content": "approval = \"full\"\n"}),
        ),
        codewhale_provider::test_support::ToolCall::new(
            "w2",
            "edit_file",
            json!({"path": "other.txt", "old_string": "untouched", "new_string": "changed"}),
        ),
    ]));
    s.server.push(Reply::text("could not"));
    let out = s.exec(&["--approval", "auto-edit", "tidy up"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "model = \"gpt-4.1\"\n");
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "untouched\n");
    let results = s.server.requests()[1].body.to_string();
    assert_eq!(results.matches("\"content\":\"denied: ").count(), 2, "{results}");
    assert!(results.contains("only the user may change"), "the config write is protected");
}

/// A line a shell call wrote with `echo $!`.
fn is_pid(line: &str) -> bool {
    line.parse::<i32>().is_ok()
}

/// Whether a process whose command line holds `marker` is still running (a zombie waiting for
/// its reaper does not count). By name, not by pid: a command in a PID namespace of its own
/// prints pids of that namespace.
fn alive(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().filter_map(Result::ok).any(|e| {
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let running = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
            .unwrap_or(false);
        running && String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(marker)
    })
}

/// Sends signal `name` to `pid` from this process: no `kill` is started, so a signal that must
/// follow a mark within a command's grace is not held up by a fork on a loaded machine.
fn signal(pid: u32, name: &str) {
    use rustix::process::{kill_process, Pid, Signal};
    let sig = match name {
        "TERM" => Signal::TERM,
        "HUP" => Signal::HUP,
        "INT" => Signal::INT,
        other => panic!("no such signal in these tests: {other}"),
    };
    let pid = Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
    kill_process(pid, sig).unwrap_or_else(|e| panic!("kill -s {name} {pid:?}: {e}"));
}

/// SIGTERM and SIGHUP killed `exec` at once (exit 143/129), leaving the shell call's group
/// (`sleep 120 & sleep 121`) running. Now both interrupt the turn as SIGINT does: the group is
/// ended, the call's result and the journal are complete, and exec says it was interrupted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_and_sighup_end_the_running_command_like_sigint() {
    for name in ["TERM", "HUP"] {
        let s = Setup::new().await;
        let mut list = Marks::new(s.ws.path(), "pids");
        let marker = format!("cw-sleeper-{}-{name}", std::process::id());
        let command = format!(
            "(exec -a {marker}-a sleep 120) & echo $! >> {0}; (exec -a {marker}-b sleep 121) & \
             echo $! >> {0}; wait",
            list.path.display()
        );
        s.server.push(Reply::text("starting the sleepers").then_tool_call(
            "s1",
            "shell",
            json!({"command": command}),
        ));
        let child = s.spawn(&["--approval", "full", "sleep a while"]);
        let exec_pid = child.id().unwrap();
        list.until(2, is_pid).await;
        signal(exec_pid, name);
        let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
            .await
            .expect("exec ended after the signal")
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "SIG{name}: {stderr}");
        assert!(stderr.contains("interrupted"), "SIG{name}: {stderr}");
        for sleeper in ["a", "b"] {
            let sleeper = format!("{marker}-{sleeper}");
            assert!(!alive(&sleeper), "SIG{name}: {sleeper} outlived the call");
        }
        let journal = s.session_text();
        assert!(journal.contains("starting the sleepers"), "SIG{name}: {journal}");
        assert!(journal.contains("\"tool_result\""), "SIG{name}: the call has its result");
    }
}

/// A second signal while the first is still ending the turn (here a command that ignores
/// SIGTERM, so its group gets the 2 s grace before SIGKILL) ends exec at once, with 143.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sigterm_ends_exec_at_once() {
    let s = Setup::new().await;
    let mut list = Marks::new(s.ws.path(), "pids");
    // The shell notes the group's SIGTERM (the mark that exec acted on the first signal) and
    // waits on; the sleeper ignores it, so the group lingers for its grace.
    let command = format!(
        "trap 'echo term >> {0}' TERM; (trap '' TERM; exec sleep 30) & echo $! >> {0}; wait; wait",
        list.path.display()
    );
    s.server.push(Reply::tool_call("s1", "shell", json!({"command": command})));
    let child = s.spawn(&["--approval", "full", "sleep a while"]);
    let exec_pid = child.id().unwrap();
    list.until(1, is_pid).await;
    signal(exec_pid, "TERM");
    list.until(1, |l| l == "term").await;
    signal(exec_pid, "TERM");
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("exec ended after the second signal")
        .unwrap();
    // Ended by the second signal, not by the first one's grace (that exit would be 1).
    assert_eq!(out.status.code(), Some(143), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("codewhale: stopped"), "{}", text(&out.stderr));
}

/// SIGHUP while the reply streams: the part that arrived is kept, as after Ctrl+C.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_while_streaming_keeps_the_partial_reply() {
    let s = Setup::new().await;
    s.server.push(Reply::text("the first half of a long answer").hang_after(3));
    let child = s.spawn(&["explain"]);
    let exec_pid = child.id().unwrap();
    // The three frames went out before the body started to hang: they are exec's to keep.
    let hanging = tokio::time::timeout(Duration::from_secs(30), s.server.wait_for_keepalives(2));
    assert!(hanging.await.is_ok(), "the reply never started");
    signal(exec_pid, "HUP");
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("exec ended after SIGHUP")
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let journal = s.session_text();
    assert!(journal.contains("the first"), "the streamed part is kept: {journal}");
}

/// `exec … 2>&1 | head -1`: the notices go to a pipe that closes early, and printing them
/// panicked (exit 101). Now exec ends quietly, as other tools do (141).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_stderr_pipe_ends_exec_quietly() {
    let s = Setup::new().await;
    // An untrusted setting makes exec print a notice before the turn.
    s.write(".codewhale/config.toml", "approval = \"full\"\n");
    s.server.push(Reply::text("answer"));
    let cmd = s.command(&["hello"]);
    // `true` leaves at once: the notice is written to a pipe nobody reads any more.
    let script = "\"$0\" \"$@\" 2>&1 >/dev/null | true; exit ${PIPESTATUS[0]}";
    let exe = cmd.as_std().get_program().to_owned();
    let args: Vec<_> = cmd.as_std().get_args().map(ToOwned::to_owned).collect();
    let mut bash = tokio::process::Command::new("bash");
    bash.arg("-c").arg(script).arg(exe).args(args);
    for (k, v) in cmd.as_std().get_envs() {
        match v {
            Some(v) => bash.env(k, v),
            None => bash.env_remove(k),
        };
    }
    bash.current_dir(s.ws.path());
    let out = tokio::time::timeout(Duration::from_secs(60), bash.output()).await.unwrap().unwrap();
    let code = out.status.code();
    assert!(matches!(code, Some(0) | Some(141)), "exit {code:?}: {}", text(&out.stderr));
}
