//! Background compaction (docs/compaction.md, *Background compaction*) end to end: the note is
//! written while turns go on, committed at the threshold only as a record a foreground pass would
//! accept, and discarded without a trace when the conversation moves under it.

use std::time::Duration;

use codewhale_engine::compaction::checkpoint::is_checkpoint;
use codewhale_engine::compaction::message::Role;
use codewhale_engine::compaction::plain::PlainView;
use codewhale_engine::compaction::round;
use codewhale_engine::compaction::survival::{self, SurvivalInput};
use codewhale_engine::protocol::{BackgroundState, CompactionTrigger, Event, Op};
use codewhale_engine::{Engine, FrontEnd};
use codewhale_journal::{check_view, load_read_only, render, render_with_record, Entry, Payload};
use codewhale_provider::test_support::Reply;

use super::common::{reload_checked, session_file, Harness, Running, TurnRun};
use super::compaction::{
    assert_no_orphans, compactions, is_summary_request, params, prose, summary_requests, SUMMARY,
};

/// W = 20,000: U = 15,000, threshold 12,000, early mark 9,000; a turn adds about 1,500 tokens.
const WINDOW: u64 = 20_000;

/// An interactive engine (background passes span turns there) whose mock model answers every
/// request from what it is sent: summary requests with [`SUMMARY`] after `summary_delay`,
/// everything else with 1,500 tokens of prose, reporting the request's size as its usage.
fn spawn_bg(h: &Harness, provider: &str, summary_delay: Duration) -> Running {
    h.server.respond_with(move |request| {
        let body = request.body.to_string();
        let tokens = u64::from(codewhale_engine::tokens::count(&body));
        if is_summary_request(&request.body) {
            return Reply::text(SUMMARY).with_usage(tokens, 300).after(summary_delay);
        }
        Reply::text(prose("answer", 300)).with_usage(tokens, 1_500)
    });
    let mut params = params(h, provider, WINDOW);
    params.front_end = FrontEnd::Tui;
    let (handle, events) = Engine::spawn(params).unwrap();
    Running { handle, events }
}

fn note_states(run: &TurnRun) -> Vec<Option<BackgroundState>> {
    run.events
        .iter()
        .filter_map(|e| match e {
            Event::BackgroundNote { state } => Some(*state),
            _ => None,
        })
        .collect()
}

/// Runs turns until the background note has started; returns how many turns that took.
async fn until_writing(engine: &mut Running) -> usize {
    for k in 0..12 {
        let run = engine.turn(&format!("question {k}")).await;
        if note_states(&run).contains(&Some(BackgroundState::Writing)) {
            return k + 1;
        }
    }
    panic!("no background note started within 12 turns");
}

/// Waits until the mock provider has received the background summary request: woken by each
/// request the server records, failing the test after 20 s without one.
async fn wait_for_summary_request(h: &Harness) {
    let arrived = async {
        loop {
            // Counted before the look: a request that lands in between ends the wait at once.
            let seen = h.server.requests().len();
            if !summary_requests(h).is_empty() {
                return;
            }
            h.server.wait_for_requests(seen + 1).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), arrived)
        .await
        .expect("the background summary request never arrived");
}

/// The view just before the record was appended and the view it made, from the file alone.
fn views_around_record(h: &Harness) -> (PlainView, PlainView, Entry) {
    let path = session_file(h.home.path());
    let text = std::fs::read_to_string(&path).unwrap();
    let at = text.lines().position(|l| l.contains("\"kind\":\"compaction\"")).unwrap();
    let record: Entry = serde_json::from_str(text.lines().nth(at).unwrap()).unwrap();
    let before: String = text.lines().take(at).map(|l| format!("{l}\n")).collect();
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join(path.file_name().unwrap());
    std::fs::write(&cut, before).unwrap();
    let journal = load_read_only(&cut).unwrap().journal;
    let head = journal.head_id().clone();
    let old = render(&journal, head.as_str());
    let new = render_with_record(&journal, head.as_str(), &record);
    check_view(&new).unwrap();
    (
        codewhale_engine::compaction::plain::of(&old, |_| None),
        codewhale_engine::compaction::plain::of(&new, |_| None),
        record,
    )
}

async fn committed_in_the_background(provider: &str) {
    let h = Harness::new().await;
    let mut engine = spawn_bg(&h, provider, Duration::ZERO);
    let started = until_writing(&mut engine).await;
    wait_for_summary_request(&h).await;
    let summaries_before = summary_requests(&h).len();
    assert_eq!(summaries_before, 1, "one background request");
    let mut committed = None;
    for k in started..started + 8 {
        let run = engine.turn(&format!("question {k}")).await;
        let finished = run.events.iter().find_map(|e| match e {
            Event::CompactionFinished { trigger, background, .. } => Some((*trigger, *background)),
            _ => None,
        });
        if let Some(found) = finished {
            committed = Some(found);
            break;
        }
    }
    assert_eq!(committed, Some((CompactionTrigger::Auto, true)), "committed as background");
    // The crossing turn sent no summary request of its own: the note was already there.
    assert_eq!(summary_requests(&h).len(), summaries_before, "no second summary request");
    engine.shutdown().await;

    let records = compactions(&h);
    assert_eq!(records.len(), 1);
    assert!(records[0].background);
    let journal = reload_checked(&session_file(h.home.path()));
    let line = std::fs::read_to_string(session_file(h.home.path())).unwrap();
    assert!(line.contains("\"background\":true"), "the record says so on disk");
    let view = render(&journal, journal.head_id().as_str());
    let checkpoints =
        view.items.iter().filter(|i| i.kind == codewhale_journal::ItemKind::Checkpoint).count();
    assert_eq!(checkpoints, 1, "exactly one checkpoint");
    // What a foreground pass would have accepted: the contract holds on the view it replaced,
    // and the view is below the threshold.
    let (old, new, record) = views_around_record(&h);
    let violations = survival::check(&SurvivalInput {
        original: &old.messages,
        replacement: &new.messages,
        last_round_start: None,
        tail: None,
        anchors: &[],
        branch_summaries: &[],
        require_checkpoint: true,
        plan_steps: &[],
    });
    assert!(violations.is_empty(), "{violations:?}");
    let Payload::Compaction(r) = &record.payload else { panic!("not a record") };
    assert!(r.tokens_after.unwrap() < 12_000, "{:?}", r.tokens_after);
    assert!(r.tokens_after < r.tokens_before);
    // The receipt describes the view the record replaced, not the snapshot turns earlier.
    let receipt = r.receipt.as_ref().unwrap();
    let round_start = round::last_round(&old.messages, None).unwrap().start;
    assert_eq!(receipt.last_round_messages, (old.messages.len() - round_start) as u64);
    let checkpoint = new.messages.iter().position(is_checkpoint).unwrap();
    let kept = new.messages[checkpoint..].iter().filter(|m| m.role == Role::Assistant).count();
    assert_eq!(receipt.assistant_kept, kept as u64, "{receipt:?}");
    assert_no_orphans(&h);
}

#[tokio::test]
async fn a_background_note_is_committed_at_the_threshold_openai() {
    committed_in_the_background("openai").await;
}

#[tokio::test]
async fn a_background_note_is_committed_at_the_threshold_anthropic() {
    committed_in_the_background("anthropic").await;
}

/// Starts a slow background note, does `what`, and checks the note left no trace, in both
/// wire formats.
async fn discarded_after(what: &str) {
    for provider in ["openai", "anthropic"] {
        discarded_after_on(what, provider).await;
    }
}

async fn discarded_after_on(what: &str, provider: &str) {
    let h = Harness::new().await;
    h.no_branch_summaries();
    let mut engine = spawn_bg(&h, provider, Duration::from_secs(5));
    until_writing(&mut engine).await;
    wait_for_summary_request(&h).await;
    let op = match what {
        "checkout" => {
            let journal = load_read_only(&session_file(h.home.path())).unwrap().journal;
            let first_user = super::common::spine(&journal)
                .into_iter()
                .find(|e| matches!(e.payload, Payload::User(_)))
                .unwrap()
                .id
                .to_string();
            Op::Checkout { to: first_user }
        }
        "model" if provider == "anthropic" => Op::SwitchModel { model: "claude-haiku-4-5".into() },
        "model" => Op::SwitchModel { model: "gpt-4.1-mini".into() },
        _ => Op::Compact { focus: None },
    };
    engine.submit(op);
    engine.until(|e| matches!(e, Event::BackgroundNote { state: None })).await;
    // The abandoned request is really gone, not left to finish unseen.
    tokio::time::timeout(Duration::from_secs(10), h.server.wait_for_disconnects(1))
        .await
        .expect("the background request was not cancelled");
    if what == "compact" {
        let done = engine
            .until(|e| {
                matches!(e, Event::CompactionFinished { .. } | Event::CompactionFailed { .. })
            })
            .await;
        let last = done.last().unwrap();
        assert!(matches!(last, Event::CompactionFinished { background: false, .. }), "{last:?}");
    }
    engine.shutdown().await;
    let records = compactions(&h);
    assert!(records.iter().all(|r| !r.background), "no background record: {records:?}");
    assert_eq!(records.len(), usize::from(what == "compact"));
    let text = std::fs::read_to_string(session_file(h.home.path())).unwrap();
    assert!(!text.contains("in the background) failed"), "a cancel is not a failure");
    reload_checked(&session_file(h.home.path()));
    assert_no_orphans(&h);
}

#[tokio::test]
async fn a_head_move_discards_the_background_note() {
    discarded_after("checkout").await;
}

#[tokio::test]
async fn a_model_switch_discards_the_background_note() {
    discarded_after("model").await;
}

#[tokio::test]
async fn compact_discards_the_background_note_and_runs_its_own_pass() {
    discarded_after("compact").await;
}

#[tokio::test]
async fn the_context_report_shows_the_background_note() {
    let h = Harness::new().await;
    let mut engine = spawn_bg(&h, "openai", Duration::from_secs(5));
    until_writing(&mut engine).await;
    engine.submit(Op::GetContext);
    let events = engine.until(|e| matches!(e, Event::ContextReport { .. })).await;
    let Some(Event::ContextReport { report }) = events.last() else { unreachable!() };
    let json = serde_json::to_value(report).unwrap();
    assert_eq!(json["background"], serde_json::json!({"state": "writing"}));
    engine.shutdown().await;
    assert!(compactions(&h).is_empty(), "closing cancels the note; nothing is written");
}

#[tokio::test]
async fn with_background_off_the_crossing_turn_writes_the_note_itself() {
    let h = Harness::new().await;
    std::fs::write(h.home.path().join("config.toml"), "[compaction]\nbackground = false\n")
        .unwrap();
    let mut engine = spawn_bg(&h, "openai", Duration::ZERO);
    let mut crossing = None;
    for k in 0..14 {
        let run = engine.turn(&format!("question {k}")).await;
        assert!(note_states(&run).is_empty(), "no background note when it is off");
        if run.events.iter().any(|e| matches!(e, Event::CompactionFinished { .. })) {
            crossing = Some(run);
            break;
        }
    }
    let run = crossing.expect("no compaction within 14 turns");
    assert!(run
        .events
        .iter()
        .any(|e| matches!(e, Event::CompactionFinished { background: false, .. })));
    engine.shutdown().await;
    assert_eq!(summary_requests(&h).len(), 1);
    assert!(!compactions(&h)[0].background);
}

#[tokio::test]
async fn a_failed_background_note_is_journaled_and_backs_off() {
    let h = Harness::new().await;
    h.server.respond_with(move |request| {
        let body = request.body.to_string();
        let tokens = u64::from(codewhale_engine::tokens::count(&body));
        if is_summary_request(&request.body) {
            return Reply::text("No summary available.").with_usage(tokens, 5);
        }
        Reply::text(prose("answer", 300)).with_usage(tokens, 1_500)
    });
    let mut p = params(&h, "openai", WINDOW);
    p.front_end = FrontEnd::Tui;
    let (handle, events) = Engine::spawn(p).unwrap();
    let mut engine = Running { handle, events };
    until_writing(&mut engine).await;
    // The unusable note (asked twice: the strict retry) is settled at the next request.
    let mut journaled = false;
    for k in 0..3 {
        engine.turn(&format!("more {k}")).await;
        let text = std::fs::read_to_string(session_file(h.home.path())).unwrap();
        if text.contains("compaction (auto, in the background) failed") {
            journaled = true;
            break;
        }
    }
    assert!(journaled, "the failure is journaled");
    engine.shutdown().await;
    let journal = reload_checked(&session_file(h.home.path()));
    let failures = journal
        .entries()
        .iter()
        .filter(|e| matches!(&e.payload, Payload::System(s) if s.summary_failed))
        .count();
    assert_eq!(failures, 1, "journaled as a summary failure, so the backoff holds on reopen");
    assert!(compactions(&h).is_empty());
    assert_no_orphans(&h);
}

#[tokio::test]
async fn a_note_whose_view_is_still_too_big_is_folded_into_a_foreground_pass() {
    let h = Harness::new().await;
    h.server.respond_with(move |request| {
        let body = request.body.to_string();
        let tokens = u64::from(codewhale_engine::tokens::count(&body));
        if is_summary_request(&request.body) {
            return Reply::text(SUMMARY).with_usage(tokens, 300);
        }
        let last = request.body["messages"].as_array().and_then(|m| m.last()).cloned();
        if last.is_some_and(|m| m.to_string().contains("a long answer")) {
            // About 10,000 tokens in one reply: the view after the background note is over the
            // threshold on its own.
            return Reply::text(prose("long", 2_000)).with_usage(tokens, 10_000);
        }
        Reply::text(prose("answer", 300)).with_usage(tokens, 1_500)
    });
    let mut p = params(&h, "openai", WINDOW);
    p.front_end = FrontEnd::Tui;
    let (handle, events) = Engine::spawn(p).unwrap();
    let mut engine = Running { handle, events };
    until_writing(&mut engine).await;
    wait_for_summary_request(&h).await;
    engine.turn("now a long answer please").await;
    let run = engine.turn("and the next step").await;
    let finished = run.events.iter().find_map(|e| match e {
        Event::CompactionFinished { background, .. } => Some(*background),
        _ => None,
    });
    assert_eq!(finished, Some(false), "a foreground pass wrote the record: {:?}", run.events);
    engine.shutdown().await;

    let requests = summary_requests(&h);
    assert_eq!(requests.len(), 2, "the background note, then the pass that folded it in");
    let folded = h.server.requests()[requests[1]].body.to_string();
    assert!(folded.contains("Codewhale handoff note"), "the background note is its previous note");
    assert!(folded.contains("Keep the parser tests green."));
    let records = compactions(&h);
    assert_eq!(records.len(), 1, "the background record itself is never written");
    let record = &records[0];
    assert!(!record.background);
    assert_eq!(record.previous_id, None, "it names no record that was never written");
    let journal = reload_checked(&session_file(h.home.path()));
    let first_user = super::common::spine(&journal)
        .into_iter()
        .find(|e| matches!(e.payload, Payload::User(_)))
        .unwrap()
        .id
        .clone();
    assert_eq!(record.covers.as_ref().unwrap().first, first_user, "one segment from the start");
    let (old, new, _) = views_around_record(&h);
    let violations = survival::check(&SurvivalInput {
        original: &old.messages,
        replacement: &new.messages,
        last_round_start: None,
        tail: None,
        anchors: &[],
        branch_summaries: &[],
        require_checkpoint: true,
        plan_steps: &[],
    });
    assert!(violations.is_empty(), "{violations:?}");
    assert_no_orphans(&h);
}

/// In a process that lives for one turn (`exec --last` after `exec --last`), a note started in
/// the tool loop and still being written when the turn ends is waited for and committed as the
/// process closes: the next process never sends the same summary request again.
#[tokio::test]
async fn a_one_turn_process_commits_the_note_it_started_before_it_exits() {
    let h = Harness::new().await;
    h.write("notes.txt", &prose("notes", 200));
    h.server.respond_with(move |request| {
        let body = request.body.to_string();
        let tokens = u64::from(codewhale_engine::tokens::count(&body));
        if is_summary_request(&request.body) {
            let slow = Duration::from_millis(400);
            return Reply::text(SUMMARY).with_usage(tokens, 300).after(slow);
        }
        let last = request.body["messages"].as_array().and_then(|m| m.last()).cloned();
        if last.is_some_and(|m| m["role"] == "tool") {
            return Reply::text(prose("answer", 150)).with_usage(tokens, 800);
        }
        let id = format!("read-{}", body.len());
        Reply::tool_call(id, "read_file", serde_json::json!({"path": "notes.txt"}))
            .with_usage(tokens, 20)
    });
    let mut background = 0;
    for k in 0..14 {
        let mut p = params(&h, "openai", WINDOW);
        if k > 0 {
            p.resume = codewhale_engine::session::Resume::Last;
        }
        let mut engine: Running = Engine::spawn(p).unwrap().into();
        let run = engine.turn(&prose(&format!("question {k}"), 150)).await;
        assert!(run.events.iter().any(|e| matches!(e, Event::TurnFinished { .. })));
        engine.shutdown().await;
        background = compactions(&h).iter().filter(|r| r.background).count();
    }
    let notes = compactions(&h).iter().filter(|r| r.summary.is_some()).count();
    let requests = summary_requests(&h).len();
    assert!(background >= 1, "no note was written in the background: {notes} notes");
    assert!(requests <= notes + 1, "{requests} summary requests for {notes} notes");
    assert_no_orphans(&h);
}

/// A `PreCompact` hook runs when a background pass would start, and its exit 2 skips the pass:
/// no summary request is sent, and the skip is journaled as a failed pass (the backoff).
#[tokio::test]
async fn a_pre_compact_hook_skips_a_background_pass_as_a_failed_one() {
    let h = Harness::new().await;
    let log = h.workspace().join("precompact.jsonl");
    h.config(&format!(
        "[[hooks.PreCompact]]\ncommand = \"cat >> '{0}'; echo >> '{0}'; echo 'not in the background' >&2; exit 2\"\n",
        log.display()
    ));
    let mut engine = spawn_bg(&h, "openai", Duration::ZERO);
    let mut started = false;
    for k in 0..12 {
        let run = engine.turn(&format!("question {k}")).await;
        started |= note_states(&run).contains(&Some(BackgroundState::Writing));
        if log.exists() {
            break;
        }
    }
    engine.shutdown().await;
    let text = std::fs::read_to_string(&log).expect("the hook ran");
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        (first["hook_event_name"].as_str(), first["trigger"].as_str()),
        (Some("PreCompact"), Some("auto"))
    );
    assert!(!started, "no background note was written");
    assert!(summary_requests(&h).is_empty(), "no summary request was sent");
    let journal = reload_checked(&session_file(h.home.path()));
    let skipped = journal.entries().iter().any(|e| {
        matches!(&e.payload, Payload::System(s)
            if s.summary_failed
                && s.text.starts_with("compaction (auto, in the background) failed")
                && s.text.contains("not in the background"))
    });
    assert!(skipped, "journaled as a failed pass");
    assert!(compactions(&h).is_empty());
}
