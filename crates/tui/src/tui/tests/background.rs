//! The note written in the background (DESIGN §5.8) is quiet: the status line says where it is,
//! and the capsule of a record it wrote says so.

use codewhale_engine::protocol::{BackgroundState, CompactionKind, CompactionTrigger, Event};

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
