//! Images in the composer and the transcript: a pasted path, Ctrl+V, a typed `@shot.png`,
//! and the cell an attached image gets.

use codewhale_protocol::{Event, HistoryItem, HistoryPage, ImageInfo, Op};

use super::Harness;
use crate::tui::event::{AppEvent, Effect};

fn shot() -> ImageInfo {
    ImageInfo { name: "shot.png".into(), width: 64, height: 48, bytes: 12_000, scaled: false }
}

#[test]
fn a_pasted_image_path_is_sent_as_a_mention_and_the_image_gets_a_cell() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shot.png");
    std::fs::write(&path, b"png").unwrap();
    let path = path.to_string_lossy().into_owned();
    let mut h = Harness::new();
    h.type_str("what is wrong here? ");
    h.send(AppEvent::Input(crossterm::event::Event::Paste(format!("'{path}'"))));
    assert!(h.screen().contains(&format!("@{path}")), "the path is a mention in the composer");
    h.enter();
    assert_eq!(
        h.ops(),
        [Op::UserInput {
            text: format!("what is wrong here? @{path} "),
            attachments: vec![path.clone()],
            images: Vec::new(),
        }]
    );
    h.engine(1, Event::ImagesAttached { images: vec![shot()] });
    let screen = h.screen();
    assert!(screen.contains("▣ shot.png 64×48 · 12 KB"), "{screen}");
    assert!(!screen.contains("📎"), "an image is shown by its cell, not as a file: {screen}");
}

#[test]
fn ctrl_v_reads_the_clipboard_off_the_ui_and_says_when_there_is_no_image() {
    let mut h = Harness::new();
    h.ctrl('v');
    assert!(h.effects().contains(&Effect::PasteImage));
    h.send(AppEvent::ClipboardImage(Err("the clipboard holds no image; copy one first".into())));
    assert!(h.screen().contains("the clipboard holds no image"));
    h.send(AppEvent::ClipboardImage(Ok("/tmp/clipboard-1.png".into())));
    h.enter();
    let [Op::UserInput { attachments, .. }] = &h.ops()[..] else { panic!("one message") };
    assert_eq!(attachments, &["/tmp/clipboard-1.png".to_owned()]);
}

#[test]
fn a_resumed_message_shows_its_images() {
    let mut h = Harness::new();
    let page = HistoryPage {
        head: "u1".into(),
        items: vec![HistoryItem::User {
            id: "u1".into(),
            text: "look at this".into(),
            covered: false,
            images: vec![shot()],
        }],
        older: None,
        reset: true,
    };
    h.engine(0, Event::History { page });
    let screen = h.screen();
    assert!(screen.contains("› look at this"), "{screen}");
    assert!(screen.contains("▣ shot.png 64×48 · 12 KB"), "{screen}");
}
