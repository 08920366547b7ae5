//! One count of a session, through the real binary: on every path that changes what the next
//! request holds — a new session, a reply, an anchor, `/model`, `/compact`, a HEAD move, a
//! resume — the status line's gauge, `/context`, `codewhale context --json` (another process,
//! reading the journal) and the compaction capsule show the same figure.

use std::process::Command;

use codewhale_provider::test_support::{MockServer, Reply};
use codewhale_tui::tui::cells::short_tokens;
use serde_json::Value;
use tempfile::TempDir;

use super::pty::{journals, mock_args, Pty, SUMMARY};

/// Tall enough for a whole `/context` report to stay on screen.
const ROWS: u16 = 70;

/// The figure `/context` last printed: (tokens, percent of usable input).
fn context_figure(screen: &str) -> Option<(u64, u64)> {
    let line = screen.lines().rev().find(|l| l.contains("of usable input"))?;
    let (tokens, rest) = line.split_once(" tokens (")?;
    let tokens = tokens.split_whitespace().last()?.parse().ok()?;
    let percent = rest.split_once("), ")?.1.split_once('%')?.0.parse().ok()?;
    Some((tokens, percent))
}

/// The gauge's percentage in the status line (the screen's last row that has one).
fn gauge_percent(screen: &str) -> Option<u64> {
    let line = screen.lines().rev().find(|l| l.contains("ctx "))?;
    let after = line.rsplit_once("ctx ")?.1;
    after.split_once('%')?.0.parse().ok()
}

/// The window every process of the test is given (the live session's and the report's).
const WINDOW: &str = "20000";

/// `codewhale context --last --json`, run beside the live session.
fn offline_report(home: &TempDir, ws: &TempDir) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_codewhale"))
        .args(["context", "--last", "--json", "--context-window", WINDOW])
        .current_dir(ws.path())
        .env("CODEWHALE_HOME", home.path())
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Asks for `/context` and checks that the four figures agree; returns the offline report.
/// The screen may still show an older report for a moment, so it is read until the figures
/// agree or the wait runs out (and then the last ones seen are the failure).
async fn agree(pty: &mut Pty, home: &TempDir, ws: &TempDir, path: &str) -> Value {
    pty.send(b"/context\r");
    let report = offline_report(home, ws);
    let offline = report["tokens"]["total"].as_u64().unwrap();
    let usable = report["usable_input"].as_u64().unwrap();
    let percent = (offline * 100 + usable / 2) / usable;
    let start = std::time::Instant::now();
    loop {
        let screen = pty.contents();
        let seen = (context_figure(&screen), gauge_percent(&screen));
        if seen == (Some((offline, percent)), Some(percent)) {
            // The report is a view of its own: closed again before the next step.
            pty.send(b"\x1b");
            while context_figure(&pty.contents()).is_some() {
                assert!(start.elapsed() < super::pty::WAIT, "{path}: the report stayed open");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            return report;
        }
        assert!(
            start.elapsed() < super::pty::WAIT,
            "{path}: `codewhale context` says {offline} tokens, {percent}%, but the UI shows \
             (/context, gauge) {seen:?}; screen:\n{screen}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gauge_context_the_cli_and_the_capsule_agree_on_every_path() {
    let server = MockServer::start().await.unwrap();
    let answer = |k: u64| {
        let prose = format!(
            "{} end of answer {k}.",
            "the parser reads tokens and builds trees. ".repeat(120)
        );
        Reply::text(prose).with_usage(2_500 + k * 2_000, 1_200)
    };
    server.push(answer(0));
    server.push(answer(1));
    server.push(Reply::text(SUMMARY).with_usage(5_000, 200));
    server.push(answer(2));
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // The figures are compared right after the HEAD move: no summary of the branch left
    // lands in between (its own tests are in rewind_pty and the engine's suite).
    std::fs::write(home.path().join("config.toml"), "[compaction]\nbranch_summaries = false\n")
        .unwrap();
    let base_url = server.openai_base_url();
    let mut args = mock_args(&base_url);
    args.extend(["--context-window".to_owned(), WINDOW.to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut pty = Pty::spawn_rows(&args, &home, &ws, ROWS);
    pty.wait_for("ready").await;
    agree(&mut pty, &home, &ws, "a new session").await;

    pty.ask("question 0", "end of answer 0.").await;
    agree(&mut pty, &home, &ws, "after a reply").await;
    pty.ask("question 1", "end of answer 1.").await;

    pty.send(b"/anchor add keep the parser public\r");
    pty.wait_for("keep the parser public").await;
    agree(&mut pty, &home, &ws, "after an anchor").await;

    pty.send(b"/model gpt-4o\r");
    pty.wait_for("model switched to gpt-4o").await;
    agree(&mut pty, &home, &ws, "after /model").await;

    pty.send(b"/compact\r");
    pty.wait_for("(manual)").await;
    let report = agree(&mut pty, &home, &ws, "after /compact").await;
    let after = report["compaction"]["tokens_after"].as_u64().unwrap();
    assert_eq!(after, report["tokens"]["total"].as_u64().unwrap(), "the record's figure");
    assert!(
        pty.contents().contains(&format!("→ {} tokens", short_tokens(after))),
        "the capsule shows {after}; screen:\n{}",
        pty.contents()
    );

    // A HEAD move: back to the first reply, on the branch before the compaction.
    let journal = std::fs::read_to_string(journals(&home).pop().unwrap()).unwrap();
    let first_reply = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["kind"] == "assistant")
        .and_then(|e| e["id"].as_str().map(str::to_owned))
        .unwrap();
    pty.send(format!("/checkout {first_reply}\r").as_bytes());
    pty.wait_for("checked out").await;
    agree(&mut pty, &home, &ws, "after a HEAD move").await;

    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
    let resume = [&["resume", "--last"][..], &args[..]].concat();
    let mut pty = Pty::spawn_rows(&resume, &home, &ws, ROWS);
    pty.wait_for("ready").await;
    agree(&mut pty, &home, &ws, "after resume").await;
    pty.ask("question 2", "end of answer 2.").await;
    agree(&mut pty, &home, &ws, "after a reply on the resumed session").await;
    pty.send(b"\x04");
    assert!(pty.wait_exit().await.success());
}
