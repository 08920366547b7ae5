//! The view function and the view check on hand-built journals.

use codewhale_journal::{
    check_view, cut, pruned_stub, render, AssistantPayload, Attachment, Block, Bounded,
    CompactionPath, CompactionPayload, Covers, Entry, ItemKind, Journal, Shortened,
    ToolResultPayload, Trigger, UserPayload, ViewError, CHECKPOINT_MARKER,
};
use serde_json::json;

use super::support::{journal, lines, short, summary_record, Sink};

fn head_view(j: &Journal) -> codewhale_journal::View {
    render(j, j.head_id().as_str())
}

#[test]
fn the_checkpoint_is_a_user_message_of_note_and_marker() {
    let mut j = journal();
    let u1 = j.user("u1");
    let a1 = j.assistant("a1");
    j.user("u2");
    let root = j.header_entry().id.clone();
    let r = j.record(&root, summary_record(&u1, &a1, 2, "the summary"));
    let v = head_view(&j);
    let cp = v.checkpoint().unwrap();
    assert_eq!(cp.source, r);
    assert_eq!(cp.role, codewhale_journal::Role::User);
    assert_eq!(
        cp.blocks(),
        [Block::text("Codewhale handoff note.\nthe summary"), Block::text(CHECKPOINT_MARKER)]
    );
    assert_eq!(short(&v), ["checkpoint: Codewhale handoff note.", "user: u2"]);
    check_view(&v).unwrap();
}

#[test]
fn system_head_and_unknown_entries_are_not_model_visible() {
    let mut j = journal();
    j.user("u1");
    j.on_head(codewhale_journal::SystemPayload::new(codewhale_journal::Level::Info, "notice"));
    j.add(Entry::new(
        Some(j.tip()),
        codewhale_journal::Payload::Unknown { kind: "vote".into(), payload: json!({}) },
    ));
    j.assistant("a1");
    assert_eq!(lines(&head_view(&j)), ["user: u1", "assistant: a1"]);
}

/// A `/btw` side question is on the chain (it moves HEAD) and in no view: the next message
/// follows the reply before it as if it were not there, and it survives a write and a read.
#[test]
fn a_side_question_moves_head_and_is_in_no_view() {
    let mut j = journal();
    j.user("u1");
    let a1 = j.assistant("a1");
    let mut side = codewhale_journal::SidePayload {
        question: "how long?".into(),
        answer: "300 lines".into(),
        ..Default::default()
    };
    side.model = Some("gpt-4.1".into());
    side.reads = Some(codewhale_journal::Reads::new(a1.clone(), None));
    let before = lines(&head_view(&j));
    let id = j.on_head(side.clone());
    assert_eq!(j.head_id(), &id, "on the chain");
    assert_eq!(lines(&head_view(&j)), before, "in no view");
    j.user("u2");
    assert_eq!(lines(&head_view(&j)), ["user: u1", "assistant: a1", "user: u2"]);
    check_view(&head_view(&j)).unwrap();
    let entry = j.get(id.as_str()).unwrap();
    let line = serde_json::to_string(entry).unwrap();
    assert!(
        line.contains(r#""kind":"side""#) && line.contains(r#""question":"how long?""#),
        "{line}"
    );
    let back: Entry = serde_json::from_str(&line).unwrap();
    assert_eq!(back.payload, codewhale_journal::Payload::Side(side));
}

#[test]
fn anchors_synthetic_and_tokens_are_carried() {
    let mut j = journal();
    j.on_head(UserPayload::anchor("pinned"));
    j.on_head(UserPayload::synthetic("notice"));
    let v = head_view(&j);
    assert_eq!(v.items[0].kind, ItemKind::Anchor);
    assert_eq!(v.items[1].kind, ItemKind::Synthetic);
    assert_eq!(v.items[0].tokens, Some(10));
}

#[test]
fn a_withdrawn_anchor_leaves_the_view_and_the_note_says_so_once() {
    let mut j = journal();
    let pin = j.on_head(UserPayload::anchor("always answer in French"));
    j.user("u1");
    let a1 = j.assistant("a1");
    let mut note = UserPayload::synthetic("the pin \"always answer in French\" was withdrawn");
    note.withdraws = Some(pin.clone());
    j.on_head(note);
    j.user("u2");
    let v = head_view(&j);
    assert_eq!(
        short(&v),
        [
            "user: u1",
            "assistant: a1",
            "synthetic: the pin \"always answer in French\" was withdrawn",
            "user: u2"
        ]
    );
    check_view(&v).unwrap();
    // A branch that left before the withdrawal still carries the pin.
    let before = render(&j, a1.as_str());
    assert_eq!(short(&before)[0], "anchor: always answer in French");
    // A withdrawal that names something other than an anchor changes nothing.
    let mut j = journal();
    let plain = j.user("keep me");
    let mut odd = UserPayload::synthetic("withdrawn?");
    odd.withdraws = Some(plain);
    j.on_head(odd);
    assert_eq!(short(&head_view(&j)), ["user: keep me", "synthetic: withdrawn?"]);
}

#[test]
fn a_pruned_attachment_reads_as_a_stub_naming_the_file() {
    let mut j = journal();
    j.user("read this");
    let mut attached =
        UserPayload::synthetic(format!("The user attached src/a.rs:\n{}", "x".repeat(900)));
    attached.attachment =
        Some(Attachment { path: "src/a.rs".into(), bytes: Some(900), ..Attachment::default() });
    let a = j.on_head(attached);
    j.assistant("ok");
    let v = head_view(&j);
    assert_eq!(v.items[1].kind, ItemKind::Attachment);
    assert_eq!(ItemKind::Attachment.as_str(), "attachment");
    let mut rec = CompactionPayload::new(CompactionPath::PruneOnly, Trigger::Auto);
    rec.pruned_ids = vec![a.clone()];
    let tip = j.tip();
    j.record(&tip, rec);
    let v = head_view(&j);
    let item = v.items.iter().find(|i| i.source == a).unwrap();
    assert_eq!(
        item.blocks(),
        [Block::text(
            "[attached file src/a.rs pruned by compaction: 900 bytes; read the file again if you \
             need it]"
        )]
    );
    assert_eq!(item.shortened, Some(Shortened::Pruned { original_bytes: 900 }));
    check_view(&v).unwrap();
}

#[test]
fn pruned_results_become_stubs_and_bounded_ones_are_cut() {
    let mut j = journal();
    j.user("u1");
    let big = "x".repeat(5000);
    let a = j.on_head(AssistantPayload::new(vec![
        Block::tool_use("t1", "shell", json!({})),
        Block::tool_use("t2", "shell", json!({})),
    ]));
    let r1 = j.on_head(ToolResultPayload::new("t1", big.clone(), false));
    let r2 = j.on_head(ToolResultPayload::new("t2", format!("{big}END"), false));
    let mut rec = CompactionPayload::new(CompactionPath::PruneOnly, Trigger::Auto);
    rec.pruned_ids = vec![r1.clone()];
    rec.bounded = vec![Bounded::new(r2.clone(), 100)];
    j.record(&r2, rec);
    let v = head_view(&j);
    assert!(v.checkpoint().is_none(), "prune-only without covers has no checkpoint");
    let r1v = v.items.iter().find(|i| i.source == r1).unwrap();
    assert_eq!(r1v.tool_result().unwrap().content.as_str(), pruned_stub(5000, &r1));
    assert_eq!(
        pruned_stub(5000, &r1),
        format!(
            "[output pruned by compaction: 5000 bytes; journal entry {r1} holds it whole: recall \
             entry {r1} reads it, or rerun the tool if it may have changed]"
        )
    );
    assert_eq!(r1v.tokens, None);
    assert_eq!(r1v.shortened, Some(Shortened::Pruned { original_bytes: 5000 }));
    let r2v = v.items.iter().find(|i| i.source == r2).unwrap();
    let cut = r2v.tool_result().unwrap().content.as_str();
    assert!(cut.starts_with(&"x".repeat(50)) && cut.ends_with("END"), "{cut}");
    assert!(cut.contains(&format!(" of 5003 bytes cut; recall entry {r2} …]")), "{cut}");
    assert_eq!(r2v.shortened, Some(Shortened::Bounded { original_bytes: 5003, max_bytes: 100 }));
    // The journal keeps the full text.
    match &j.get(r2.as_str()).unwrap().payload {
        codewhale_journal::Payload::ToolResult(r) => assert_eq!(r.content.len(), 5003),
        _ => unreachable!(),
    }
    assert!(v.items.iter().any(|i| i.source == a));
    check_view(&v).unwrap();
}

#[test]
fn cuts_respect_utf8_boundaries_and_leave_short_text_alone() {
    let cut_to_bound = |text: &str, bound| cut::head_tail(text, bound, cut::Whole::Nowhere);
    assert_eq!(cut_to_bound("short", 100), None);
    let text = "é".repeat(100);
    for bound in 0..50 {
        let cut = cut_to_bound(&text, bound).unwrap();
        assert!(cut.len() <= bound + 100, "{bound}: {}", cut.len());
    }
    let cut = cut_to_bound(&text, 11).unwrap();
    assert!(cut.starts_with("éé") && cut.ends_with("ééé"), "{cut}");
}

#[test]
fn the_newest_record_on_the_spine_wins_and_invalid_ones_are_ignored() {
    let mut j = journal();
    let u1 = j.user("u1");
    let a1 = j.assistant("a1");
    let u2 = j.user("u2");
    let a2 = j.assistant("a2");
    j.user("u3");
    let root = j.header_entry().id.clone();
    let first = j.record(&root, summary_record(&u1, &a1, 2, "one"));
    let second = j.record(&root, summary_record(&u1, &a2, 4, "two"));
    // An invalid record (neither covers nor pruned_ids) is ignored even though it is newest.
    j.record(&root, CompactionPayload::new(CompactionPath::Summary, Trigger::Auto));
    let v = head_view(&j);
    assert_eq!(v.compaction.as_ref().unwrap().id, second);
    assert_eq!(short(&v), ["checkpoint: Codewhale handoff note.", "user: u3"]);
    // At a2's parent (u2), `second` does not apply (a2 is off the spine): `first` does.
    let v = render(&j, u2.as_str());
    assert_eq!(v.compaction.as_ref().unwrap().id, first);
    assert_eq!(short(&v), ["checkpoint: Codewhale handoff note.", "user: u2"]);
}

#[test]
fn a_prune_only_record_carrying_covers_forward_keeps_the_checkpoint() {
    let mut j = journal();
    let u1 = j.user("u1");
    let a1 = j.assistant("a1");
    j.user("u2");
    let (_, results) = j.tools(&["t1"]);
    j.assistant("done");
    let root = j.header_entry().id.clone();
    let mut s = summary_record(&u1, &a1, 2, "carried");
    s.retained_ids = vec![u1.clone()];
    let summary_id = j.record(&root, s.clone());
    let mut p = s;
    p.path = CompactionPath::PruneOnly;
    p.pruned_ids = results.clone();
    p.previous_id = Some(summary_id);
    let prune_id = j.record(&j.tip(), p);
    let v = head_view(&j);
    assert_eq!(v.compaction.as_ref().unwrap().id, prune_id);
    let l = short(&v);
    assert_eq!(l[..3], ["user: u1", "checkpoint: Codewhale handoff note.", "user: u2"]);
    assert_eq!(v.items.iter().filter(|i| i.kind == ItemKind::Checkpoint).count(), 1);
    assert!(l[4].contains("output pruned by compaction"), "{l:?}");
    check_view(&v).unwrap();
}

#[test]
fn a_record_whose_pruned_entry_is_off_the_spine_does_not_apply() {
    let mut j = journal();
    j.user("u1");
    let a = j.assistant("a1");
    let (_, results) = j.tools(&["t1"]);
    let mut p = CompactionPayload::new(CompactionPath::PruneOnly, Trigger::Auto);
    p.pruned_ids = results;
    j.record(&j.tip(), p);
    let fork = j.fork(a.as_str()).unwrap();
    j.move_head(fork);
    j.user("other");
    assert!(head_view(&j).compaction.is_none());
}

#[test]
fn covers_reaching_outside_the_spine_or_reversed_do_not_apply() {
    let mut j = journal();
    let u1 = j.user("u1");
    let a1 = j.assistant("a1");
    let root = j.header_entry().id.clone();
    j.record(&root, summary_record(&a1, &u1, 2, "reversed"));
    let mut c = CompactionPayload::new(CompactionPath::Summary, Trigger::Auto);
    c.covers = Some(Covers::new(u1.clone(), "missing".into(), 1));
    j.record(&root, c);
    assert!(head_view(&j).compaction.is_none());
}

#[test]
fn an_unknown_head_renders_an_empty_view() {
    let j = journal();
    let v = render(&j, "nope");
    assert!(v.items.is_empty());
    check_view(&v).unwrap();
}

mod check {
    use super::*;

    #[test]
    fn a_missing_result_names_the_call_and_entry() {
        let mut j = journal();
        j.user("u");
        let a = j.on_head(AssistantPayload::new(vec![Block::tool_use("t1", "shell", json!({}))]));
        let err = check_view(&head_view(&j)).unwrap_err();
        assert_eq!(err, ViewError::MissingResult { entry: a.clone(), call_id: "t1".into() });
        assert_eq!(err.entry(), &a);
        // A user message before the result is also a missing result.
        j.user("again");
        assert!(matches!(check_view(&head_view(&j)), Err(ViewError::MissingResult { .. })));
    }

    #[test]
    fn an_orphan_result_is_named() {
        let mut j = journal();
        j.user("u");
        let r = j.on_head(ToolResultPayload::new("ghost", "out", false));
        assert_eq!(
            check_view(&head_view(&j)),
            Err(ViewError::OrphanResult { entry: r, call_id: "ghost".into() })
        );
    }

    #[test]
    fn a_result_after_a_later_message_is_out_of_place() {
        let mut j = journal();
        j.user("u");
        j.on_head(AssistantPayload::new(vec![Block::tool_use("t1", "shell", json!({}))]));
        j.on_head(ToolResultPayload::new("t1", "out", false));
        j.assistant("done");
        j.on_head(ToolResultPayload::new("t1", "again", false));
        assert!(matches!(check_view(&head_view(&j)), Err(ViewError::OrphanResult { .. })));
    }

    #[test]
    fn role_order() {
        let mut j = journal();
        let a = j.assistant("first");
        assert_eq!(check_view(&head_view(&j)), Err(ViewError::FirstNotUser { entry: a }));
        let mut j = journal();
        j.user("u");
        j.assistant("a");
        let b = j.assistant("b");
        assert_eq!(
            check_view(&head_view(&j)),
            Err(ViewError::AssistantAfterAssistant { entry: b })
        );
    }

    #[test]
    fn parallel_results_may_come_in_any_order_and_duplicates_are_refused() {
        let mut j = journal();
        j.user("u");
        j.on_head(AssistantPayload::new(vec![
            Block::tool_use("t1", "shell", json!({})),
            Block::tool_use("t2", "shell", json!({})),
        ]));
        j.on_head(ToolResultPayload::new("t2", "b", false));
        j.on_head(ToolResultPayload::new("t1", "a", false));
        j.assistant("ok");
        check_view(&head_view(&j)).unwrap();

        let mut j = journal();
        j.user("u");
        let a = j.on_head(AssistantPayload::new(vec![
            Block::tool_use("t1", "shell", json!({})),
            Block::tool_use("t1", "shell", json!({})),
        ]));
        assert_eq!(
            check_view(&head_view(&j)),
            Err(ViewError::DuplicateCall { entry: a, call_id: "t1".into() })
        );
    }

    #[test]
    fn consecutive_user_items_are_legal() {
        let mut j = journal();
        j.user("a");
        j.on_head(UserPayload::anchor("b"));
        j.user("c");
        j.assistant("d");
        check_view(&head_view(&j)).unwrap();
    }
}

/// Long views are converted in two halves at once: the result must be the serial one, in order,
/// with and without a compaction in front.
#[test]
fn a_long_view_keeps_every_item_in_order() {
    let mut j = journal();
    let u0 = j.user("u0");
    let a0 = j.assistant("a0");
    let mut expected = Vec::new();
    for i in 1..20_000 {
        j.user(&format!("u{i}"));
        j.assistant(&format!("a{i}"));
        expected.push(format!("user: u{i}"));
        expected.push(format!("assistant: a{i}"));
    }
    let mut raw = vec!["user: u0".to_owned(), "assistant: a0".to_owned()];
    raw.extend(expected.iter().cloned());
    assert_eq!(lines(&head_view(&j)), raw);

    let root = j.header_entry().id.clone();
    j.record(&root, summary_record(&u0, &a0, 2, "s"));
    let v = head_view(&j);
    check_view(&v).unwrap();
    assert_eq!(v.items.len(), expected.len() + 1);
    assert_eq!(short(&v)[0], "checkpoint: Codewhale handoff note.");
    assert_eq!(lines(&v)[1..], expected[..]);
}

mod bounds_and_repairs {
    use codewhale_journal::{
        check_view, render, render_with_record, AssistantPayload, Block, Bounded, CompactionPath,
        CompactionPayload, Entry, ItemKind, Shortened, ToolResultPayload, Trigger, UserPayload,
    };

    use super::super::support::{journal, short, summary_record, Sink};

    /// A record that only bounds a user message and an assistant reply is a valid prune-only
    /// record: the texts keep a prefix, a marker block names the entry that holds them whole.
    #[test]
    fn a_bounds_only_record_cuts_texts_to_a_prefix_and_a_marker() {
        let mut j = journal();
        let u = j.on_head(UserPayload::text(format!("paste: {}", "a".repeat(50_000))));
        let a = j.on_head(AssistantPayload::new(vec![
            Block::thinking("hm", Some("sig".into())),
            Block::text("b".repeat(40_000)),
        ]));
        let mut record = CompactionPayload::new(CompactionPath::PruneOnly, Trigger::Auto);
        record.bounded = vec![Bounded::new(u.clone(), 4_000), Bounded::new(a.clone(), 2_000)];
        assert!(record.is_valid(), "bounded alone describes a change");
        let head = j.head_id().clone();
        j.record(&head, record);
        let view = render(&j, j.head_id().as_str());
        check_view(&view).unwrap();
        let user = &view.items[0];
        let texts: Vec<&str> = user.blocks().iter().filter_map(Block::as_text).collect();
        assert_eq!(texts.len(), 2);
        assert!(texts[0].len() <= 4_000 && texts[0].starts_with("paste: aaa"));
        assert!(texts[1].ends_with(&format!("bytes cut; recall entry {u} …]")), "{}", texts[1]);
        assert!(matches!(user.shortened, Some(Shortened::Bounded { max_bytes: 4_000, .. })));
        assert_eq!(user.tokens, None, "a cut item is counted again");
        let reply = &view.items[1];
        assert!(reply.blocks().iter().all(|b| b.block_type() == "text"), "thinking is dropped");
        assert!(reply.blocks()[0].as_text().unwrap().len() <= 2_000);
    }

    /// `render_with_record` is `render` after appending the record, without touching the
    /// journal.
    #[test]
    fn rendering_with_a_would_be_record_equals_rendering_after_appending_it() {
        let mut j = journal();
        let u1 = j.user("first");
        let a1 = j.assistant("one");
        j.user("second");
        j.tools(&["c1"]);
        let head = j.head_id().clone();
        let root = j.header_entry().id.clone();
        let record = Entry::new(Some(root), summary_record(&u1, &a1, 2, "summary"));
        let before = render(&j, head.as_str());
        let would_be = render_with_record(&j, head.as_str(), &record);
        assert_eq!(render(&j, head.as_str()), before, "the journal is untouched");
        j.push(record);
        assert_eq!(render(&j, head.as_str()), would_be);
        assert_eq!(would_be.items[0].kind, ItemKind::Checkpoint);
    }

    fn call(id: &str) -> AssistantPayload {
        AssistantPayload::new(vec![Block::tool_use(id, "shell", serde_json::json!({"c": id}))])
    }

    fn repair(id: &str) -> ToolResultPayload {
        let mut r = ToolResultPayload::new(id, "no result: the call was interrupted", true);
        r.repairs = true;
        r
    }

    /// An unanswered call three turns back: the repair appended at HEAD is read right after its
    /// call, so the view is sendable; a second repair for the same call is left out.
    #[test]
    fn a_repair_appended_at_head_is_read_right_after_its_call() {
        let mut j = journal();
        j.user("one");
        j.on_head(call("lost"));
        j.user("two");
        j.assistant("answer two");
        j.user("three");
        j.tools(&["ok"]);
        j.assistant("answer three");
        let before = render(&j, j.head_id().as_str());
        assert!(check_view(&before).is_err(), "the unanswered call makes the view unsendable");
        j.on_head(repair("lost"));
        j.on_head(repair("lost"));
        let view = render(&j, j.head_id().as_str());
        check_view(&view).unwrap();
        assert_eq!(
            short(&view),
            [
                "user: one",
                "assistant: call lost",
                "tool_result: result lost: no result: the call was interrupted",
                "user: two",
                "assistant: answer two",
                "user: three",
                "assistant: call ok",
                "tool_result: result ok: output of ok",
                "assistant: answer three",
            ]
        );
    }

    /// A call inside a compacted segment is covered with its repair: neither reaches the model.
    #[test]
    fn a_repair_of_a_covered_call_is_covered_with_it() {
        let mut j = journal();
        let u1 = j.user("one");
        let lost = j.on_head(call("lost"));
        j.user("two");
        let a2 = j.assistant("answer two");
        j.user("three");
        j.assistant("answer three");
        let root = j.header_entry().id.clone();
        j.record(&root, summary_record(&u1, &a2, 4, "covered"));
        j.on_head(repair("lost"));
        let view = render(&j, j.head_id().as_str());
        check_view(&view).unwrap();
        assert!(view.items.iter().all(|i| i.source != lost));
        assert_eq!(
            short(&view),
            ["checkpoint: Codewhale handoff note.", "user: three", "assistant: answer three"]
        );
    }
}
