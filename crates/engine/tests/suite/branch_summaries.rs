//! A `branch_summary` on the spine (DESIGN §2): the model reads it as "What was tried on a
//! branch you left: …", and every compaction keeps it verbatim — through three passes in a
//! row, checked in the journal's view and in the request the provider receives.

use codewhale_engine::protocol::Event;
use codewhale_engine::session::Resume;
use codewhale_engine::Engine;
use codewhale_journal::{
    render, BranchSummaryPayload, Entry, ItemKind, JournalFile, BRANCH_SUMMARY_PREFIX,
};
use codewhale_provider::test_support::Reply;

use super::common::{reload_checked, session_file, Harness, Running};
use super::compaction::{compact, params, prose, spawn, SUMMARY, WINDOW};

#[tokio::test]
async fn a_branch_summary_is_read_by_the_model_and_kept_through_three_compactions() {
    let h = Harness::new().await;
    let mut engine = spawn(&h, "openai", WINDOW);
    h.server.push(Reply::text(prose("answer 0", 300)).with_usage(2_000, 1_500));
    engine.turn("question 0").await;
    engine.shutdown().await;

    // What another branch tried, appended on HEAD as the engine would after leaving it.
    let path = session_file(h.home.path());
    let (mut file, _) = JournalFile::open(&path).unwrap();
    let head = file.journal().head_id().clone();
    let first = file.journal().entries()[1].id.clone();
    let mut payload = BranchSummaryPayload::new(first.clone(), "nom failed on nested groups");
    payload.from = Some(first);
    payload.tip = Some(head.clone());
    let summary = Entry::new(Some(head), payload);
    let summary_id = summary.id.clone();
    file.append(summary).unwrap();
    file.close().unwrap();
    let text = format!("{BRANCH_SUMMARY_PREFIX}nom failed on nested groups");

    let id = path.file_stem().unwrap().to_string_lossy().into_owned();
    let mut p = params(&h, "openai", WINDOW);
    p.resume = Resume::Id(id);
    let (handle, events) = Engine::spawn(p).unwrap();
    let mut engine = Running { handle, events };
    for pass in 0..3 {
        for k in 0..3 {
            let answer = prose(&format!("answer {pass}.{k}"), 300);
            h.server.push(Reply::text(answer).with_usage(2_000, 1_500));
            engine.turn(&format!("question {pass}.{k}")).await;
        }
        h.server.push(Reply::text(format!("{SUMMARY}\npass {pass}")));
        let event = compact(&mut engine, None).await;
        assert!(matches!(event, Event::CompactionFinished { .. }), "pass {pass}: {event:?}");
        let journal = reload_checked(&path);
        let view = render(&journal, journal.head_id().as_str());
        let kept: Vec<_> =
            view.items.iter().filter(|i| i.kind == ItemKind::BranchSummary).collect();
        assert_eq!(kept.len(), 1, "pass {pass}: the summary is in the view once");
        assert_eq!(kept[0].blocks()[0].as_text(), Some(text.as_str()), "pass {pass}: verbatim");
        let record = journal.compactions().last().unwrap().1.clone();
        assert!(record.retained_ids.contains(&summary_id), "pass {pass}: retained");
    }
    h.server.push(Reply::text("go on"));
    engine.turn("next").await;
    let sent = h.server.last_request().unwrap().body["messages"].to_string();
    assert!(sent.contains(&text), "the model reads it: {sent}");
    engine.shutdown().await;
}
