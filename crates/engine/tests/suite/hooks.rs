//! The user's hooks (docs/extending.md, *Hooks*) through the engine and the mock server: real
//! `bash` hooks that write their stdin to files in the workspace, each event's object, exit 2
//! blocking what can be blocked, the output bounds and the timeout, trust, and the `system`
//! entry of every run.

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::protocol::{Event, TurnStatus};
use codewhale_journal::Payload;
use codewhale_provider::test_support::Reply;
use serde_json::{json, Value};

use super::common::{reload_checked, session_file, Harness};
use super::compaction::{compact, prose, spawn, summary_requests, SUMMARY, WINDOW};

/// A hook line that appends its stdin object, one per line, to `log` in the workspace.
fn logging(h: &Harness, log: &str) -> String {
    let path = h.workspace().join(log);
    format!("cat >> '{}'; echo >> '{}'", path.display(), path.display())
}

/// The objects the hooks appended to `log`.
fn logged(h: &Harness, log: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(h.workspace().join(log)).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `hook` objects of the journal's `system` entries.
fn hook_runs(h: &Harness) -> Vec<(String, String, Option<i64>)> {
    let journal = reload_checked(&session_file(h.home.path()));
    journal
        .entries()
        .iter()
        .filter_map(|e| match &e.payload {
            Payload::System(s) => {
                s.hook.as_ref().map(|r| (r.event.clone(), r.command.clone(), r.exit))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn every_event_gets_its_object_on_stdin_and_every_run_is_journaled() {
    let h = Harness::new().await;
    let log = logging(&h, "events.jsonl");
    h.config(&format!(
        "[[hooks.SessionStart]]\ncommand = \"{log}; echo SESSION-CONTEXT\"\n\n\
         [[hooks.UserPromptSubmit]]\ncommand = \"{log}; echo PROMPT-CONTEXT\"\n\n\
         [[hooks.PreToolUse]]\ncommand = \"{log}\"\nmatcher = \"shell\"\n\n\
         [[hooks.PreToolUse]]\ncommand = \"exit 2\"\nmatcher = \"read_file|write_file\"\n\n\
         [[hooks.PostToolUse]]\ncommand = \"{log}\"\n\n\
         [[hooks.Stop]]\ncommand = \"{log}\"\n\n\
         [[hooks.Notification]]\ncommand = \"{log}\"\n"
    ));
    h.server.push(Reply::tool_call("c1", "shell", json!({"command": "echo hi"})));
    h.server.push(Reply::text("done"));
    let mut engine = h.spawn(ApprovalMode::Full);
    assert_eq!(engine.turn("run it").await.status, TurnStatus::Completed);
    engine.shutdown().await;
    let objects = logged(&h, "events.jsonl");
    let events: Vec<&str> =
        objects.iter().map(|o| o["hook_event_name"].as_str().unwrap()).collect();
    assert_eq!(
        events,
        ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "Notification"]
    );
    let ws = h.workspace().display().to_string();
    for o in &objects {
        assert_eq!(o["cwd"], ws.as_str());
        assert!(o["session_id"].as_str().is_some_and(|s| !s.is_empty()));
    }
    assert_eq!(objects[0]["source"], "new");
    assert_eq!(objects[1]["prompt"], "run it");
    assert_eq!(objects[2]["tool_name"], "shell");
    assert_eq!(objects[2]["tool_input"], json!({"command": "echo hi"}));
    assert!(objects[3]["tool_response"].as_str().unwrap().contains("hi"));
    assert_eq!(objects[4]["status"], "completed");
    // What SessionStart and UserPromptSubmit printed follows the prompt in the request.
    let first = h.server.requests()[0].body.to_string();
    let at = |s: &str| first.find(s).unwrap_or_else(|| panic!("{s} not in {first}"));
    assert!(at("run it") < at("SESSION-CONTEXT") && at("SESSION-CONTEXT") < at("PROMPT-CONTEXT"));
    // The shell call ran (the matcher of the refusing hook is not `shell`).
    assert!(h.tool_results_in_request(1)[0].1.contains("hi"));
    let runs = hook_runs(&h);
    let names: Vec<&str> = runs.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        names,
        ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "Notification"]
    );
    assert!(runs.iter().all(|r| r.2 == Some(0)), "{runs:?}");
}

#[tokio::test]
async fn a_pre_tool_use_exit_2_refuses_the_call_with_the_hooks_stderr() {
    let h = Harness::new().await;
    h.config(
        "[[hooks.PreToolUse]]\nmatcher = \"shell\"\ncommand = \"\"\"\n\
         if grep -q 'rm -rf'; then echo 'blocked: no rm -rf in this repository' >&2; exit 2; fi\"\"\"\n",
    );
    h.write("keep/me.txt", "precious");
    h.server.push(Reply::tool_call("c1", "shell", json!({"command": "rm -rf keep"})));
    h.server.push(Reply::text("understood"));
    let mut engine = h.spawn(ApprovalMode::Full);
    assert_eq!(engine.turn("clean up").await.status, TurnStatus::Completed);
    engine.shutdown().await;
    assert_eq!(h.read("keep/me.txt"), "precious", "the command never ran");
    let results = h.tool_results_in_request(1);
    assert_eq!(results, [("c1".to_owned(), "blocked: no rm -rf in this repository".to_owned())]);
    let runs = hook_runs(&h);
    assert_eq!(runs.len(), 1);
    assert_eq!((runs[0].0.as_str(), runs[0].2), ("PreToolUse", Some(2)));
}

#[tokio::test]
async fn a_user_prompt_submit_exit_2_keeps_the_prompt_from_being_sent() {
    let h = Harness::new().await;
    h.config(
        "[[hooks.UserPromptSubmit]]\ncommand = \"\"\"\n\
         if grep -q secret; then echo 'prompts may not name secrets' >&2; exit 2; fi\"\"\"\n",
    );
    let mut engine = h.spawn(ApprovalMode::Full);
    let run = engine.turn("print the secret").await;
    assert_eq!(run.status, TurnStatus::Failed);
    let said = run.events.iter().find_map(|e| match e {
        Event::Error { message, .. } => Some(message.clone()),
        _ => None,
    });
    assert!(said.unwrap_or_default().contains("prompts may not name secrets"));
    assert!(run
        .events
        .iter()
        .any(|e| matches!(e, Event::MessageTakenBack { text } if text == "print the secret")));
    assert!(h.server.requests().is_empty(), "nothing is sent");
    engine.shutdown().await;
    let journal = reload_checked(&session_file(h.home.path()));
    let user_texts =
        journal.entries().iter().filter(|e| matches!(&e.payload, Payload::User(_))).count();
    assert_eq!(user_texts, 0, "the prompt is not journaled as a message");
    let refused = journal
        .entries()
        .iter()
        .any(|e| matches!(&e.payload, Payload::System(s) if s.text.contains("refused the prompt")));
    assert!(refused, "the refusal is journaled");
}

#[tokio::test]
async fn a_pre_compact_exit_2_skips_the_pass_as_a_failed_one() {
    let h = Harness::new().await;
    h.hosted_api();
    let log = logging(&h, "compact.jsonl");
    let mut text = std::fs::read_to_string(h.home.path().join("config.toml")).unwrap();
    text.push_str(&format!(
        "\n[[hooks.PreCompact]]\ncommand = \"{log}; echo 'not now' >&2; exit 2\"\n"
    ));
    h.config(&text);
    let mut engine = spawn(&h, "openai", WINDOW);
    for k in 0..4 {
        h.server.push(Reply::text(prose(&format!("answer {k}"), 300)).with_usage(2_000, 1_500));
        engine.turn(&format!("question {k}")).await;
    }
    let done = compact(&mut engine, None).await;
    assert!(
        matches!(&done, Event::CompactionFailed { reason } if reason.contains("not now")),
        "{done:?}"
    );
    engine.shutdown().await;
    assert!(summary_requests(&h).is_empty(), "no summary request is sent");
    assert_eq!(logged(&h, "compact.jsonl")[0]["trigger"], "manual");
    let journal = reload_checked(&session_file(h.home.path()));
    let failed = journal
        .entries()
        .iter()
        .any(|e| matches!(&e.payload, Payload::System(s) if s.summary_failed));
    assert!(failed, "counted as a failed pass for the backoff");
    assert_eq!(journal.compactions().count(), 0);
}

#[tokio::test]
async fn post_compact_output_follows_the_note_and_is_restated_in_the_next_note_after_a_resume_too()
{
    let h = Harness::new().await;
    h.hosted_api();
    let path = h.workspace().join("post.json");
    let mut text = std::fs::read_to_string(h.home.path().join("config.toml")).unwrap();
    text.push_str(&format!(
        "\n[[hooks.PostCompact]]\ncommand = \"cat > '{}'; echo 'TEAM RULES: tabs, never unwrap'\"\n",
        path.display()
    ));
    h.config(&text);
    let mut engine = spawn(&h, "openai", WINDOW);
    for k in 0..4 {
        h.server.push(Reply::text(prose(&format!("answer {k}"), 300)).with_usage(2_000, 1_500));
        engine.turn(&format!("question {k}")).await;
    }
    h.server.push(Reply::text(SUMMARY));
    assert!(matches!(compact(&mut engine, None).await, Event::CompactionFinished { .. }));
    let stdin: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(stdin["hook_event_name"], "PostCompact");
    assert_eq!(stdin["trigger"], "manual");
    assert!(stdin["note"].as_str().unwrap().starts_with("Codewhale handoff note."));
    h.server.push(Reply::text("next"));
    engine.turn("go on").await;
    let n = h.server.requests().len() - 1;
    let body = h.server.requests()[n].body.to_string();
    let (note, rules) =
        (body.find("Codewhale handoff note").unwrap(), body.find("TEAM RULES").unwrap());
    assert!(note < rules && rules < body.find("go on").unwrap(), "{body}");
    // The next process, on the same session, restates what the journal holds.
    engine.shutdown().await;
    let mut resumed = super::compaction::params(&h, "openai", WINDOW);
    resumed.resume = codewhale_engine::session::Resume::Last;
    let (handle, events) = codewhale_engine::Engine::spawn(resumed).unwrap();
    let mut engine = super::common::Running { handle, events };
    for k in 4..8 {
        h.server.push(Reply::text(prose(&format!("answer {k}"), 300)).with_usage(2_000, 1_500));
        engine.turn(&format!("question {k}")).await;
    }
    h.server.push(Reply::text(SUMMARY));
    assert!(matches!(compact(&mut engine, None).await, Event::CompactionFinished { .. }));
    engine.shutdown().await;
    let journal = reload_checked(&session_file(h.home.path()));
    let last = journal.compactions().last().unwrap().1.note.clone();
    assert!(
        last.contains("## From your hooks (verbatim)\nTEAM RULES: tabs, never unwrap"),
        "{last}"
    );
}

#[tokio::test]
async fn a_hook_past_its_timeout_or_its_output_bound_is_killed_and_said_once() {
    let h = Harness::new().await;
    h.config(
        "[[hooks.Stop]]\ncommand = \"sleep 30\"\ntimeout_sec = 1\n\n\
         [[hooks.Stop]]\ncommand = \"head -c 10000000 /dev/zero | tr '\\\\0' x\"\n\n\
         [[hooks.Stop]]\ncommand = \"echo after >> stop-ran.txt\"\n",
    );
    h.server.push(Reply::text("one"));
    h.server.push(Reply::text("two"));
    let mut engine = h.spawn(ApprovalMode::Full);
    let first = engine.turn("hello").await;
    assert_eq!(first.status, TurnStatus::Completed);
    let second = engine.turn("again").await;
    engine.shutdown().await;
    let warnings = |run: &super::common::TurnRun| -> Vec<String> {
        run.events
            .iter()
            .filter_map(|e| match e {
                Event::Notice { message, .. } if message.contains("Stop hook") => {
                    Some(message.clone())
                }
                _ => None,
            })
            .collect()
    };
    let said = warnings(&first);
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(said[0].contains("timeout of 1 s"), "{said:?}");
    assert!(said[1].contains("more than 1 MiB"), "{said:?}");
    assert!(warnings(&second).is_empty(), "said once");
    assert_eq!(h.read("stop-ran.txt"), "after\nafter\n", "the later hook still runs");
    let runs = hook_runs(&h);
    assert_eq!(runs.len(), 6);
    assert_eq!((runs[0].2, runs[1].2, runs[2].2), (None, None, Some(0)));
}

#[tokio::test]
async fn an_untrusted_workspaces_hooks_do_not_run_and_a_trusted_ones_run_after_the_users() {
    let h = Harness::new().await;
    h.config("[[hooks.Stop]]\ncommand = \"echo home >> order.txt\"\n");
    h.write(
        ".codewhale/config.toml",
        "[[hooks.Stop]]\ncommand = \"echo workspace >> order.txt\"\n",
    );
    h.server.push(Reply::text("one"));
    let mut engine = h.spawn(ApprovalMode::Full);
    engine.turn("hello").await;
    engine.shutdown().await;
    assert_eq!(h.read("order.txt"), "home\n");
    codewhale_engine::trust::decide(h.home.path(), &h.workspace(), true).unwrap();
    h.server.push(Reply::text("two"));
    let mut engine = h.spawn(ApprovalMode::Full);
    engine.turn("hello").await;
    engine.shutdown().await;
    assert_eq!(h.read("order.txt"), "home\nhome\nworkspace\n");
}

#[tokio::test]
async fn the_trust_question_lists_a_workspaces_hooks() {
    let h = Harness::new().await;
    h.write(
        ".codewhale/config.toml",
        "[[hooks.PreToolUse]]\ncommand = \"./scripts/guard.sh\"\nmatcher = \"shell\"\n",
    );
    let ws = h.workspace();
    let question = codewhale_engine::trust::question(h.home.path(), &ws).unwrap().unwrap();
    let text = format!("{question:?}");
    assert!(text.contains("[[hooks.PreToolUse]]") && text.contains("./scripts/guard.sh"), "{text}");
}

#[tokio::test]
async fn notification_runs_when_an_approval_waits_while_the_terminal_is_not_focused() {
    use codewhale_engine::protocol::{ApprovalScope, Op};
    let h = Harness::new().await;
    let log = logging(&h, "notify.jsonl");
    h.config(&format!("[[hooks.Notification]]\ncommand = \"{log}\"\n"));
    h.server.push(Reply::tool_call("s1", "shell", json!({"command": "echo one"})));
    h.server.push(Reply::tool_call("s2", "shell", json!({"command": "echo two"})));
    h.server.push(Reply::text("done"));
    let mut engine = h.spawn_with(codewhale_engine::session::Resume::New, ApprovalMode::Ask, true);
    let turn = engine.submit(Op::UserInput {
        text: "run both".into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    // Focused: the first question calls nobody back.
    engine.until(|e| matches!(e, Event::ApprovalNeeded { call_id, .. } if call_id == "s1")).await;
    engine.submit(Op::Focus { focused: false });
    engine.submit(Op::Approve { call_id: "s1".into(), scope: ApprovalScope::Once });
    engine.until(|e| matches!(e, Event::ApprovalNeeded { call_id, .. } if call_id == "s2")).await;
    engine.submit(Op::Approve { call_id: "s2".into(), scope: ApprovalScope::Once });
    assert_eq!(engine.finish(turn).await.status, TurnStatus::Completed);
    engine.shutdown().await;
    let messages: Vec<String> = logged(&h, "notify.jsonl")
        .iter()
        .map(|o| {
            assert_eq!(o["hook_event_name"], "Notification");
            o["message"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(messages, ["shell waits for your approval", "the turn ended (completed)"]);
}
