//! Idle compaction (docs/compaction.md, *Idle compaction*) end to end: a session left idle above
//! the early mark gets its note committed (trigger `idle`) while the provider's cache is warm;
//! typing holds it back; a process that lives for one turn never does it.

use std::time::Duration;

use codewhale_engine::protocol::{BackgroundState, CompactionTrigger, Event, Op};
use codewhale_engine::{Engine, FrontEnd};
use codewhale_journal::Trigger;
use codewhale_provider::test_support::Reply;

use super::common::{Harness, Running};
use super::compaction::{
    assert_no_orphans, compactions, is_summary_request, params, prose, SUMMARY,
};

/// W = 20,000: U = 15,000, threshold 12,000, early mark 9,000; a turn adds about 3,000 tokens.
const WINDOW: u64 = 20_000;

fn spawn(h: &Harness, front_end: FrontEnd) -> Running {
    h.server.respond_with(move |request| {
        let tokens = u64::from(codewhale_engine::tokens::count(&request.body.to_string()));
        if is_summary_request(&request.body) {
            return Reply::text(SUMMARY).with_usage(tokens, 300);
        }
        Reply::text(prose("answer", 250)).with_usage(tokens, 1_500)
    });
    let mut params = params(h, "openai", WINDOW);
    params.front_end = front_end;
    Engine::spawn(params).unwrap().into()
}

/// Turns until pressure is past the early mark (and below the threshold); the last turn's
/// events.
async fn past_the_early_mark(engine: &mut Running) -> Vec<Event> {
    for k in 0..8 {
        let run = engine.turn(&prose(&format!("question {k}"), 250)).await;
        let pressure = run.events.iter().rev().find_map(|e| match e {
            Event::Usage { pressure, .. } => Some(pressure.tokens),
            _ => None,
        });
        if pressure.is_some_and(|p| p >= 9_000) {
            return run.events;
        }
    }
    panic!("the conversation never reached the early mark");
}

/// Events until an idle compaction finishes, or `None` after `within`.
async fn idle_compaction(engine: &mut Running, within: Duration) -> Option<Vec<Event>> {
    let done =
        |e: &Event| matches!(e, Event::CompactionFinished { trigger: CompactionTrigger::Idle, .. });
    tokio::time::timeout(within, engine.until(done)).await.ok()
}

#[tokio::test]
async fn an_idle_session_past_the_early_mark_gets_its_note_while_the_cache_is_warm() {
    let h = Harness::new().await;
    h.config("[compaction]\nidle_after_sec = 0.5\n");
    let mut engine = spawn(&h, FrontEnd::Tui);
    past_the_early_mark(&mut engine).await;
    let events = idle_compaction(&mut engine, Duration::from_secs(20)).await.expect("no idle pass");
    assert!(events.contains(&Event::CompactionStarted { trigger: CompactionTrigger::Idle }));
    let records = compactions(&h);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].trigger, Trigger::Idle);
    assert!(records[0].summary.is_some());
    // The next turn reads the note, not the whole history.
    let sent = h.server.requests().len();
    engine.turn("and now?").await;
    let next = h.server.requests()[sent].body.to_string();
    assert!(next.contains("Codewhale handoff note"), "{next}");
    engine.shutdown().await;
    assert_no_orphans(&h);
}

/// Waits until nothing the engine started is in flight: a background note started after the
/// last turn (`events`) is written over the network on the real clock; once it is ready, or
/// when none started, the engine's clock can be the test's (`tokio::time::pause`).
async fn settled(engine: &mut Running, events: &[Event]) {
    let writing = events.iter().any(note(BackgroundState::Writing));
    if writing && !events.iter().any(note(BackgroundState::Ready)) {
        engine.until(note(BackgroundState::Ready)).await;
    }
}

/// Whether an event says the background note is in `state`.
fn note(state: BackgroundState) -> impl Fn(&Event) -> bool {
    move |e| matches!(e, Event::BackgroundNote { state: Some(s) } if *s == state)
}

#[tokio::test]
async fn typing_holds_idle_compaction_back() {
    let h = Harness::new().await;
    h.config("[compaction]\nidle_after_sec = 10\n");
    let mut engine = spawn(&h, FrontEnd::Tui);
    let last = past_the_early_mark(&mut engine).await;
    settled(&mut engine, &last).await;
    // The engine's idle clock is tokio's: paused, it moves only when every task waits, so each
    // sleep below ends after the engine has taken the key in.
    tokio::time::pause();
    let mut meanwhile = Vec::new();
    for _ in 0..8 {
        engine.submit(Op::Typing);
        // Keys 5 s apart for 40 s: never a whole idle spell of 10 s.
        tokio::time::sleep(Duration::from_secs(5)).await;
        while let Ok(msg) = engine.events.try_recv() {
            meanwhile.push(msg.event);
        }
    }
    let idle_work = |e: &Event| {
        matches!(
            e,
            Event::CompactionStarted { .. }
                | Event::BackgroundNote { state: Some(BackgroundState::Writing) }
        )
    };
    assert!(!meanwhile.iter().any(idle_work), "idle work while the user typed: {meanwhile:?}");
    assert!(compactions(&h).is_empty(), "compacted while the user typed");
    // Once the typing stops, the idle spell counts: the timer fires when it is over, and what
    // it starts (a note written over the network, its record) runs on the real clock.
    tokio::time::advance(Duration::from_secs(6)).await;
    tokio::time::resume();
    idle_compaction(&mut engine, Duration::from_secs(20)).await.expect("no idle pass");
    engine.shutdown().await;
}

#[tokio::test]
async fn off_at_zero_and_never_in_a_one_turn_process() {
    for (config, front_end) in [
        ("[compaction]\nidle_after_sec = 0\n", FrontEnd::Tui),
        ("[compaction]\nidle_after_sec = 0.3\n", FrontEnd::Cli),
    ] {
        let h = Harness::new().await;
        h.config(config);
        let mut engine = spawn(&h, front_end);
        let last = past_the_early_mark(&mut engine).await;
        settled(&mut engine, &last).await;
        // An hour of the engine's clock passes, idle: no note is started, none committed.
        tokio::time::pause();
        tokio::time::sleep(Duration::from_secs(3_600)).await;
        let mut meanwhile = Vec::new();
        while let Ok(msg) = engine.events.try_recv() {
            meanwhile.push(msg.event);
        }
        tokio::time::resume();
        let idle_work = |e: &Event| {
            matches!(
                e,
                Event::CompactionStarted { .. }
                    | Event::CompactionFinished { .. }
                    | Event::BackgroundNote { state: Some(BackgroundState::Writing) }
            )
        };
        assert!(!meanwhile.iter().any(idle_work), "{config} {front_end:?}: {meanwhile:?}");
        engine.shutdown().await;
        // A background note ready when the session closes is committed (an `auto` record: it
        // was paid for), never an idle one.
        let records = compactions(&h);
        assert!(records.iter().all(|r| r.trigger != Trigger::Idle), "{config} {front_end:?}");
    }
}

/// A note that is ready before the idle timer fires is committed when it fires. The background
/// task wakes the engine just before it returns; an engine that then found the task not yet
/// finished left the note "ready" until the session closed (about one run in three, on a
/// runtime with more than one thread, as the engine runs in the terminal UI).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_ready_before_the_idle_timer_is_committed_when_it_fires() {
    for run in 0..3 {
        let h = Harness::new().await;
        h.config("[compaction]\nidle_after_sec = 1.5\n");
        let mut engine = spawn(&h, FrontEnd::Tui);
        past_the_early_mark(&mut engine).await;
        // The note was started after the turn; it is ready well before the timer.
        let ready =
            |e: &Event| matches!(e, Event::BackgroundNote { state: Some(BackgroundState::Ready) });
        let seen = tokio::time::timeout(Duration::from_secs(10), engine.until(ready)).await;
        assert!(seen.is_ok(), "run {run}: no note became ready");
        let events = idle_compaction(&mut engine, Duration::from_secs(20))
            .await
            .unwrap_or_else(|| panic!("run {run}: the ready note was not committed while idle"));
        assert!(events.contains(&Event::CompactionStarted { trigger: CompactionTrigger::Idle }));
        let records = compactions(&h);
        assert_eq!(records.len(), 1, "run {run}");
        assert_eq!(records[0].trigger, Trigger::Idle);
        assert!(records[0].background);
        engine.shutdown().await;
        assert_no_orphans(&h);
    }
}
