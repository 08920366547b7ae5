//! `@` attachments through the engine: the file's content reaches the model after the message,
//! as a synthetic user entry with `attachment`; what cannot be attached says why and the
//! message goes on without it; compaction prunes an old attachment to a stub.

use codewhale_engine::approval::ApprovalMode;
use codewhale_engine::protocol::{Event, NoticeLevel, Op, TurnStatus};
use codewhale_journal::{load_read_only, render, ItemKind, Payload};
use codewhale_provider::test_support::Reply;

use super::common::{session_file, Harness};

#[tokio::test]
async fn a_mentioned_file_is_attached_after_the_message_and_bad_ones_are_refused() {
    let h = Harness::new().await;
    h.write("src/lexer.rs", "pub fn lex() {}\n");
    h.write(".codewhale/config.toml", "model = \"x\"\n");
    std::fs::write(h.ws.path().join("blob.bin"), [0u8, 1, 2, 0]).unwrap();
    h.server.push(Reply::text("I see the lexer."));
    let mut engine = h.spawn(ApprovalMode::Ask);
    let id = engine.submit(Op::UserInput {
        text: "what does @src/lexer.rs do?".into(),
        attachments: vec![
            "src/lexer.rs".into(),
            "../outside.txt".into(),
            ".codewhale/config.toml".into(),
            "blob.bin".into(),
            "missing.rs".into(),
        ],
        images: Vec::new(),
    });
    let run = engine.finish(id).await;
    assert_eq!(run.status, TurnStatus::Completed);
    let refusals: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Notice { level: NoticeLevel::Warning, message }
                if message.contains("not attached") =>
            {
                Some(message.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(refusals.len(), 4, "{refusals:#?}");
    assert!(refusals[0].contains("outside the workspace"), "{}", refusals[0]);
    assert!(refusals[1].contains("Codewhale's own settings"), "{}", refusals[1]);
    assert!(refusals[2].contains("binary"), "{}", refusals[2]);
    assert!(refusals[3].contains("cannot read"), "{}", refusals[3]);
    let sent = h.server.requests()[0].body["messages"].to_string();
    assert!(sent.contains("what does @src/lexer.rs do?"), "{sent}");
    assert!(sent.contains("The user attached the file src/lexer.rs (16 bytes)"), "{sent}");
    assert!(sent.contains("pub fn lex() {}"), "{sent}");
    assert!(!sent.contains("model = "), "{sent}");
    engine.shutdown().await;

    let journal = load_read_only(&session_file(h.home.path())).unwrap().journal;
    let view = render(&journal, journal.head_id().as_str());
    let kinds: Vec<ItemKind> = view.items.iter().map(|i| i.kind).collect();
    assert_eq!(kinds, [ItemKind::User, ItemKind::Attachment, ItemKind::Assistant]);
    let attachment = journal
        .entries()
        .iter()
        .find_map(|e| match &e.payload {
            Payload::User(u) => u.attachment.clone(),
            _ => None,
        })
        .unwrap();
    assert_eq!((attachment.path.as_str(), attachment.bytes), ("src/lexer.rs", Some(16)));
}
