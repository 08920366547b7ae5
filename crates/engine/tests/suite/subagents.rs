//! `task`: a subagent is a child session of its own (docs/subagents.md). Through the mock
//! server, with scripted child prompts: a round trip whose child reads a file, a child at an 8k
//! window that compacts through a 40-call loop, two children at once (their questions kept
//! apart in the parent's modal), a child's question asked in the parent's modal or refused
//! where nobody can be asked, a mode chosen mid-turn reaching a running child, Ctrl+C during a
//! child, a child that fails, the tools a child is given, `[tools] subagent_model`, `/undo` of
//! what a child wrote, and the parent's recall of a child's finding after the parent compacted.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::protocol::{ApprovalScope, Event, Op, TurnStatus};
use codewhale_engine::session::Resume;
use codewhale_engine::Engine;
use codewhale_journal::{check_file, load_read_only, Journal, Payload};
use codewhale_provider::test_support::{Fault, RecordedRequest, Reply, ToolCall};
use serde_json::{json, Value};

use super::common::{reload_checked, results, Harness, Running};
use super::compaction::{assert_no_orphans, compact, is_summary_request, params, SUMMARY};

/// Every session file of the home, parent and children.
fn journals(home: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(home.join("sessions"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

fn load(path: &Path) -> Journal {
    load_read_only(path).unwrap().journal
}

/// The parent's journal and its children's, each checked as `codewhale journal check` does.
fn family(home: &Path) -> (PathBuf, Vec<PathBuf>) {
    let mut parent = None;
    let mut children = Vec::new();
    for path in journals(home) {
        let report = check_file(&path).unwrap();
        assert!(report.problems.is_empty(), "{}: {:?}", path.display(), report.problems);
        if load(&path).header().parent_session.is_some() {
            children.push(path);
        } else {
            assert!(parent.replace(path).is_none(), "one parent");
        }
    }
    (parent.expect("a parent session"), children)
}

/// The texts of a request's user messages (both wires keep them under `messages`).
fn user_texts(r: &RecordedRequest) -> String {
    r.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The child a request belongs to (its prompt starts with `CHILD-<tag>:`), if any.
fn child_tag(r: &RecordedRequest) -> Option<String> {
    let text = user_texts(r);
    let at = text.find("CHILD-")?;
    let tag: String = text[at + 6..].chars().take_while(char::is_ascii_alphanumeric).collect();
    Some(tag)
}

fn tool_names(r: &RecordedRequest) -> Vec<String> {
    r.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn has_tool_results(r: &RecordedRequest) -> bool {
    r.body["messages"].as_array().into_iter().flatten().any(|m| m["role"] == "tool")
}

fn task(id: &str, description: &str, prompt: &str) -> ToolCall {
    ToolCall::new(id, "task", json!({"description": description, "prompt": prompt}))
}

/// A scripted model: summary requests get [`SUMMARY`]; a child `CHILD-<tag>` reads `calls[tag]`
/// files `<tag>-<n>.txt` one call per reply, then answers "<tag> found: …"; the parent makes
/// `parent_calls` in its first reply and answers "parent done" after. A request longer than
/// `window` is rejected as a provider would.
fn script(
    h: &Harness,
    window: u64,
    calls: HashMap<String, usize>,
    parent_calls: Vec<ToolCall>,
) -> Arc<Mutex<HashMap<String, usize>>> {
    let made = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
    let seen = made.clone();
    h.server.respond_with(move |r| {
        let tokens = u64::from(codewhale_engine::tokens::count(&r.body.to_string()));
        if tokens > window {
            return Reply::fault(Fault::overflow(window, tokens));
        }
        if is_summary_request(&r.body) {
            return Reply::text(SUMMARY).with_usage(tokens, 200);
        }
        match child_tag(r) {
            Some(tag) => {
                let mut made = seen.lock().unwrap();
                let n = made.entry(tag.clone()).or_default();
                let wanted = calls.get(&tag).copied().unwrap_or(0);
                *n += 1;
                if *n <= wanted {
                    let path = format!("{tag}-{}.txt", *n - 1);
                    Reply::tool_call(format!("{tag}-call-{n}"), "read_file", json!({"path": path}))
                        .with_usage(tokens, 20)
                } else {
                    let details = "lorem ipsum dolor sit amet ".repeat(60);
                    Reply::text(format!(
                        "{tag} found: the answer is 42 after {wanted} reads. Details: {details}"
                    ))
                    .with_usage(tokens, 10)
                }
            }
            None if !has_tool_results(r) => {
                Reply::tool_calls(parent_calls.clone()).with_usage(tokens, 30)
            }
            None => Reply::text("parent done").with_usage(tokens, 5),
        }
    });
    made
}

fn spawn_at(h: &Harness, window: u64, mode: ApprovalMode) -> Running {
    let mut p = params(h, "openai", window);
    p.overrides.approval = Some(mode);
    Engine::spawn(p).unwrap().into()
}

fn result_of(journal: &Journal, call: &str) -> (String, bool) {
    results(journal)
        .into_iter()
        .find(|(id, _, _)| id == call)
        .map(|(_, content, err)| (content, err))
        .unwrap_or_else(|| panic!("no result for {call}"))
}

#[tokio::test]
async fn a_task_runs_a_child_session_that_reads_a_file() {
    let h = Harness::new().await;
    h.write("A-0.txt", "the notes say alpha\n");
    let calls = HashMap::from([("A".to_owned(), 1)]);
    script(&h, 200_000, calls, vec![task("t1", "read the notes", "CHILD-A: read A-0.txt")]);
    let mut engine = spawn_at(&h, 200_000, ApprovalMode::Ask);
    let run = engine.turn("PARENT: delegate reading the notes").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    assert_eq!(run.text, "parent done");
    let started = run.events.iter().find_map(|e| match e {
        Event::SubagentStarted { call_id, description, session_id } => {
            Some((call_id.clone(), description.clone(), session_id.clone()))
        }
        _ => None,
    });
    let (call_id, description, child_id) = started.expect("a SubagentStarted event");
    assert_eq!((call_id.as_str(), description.as_str()), ("t1", "read the notes"));
    assert!(run.events.iter().any(|e| matches!(
        e,
        Event::SubagentFinished { status: TurnStatus::Completed, calls: 1, .. }
    )));
    engine.shutdown().await;

    let (parent_path, children) = family(h.home.path());
    assert_eq!(children.len(), 1);
    let parent = reload_checked(&parent_path);
    let child = reload_checked(&children[0]);
    // The child's header names its parent, the entry holding the call, and the call.
    let header = child.header();
    assert_eq!(header.session_id, child_id);
    assert_eq!(header.parent_session.as_deref(), Some(parent.session_id()));
    assert_eq!(header.parent_call.as_deref(), Some("t1"));
    let entry = header.parent_entry.clone().expect("parent_entry");
    match &parent.get(&entry).expect("the parent entry exists").payload {
        Payload::Assistant(a) => assert!(a.tool_uses().any(|c| c.id == "t1")),
        other => panic!("parent_entry is not the task call's entry: {other:?}"),
    }
    // The child read the file in its own journal; the parent reads only its answer.
    let (_, read, _) = results(&child).remove(0);
    assert!(read.contains("the notes say alpha"), "{read}");
    let (result, is_error) = result_of(&parent, "t1");
    assert!(!is_error);
    assert!(result.starts_with("A found: the answer is 42 after 1 reads"), "{result}");
    assert!(result.contains(&child_id), "the result names the child for recall: {result}");
    assert!(!result.contains("the notes say alpha"), "the parent never reads the transcript");
    // The parent is offered `task`; the child is not, and gets the read-only tools only.
    let requests = h.server.requests();
    let parent_tools = tool_names(&requests[0]);
    assert!(parent_tools.contains(&"task".to_owned()), "{parent_tools:?}");
    let child_request = requests.iter().find(|r| child_tag(r).is_some()).unwrap();
    let child_tools = tool_names(child_request);
    assert!(!child_tools.contains(&"task".to_owned()), "{child_tools:?}");
    for name in ["write_file", "edit_file", "shell"] {
        assert!(!child_tools.contains(&name.to_owned()), "{name} offered: {child_tools:?}");
    }
    assert!(child_tools.contains(&"read_file".to_owned()));
    assert_no_orphans(&h);
}

#[tokio::test]
async fn a_child_at_an_8k_window_compacts_through_a_40_call_loop() {
    let h = Harness::new().await;
    for n in 0..40 {
        h.write(&format!("B-{n}.txt"), &format!("file {n}: {}\n", "lorem ipsum dolor ".repeat(90)));
    }
    let calls = HashMap::from([("B".to_owned(), 40)]);
    let made = script(&h, 8_192, calls, vec![task("t1", "read forty files", "CHILD-B: read all")]);
    let mut engine = spawn_at(&h, 8_192, ApprovalMode::Full);
    let run = engine.turn("PARENT: delegate the long read").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events.last());
    assert_eq!(run.text, "parent done");
    engine.shutdown().await;
    assert_eq!(made.lock().unwrap()["B"], 41, "every call of the loop was made");

    let (parent_path, children) = family(h.home.path());
    let child = reload_checked(&children[0]);
    let notes = child.compactions().count();
    assert!(notes >= 1, "the child compacted");
    let parent = reload_checked(&parent_path);
    assert_eq!(parent.compactions().count(), 0, "the parent read only the result");
    let (result, is_error) = result_of(&parent, "t1");
    assert!(!is_error, "{result}");
    assert!(result.starts_with("B found: the answer is 42 after 40 reads"), "{result}");
    let finished = run.events.iter().find_map(|e| match e {
        Event::SubagentFinished { compactions, calls, .. } => Some((*compactions, *calls)),
        _ => None,
    });
    let (compactions, calls) = finished.unwrap();
    assert!(compactions >= 1);
    assert_eq!(calls, 40);
    // No request of either session carried an orphaned call or result, and none overflowed.
    assert_no_orphans(&h);
}

#[tokio::test]
async fn two_children_run_at_once() {
    let h = Harness::new().await;
    for tag in ["C", "D"] {
        for n in 0..3 {
            h.write(&format!("{tag}-{n}.txt"), &format!("{tag} file {n}\n"));
        }
    }
    let calls = HashMap::from([("C".to_owned(), 3), ("D".to_owned(), 3)]);
    let both =
        vec![task("t1", "left half", "CHILD-C: read"), task("t2", "right half", "CHILD-D: read")];
    script(&h, 200_000, calls, both);
    let mut engine = spawn_at(&h, 200_000, ApprovalMode::Ask);
    let run = engine.turn("PARENT: split the work").await;
    assert_eq!(run.status, TurnStatus::Completed);
    // Both started before either ended: they ran at once.
    let order: Vec<&str> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::SubagentStarted { .. } => Some("started"),
            Event::SubagentFinished { .. } => Some("finished"),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["started", "started", "finished", "finished"]);
    // Their cost joins the parent's turn: 1 + 4 + 4 + 1 requests.
    let stats = run.events.iter().find_map(|e| match e {
        Event::TurnFinished { stats, .. } => Some(*stats),
        _ => None,
    });
    assert_eq!(stats.unwrap().requests, 10);
    engine.shutdown().await;
    let (parent_path, children) = family(h.home.path());
    assert_eq!(children.len(), 2);
    let parent = reload_checked(&parent_path);
    assert!(result_of(&parent, "t1").0.starts_with("C found"));
    assert!(result_of(&parent, "t2").0.starts_with("D found"));
    assert_no_orphans(&h);
}

#[tokio::test]
async fn ctrl_c_during_a_child_stops_it_with_the_turn() {
    let h = Harness::new().await;
    h.write("E-0.txt", "first\n");
    h.server.push(Reply::tool_call(
        "t1",
        "task",
        json!({"description": "slow", "prompt": "CHILD-E: go"}),
    ));
    h.server.push(Reply::tool_call("E-call-1", "read_file", json!({"path": "E-0.txt"})));
    h.server.push(Reply::text("E is still").then_text(" thinking").hang_after(2));
    let mut engine = spawn_at(&h, 200_000, ApprovalMode::Ask);
    let turn = engine.submit(Op::UserInput {
        text: "PARENT: delegate".into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    engine.until(|e| matches!(e, Event::SubagentProgress { step, .. } if step == "writing")).await;
    engine.submit(Op::Interrupt);
    let run = engine.finish(turn).await;
    assert_eq!(run.status, TurnStatus::Interrupted);
    assert!(run
        .events
        .iter()
        .any(|e| matches!(e, Event::SubagentFinished { status: TurnStatus::Interrupted, .. })));
    // The next turn works.
    h.server.push(Reply::text("back again"));
    let next = engine.turn("PARENT: and now?").await;
    assert_eq!(next.status, TurnStatus::Completed, "{:?}", next.events);
    engine.shutdown().await;
    let (parent_path, _) = family(h.home.path());
    let parent = reload_checked(&parent_path);
    let (result, _) = result_of(&parent, "t1");
    assert!(result.starts_with("[stopped: the user interrupted the turn]"), "{result}");
    assert!(result.contains("- read_file E-0.txt (done)"), "{result}");
}

#[tokio::test]
async fn a_failed_child_is_a_result_not_the_end_of_the_parents_turn() {
    let h = Harness::new().await;
    h.server.push(Reply::tool_call(
        "t1",
        "task",
        json!({"description": "doomed", "prompt": "CHILD-F: go"}),
    ));
    h.server.push(Reply::fault(Fault::Unauthorized));
    h.server.push(Reply::text("the subagent failed; carrying on"));
    let mut engine = spawn_at(&h, 200_000, ApprovalMode::Ask);
    let run = engine.turn("PARENT: delegate").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    engine.shutdown().await;
    let (parent_path, _) = family(h.home.path());
    let parent = reload_checked(&parent_path);
    let (result, is_error) = result_of(&parent, "t1");
    assert!(is_error);
    assert!(result.starts_with("[failed: "), "{result}");
    assert!(result.contains("It made no tool calls."), "{result}");
}

#[tokio::test]
async fn a_child_stays_read_only_in_ask_and_never_gets_task() {
    let h = Harness::new().await;
    let input = json!({"description": "edit", "prompt": "CHILD-G: edit", "tools": ["write_file", "task", "nope"]});
    h.server.push(Reply::tool_call("t1", "task", input));
    h.server.push(Reply::tool_calls(vec![
        ToolCall::new("G-1", "task", json!({"description": "grandchild", "prompt": "x"})),
        ToolCall::new("G-2", "write_file", json!({"path": "x.txt", "content": "x"})),
    ]));
    h.server.push(Reply::text("G could not write"));
    h.server.push(Reply::text("parent done"));
    let mut engine = spawn_at(&h, 200_000, ApprovalMode::Ask);
    let run = engine.turn("PARENT: delegate").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    engine.shutdown().await;
    assert!(!h.ws.path().join("x.txt").exists());
    let child_tools = tool_names(&h.server.requests()[1]);
    assert!(!child_tools.iter().any(|t| t == "write_file" || t == "task"), "{child_tools:?}");
    let (parent_path, children) = family(h.home.path());
    let child = reload_checked(&children[0]);
    let refused = results(&child);
    assert!(refused[0].1.contains("cannot start subagents"), "{refused:?}");
    assert!(refused[1].1.contains("not among the tools"), "{refused:?}");
    let parent = reload_checked(&parent_path);
    let (result, _) = result_of(&parent, "t1");
    assert!(
        result.contains("write_file (approval mode `ask` keeps a subagent read-only"),
        "{result}"
    );
    assert!(result.contains("task (a subagent cannot start subagents"), "{result}");
    assert!(result.contains("nope (no such tool"), "{result}");
}

#[tokio::test]
async fn a_child_in_auto_edit_gets_the_tools_it_asks_for() {
    let h = Harness::new().await;
    let input =
        json!({"description": "write", "prompt": "CHILD-H: write", "tools": ["write_file"]});
    h.server.push(Reply::tool_call("t1", "task", input));
    h.server.push(Reply::tool_call(
        "H-1",
        "write_file",
        json!({"path": "made.txt", "content": "by the child\n"}),
    ));
    h.server.push(Reply::text("H wrote made.txt"));
    h.server.push(Reply::text("parent done"));
    let mut engine = spawn_at(&h, 200_000, ApprovalMode::AutoEdit);
    let run = engine.turn("PARENT: delegate the write").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    engine.shutdown().await;
    assert_eq!(h.read("made.txt"), "by the child\n");
    // The change is checkpointed under the parent's `task` call, so the parent's /undo takes
    // it back.
    let (parent_path, _) = family(h.home.path());
    let parent = reload_checked(&parent_path);
    let files = parent
        .entries()
        .iter()
        .find_map(|e| match &e.payload {
            Payload::ToolResult(r) if r.tool_use_id == "t1" => r.files.clone(),
            _ => None,
        })
        .expect("the task result lists the files the child changed");
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].path, "made.txt");
    assert!(files[0].before.is_none() && files[0].after.is_some());
}

#[tokio::test]
async fn the_parent_recalls_a_childs_finding_after_it_compacted() {
    let h = Harness::new().await;
    h.write("K-0.txt", "the key is 7\n");
    let calls = HashMap::from([("K".to_owned(), 1)]);
    script(&h, 200_000, calls, vec![task("t1", "find the key", "CHILD-K: find the key")]);
    let mut engine = spawn_at(&h, 200_000, ApprovalMode::Ask);
    let run = engine.turn("PARENT: find the key").await;
    assert_eq!(run.status, TurnStatus::Completed);
    // Two more turns with tool calls of their own, then the parent compacts: the task call
    // and its result are covered by the note.
    let n = std::sync::atomic::AtomicUsize::new(0);
    h.server.respond_with(move |r| {
        if is_summary_request(&r.body) {
            return Reply::text(SUMMARY);
        }
        let messages = r.body["messages"].as_array().unwrap();
        if messages.last().is_some_and(|m| m["role"] == "tool") {
            return Reply::text("noted");
        }
        let k = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Reply::tool_call(format!("ls-{k}"), "list_dir", json!({"path": "."}))
    });
    assert_eq!(engine.turn("PARENT: thanks").await.status, TurnStatus::Completed);
    assert_eq!(engine.turn("PARENT: go on").await.status, TurnStatus::Completed);
    let note = match compact(&mut engine, None).await {
        Event::CompactionFinished { note, .. } => note,
        other => panic!("{other:?}"),
    };
    // The next turn recalls the child by its call's id, then searches its journal.
    h.server.respond_with(|r| {
        let answered = |id: &str| {
            r.body["messages"].as_array().unwrap().iter().any(|m| m["tool_call_id"] == id)
        };
        if !answered("r1") {
            Reply::tool_call("r1", "recall", json!({"entry": "t1"}))
        } else if !answered("r2") {
            Reply::tool_call("r2", "recall", json!({"query": "key is"}))
        } else {
            Reply::text("the key is 7")
        }
    });
    let run = engine.turn("PARENT: what was the key?").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    engine.shutdown().await;
    let (parent_path, children) = family(h.home.path());
    let child_id = load(&children[0]).session_id().to_owned();
    let parent = reload_checked(&parent_path);
    let (whole, _) = result_of(&parent, "r1");
    assert!(whole.contains(&child_id), "{whole}");
    assert!(whole.contains("the key is 7"), "the child's read is recalled: {whole}");
    let (hits, _) = result_of(&parent, "r2");
    assert!(hits.contains(&format!("In subagent session {child_id}")), "{hits}");
    assert!(hits.contains("the key is 7"), "{hits}");
    // The note names the covered task call and its child.
    assert!(note.contains("## Subagents"), "{note}");
    assert!(note.contains(&child_id), "{note}");
}

#[tokio::test]
async fn last_never_picks_a_child() {
    let h = Harness::new().await;
    h.write("L-0.txt", "x\n");
    let calls = HashMap::from([("L".to_owned(), 1)]);
    script(&h, 200_000, calls, vec![task("t1", "look", "CHILD-L: look")]);
    let mut engine = spawn_at(&h, 200_000, ApprovalMode::Ask);
    let run = engine.turn("PARENT: look").await;
    assert_eq!(run.status, TurnStatus::Completed);
    let parent_id = engine.handle.session_id().to_owned();
    engine.shutdown().await;
    // The child's journal was written after the parent's: still, --last is the parent.
    let last = codewhale_engine::session::find_last(h.home.path(), &h.workspace()).unwrap();
    assert!(last.to_string_lossy().contains(&parent_id), "{}", last.display());
    let _: Value = json!(null);
}

#[tokio::test]
async fn a_child_runs_in_the_window_its_parent_learned() {
    let h = Harness::new().await;
    h.write("W-0.txt", "w\n");
    // The first request is rejected with the window the provider states; the parent learns it.
    h.server.push(Reply::fault(Fault::overflow(50_000, 60_000)));
    let calls = HashMap::from([("W".to_owned(), 1)]);
    script(&h, 200_000, calls, vec![task("t1", "look", "CHILD-W: look")]);
    let mut engine = spawn_at(&h, 200_000, ApprovalMode::Ask);
    // Too few messages to compact: that turn fails, but the window stays learned.
    let first = engine.turn("PARENT: hello").await;
    assert_eq!(first.status, TurnStatus::Failed);
    let run = engine.turn("PARENT: look").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    engine.shutdown().await;
    let (_, children) = family(h.home.path());
    let child = reload_checked(&children[0]);
    let learned = child.entries().iter().find_map(|e| match &e.payload {
        Payload::System(s) => s.context_window,
        _ => None,
    });
    assert_eq!(learned, Some(50_000), "the child journals the window it inherited");
}

/// The text of the first tool result a request carries, if any.
fn first_tool_result(r: &RecordedRequest) -> Option<String> {
    r.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
}

/// A scripted model for questions: each child `CHILD-<tag>` reads `outside[tag]` (a path
/// outside the workspace, which asks even in `ask`) under call id `same`, then answers
/// "<tag> saw: <its tool result>"; the parent starts `parent_calls`, then answers "parent done".
fn script_outside_reads(
    h: &Harness,
    outside: HashMap<String, String>,
    parent_calls: Vec<ToolCall>,
) {
    h.server.respond_with(move |r| match child_tag(r) {
        Some(tag) => match first_tool_result(r) {
            None => Reply::tool_call("same", "read_file", json!({"path": outside[&tag]})),
            Some(seen) => Reply::text(format!("{tag} saw: {seen}")),
        },
        None if !has_tool_results(r) => Reply::tool_calls(parent_calls.clone()),
        None => Reply::text("parent done"),
    });
}

/// A file outside the workspace (in the home's temp dir), for a read that asks.
fn outside_file(h: &Harness, name: &str, text: &str) -> String {
    let path = h.home.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[tokio::test]
async fn a_childs_question_is_asked_in_the_parents_modal_with_its_description() {
    let h = Harness::new().await;
    let path = outside_file(&h, "outside-A.txt", "outside secret\n");
    let outside = HashMap::from([("A".to_owned(), path)]);
    script_outside_reads(&h, outside, vec![task("t1", "peek outside", "CHILD-A: read it")]);
    let mut engine = h.spawn_with(Resume::New, ApprovalMode::Ask, true);
    let turn = engine.submit(Op::UserInput {
        text: "PARENT: delegate".into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    let asked = engine.until(|e| matches!(e, Event::ApprovalNeeded { .. })).await;
    let Some(Event::ApprovalNeeded { call_id, name, reason, .. }) = asked.last() else {
        unreachable!()
    };
    assert_eq!(name, "read_file");
    assert!(reason.starts_with("subagent \"peek outside\": "), "{reason}");
    engine.submit(Op::Approve { call_id: call_id.clone(), scope: ApprovalScope::Once });
    let run = engine.finish(turn).await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    engine.shutdown().await;
    let (parent_path, _) = family(h.home.path());
    let (result, is_error) = result_of(&reload_checked(&parent_path), "t1");
    assert!(result.starts_with("A saw: ") && result.contains("outside secret"), "{result}");
    assert!(!is_error);
}

#[tokio::test]
async fn a_childs_question_is_refused_when_nobody_can_be_asked() {
    let h = Harness::new().await;
    let path = outside_file(&h, "outside-A.txt", "outside secret\n");
    let outside = HashMap::from([("A".to_owned(), path)]);
    script_outside_reads(&h, outside, vec![task("t1", "peek outside", "CHILD-A: read it")]);
    let mut engine = h.spawn_with(Resume::New, ApprovalMode::Ask, false);
    let run = engine.turn("PARENT: delegate").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    assert!(!run.events.iter().any(|e| matches!(e, Event::ApprovalNeeded { .. })));
    engine.shutdown().await;
    let (parent_path, _) = family(h.home.path());
    let (result, _) = result_of(&reload_checked(&parent_path), "t1");
    assert!(result.starts_with("A saw: denied:"), "{result}");
    assert!(!result.contains("outside secret"), "{result}");
}

#[tokio::test]
async fn two_childrens_questions_with_the_same_call_id_get_their_own_answers() {
    let h = Harness::new().await;
    let outside = HashMap::from([
        ("C".to_owned(), outside_file(&h, "outside-C.txt", "C's secret\n")),
        ("D".to_owned(), outside_file(&h, "outside-D.txt", "D's secret\n")),
    ]);
    let both = vec![task("t1", "left", "CHILD-C: read"), task("t2", "right", "CHILD-D: read")];
    script_outside_reads(&h, outside, both);
    let mut engine = h.spawn_with(Resume::New, ApprovalMode::Ask, true);
    let turn = engine.submit(Op::UserInput {
        text: "PARENT: split".into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    // Both children ask (their models both used call id `same`) before either is answered.
    let mut asked: HashMap<String, String> = HashMap::new();
    while asked.len() < 2 {
        let msg = engine.next().await;
        if let Event::ApprovalNeeded { call_id, reason, .. } = msg.event {
            let who = if reason.starts_with("subagent \"left\"") { "left" } else { "right" };
            asked.insert(who.to_owned(), call_id);
        }
    }
    assert_ne!(asked["left"], asked["right"], "each child's question has its own id");
    engine.submit(Op::Deny { call_id: asked["right"].clone(), reason: Some("not that".into()) });
    engine.submit(Op::Approve { call_id: asked["left"].clone(), scope: ApprovalScope::Once });
    let run = engine.finish(turn).await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    engine.shutdown().await;
    let (parent_path, _) = family(h.home.path());
    let parent = reload_checked(&parent_path);
    let (left, _) = result_of(&parent, "t1");
    let (right, _) = result_of(&parent, "t2");
    assert!(left.starts_with("C saw: ") && left.contains("C's secret"), "{left}");
    assert!(right.starts_with("D saw: denied") && !right.contains("D's secret"), "{right}");
}

#[tokio::test]
async fn subagent_model_sends_the_childs_requests_to_another_model() {
    let h = Harness::new().await;
    h.config("[tools]\nsubagent_model = \"gpt-4.1-mini\"\n");
    h.write("A-0.txt", "alpha\n");
    let calls = HashMap::from([("A".to_owned(), 1)]);
    script(&h, 200_000, calls, vec![task("t1", "read", "CHILD-A: read A-0.txt")]);
    let mut engine = spawn_at(&h, 200_000, ApprovalMode::Ask);
    let run = engine.turn("PARENT: delegate").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    engine.shutdown().await;
    let requests = h.server.requests();
    let (children, parents): (Vec<_>, Vec<_>) =
        requests.iter().partition(|r| child_tag(r).is_some());
    assert_eq!((children.len(), parents.len()), (2, 2));
    assert!(children.iter().all(|r| r.body["model"] == "gpt-4.1-mini"));
    assert!(parents.iter().all(|r| r.body["model"] == "gpt-4.1"));
    let (_, kids) = family(h.home.path());
    assert_eq!(load(&kids[0]).header().model, "gpt-4.1-mini");
}

#[tokio::test]
async fn undo_of_the_parents_turn_takes_back_what_its_child_wrote() {
    let h = Harness::new().await;
    h.write("kept.txt", "before\n");
    let input = json!({"description": "write", "prompt": "CHILD-H: write",
        "tools": ["write_file"]});
    h.server.push(Reply::tool_call("t1", "task", input));
    h.server.push(Reply::tool_call(
        "H-1",
        "write_file",
        json!({"path": "made.txt", "content": "by the child\n"}),
    ));
    h.server.push(Reply::tool_call(
        "H-2",
        "write_file",
        json!({"path": "kept.txt", "content": "changed by the child\n"}),
    ));
    h.server.push(Reply::text("H wrote two files"));
    h.server.push(Reply::text("parent done"));
    let mut engine = spawn_at(&h, 200_000, ApprovalMode::AutoEdit);
    let run = engine.turn("PARENT: delegate the write").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    assert_eq!(h.read("kept.txt"), "changed by the child\n");
    let undo = engine.submit(Op::Undo { force: false });
    let marker = engine.submit(Op::GetContext);
    loop {
        let msg = engine.next().await;
        assert!(!matches!(msg.event, Event::Error { .. }) || msg.id != undo, "{:?}", msg.event);
        if msg.id == marker {
            break;
        }
    }
    engine.shutdown().await;
    assert!(!h.ws.path().join("made.txt").exists(), "the child's new file is gone");
    assert_eq!(h.read("kept.txt"), "before\n");
}

#[tokio::test]
async fn a_mode_chosen_while_a_child_runs_reaches_the_child() {
    let h = Harness::new().await;
    let input = json!({"description": "build and write", "prompt": "CHILD-M: go",
        "tools": ["shell", "write_file"]});
    h.server.push(Reply::tool_call("t1", "task", input));
    h.server.push(Reply::tool_call("M-1", "shell", json!({"command": "true"})));
    h.server.push(Reply::tool_call(
        "M-2",
        "write_file",
        json!({"path": "made.txt", "content": "by the child\n"}),
    ));
    h.server.push(Reply::text("M is done"));
    h.server.push(Reply::text("parent done"));
    let mut engine = h.spawn_with(Resume::New, ApprovalMode::AutoEdit, true);
    let turn = engine.submit(Op::UserInput {
        text: "PARENT: delegate".into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    // In auto-edit the child's shell command asks; while it waits, the user chooses `ask`.
    let asked = engine.until(|e| matches!(e, Event::ApprovalNeeded { .. })).await;
    let Some(Event::ApprovalNeeded { call_id, name, .. }) = asked.last() else { unreachable!() };
    assert_eq!(name, "shell");
    engine.submit(Op::SetApproval { mode: ApprovalMode::Ask });
    engine.until(|e| matches!(e, Event::ApprovalChanged { .. })).await;
    engine.submit(Op::Approve { call_id: call_id.clone(), scope: ApprovalScope::Once });
    // The child's write, which auto-edit would have made at once, now asks too.
    let asked = engine.until(|e| matches!(e, Event::ApprovalNeeded { .. })).await;
    let Some(Event::ApprovalNeeded { call_id, name, reason, .. }) = asked.last() else {
        unreachable!()
    };
    assert_eq!(name, "write_file");
    assert!(reason.starts_with("subagent \"build and write\": "), "{reason}");
    engine.submit(Op::Deny { call_id: call_id.clone(), reason: None });
    let run = engine.finish(turn).await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    engine.shutdown().await;
    assert!(!h.ws.path().join("made.txt").exists(), "the denied write was not made");
}

#[tokio::test]
async fn always_allowed_in_a_childs_question_holds_for_the_parents_session() {
    let h = Harness::new().await;
    let input = json!({"description": "check", "prompt": "CHILD-G: go", "tools": ["shell"]});
    h.server.push(Reply::tool_call("t1", "task", input));
    h.server.push(Reply::tool_call("G-1", "shell", json!({"command": "echo checked"})));
    h.server.push(Reply::text("G checked"));
    h.server.push(Reply::tool_call("p1", "shell", json!({"command": "echo checked"})));
    h.server.push(Reply::text("parent done"));
    let mut engine = h.spawn_with(Resume::New, ApprovalMode::AutoEdit, true);
    let turn = engine.submit(Op::UserInput {
        text: "PARENT: delegate".into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    let asked = engine.until(|e| matches!(e, Event::ApprovalNeeded { .. })).await;
    let Some(Event::ApprovalNeeded { call_id, offers, .. }) = asked.last() else { unreachable!() };
    assert!(offers.iter().any(|o| o.scope == ApprovalScope::Command), "{offers:?}");
    engine.submit(Op::Approve { call_id: call_id.clone(), scope: ApprovalScope::Command });
    let run = engine.finish(turn).await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    // The parent's own run of the same command did not ask again.
    assert!(!run.events.iter().any(|e| matches!(e, Event::ApprovalNeeded { .. })));
    engine.shutdown().await;
    let (parent_path, _) = family(h.home.path());
    let (result, is_error) = result_of(&reload_checked(&parent_path), "p1");
    assert!(result.contains("checked") && !is_error, "{result}");
}
