//! The note written in the background (docs/compaction.md, *Background compaction*) is quiet: the
//! status line says where it is, and the capsule of a record it wrote says so.

use codewhale_protocol::{BackgroundState, CompactionKind, CompactionTrigger, Event};

use super::Harness;

fn status(h: &mut Harness) -> String {
    h.screen().lines().last().unwrap_or_default().to_owned()
}

#[test]
fn the_status_line_says_writing_note_then_note_ready_then_nothing() {
    let mut h = Harness::new();
    assert!(!status(&mut h).contains("note"));
    h.engine(1, Event::BackgroundNote { state: Some(BackgroundState::Writing) });
    let line = status(&mut h);
    assert!(line.contains("ready · writing note…"), "{line}");
    h.engine(1, Event::BackgroundNote { state: Some(BackgroundState::Ready) });
    let line = status(&mut h);
    assert!(line.contains("note ready") && !line.contains("writing"), "{line}");
    h.engine(1, Event::BackgroundNote { state: None });
    assert!(!status(&mut h).contains("note"));
}

#[test]
fn a_record_written_in_the_background_says_so_in_its_capsule() {
    let mut h = Harness::new();
    for (id, background) in [("c1", false), ("c2", true)] {
        h.engine(
            1,
            Event::CompactionFinished {
                id: id.into(),
                trigger: CompactionTrigger::Auto,
                path: CompactionKind::Summary,
                tokens_before: 12_000,
                tokens_after: 5_000,
                covered: 20,
                retained: 2,
                note: "## Objective\nShip it.".into(),
                background,
            },
        );
    }
    let screen = h.screen();
    assert!(screen.contains("12k → 5k tokens (auto) …"), "{screen}");
    assert!(screen.contains("12k → 5k tokens (auto, written in the background) …"), "{screen}");
}

/// The summary of a branch the user left (docs/journal-format.md, *`branch_summary`*) is quiet too:
/// the status line says it is being written; written as a turn starts, it goes above the message
/// just sent (where the journal has it); dropped, a notice says why.
#[test]
fn a_branch_summary_being_written_is_quiet_and_lands_before_the_message_sent_meanwhile() {
    use codewhale_protocol::BranchSummaryState;
    let summary = |state, summary: Option<&str>, reason: Option<&str>| Event::BranchSummary {
        state,
        summary: summary.map(str::to_owned),
        reason: reason.map(str::to_owned),
    };
    let mut h = Harness::new();
    h.engine(1, summary(BranchSummaryState::Writing, None, None));
    let line = status(&mut h);
    assert!(line.contains("summarizing the branch you left…"), "{line}");
    // The composer is not held up: a message can be sent meanwhile.
    h.type_str("try by hand");
    h.enter();
    h.engine(2, summary(BranchSummaryState::Written, Some("nom failed"), None));
    assert!(!status(&mut h).contains("summarizing"));
    let screen = h.screen();
    let cell = screen.find("what was tried on a branch you left").expect("the cell");
    let message = screen.find("try by hand").expect("the message");
    assert!(cell < message, "the summary first: {screen}");
    h.engine(
        2,
        Event::TurnFinished {
            status: codewhale_protocol::TurnStatus::Completed,
            text: String::new(),
            stats: Default::default(),
        },
    );

    h.engine(3, summary(BranchSummaryState::Writing, None, None));
    h.engine(3, summary(BranchSummaryState::Dropped, None, Some("it took longer than 60 s")));
    assert!(!status(&mut h).contains("summarizing"));
    let screen = h.screen();
    assert!(
        screen.contains("no summary of the branch you left: it took longer than 60 s"),
        "{screen}"
    );

    // Written while idle: the cell goes last, under what was shown before.
    h.engine(4, summary(BranchSummaryState::Written, Some("pest worked"), None));
    let screen = h.screen();
    let notice = screen.find("no summary of the branch you left").expect("kept");
    let cell = screen.rfind("what was tried on a branch you left").expect("the cell");
    assert!(notice < cell, "{screen}");
}
