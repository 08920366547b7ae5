//! `recall` end to end: after a compaction covered a 30 KB tool output, the model finds the
//! identifier inside it by describing it, without approval (in `ask` mode, with no one to ask),
//! and the journal entry id the hit names is the output's.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use codewhale_engine::protocol::Event;
use codewhale_provider::test_support::Reply;
use serde_json::json;

use super::common::Harness;
use super::compaction::{compact, is_summary_request};
use super::plan::{ends_with_result, BLAND};

#[tokio::test]
async fn a_covered_identifier_is_one_recall_away() {
    let h = Harness::new().await;
    // About 27 KB: under the tool output cap, so the result holds the identifier whole.
    let filler: String = (0..900).map(|n| format!("row {n:04}: nothing to see here\n")).collect();
    let (head, tail) = filler.split_at(filler.len() / 3);
    h.write("big.txt", &format!("{head}the release identifier is QX-55-ALPHA\n{tail}"));
    let read = AtomicBool::new(false);
    let calls = AtomicUsize::new(0);
    h.server.respond_with(move |r| {
        let body = r.body.to_string();
        if is_summary_request(&r.body) {
            return Reply::text(BLAND);
        }
        if ends_with_result(r) {
            return Reply::text("Noted.");
        }
        if !read.swap(true, Ordering::SeqCst) {
            return Reply::tool_call("read-1", "read_file", json!({"path": "big.txt"}));
        }
        if body.contains("which release identifier") {
            let query = json!({"query": "release identifier in big.txt"});
            return Reply::tool_call("rc-1", "recall", query);
        }
        let n = calls.fetch_add(1, Ordering::SeqCst);
        Reply::tool_call(format!("ls-{n}"), "list_dir", json!({"path": "."}))
    });
    let mut engine = h.spawn(codewhale_engine::ApprovalMode::Ask);
    engine.turn("read big.txt").await;
    engine.turn("thanks").await;
    engine.turn("now the docs").await;
    let done = compact(&mut engine, None).await;
    assert!(matches!(done, Event::CompactionFinished { .. }), "{done:?}");
    let before = h.server.requests().len();
    let run = engine.turn("which release identifier did big.txt name?").await;
    assert!(!run.events.iter().any(|e| matches!(e, Event::ApprovalNeeded { .. })));
    let requests = h.server.requests();
    let first = requests[before].body.to_string();
    assert!(!first.contains("QX-55-ALPHA"), "the compacted view no longer holds it");
    let answered = requests.last().unwrap().body.to_string();
    assert!(answered.contains("QX-55-ALPHA"), "recall brought it back: {answered}");
    let output = run.events.iter().find_map(|e| match e {
        Event::ToolCallFinished { name, output, is_error: false, .. } if name == "recall" => {
            Some(output.clone())
        }
        _ => None,
    });
    let output = output.expect("recall ran and succeeded");
    assert!(output.contains("tool_result · covered by compaction"), "{output}");
    engine.shutdown().await;
}
