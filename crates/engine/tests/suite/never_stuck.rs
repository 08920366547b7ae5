//! No conversation is ever stuck: each scenario that used to strand a session, in both wire
//! formats, through the mock server. After each: the next turn succeeds, every request fits
//! the window, the journal still holds everything verbatim, no request has an orphaned tool
//! pair.

use codewhale_engine::protocol::{CompactionKind, ErrorKind, Event, TurnStatus};
use codewhale_engine::session::Resume;
use codewhale_engine::Engine;
use codewhale_journal::{
    check_file, AssistantPayload, Block, CompactionPath, CompactionPayload, Covers, Entry,
    HeaderPayload, JournalFile, Payload, ToolResultPayload, Trigger, UserPayload,
};
use codewhale_provider::test_support::Reply;
use serde_json::json;

use super::common::{reload_checked, session_file, Harness, Running};
use super::compaction::{assert_no_orphans, params, prose, summary_requests, SUMMARY};

const PROVIDERS: [&str; 3] = ["openai", "anthropic", "openai-responses"];

/// Every request sent (summary requests included) is within `window` tokens, counted on the
/// whole JSON body (a generous upper bound of what the provider counts).
fn assert_requests_fit(h: &Harness, window: u64) {
    for (n, r) in h.server.requests().iter().enumerate() {
        let tokens = codewhale_engine::tokens::count(&r.body.to_string());
        assert!(u64::from(tokens) <= window, "request {n} has {tokens} tokens > {window}");
    }
}

fn spawn_on(h: &Harness, provider: &str, window: u64, resume: Resume) -> Running {
    let mut p = params(h, provider, window);
    p.resume = resume;
    let (handle, events) = Engine::spawn(p).unwrap();
    Running { handle, events }
}

fn journal_texts(h: &Harness) -> String {
    std::fs::read_to_string(session_file(h.home.path())).unwrap()
}

/// `--context-window 8192` (6,144 usable) and a `read_file` of a 40 KB file on the very first
/// turn: the result alone is past the window. The pass bounds it (nothing can be summarized
/// yet) and every later turn works.
#[tokio::test]
async fn a_first_round_bigger_than_the_window_is_bounded_and_the_session_goes_on() {
    for provider in PROVIDERS {
        let h = Harness::new().await;
        let text: String =
            (0..1_100).map(|i| format!("line {i:04} of the big file, with words\n")).collect();
        assert!(text.len() > 38_000);
        h.write("big.txt", &text);
        let mut engine = spawn_on(&h, provider, 8_192, Resume::New);
        h.server.push(Reply::tool_call("r1", "read_file", json!({"path": "big.txt"})));
        h.server.push(Reply::text("The file lists numbered lines.").with_usage(4_000, 10));
        let run = engine.turn("read big.txt and tell me what it is").await;
        assert_eq!(run.status, TurnStatus::Completed, "{provider}: {:?}", run.events);
        assert!(run
            .events
            .iter()
            .any(|e| matches!(e, Event::CompactionFinished { path, .. } if *path == CompactionKind::PruneOnly)));
        for k in 0..3 {
            h.server.push(Reply::text(format!("answer {k}")).with_usage(4_100, 10));
            let run = engine.turn(&format!("follow-up {k}")).await;
            assert_eq!(run.status, TurnStatus::Completed, "{provider}: {:?}", run.events);
        }
        engine.shutdown().await;
        assert!(summary_requests(&h).is_empty(), "nothing could be summarized");
        assert_requests_fit(&h, 8_192);
        assert_no_orphans(&h);
        let last = h.server.requests().last().unwrap().body.to_string();
        assert!(last.contains("line 0000") && last.contains("bytes cut"), "{provider}");
        let journal = reload_checked(&session_file(h.home.path()));
        let full = journal.entries().iter().any(
            |e| matches!(&e.payload, Payload::ToolResult(r) if r.content.contains("line 0600 of")),
        );
        assert!(full, "{provider}: the journal keeps the whole output");
    }
}

/// A runaway reply interrupted mid-stream leaves a huge `interrupted` assistant entry; the
/// next turn bounds it to a prefix and goes on.
#[tokio::test]
async fn a_huge_interrupted_reply_is_bounded_to_a_prefix() {
    for provider in PROVIDERS {
        let h = Harness::new().await;
        let mut engine = spawn_on(&h, provider, 8_192, Resume::New);
        let runaway = prose("runaway", 24_000);
        // 8-byte text frames: about 100 KB arrive before the connection drops.
        h.server.push(Reply::text(runaway.clone()).drop_after(12_000));
        let run = engine.turn("write a lot").await;
        assert_ne!(run.status, TurnStatus::Completed, "{provider}");
        h.server.push(Reply::text("Stopped; here is the short version.").with_usage(3_000, 10));
        let run = engine.turn("that was too long, summarize instead").await;
        assert_eq!(run.status, TurnStatus::Completed, "{provider}: {:?}", run.events);
        engine.shutdown().await;
        assert_requests_fit(&h, 8_192);
        let last = h.server.requests().last().unwrap().body.to_string();
        assert!(last.contains("runaway: lorem ipsum") && last.contains("bytes cut; recall entry"));
        // What came is kept verbatim, up to the reply bound (4 × the 2,048 output tokens of
        // an 8k window, at four bytes a token).
        assert!(journal_texts(&h).contains(&runaway[..30_000]), "{provider}: kept verbatim");
    }
}

/// A multi-megabyte reply (here 600 KB, 20 times the window) in an ongoing conversation: it is
/// cut at the reply bound (docs/security.md, *Network reads*), what came is kept, and the session
/// goes on.
#[tokio::test]
async fn a_reply_far_larger_than_the_window_does_not_strand_the_session() {
    for provider in PROVIDERS {
        let h = Harness::new().await;
        let mut engine = spawn_on(&h, provider, 8_192, Resume::New);
        for k in 0..3 {
            h.server.push(Reply::text(format!("short answer {k}")).with_usage(1_500, 10));
            engine.turn(&format!("question {k}")).await;
        }
        let huge = prose("huge", 120_000);
        h.server.push(Reply::text(huge.clone()).with_usage(1_600, 150_000));
        let run = engine.turn("dump everything").await;
        let cut = run.events.iter().any(|e| {
            matches!(e, Event::Error { message, .. } if message.contains("the server kept sending"))
        });
        assert!(cut, "{provider}: {:?}", run.events.last());
        h.server.push(Reply::text(SUMMARY));
        h.server.push(Reply::text("done").with_usage(3_000, 5));
        let run = engine.turn("thanks, what next?").await;
        assert_eq!(run.status, TurnStatus::Completed, "{provider}: {:?}", run.events);
        assert!(!run.events.iter().any(|e| matches!(e, Event::CompactionFailed { .. })));
        h.server.push(Reply::text("ok").with_usage(3_100, 5));
        assert_eq!(engine.turn("and then?").await.status, TurnStatus::Completed);
        engine.shutdown().await;
        assert_requests_fit(&h, 8_192);
        assert_no_orphans(&h);
        let journal = journal_texts(&h);
        assert!(journal.contains(&huge[..30_000]), "{provider}: what came is kept verbatim");
        assert!(!journal.contains(&huge[..40_000]), "{provider}: nothing past the bound");
    }
}

/// A journal with an unanswered call three turns back (not at the end): the next turn repairs
/// it at HEAD, the request pairs it, and `journal check` accepts the file.
#[tokio::test]
async fn an_unanswered_call_in_the_middle_of_the_chain_is_repaired() {
    for provider in PROVIDERS {
        let h = Harness::new().await;
        let path = prepared_session(&h, |f| {
            f.append_user("one");
            f.append_call("lost-call");
            f.append_user("two");
            f.append_text("answer two");
            f.append_user("three");
            f.append_text("answer three");
        });
        let mut engine = spawn_on(&h, provider, 50_000, Resume::Last);
        h.server.push(Reply::text("continuing").with_usage(1_000, 5));
        let run = engine.turn("four").await;
        assert_eq!(run.status, TurnStatus::Completed, "{provider}: {:?}", run.events);
        engine.shutdown().await;
        assert_no_orphans(&h);
        let body = h.server.requests()[0].body.to_string();
        assert!(body.contains("lost-call") && body.contains("no result: the call was interrupted"));
        let journal = reload_checked(&path);
        let repairs: Vec<&ToolResultPayload> = journal
            .entries()
            .iter()
            .filter_map(|e| match &e.payload {
                Payload::ToolResult(r) if r.repairs => Some(r),
                _ => None,
            })
            .collect();
        assert_eq!(repairs.len(), 1, "{provider}");
        assert_eq!(repairs[0].tool_use_id, "lost-call");
        let report = check_file(&path).unwrap();
        assert!(report.problems.is_empty(), "{provider}: {:?}", report.problems);
    }
}

/// The same call inside a compacted segment: it is covered, nothing needs repairing, and the
/// request carries neither the call nor a result for it.
#[tokio::test]
async fn an_unanswered_call_inside_a_compacted_segment_stays_covered() {
    for provider in PROVIDERS {
        let h = Harness::new().await;
        prepared_session(&h, |f| {
            let first = f.append_user("one");
            f.append_call("lost-call");
            f.append_user("two");
            let last = f.append_text("answer two");
            let mut record = CompactionPayload::new(CompactionPath::Summary, Trigger::Manual);
            record.summary = Some("## Objective\nCount to four.".into());
            record.covers = Some(Covers::new(first, last, 4));
            let root = f.file.journal().header_entry().id.clone();
            f.file.append(Entry::new(Some(root), record)).unwrap();
            f.append_user("three");
            f.append_text("answer three");
        });
        let mut engine = spawn_on(&h, provider, 50_000, Resume::Last);
        h.server.push(Reply::text("continuing").with_usage(1_000, 5));
        let run = engine.turn("four").await;
        assert_eq!(run.status, TurnStatus::Completed, "{provider}: {:?}", run.events);
        engine.shutdown().await;
        assert_no_orphans(&h);
        let body = h.server.requests()[0].body.to_string();
        assert!(!body.contains("lost-call") && body.contains("Count to four."));
    }
}

/// A record written by another tool to docs/journal-format.md, *`compaction`* with
/// `receipt.assistant_kept` as a boolean still describes the view: the next turn does not start
/// over with an uncompacted session.
#[tokio::test]
async fn a_foreign_record_with_a_boolean_counter_stays_active() {
    for provider in PROVIDERS {
        let h = Harness::new().await;
        let path = prepared_session(&h, |f| {
            let first = f.append_user(&prose("old question", 2_000));
            let last = f.append_text(&prose("old answer", 2_000));
            let root = f.file.journal().header_entry().id.clone();
            let line = json!({"v": 1, "id": "0192f000-0000-7000-8000-00000000c0de",
                "parent": root.as_str(), "kind": "compaction", "ts": "2026-11-29T18:00:13.091Z",
                "payload": {"summary": "## Objective\nShip the parser.", "covers":
                {"first": first.as_str(), "last": last.as_str(), "count": 2}, "retained_ids": [],
                "pruned_ids": [], "bounded": [], "files_touched": [], "anchors": null,
                "trigger": "auto", "focus": null, "path": "summary", "previous_id": null,
                "model": "other", "tokens_before": 20000, "tokens_after": 300,
                "receipt": {"last_round_messages": 2, "last_round_tool_results": 0,
                "assistant_kept": true, "anchors_chars": 0, "retained_user_tokens": 0}}});
            f.raw_lines.push(line.to_string());
        });
        let mut engine = spawn_on(&h, provider, 8_192, Resume::Last);
        h.server.push(Reply::text("next").with_usage(900, 5));
        let run = engine.turn("go on").await;
        assert_eq!(run.status, TurnStatus::Completed, "{provider}: {:?}", run.events);
        assert!(!run.events.iter().any(|e| matches!(e, Event::CompactionStarted { .. })));
        engine.shutdown().await;
        let body = h.server.requests()[0].body.to_string();
        assert!(body.contains("Ship the parser.") && !body.contains("old answer"));
        let report = check_file(&path).unwrap();
        assert!(report.problems.is_empty() && report.warnings.len() == 1, "{report:?}");
    }
}

/// A model that cannot write the ten headings: after the stricter retry fails, auto passes back
/// off (said once), and the turns go on with trimmed requests recorded in `reads`.
#[tokio::test]
async fn a_model_that_cannot_summarize_still_gets_a_working_session() {
    for provider in PROVIDERS {
        let h = Harness::new().await;
        let mut engine = spawn_on(&h, provider, 8_192, Resume::New);
        let mut backoff_notices = 0;
        for k in 0..10 {
            // Whatever is asked, the model answers with the same junk: for a summary request
            // that is an unusable summary, for a turn a long answer.
            for _ in 0..3 {
                h.server.push(Reply::text(prose(&format!("junk {k}"), 300)));
            }
            let run = engine.turn(&prose(&format!("question {k}"), 150)).await;
            assert_eq!(run.status, TurnStatus::Completed, "{provider} turn {k}: {:?}", run.events);
            backoff_notices += run
                .events
                .iter()
                .filter(|e| matches!(e, Event::Notice { message, .. } if message.contains("could not write a usable summary")))
                .count();
        }
        engine.shutdown().await;
        assert_eq!(backoff_notices, 1, "{provider}: the backoff is announced once");
        let summaries = summary_requests(&h).len();
        assert!(summaries <= 6, "{provider}: {summaries} summary requests in 10 turns");
        assert_requests_fit(&h, 8_192);
        assert_no_orphans(&h);
        let journal = reload_checked(&session_file(h.home.path()));
        let trimmed = journal
            .entries()
            .iter()
            .filter(|e| {
                matches!(&e.payload,
            Payload::Assistant(a) if a.reads.as_ref().is_some_and(|r| r.trimmed_before.is_some()))
            })
            .count();
        assert!(trimmed > 0, "{provider}: over-full requests were failed open and recorded");
    }
}

/// `/compact` on a conversation with nothing to shrink is information, not a failure.
#[tokio::test]
async fn a_manual_pass_with_nothing_to_shrink_says_so() {
    let h = Harness::new().await;
    let mut engine = spawn_on(&h, "openai", 50_000, Resume::New);
    h.server.push(Reply::text("hi"));
    engine.turn("hello").await;
    let event = super::compaction::compact(&mut engine, None).await;
    let Event::CompactionRefused { reason } = event else { panic!("{event:?}") };
    assert!(reason.contains("at least 4"), "{reason}");
    engine.shutdown().await;
}

/// A message the last run journaled and never got a reply to (the process was killed) is set
/// aside when the session is opened again — a `head` record of reason `unanswered` — and
/// offered back; the next prompt is sent on its own, and nothing is set aside twice.
#[tokio::test]
async fn an_unanswered_last_message_is_set_aside_on_open_and_never_merged() {
    let h = Harness::new().await;
    let path = prepared_session(&h, |f| {
        f.append_user("one");
        f.append_text("answer one");
        f.append_user("long reply please");
    });
    let mut engine = spawn_on(&h, "openai", 50_000, Resume::Last);
    let opened = engine.until(|e| matches!(e, Event::Usage { .. })).await;
    assert!(
        opened.contains(&Event::MessageTakenBack { text: "long reply please".into() }),
        "{opened:?}"
    );
    h.server.push(Reply::text("sure").with_usage(1_000, 5));
    let run = engine.turn("branch message").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    engine.shutdown().await;
    let sent = h.server.requests()[0].body["messages"].to_string();
    assert!(sent.contains("branch message") && !sent.contains("long reply please"), "{sent}");
    assert!(sent.contains("answer one"), "the conversation before it is kept: {sent}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches("\"reason\":\"unanswered\"").count(), 1, "one head record");
    assert!(check_file(&path).unwrap().problems.is_empty());

    let mut engine = spawn_on(&h, "openai", 50_000, Resume::Last);
    let opened = engine.until(|e| matches!(e, Event::Usage { .. })).await;
    assert!(!opened.iter().any(|e| matches!(e, Event::MessageTakenBack { .. })), "{opened:?}");
    engine.shutdown().await;
}

/// Builds a session file in the harness home whose header names the harness workspace.
struct Prepared {
    file: JournalFile,
    raw_lines: Vec<String>,
}

impl Prepared {
    fn on_head(&mut self, payload: impl Into<Payload>) -> codewhale_journal::EntryId {
        let head = self.file.journal().head_id().clone();
        let entry = Entry::new(Some(head), payload).with_tokens(20);
        let id = entry.id.clone();
        self.file.append(entry).unwrap();
        id
    }
    fn append_user(&mut self, text: &str) -> codewhale_journal::EntryId {
        self.on_head(UserPayload::text(text))
    }
    /// An entry written before its count was known (no `tokens` in the line).
    fn append_uncounted(&mut self, payload: impl Into<Payload>) {
        let head = self.file.journal().head_id().clone();
        self.file.append(Entry::new(Some(head), payload)).unwrap();
    }
    fn append_text(&mut self, text: &str) -> codewhale_journal::EntryId {
        self.on_head(AssistantPayload::new(vec![Block::text(text)]))
    }
    fn append_call(&mut self, id: &str) -> codewhale_journal::EntryId {
        self.on_head(AssistantPayload::new(vec![Block::tool_use(
            id,
            "list_dir",
            json!({"path": "."}),
        )]))
    }
}

fn prepared_session(h: &Harness, build: impl FnOnce(&mut Prepared)) -> std::path::PathBuf {
    let dir = h.home.path().join("sessions");
    let id = uuid_like();
    let header = HeaderPayload::new(id, h.workspace().display().to_string());
    let file = JournalFile::create_session(&dir, header).unwrap();
    let mut prepared = Prepared { file, raw_lines: Vec::new() };
    build(&mut prepared);
    let path = prepared.file.path().to_owned();
    prepared.file.close().unwrap();
    if !prepared.raw_lines.is_empty() {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        for line in &prepared.raw_lines {
            writeln!(f, "{line}").unwrap();
        }
    }
    path
}

fn uuid_like() -> String {
    codewhale_journal::EntryId::new().to_string()
}

/// When even the bounded minimum cannot fit — here pinned anchors larger than the window — the
/// turn stops with one message that names the part that is too big and a command that exists
/// where it is shown.
#[tokio::test]
async fn anchors_larger_than_the_window_stop_the_turn_with_a_precise_message() {
    let h = Harness::new().await;
    let mut engine = spawn_on(&h, "openai", 8_192, Resume::New);
    let pinned = prose("never forget", 2_000);
    engine.submit(codewhale_engine::protocol::Op::AddAnchor { text: pinned });
    engine.until(|e| matches!(e, Event::AnchorChanged { .. } | Event::Error { .. })).await;
    let run = engine.turn("hello").await;
    assert_eq!(run.status, TurnStatus::Failed);
    let message = run
        .events
        .iter()
        .find_map(|e| match e {
            Event::Error { kind, message } if *kind == ErrorKind::ContextFull => {
                Some(message.clone())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("{:?}", run.events));
    assert!(message.contains("the pinned anchors need about"), "{message}");
    assert!(message.contains("`codewhale anchor rm N`"), "{message}");
    assert!(h.server.requests().is_empty(), "nothing too big is ever sent");
    engine.shutdown().await;
}

/// Entries written before the tokenizer was ready carry no count; the session counts them in
/// memory. A bounded item must be counted as shown, not by its entry's remembered count, or the
/// pass would see no shrink and fail.
#[tokio::test]
async fn bounding_entries_counted_in_memory_still_shrinks_the_view() {
    let h = Harness::new().await;
    prepared_session(&h, |f| {
        f.append_uncounted(UserPayload::text(prose("paste", 2_000)));
        f.append_uncounted(AssistantPayload::new(vec![Block::text(prose("long reply", 1_500))]));
    });
    let mut engine = spawn_on(&h, "openai", 8_192, Resume::Last);
    h.server.push(Reply::text("short").with_usage(3_000, 5));
    let run = engine.turn("and now?").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events);
    assert!(
        run.events.iter().any(|e| matches!(e, Event::CompactionFinished { .. })),
        "{:?}",
        run.events
    );
    engine.shutdown().await;
    assert_requests_fit(&h, 8_192);
}

/// The backoff after failed summaries is journaled: one engine per turn (as `codewhale exec
/// --last` runs) still does not retry the summary every turn, and says so once.
#[tokio::test]
async fn the_backoff_holds_across_processes() {
    let h = Harness::new().await;
    let mut notices = 0;
    for k in 0..8 {
        let resume = if k == 0 { Resume::New } else { Resume::Last };
        let mut engine = spawn_on(&h, "openai", 8_192, resume);
        for _ in 0..3 {
            h.server.push(Reply::text(prose(&format!("junk {k}"), 300)));
        }
        let run = engine.turn(&prose(&format!("question {k}"), 150)).await;
        assert_eq!(run.status, TurnStatus::Completed, "turn {k}: {:?}", run.events);
        notices += run
            .events
            .iter()
            .filter(|e| matches!(e, Event::Notice { message, .. } if message.contains("could not write a usable summary")))
            .count();
        engine.shutdown().await;
    }
    assert_eq!(notices, 1);
    let summaries = summary_requests(&h).len();
    assert!(summaries <= 4, "{summaries} summary requests in 8 turns");
}

/// A long session that was never compacted (20,000 entries, about 400,000 tokens, four times a
/// 100k window): one manual pass sends at most `compaction.max_summary_requests` (2) summary
/// requests whatever the size, the newest part read by the model and the older part covered by
/// the extract (kept for recall), and the next turn fits.
#[tokio::test]
async fn a_pass_over_a_long_uncompacted_session_has_a_bounded_cost() {
    let h = Harness::new().await;
    prepared_session(&h, |f| {
        for k in 0..10_000 {
            f.append_user(&format!("question {k}: what does module {k} of the parser do?"));
            f.append_text(&format!("answer {k}: module {k} splits tokens and keeps their spans."));
        }
    });
    let mut engine = spawn_on(&h, "openai", 100_000, Resume::Last);
    h.server.respond_with(|r| {
        if super::compaction::is_summary_request(&r.body) {
            Reply::text(SUMMARY).with_usage(60_000, 200)
        } else {
            Reply::text("next").with_usage(20_000, 5)
        }
    });
    let (done, steps) = super::compaction::compact_with_events(&mut engine, None).await;
    let Event::CompactionFinished { note, .. } = &done else { panic!("{done:?}") };
    assert!(note.contains("Not read for this note: the oldest"), "{note}");
    assert!(note.contains("The user's messages there, newest first"), "{note}");
    let said = steps.iter().any(
        |e| matches!(e, Event::Notice { message, .. } if message.contains("are kept for recall")),
    );
    assert!(said, "{steps:?}");
    assert!(summary_requests(&h).len() <= 2, "{} summary requests", summary_requests(&h).len());
    let run = engine.turn("go on").await;
    assert_eq!(run.status, TurnStatus::Completed, "{:?}", run.events.last());
    engine.shutdown().await;
    assert_requests_fit(&h, 100_000);
}
