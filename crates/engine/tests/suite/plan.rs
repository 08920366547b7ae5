//! `update_plan` end to end: the live plan is read from the journal, restated verbatim in every
//! note — by Codewhale, not the summarizer — and survives any number of compactions; bad
//! arguments are error results the model reads and change nothing.

use codewhale_engine::protocol::{Event, Plan, StepStatus};
use codewhale_provider::test_support::{RecordedRequest, Reply};
use serde_json::{json, Value};

use super::common::Harness;
use super::compaction::{compact, is_summary_request, prose, spawn, WINDOW};

/// A note that passes the contract and says nothing: the summarizer a plan must not rely on.
pub(super) const BLAND: &str = "## Objective\nWork on the task.\n## User direction\nNone\n\
## Permissions and limits\nNone\n## Done\nNone\n## Changed files\nNone\n## Still running\nNone\n\
## Verification left\nNone\n## Open questions\nNone\n## Next action\nNone\n## Reference\nNone";

fn plan_input() -> Value {
    json!({"steps": [
        {"step": "Rename parse_config to load_config", "status": "done"},
        {"step": "Update the three callers of load_config", "status": "in_progress"},
        {"step": "Run the test suite and report", "status": "pending"}
    ], "explanation": "the rename is finished"})
}

const SECTION: &str = "## Plan\n- [done] Rename parse_config to load_config\n\
- [in_progress] Update the three callers of load_config\n- [pending] Run the test suite and report";

/// Whether the last message of an OpenAI-format request is a tool result.
pub(super) fn ends_with_result(r: &RecordedRequest) -> bool {
    let messages = r.body["messages"].as_array();
    messages.and_then(|m| m.last()).is_some_and(|m| m["role"] == "tool")
}

/// Summary requests get [`BLAND`]; the first request an `update_plan` call with `input`; a
/// request that ends with a tool result a short reply; any other a `list_dir` call, so every
/// turn is a round with a tool exchange (and a manual pass has something to cover).
fn script(h: &Harness, input: Value) {
    let first = std::sync::atomic::AtomicBool::new(true);
    let calls = std::sync::atomic::AtomicUsize::new(0);
    h.server.respond_with(move |r| {
        if is_summary_request(&r.body) {
            return Reply::text(BLAND);
        }
        if first.swap(false, std::sync::atomic::Ordering::SeqCst) {
            return Reply::tool_call("plan-1", "update_plan", input.clone());
        }
        if ends_with_result(r) {
            // Long enough that a pass has something to shrink.
            return Reply::text("Working on it, step by step. ".repeat(60));
        }
        let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Reply::tool_call(format!("ls-{n}"), "list_dir", json!({"path": "."}))
    });
}

#[tokio::test]
async fn the_plan_survives_three_compactions_verbatim() {
    let h = Harness::new().await;
    script(&h, plan_input());
    let mut engine = h.spawn(codewhale_engine::ApprovalMode::Ask);
    let run = engine.turn("rename parse_config to load_config and update its callers").await;
    let set: Vec<&Plan> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Plan { plan: Some(plan), updated: true } => Some(plan),
            _ => None,
        })
        .collect();
    assert_eq!(set.len(), 1, "{:?}", run.events);
    assert_eq!(set[0].progress(), "plan 1/3");
    assert_eq!(set[0].steps[1].status, StepStatus::InProgress);
    let asked = run.events.iter().any(|e| matches!(e, Event::ApprovalNeeded { .. }));
    assert!(!asked, "update_plan never asks, even in ask mode");
    for pass in 1..=3 {
        for n in 0..2 {
            engine.turn(&format!("pass {pass}, message {n}: keep going")).await;
        }
        match compact(&mut engine, None).await {
            Event::CompactionFinished { note, .. } => {
                assert!(note.contains(SECTION), "pass {pass}: the note lacks the plan:\n{note}")
            }
            other => panic!("pass {pass}: {other:?}"),
        }
    }
    engine.turn("what is left?").await;
    let last = h.server.last_request().unwrap().body.to_string();
    assert!(!last.contains("plan-1"), "the call itself was covered long ago");
    let section = serde_json::to_string(SECTION).unwrap();
    assert!(last.contains(section.trim_matches('"')), "the plan reaches the model: {last}");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_trimmed_request_says_what_it_left_out_and_restates_the_plan() {
    let h = Harness::new().await;
    // Summaries are junk (a pass that needs one fails); replies report a prompt that grows
    // past usable input (15,000), so the last request fails open without the oldest rounds —
    // the plan's call among them.
    let n = std::sync::atomic::AtomicU64::new(0);
    h.server.respond_with(move |r| {
        if is_summary_request(&r.body) {
            return Reply::text("No summary available.");
        }
        match n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
            0 => Reply::tool_call("plan-1", "update_plan", plan_input()),
            1 => Reply::text("The plan is set.").with_usage(1_000, 20),
            // About 4,800 tokens each, reported as they are: no pass can make room.
            k @ 2..=5 => Reply::text(prose(&format!("answer {}", k - 1), 900))
                .with_usage(4_900 * (k - 1), 4_800),
            // The last turn calls a tool, so its round is its own and the older ones can go.
            6 => Reply::tool_call("ls-1", "list_dir", json!({"path": "."})),
            _ => Reply::text("trimmed answer").with_usage(9_000, 5),
        }
    });
    let mut engine = spawn(&h, "openai", WINDOW);
    engine.turn("question 0: rename parse_config").await;
    for k in 1..=5 {
        engine.turn(&format!("question {k}")).await;
    }
    let requests = h.server.requests();
    let last = requests.last().unwrap().body.to_string();
    let shape: Vec<String> = requests
        .iter()
        .map(|r| {
            let m = r.body["messages"].as_array().map_or(0, |m| m.len());
            format!("{m} msgs, trimmed {}", r.body.to_string().contains("This request is trimmed"))
        })
        .collect();
    assert!(
        !last.contains("plan-1") && !last.contains("answer 1"),
        "the call was left out: {shape:?}"
    );
    assert!(last.contains("question 0: rename parse_config"), "the user's text is retained");
    assert!(last.contains("# This request is trimmed"), "{last}");
    assert!(last.contains("`recall`"), "the notice says where the rest is: {last}");
    let section = serde_json::to_string(SECTION).unwrap();
    assert!(last.contains(section.trim_matches('"')), "the plan is restated: {last}");
    // A request that is sent whole carries no notice.
    let whole = requests.iter().filter(|r| !r.body.to_string().contains("This request is trimmed"));
    assert!(whole.count() >= 5);
    engine.shutdown().await;
}

#[tokio::test]
async fn a_bad_plan_is_an_error_result_and_changes_nothing() {
    let h = Harness::new().await;
    let two_running = json!({"steps": [
        {"step": "a", "status": "in_progress"},
        {"step": "b", "status": "in_progress"}
    ]});
    script(&h, two_running);
    let mut engine = h.spawn(codewhale_engine::ApprovalMode::Full);
    let run = engine.turn("plan it").await;
    let finished = run.events.iter().find_map(|e| match e {
        Event::ToolCallFinished { name, is_error, output, .. } if name == "update_plan" => {
            Some((*is_error, output.clone()))
        }
        _ => None,
    });
    let (is_error, output) = finished.unwrap();
    assert!(is_error && output.contains("2 steps are in_progress"), "{output}");
    assert!(!run.events.iter().any(|e| matches!(e, Event::Plan { updated: true, .. })));
    let body = h.server.requests()[1].body.to_string();
    assert!(body.contains("at most one may be"), "the model reads why: {body}");
    engine.shutdown().await;
}
