use std::path::Path;

use codewhale_journal::{
    AssistantPayload, Block, Entry, HeaderPayload, Journal, ToolResultPayload, UserPayload,
};
use codewhale_protocol::TurnStatus;
use futures::FutureExt;
use serde_json::json;

use super::outcome::{self, Ended};
use super::{parse, slots, RESULT_TOKENS};

/// A child's journal: its prompt, a reply with two calls (one failed, one never answered)
/// and the result of the first.
fn child_journal(last_text: &str) -> Journal {
    let header = Entry::new(None, HeaderPayload::new("child-1", "/w"));
    let user = Entry::new(Some(header.id.clone()), UserPayload::text("CHILD: look"));
    let reply = Entry::new(
        Some(user.id.clone()),
        AssistantPayload::new(vec![
            Block::text(last_text),
            Block::tool_use("c1", "read_file", json!({"path": "src/lib.rs"})),
            Block::tool_use("c2", "shell", json!({"command": "cargo test\nmore"})),
        ]),
    );
    let result =
        Entry::new(Some(reply.id.clone()), ToolResultPayload::new("c1", "no such file", true));
    Journal::from_entries(vec![header, user, reply, result]).unwrap()
}

#[test]
fn a_short_answer_is_returned_whole_with_the_line_naming_the_child() {
    let journal = child_journal("the parser lives in src/parse.rs");
    let ended = Ended { status: TurnStatus::Completed, reason: None };
    let text = outcome::result_text(&journal, Path::new("/s/child-1.jsonl"), &ended, &[]);
    assert_eq!(
        text,
        "the parser lives in src/parse.rs\n[subagent session child-1; recall{\"entry\": \
         \"child-1\"} reads its transcript]"
    );
}

#[test]
fn a_failed_child_returns_its_reason_last_text_and_calls() {
    let journal = child_journal("looking at the sources");
    let ended = Ended { status: TurnStatus::Failed, reason: Some("the model refused".into()) };
    let left_out = vec!["task (a subagent cannot start subagents of its own)".to_owned()];
    let text = outcome::result_text(&journal, Path::new("/s/child-1.jsonl"), &ended, &left_out);
    assert!(
        text.starts_with("[failed: the model refused]\nIts last text:\nlooking at the sources\n")
    );
    assert!(text.contains("The tool calls it made (2):\n"));
    assert!(text.contains("- read_file src/lib.rs (failed)\n"), "{text}");
    assert!(text.contains("- shell cargo test (no result)\n"), "{text}");
    assert!(text.contains("[tools left out: task (a subagent cannot start"), "{text}");
    let stopped = Ended { status: TurnStatus::Interrupted, reason: Some("interrupted".into()) };
    let text = outcome::result_text(&journal, Path::new("/s/child-1.jsonl"), &stopped, &[]);
    assert!(text.starts_with("[stopped: interrupted]\n"), "{text}");
}

#[test]
fn a_long_answer_keeps_its_head_within_the_limit_and_names_the_journal() {
    crate::tokens::count("warm");
    let long: String = (0..3_000).map(|n| format!("line {n} of the finding\n")).collect();
    let cut = outcome::cut(&long, "child-1", Path::new("/s/child-1.jsonl"));
    let (head, marker) = cut.rsplit_once("\n[… cut at").unwrap();
    assert!(long.starts_with(head));
    assert!(crate::tokens::count(head) <= RESULT_TOKENS);
    assert!(crate::tokens::count(head) > RESULT_TOKENS * 8 / 10, "the head uses the room");
    assert!(
        marker.contains("/s/child-1.jsonl") && marker.contains("recall{\"entry\": \"child-1\"}")
    );
    let short = "a short answer";
    assert_eq!(outcome::cut(short, "child-1", Path::new("/s/child-1.jsonl")), short);
}

#[test]
fn arguments_are_checked_with_a_sentence_the_model_can_act_on() {
    let ok = parse(&json!({"description": "d", "prompt": "p", "tools": ["shell"]})).unwrap();
    assert_eq!(ok.tools.as_deref(), Some(&["shell".to_owned()][..]));
    let missing = parse(&json!({"description": "d"})).unwrap_err();
    assert!(missing.contains("task needs {description, prompt, tools?}"), "{missing}");
    let empty = parse(&json!({"description": "d", "prompt": "  "})).unwrap_err();
    assert!(empty.contains("needs a prompt"), "{empty}");
}

#[test]
fn the_process_runs_at_most_the_limit_at_once() {
    let first = slots::acquire(2).now_or_never().expect("a free place");
    let second = slots::acquire(2).now_or_never().expect("a second place");
    assert!(slots::acquire(2).now_or_never().is_none(), "a third waits");
    drop(first);
    let third = slots::acquire(2).now_or_never().expect("a place was given back");
    drop((second, third));
}
