//! Images in the view: a message a compaction retained reads its images as one line each;
//! the last round keeps its own.

use codewhale_journal::{
    check_view, render, Block, ImageBlock, ItemKind, Journal, Shortened, UserPayload,
};

use super::support::{journal, summary_record, Sink};

fn image(name: &str) -> Block {
    Block::Image(ImageBlock {
        blob: format!("{name}.blob.png"),
        media_type: "image/png".into(),
        width: 64,
        height: 48,
        bytes: 12_000,
        name: name.into(),
        extra: Default::default(),
    })
}

fn with_image(j: &mut Journal, text: &str, name: &str) -> codewhale_journal::EntryId {
    let mut payload = UserPayload::text(text);
    payload.content.push(image(name));
    j.on_head(payload)
}

fn images_of(view: &codewhale_journal::View, kind: ItemKind) -> Vec<String> {
    view.items
        .iter()
        .filter(|i| i.kind == kind)
        .flat_map(|i| i.blocks().iter().filter_map(Block::as_image).map(|b| b.name.clone()))
        .collect()
}

#[test]
fn a_retained_message_reads_its_image_as_a_line_and_the_last_round_keeps_its_own() {
    let mut j = journal();
    let u1 = with_image(&mut j, "what is this?", "old.png");
    let a1 = j.assistant("a chart");
    with_image(&mut j, "and this?", "new.png");
    let root = j.header_entry().id.clone();
    let mut record = summary_record(&u1, &a1, 2, "the summary");
    record.retained_ids = vec![u1.clone()];
    j.record(&root, record);
    let view = render(&j, j.head_id().as_str());
    check_view(&view).unwrap();
    let retained = &view.items[0];
    assert_eq!(retained.source, u1);
    assert_eq!(
        retained.blocks(),
        [
            Block::text("what is this?"),
            Block::text("[image old.png 64×48, covered by compaction; the journal keeps it]")
        ]
    );
    assert_eq!(retained.tokens, None, "counted as shown");
    assert!(matches!(retained.shortened, Some(Shortened::ImagesCovered { .. })));
    assert_eq!(images_of(&view, ItemKind::User), ["new.png"], "the last round keeps its image");
}

#[test]
fn the_round_a_pass_interrupted_keeps_the_image_that_started_it() {
    // A pass in the middle of a long turn covers the turn's own user message: while no user
    // message follows the checkpoint, that message's image is still the last round's.
    let mut j = journal();
    j.user("earlier");
    let u1 = with_image(&mut j, "fix what this screenshot shows", "bug.png");
    let a1 = j.assistant("looking");
    let root = j.header_entry().id.clone();
    let mut record = summary_record(&u1, &a1, 2, "the summary");
    record.retained_ids = vec![u1.clone()];
    j.record(&root, record);
    j.assistant("still working");
    let view = render(&j, j.head_id().as_str());
    assert_eq!(images_of(&view, ItemKind::User), ["bug.png"]);
    j.user("next question");
    let view = render(&j, j.head_id().as_str());
    assert!(images_of(&view, ItemKind::User).is_empty(), "once the round is over, a line");
}
