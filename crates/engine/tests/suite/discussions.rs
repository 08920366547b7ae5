//! Compaction in the shape real sessions take (docs/compaction.md, *The cut*): a tool call and
//! then a discussion, a long tool loop and then a discussion. The walk back to the last
//! tool-bearing round stops at a long discussion, so these sessions compact like a chat does,
//! in every wire format, through a mock model that rejects anything past its window and reports
//! the prompt sizes it is sent.

use codewhale_engine::protocol::{Event, TurnStatus};
use codewhale_engine::{Engine, FrontEnd};
use codewhale_journal::{CompactionPath, Payload};
use codewhale_provider::test_support::{Fault, RecordedRequest, Reply};
use serde_json::json;

use super::common::{reload_checked, session_file, Harness, Running};
use super::compaction::{
    assert_no_orphans, is_summary_request, params, prose, request_text, summary_requests, SUMMARY,
};

const PROVIDERS: [&str; 3] = ["openai", "anthropic", "openai-responses"];

fn body_tokens(r: &RecordedRequest) -> u64 {
    u64::from(codewhale_engine::tokens::count(&r.body.to_string()))
}

/// An engine as the terminal UI runs it.
fn interactive(h: &Harness, provider: &str, window: u64) -> Running {
    let mut p = params(h, provider, window);
    p.front_end = FrontEnd::Tui;
    p.interactive = true;
    Engine::spawn(p).unwrap().into()
}

/// The mock model: summary requests get [`SUMMARY`]; a request whose last message is the user's
/// `call_first` question gets a `read_file` of `notes.txt`; every other request a reply of
/// `reply` prose units. Prompts past `window` are rejected as a provider would; usage reports
/// the prompt's size, as a real server does.
fn model(h: &Harness, window: u64, call_first: Option<&'static str>, reply: usize) {
    h.server.respond_with(move |r| {
        let tokens = body_tokens(r);
        if tokens > window {
            return Reply::fault(Fault::overflow(window, tokens));
        }
        if is_summary_request(&r.body) {
            return Reply::text(SUMMARY).with_usage(tokens, 300);
        }
        let body = r.body.to_string();
        if call_first.is_some_and(|q| body.contains(q)) && !body.contains("read-notes") {
            return Reply::tool_call("read-notes", "read_file", json!({"path": "notes.txt"}))
                .with_usage(tokens, 20);
        }
        Reply::text(prose("answer", reply)).with_usage(tokens, 1_100)
    });
}

/// What a session's journal says about its compactions and its requests.
#[derive(Debug)]
struct Outcome {
    notes: usize,
    refusals: usize,
    /// Requests whose reply records a trim, after the first note.
    trimmed_after_note: usize,
}

fn outcome(h: &Harness) -> Outcome {
    let journal = reload_checked(&session_file(h.home.path()));
    let entries = journal.entries();
    let notes = journal.compactions().filter(|(_, r)| r.path == CompactionPath::Summary).count();
    let refusals = entries
        .iter()
        .filter(
            |e| matches!(&e.payload, Payload::System(s) if s.text.contains("survival contract")),
        )
        .count();
    let first_note = entries.iter().position(|e| matches!(e.payload, Payload::Compaction(_)));
    let trimmed_after_note = first_note.map_or(0, |at| {
        entries[at..]
            .iter()
            .filter(|e| {
                matches!(&e.payload, Payload::Assistant(a)
                    if a.reads.as_ref().is_some_and(|r| r.trimmed_before.is_some()))
            })
            .count()
    });
    Outcome { notes, refusals, trimmed_after_note }
}

/// Seven chat turns with replies of about 1,100 tokens at `--context-window 7000`, the first
/// turn (for the tool-first session) making one `read_file` call.
async fn seven_turns(provider: &str, tool_first: bool) -> (Outcome, Harness) {
    let h = Harness::new().await;
    h.write("notes.txt", &prose("notes", 60));
    let first = "question 0: what do the notes say?";
    model(&h, 7_000, tool_first.then_some(first), 220);
    let mut engine = interactive(&h, provider, 7_000);
    for k in 0..7 {
        let ask = if k == 0 { first.to_owned() } else { format!("question {k}: and then?") };
        let run = engine.turn(&ask).await;
        assert_eq!(run.status, TurnStatus::Completed, "{provider} turn {k}: {:?}", run.events);
        let refused = run.events.iter().any(|e| {
            matches!(e, Event::CompactionFailed { reason } if reason.contains("survival contract"))
        });
        assert!(!refused, "{provider} turn {k}: the contract refused a pass: {:?}", run.events);
    }
    engine.shutdown().await;
    assert_no_orphans(&h);
    (outcome(&h), h)
}

/// The A/B pair: the session whose first message made one tool call compacts like the
/// chat-only one — notes committed, no contract refusal, no request trimmed after the first
/// note — and its read stays verbatim while the discussion is summarized.
#[tokio::test]
async fn a_tool_call_then_a_discussion_compacts_like_a_chat() {
    for provider in PROVIDERS {
        let (chat, _) = seven_turns(provider, false).await;
        let (tool, h) = seven_turns(provider, true).await;
        for (label, o) in [("chat-first", &chat), ("tool-first", &tool)] {
            assert!(o.notes >= 1, "{provider} {label}: no note: {o:?}");
            assert_eq!(o.refusals, 0, "{provider} {label}: {o:?}");
            assert_eq!(o.trimmed_after_note, 0, "{provider} {label}: {o:?}");
        }
        assert!(tool.notes + 1 >= chat.notes, "{provider}: {tool:?} against {chat:?}");
        // The last request still holds the read (call and result), kept before the note, and
        // no longer the first answers of the discussion.
        let last = h.server.requests().len() - 1;
        let sent = request_text(&h, last);
        assert!(sent.contains("read-notes"), "{provider}: the read is kept");
        assert!(sent.contains("Codewhale handoff note"), "{provider}: {sent}");
        assert!(!sent.contains("question 1: and then?"), "{provider}: the discussion is covered");
    }
}

/// One turn of 40 reads, then a discussion: once the discussion is long, its earlier turns are
/// summarized; the last two reads stay verbatim (retained before the note), the older ones are
/// covered. (The loop's turn is larger than the window, so until three turns give a median the
/// first discussion turns may be trimmed rather than pay for a note that leaves no room.)
#[tokio::test]
async fn a_long_discussion_after_a_forty_call_loop_is_compacted() {
    for provider in PROVIDERS {
        let h = Harness::new().await;
        for k in 0..40 {
            h.write(&format!("f{k}.txt"), &format!("file {k}: {}\n", prose("line", 80)));
        }
        let window = 16_000;
        let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        h.server.respond_with(move |r| {
            let tokens = body_tokens(r);
            if tokens > window {
                return Reply::fault(Fault::overflow(window, tokens));
            }
            if is_summary_request(&r.body) {
                return Reply::text(SUMMARY).with_usage(tokens, 300);
            }
            let n = served.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if n < 40 {
                let path = format!("f{n}.txt");
                return Reply::tool_call(format!("read-{n}"), "read_file", json!({ "path": path }))
                    .with_usage(tokens, 20);
            }
            Reply::text(prose(&format!("reply {n}"), 300)).with_usage(tokens, 1_500)
        });
        let mut engine = interactive(&h, provider, window);
        let run = engine.turn("read f0.txt to f39.txt in turn and report").await;
        assert_eq!(run.status, TurnStatus::Completed, "{provider}: {:?}", run.events.last());
        let loop_records = reload_checked(&session_file(h.home.path())).compactions().count();
        for k in 0..8 {
            let run = engine.turn(&format!("discussion {k}: {}", prose("why", 30))).await;
            assert_eq!(run.status, TurnStatus::Completed, "{provider} turn {k}");
            let refused = run.events.iter().any(
                |e| matches!(e, Event::CompactionFailed { reason } if reason.contains("survival")),
            );
            assert!(!refused, "{provider} turn {k}: {:?}", run.events);
        }
        engine.shutdown().await;
        let o = outcome(&h);
        assert_eq!(o.refusals, 0, "{provider}: {o:?}");
        let journal = reload_checked(&session_file(h.home.path()));
        let discussion_notes = journal
            .compactions()
            .skip(loop_records)
            .filter(|(_, r)| r.path == CompactionPath::Summary)
            .count();
        assert!(discussion_notes >= 1, "{provider}: the discussion was never compacted");
        // The discussion's notes keep the last two reads as retained entries.
        let (_, last) = journal.compactions().last().unwrap();
        let retained: Vec<String> = last
            .retained_ids
            .iter()
            .filter_map(|id| journal.get(id.as_str()))
            .filter_map(|e| match &e.payload {
                Payload::ToolResult(r) => Some(r.tool_use_id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(retained, ["read-38", "read-39"], "{provider}");
        let sent = request_text(&h, h.server.requests().len() - 1);
        assert!(sent.contains("read-38") && sent.contains("read-39"), "{provider}");
        assert!(!sent.contains("\"read-0\""), "{provider}: the oldest read is covered");
        assert!(!sent.contains("discussion 0:"), "{provider}: the early discussion is covered");
        assert!(!summary_requests(&h).is_empty());
        assert_no_orphans(&h);
    }
}
