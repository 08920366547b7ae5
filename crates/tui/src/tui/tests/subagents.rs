//! A running subagent (docs/subagents.md): its `task` call's cell shows the child live — its
//! current step, the tokens its view holds, its compactions — and Ctrl+T on it opens the
//! child's whole conversation in the pager, asked of the engine.

use codewhale_protocol::Event;
use codewhale_protocol::{HistoryItem, Op, Transcript};
use serde_json::json;

use super::Harness;

const CHILD: &str = "0193c0de-0000-7000-8000-0000000000c1";

fn running_child(h: &mut Harness) {
    h.type_str("look into the notes");
    h.enter();
    h.engine(1, Event::TurnStarted);
    let input = json!({"description": "read the notes", "prompt": "Read notes.txt and report."});
    h.engine(1, Event::ToolCallRequested { call_id: "t1".into(), name: "task".into(), input });
    h.engine(1, Event::ToolCallStarted { call_id: "t1".into(), name: "task".into() });
    let started = Event::SubagentStarted {
        call_id: "t1".into(),
        description: "read the notes".into(),
        session_id: CHILD.into(),
    };
    h.engine(1, started);
}

#[test]
fn a_running_child_shows_its_step_tokens_and_compactions() {
    let mut h = Harness::new();
    running_child(&mut h);
    assert!(h.screen().contains("subagent \"read the notes\" started · 0 tokens · 0 compactions"));
    let progress = Event::SubagentProgress {
        call_id: "t1".into(),
        step: "read_file notes.txt".into(),
        tokens: 2_400,
        compactions: 1,
    };
    h.engine(1, progress);
    let screen = h.screen();
    assert!(screen.contains("read_file notes.txt · 2.4k tokens · 1 compaction"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn ctrl_t_on_a_child_opens_its_conversation() {
    let mut h = Harness::new();
    running_child(&mut h);
    h.ctrl('t');
    assert_eq!(h.ops().last(), Some(&Op::GetSubagentTranscript { session_id: CHILD.into() }));
    let id = h.ops().len() as u64;
    let transcript = Transcript {
        session: CHILD.into(),
        model: "gpt-test".into(),
        items: vec![
            HistoryItem::User {
                id: "u1".into(),
                text: "Read notes.txt and report.".into(),
                covered: false,
                images: Vec::new(),
            },
            HistoryItem::Assistant {
                id: "a1".into(),
                text: "The notes say alpha.".into(),
                thinking: String::new(),
                covered: false,
            },
        ],
    };
    h.engine(id, Event::Transcript { transcript: Box::new(transcript) });
    let screen = h.screen();
    assert!(screen.contains(&format!("subagent {CHILD}")), "{screen}");
    assert!(screen.contains("The notes say alpha."), "{screen}");
}
