//! One truth: after every change of what the model reads — a reply, `/compact`, a HEAD move, a
//! model switch, a resume, an anchor pinned or withdrawn — the engine's `Usage` event, its
//! context report (`Op::GetContext`) and the offline report (`codewhale context`, the budget
//! replayed from the journal) show the same figures with the same labels. Anchors mean what
//! the file says: a withdrawn one leaves the request, and `/context` agrees with the request.

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::offline::{self, ReportParams};
use codewhale_engine::protocol::{
    AnchorChange, AnchorInfo, ContextReport, Event, Figure, Op, SubmissionId, TurnStatus,
};
use codewhale_engine::Overrides;
use codewhale_engine::Resume;
use codewhale_journal::{load_read_only, Payload};
use codewhale_provider::test_support::Reply;

use super::common::{session_file, Harness, Running};
use super::compaction::SUMMARY;

/// The figures of a `Usage` event.
#[derive(Clone, Debug, PartialEq)]
struct Gauge {
    pressure: Figure,
    usable_input: u64,
    window: u64,
    window_unverified: bool,
    model: String,
}

/// Reads events until `done` matches one submitted as `id`, remembering the last `Usage`.
async fn settle(
    engine: &mut Running,
    id: SubmissionId,
    gauge: &mut Option<Gauge>,
    done: impl Fn(&Event) -> bool,
) -> Vec<Event> {
    let mut seen = Vec::new();
    loop {
        let msg = engine.next().await;
        if let Event::Usage { pressure, usable_input, window, window_unverified, model, .. } =
            &msg.event
        {
            *gauge = Some(Gauge {
                pressure: *pressure,
                usable_input: *usable_input,
                window: *window,
                window_unverified: *window_unverified,
                model: model.clone(),
            });
        }
        let finished = msg.id == id && done(&msg.event);
        seen.push(msg.event);
        if finished {
            return seen;
        }
    }
}

/// Asks for the context report and checks it against the last `Usage` and the offline report.
async fn agree(h: &Harness, engine: &mut Running, gauge: &mut Option<Gauge>, step: &str) {
    agree_with(h, engine, gauge, step, Overrides::default()).await;
}

/// [`agree`] for a session started with `overrides` (a window given on the command line is
/// given to `codewhale context` too).
async fn agree_with(
    h: &Harness,
    engine: &mut Running,
    gauge: &mut Option<Gauge>,
    step: &str,
    overrides: Overrides,
) {
    let id = engine.submit(Op::GetContext);
    let events = settle(engine, id, gauge, |e| matches!(e, Event::ContextReport { .. })).await;
    let Some(Event::ContextReport { report }) = events.last() else { unreachable!() };
    let g = gauge.clone().unwrap_or_else(|| panic!("{step}: no usage event"));
    let live = (
        report.tokens.total,
        report.tokens.source,
        report.usable_input,
        report.context_window,
        report.window_unverified,
        report.model.clone(),
    );
    let shown = (
        g.pressure.tokens,
        g.pressure.source,
        g.usable_input,
        g.window,
        g.window_unverified,
        g.model,
    );
    assert_eq!(live, shown, "{step}: the gauge and /context disagree");
    let offline = offline_report(h, &report.session, overrides);
    assert_eq!(
        (offline.tokens.total, offline.tokens.source, offline.context_window, offline.model),
        (live.0, live.1, live.3, live.5),
        "{step}: `codewhale context` replays another budget"
    );
}

fn offline_report(h: &Harness, session: &str, overrides: Overrides) -> ContextReport {
    offline::context(&ReportParams {
        home: h.home.path(),
        cwd: h.ws.path(),
        resume: Resume::Id(session.to_owned()),
        overrides,
    })
    .unwrap()
}

async fn turn(h: &Harness, engine: &mut Running, gauge: &mut Option<Gauge>, text: &str) {
    h.server
        .push(Reply::text(format!("answer to {text}")).with_usage(3_000 + text.len() as u64, 9));
    let id = engine.submit(Op::UserInput {
        text: text.into(),
        attachments: Vec::new(),
        images: Vec::new(),
    });
    let events = settle(engine, id, gauge, |e| matches!(e, Event::TurnFinished { .. })).await;
    assert!(
        matches!(events.last(), Some(Event::TurnFinished { status: TurnStatus::Completed, .. })),
        "{events:?}"
    );
}

/// Submits `op` and reads until `done` matches one of its events.
async fn op(
    engine: &mut Running,
    gauge: &mut Option<Gauge>,
    op: Op,
    done: impl Fn(&Event) -> bool,
) -> Vec<Event> {
    let id = engine.submit(op);
    settle(engine, id, gauge, done).await
}

fn is_usage(e: &Event) -> bool {
    matches!(e, Event::Usage { .. })
}

fn anchors_of(events: &[Event]) -> Vec<AnchorInfo> {
    events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Anchors { anchors } => Some(anchors.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// The id of the newest entry of `kind` with `text` on the file's HEAD spine.
fn entry_id(h: &Harness, kind: &str, text: &str) -> String {
    let journal = load_read_only(&session_file(h.home.path())).unwrap().journal;
    journal
        .entries()
        .iter()
        .rev()
        .find(|e| e.kind() == kind && serde_json::to_string(e).unwrap().contains(text))
        .map(|e| e.id.to_string())
        .unwrap_or_else(|| panic!("no {kind} entry with {text:?}"))
}

#[tokio::test]
async fn usage_and_the_context_report_agree_after_every_change() {
    let h = Harness::new().await;
    h.no_branch_summaries();
    let mut gauge = None;
    let mut params = h.params(Resume::New, ApprovalMode::Full, false);
    // The catalog's window for the model, as a user without flags gets it.
    params.overrides.model = None;
    params.overrides.provider = Some("openai".into());
    let mut engine = Running::from(codewhale_engine::Engine::spawn(params.clone()).unwrap());

    // Session open: a figure before any reply.
    agree(&h, &mut engine, &mut gauge, "open").await;
    assert!(gauge.as_ref().is_some_and(|g| g.pressure.tokens > 0));

    // Long enough that a summary is smaller than what it replaces.
    for tag in ["first question", "second question", "third question"] {
        turn(&h, &mut engine, &mut gauge, &super::compaction::prose(tag, 300)).await;
    }
    agree(&h, &mut engine, &mut gauge, "reply").await;

    h.server.push(Reply::text(SUMMARY).with_usage(1_500, 300));
    let events = op(&mut engine, &mut gauge, Op::Compact { focus: None }, is_usage).await;
    assert!(events.iter().any(|e| matches!(e, Event::CompactionFinished { .. })), "{events:?}");
    agree(&h, &mut engine, &mut gauge, "compact").await;

    // A HEAD move to the first answer, then back to the tip.
    let tip = load_read_only(&session_file(h.home.path())).unwrap().journal.head_id().to_string();
    let first = entry_id(&h, "assistant", "answer to first question");
    let second = entry_id(&h, "assistant", "answer to second question");
    op(&mut engine, &mut gauge, Op::Rewind { to: first }, is_usage).await;
    agree(&h, &mut engine, &mut gauge, "rewind").await;
    op(&mut engine, &mut gauge, Op::Checkout { to: tip }, is_usage).await;
    agree(&h, &mut engine, &mut gauge, "checkout").await;
    // A fork: a new branch from the second answer, with a reply of its own.
    op(&mut engine, &mut gauge, Op::Fork { at: second }, is_usage).await;
    agree(&h, &mut engine, &mut gauge, "fork").await;
    turn(&h, &mut engine, &mut gauge, "on the new branch").await;
    agree(&h, &mut engine, &mut gauge, "reply on a branch").await;

    // A model the catalog does not know: its window is a guess, labelled so.
    let switch = Op::SwitchModel { model: "my-local-model".into() };
    op(&mut engine, &mut gauge, switch, is_usage).await;
    agree(&h, &mut engine, &mut gauge, "model").await;
    let before_resume = gauge.clone().unwrap();
    assert_eq!(before_resume.model, "my-local-model");
    assert!(before_resume.window_unverified);

    // Resume: the same budget, replayed from the journal (the switch included).
    engine.shutdown().await;
    params.resume = Resume::Last;
    let mut engine = Running::from(codewhale_engine::Engine::spawn(params).unwrap());
    gauge = None;
    agree(&h, &mut engine, &mut gauge, "resume").await;
    assert_eq!(gauge.clone().unwrap(), before_resume, "a reopened session shows other figures");

    let add = Op::AddAnchor { text: "Never push to main.".into() };
    let events = op(&mut engine, &mut gauge, add, is_usage).await;
    assert_eq!(
        anchors_of(&events),
        [AnchorInfo { index: 1, text: "Never push to main.".into(), in_view: true }]
    );
    agree(&h, &mut engine, &mut gauge, "anchor add").await;

    let events = op(&mut engine, &mut gauge, Op::RemoveAnchor { index: 1 }, is_usage).await;
    assert!(anchors_of(&events).is_empty());
    agree(&h, &mut engine, &mut gauge, "anchor remove").await;
    engine.shutdown().await;
}

#[tokio::test]
async fn a_withdrawn_anchor_leaves_the_request_and_the_report_agrees() {
    let h = Harness::new().await;
    let mut gauge = None;
    let mut engine = h.spawn(ApprovalMode::Full);
    let pin = "Always answer in French.";
    op(&mut engine, &mut gauge, Op::AddAnchor { text: pin.into() }, is_usage).await;
    op(&mut engine, &mut gauge, Op::AddAnchor { text: "Use rustls.".into() }, is_usage).await;
    turn(&h, &mut engine, &mut gauge, "hello").await;
    let sent = h.server.requests()[0].body.to_string();
    assert_eq!(sent.matches(pin).count(), 1, "the pin is in the request");

    let events = op(&mut engine, &mut gauge, Op::RemoveAnchor { index: 1 }, is_usage).await;
    let removed = events.iter().any(|e| {
        matches!(e, Event::AnchorChanged { change: AnchorChange::Removed { index: 1, text }, message }
            if message.starts_with("anchor 1 removed") && text == pin)
    });
    assert!(removed, "{events:?}");
    assert_eq!(
        anchors_of(&events),
        [AnchorInfo { index: 1, text: "Use rustls.".into(), in_view: true }]
    );
    turn(&h, &mut engine, &mut gauge, "and now?").await;
    let sent = h.server.requests()[1].body["messages"].to_string();
    // The anchor entry is gone: the pin's text is there once, inside the withdrawal note.
    assert_eq!(sent.matches(pin).count(), 1, "{sent}");
    assert!(sent.contains(&format!("no longer applies: \\\"{pin}\\\"")), "{sent}");
    assert!(sent.contains("Use rustls."), "the other pin stays: {sent}");

    // /context counts what the request carries.
    let id = engine.submit(Op::GetContext);
    let events =
        settle(&mut engine, id, &mut gauge, |e| matches!(e, Event::ContextReport { .. })).await;
    let Some(Event::ContextReport { report }) = events.last() else { unreachable!() };
    assert_eq!(report.anchors.count, 1);
    let file = h.read(".codewhale/anchors.md");
    assert_eq!(file.trim(), "Use rustls.");
    assert_eq!(report.anchors.chars, file.chars().count());
    assert!(report.anchors.present, "the remaining pin is in the view");

    // The next checkpoint restates only what the file still holds.
    // Long enough that a summary is smaller than what it replaces.
    turn(&h, &mut engine, &mut gauge, &super::compaction::prose("one more thing", 300)).await;
    turn(&h, &mut engine, &mut gauge, &super::compaction::prose("and another", 300)).await;
    h.server.push(Reply::text(SUMMARY).with_usage(1_500, 300));
    let events = op(&mut engine, &mut gauge, Op::Compact { focus: None }, is_usage).await;
    assert!(events.iter().any(|e| matches!(e, Event::CompactionFinished { .. })), "{events:?}");
    engine.shutdown().await;
    let journal = load_read_only(&session_file(h.home.path())).unwrap().journal;
    let (_, record) = journal.compactions().last().expect("a compaction record");
    let note = record.note.clone();
    assert!(note.contains("Use rustls."), "{note}");
    assert!(!note.contains(pin), "{note}");
    let withdrawal = journal
        .entries()
        .iter()
        .find_map(|e| match &e.payload {
            Payload::User(u) => u.withdraws.clone(),
            _ => None,
        })
        .expect("a withdrawal entry");
    assert_eq!(journal.get(withdrawal.as_str()).map(|e| e.kind()), Some("user"));
}

/// Fail open: when compaction cannot help (every summary comes back unusable), requests are
/// trimmed to fit the window. The gauge, the context report and `codewhale context` then show
/// the request that was sent — never more than the usable input — and say what was left out.
#[tokio::test]
async fn a_trimmed_request_is_what_the_gauge_and_the_reports_show() {
    const WINDOW: u64 = 8_000;
    let h = Harness::new().await;
    h.server.respond_with(|r| {
        let tokens = u64::from(codewhale_engine::tokens::count(&r.body.to_string()));
        if tokens > WINDOW {
            return Reply::fault(codewhale_provider::test_support::Fault::overflow(WINDOW, tokens));
        }
        if super::compaction::is_summary_request(&r.body) {
            return Reply::text("no").with_usage(tokens, 2);
        }
        Reply::text(super::compaction::prose("answer", 60)).with_usage(tokens, 200)
    });
    let params = super::compaction::params(&h, "openai", WINDOW);
    let mut engine = Running::from(codewhale_engine::Engine::spawn(params).unwrap());
    let mut gauge = None;
    let mut trimmed = false;
    for k in 0..12 {
        let text = super::compaction::prose(&format!("question {k}"), 60);
        let id = engine.submit(Op::UserInput { text, attachments: Vec::new(), images: Vec::new() });
        let events =
            settle(&mut engine, id, &mut gauge, |e| matches!(e, Event::TurnFinished { .. })).await;
        trimmed |= events
            .iter()
            .any(|e| matches!(e, Event::Notice { message, .. } if message.contains("leaves out")));
    }
    assert!(trimmed, "the conversation outgrew the window and a request was trimmed");
    let id = engine.submit(Op::GetContext);
    let events =
        settle(&mut engine, id, &mut gauge, |e| matches!(e, Event::ContextReport { .. })).await;
    let Some(Event::ContextReport { report }) = events.last() else { unreachable!() };
    let g = gauge.clone().unwrap();
    assert_eq!((report.tokens.total, report.tokens.source), (g.pressure.tokens, g.pressure.source));
    // The mock reports each request's JSON body, a little more than what the model reads;
    // what was sent fit the window, while the whole view is far past the usable input.
    assert!(g.pressure.tokens <= report.context_window, "the gauge shows what was sent: {g:?}");
    assert!(
        report.tokens.total + report.tokens.left_out > report.usable_input,
        "and /context says what was left out: {:?}",
        report.tokens
    );
    let offline = offline::context(&ReportParams {
        home: h.home.path(),
        cwd: h.ws.path(),
        resume: Resume::Id(report.session.clone()),
        overrides: Overrides { context_window: Some(WINDOW), ..Overrides::default() },
    })
    .unwrap();
    assert_eq!(
        (offline.tokens.total, offline.tokens.left_out),
        (report.tokens.total, report.tokens.left_out),
        "`codewhale context` replays the same figures"
    );
    engine.shutdown().await;
}

/// An automatic compaction, like `/compact`: after it, the gauge, the context report and
/// `codewhale context` show the same figure.
#[tokio::test]
async fn the_figures_agree_after_an_automatic_compaction() {
    for (what, window, rejects_above) in [("auto", 8_000, u64::MAX)] {
        let h = Harness::new().await;
        h.server.respond_with(move |r| {
            let tokens = u64::from(codewhale_engine::tokens::count(&r.body.to_string()));
            if tokens > rejects_above {
                return Reply::fault(codewhale_provider::test_support::Fault::overflow(
                    rejects_above,
                    tokens,
                ));
            }
            if super::compaction::is_summary_request(&r.body) {
                return Reply::text(SUMMARY).with_usage(tokens, 300);
            }
            Reply::text(super::compaction::prose("answer", 40)).with_usage(tokens, 200)
        });
        let params = super::compaction::params(&h, "openai", window);
        let overrides = params.overrides.clone();
        let mut engine = Running::from(codewhale_engine::Engine::spawn(params).unwrap());
        let mut gauge = None;
        let mut compacted = false;
        for k in 0..14 {
            let text = super::compaction::prose(&format!("question {k}"), 60);
            let id =
                engine.submit(Op::UserInput { text, attachments: Vec::new(), images: Vec::new() });
            let events =
                settle(&mut engine, id, &mut gauge, |e| matches!(e, Event::TurnFinished { .. }))
                    .await;
            if events.iter().any(|e| matches!(e, Event::CompactionFinished { .. })) {
                compacted = true;
                agree_with(&h, &mut engine, &mut gauge, what, overrides.clone()).await;
                break;
            }
        }
        assert!(compacted, "{what}: the conversation was compacted");
        engine.shutdown().await;
    }
}
