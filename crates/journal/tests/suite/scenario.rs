//! The scenario suite: chat → fork → checkout → compact → chat → compact again → chat →
//! reload, on a real file, asserting HEAD and the rendered view after every step.

use codewhale_journal::{
    check_view, render, CompactionPayload, EntryId, HeaderPayload, Journal, JournalFile, View,
};

use super::support::{lines, short, summary_record, Sink};

fn view(f: &JournalFile) -> View {
    let j = f.journal();
    let v = render(j, j.head_id().as_str());
    check_view(&v).unwrap();
    v
}

fn view_at(j: &Journal, head: &EntryId) -> View {
    let v = render(j, head.as_str());
    check_view(&v).unwrap();
    v
}

fn checkpoints(v: &View) -> usize {
    v.items.iter().filter(|i| i.kind == codewhale_journal::ItemKind::Checkpoint).count()
}

#[test]
fn chat_fork_checkout_compact_chat_compact_chat_reload() {
    let dir = tempfile::tempdir().unwrap();
    let mut f =
        JournalFile::create_session(dir.path(), HeaderPayload::new("s-1", "/home/dev/p")).unwrap();

    // 1. chat
    let u1 = f.user("u1");
    let (calls, results) = f.tools(&["c1", "c2"]);
    let a1 = f.assistant("a1");
    let u2 = f.user("u2");
    let a2 = f.assistant("a2");
    assert_eq!(f.tip(), a2);
    let branch_a = [
        "user: u1",
        "assistant: call c1 | call c2",
        "tool_result: result c1: output of c1",
        "tool_result: result c2: output of c2",
        "assistant: a1",
        "user: u2",
        "assistant: a2",
    ];
    assert_eq!(lines(&view(&f)), branch_a);

    // 2. fork from inside what will later be compacted (the second tool result), chat there
    let fork = f.journal().fork(results[1].as_str()).unwrap();
    f.move_head(fork);
    assert_eq!(f.tip(), results[1]);
    let b1 = f.user("b1");
    let b2 = f.assistant("b2");
    assert_eq!(f.tip(), b2);
    let branch_b = [
        "user: u1",
        "assistant: call c1 | call c2",
        "tool_result: result c1: output of c1",
        "tool_result: result c2: output of c2",
        "user: b1",
        "assistant: b2",
    ];
    assert_eq!(lines(&view(&f)), branch_b, "branch B never sees u2/a2");
    assert_eq!(f.journal().get(b1.as_str()).unwrap().parent.as_ref(), Some(&results[1]));

    // 3. checkout branch A's tip
    let checkout = f.journal().checkout(a2.as_str()).unwrap();
    f.move_head(checkout);
    assert_eq!(f.tip(), a2);
    assert_eq!(lines(&view(&f)), branch_a, "branch A never sees b1/b2");

    // 4. compact by hand: u1..a1 covered, u1 retained; the record never moves HEAD
    let header_id = f.journal().header_entry().id.clone();
    let mut first = summary_record(&u1, &a1, 5, "N1");
    first.retained_ids = vec![u1.clone()];
    let r1 = f.record(&header_id, first);
    f.sync_blocking().unwrap();
    assert_eq!(f.tip(), a2, "a compaction record leaves HEAD alone");
    let v = view(&f);
    assert_eq!(
        short(&v),
        ["user: u1", "checkpoint: Codewhale handoff note.", "user: u2", "assistant: a2"]
    );
    assert_eq!(v.compaction.as_ref().map(|c| &c.id), Some(&r1));
    assert_eq!(checkpoints(&v), 1);
    assert!(!lines(&v).iter().any(|l| l.contains("call c1")), "covered calls are gone");
    // Branch B forked inside the covered segment: its context was never compacted.
    assert_eq!(lines(&view_at(f.journal(), &b2)), branch_b);

    // 5. chat
    let _u3 = f.user("u3");
    let a3 = f.assistant("a3");
    let v = view(&f);
    assert_eq!(
        short(&v),
        [
            "user: u1",
            "checkpoint: Codewhale handoff note.",
            "user: u2",
            "assistant: a2",
            "user: u3",
            "assistant: a3"
        ]
    );

    // 6. compact again: same first, later last; the new note replaces the old one
    let mut second: CompactionPayload = summary_record(&u1, &a2, 7, "N2");
    second.retained_ids = vec![u1.clone(), u2.clone()];
    second.previous_id = Some(r1.clone());
    let r2 = f.record(&header_id, second);
    f.sync_blocking().unwrap();
    assert_eq!(f.tip(), a3);
    let v = view(&f);
    assert_eq!(checkpoints(&v), 1, "never two checkpoints");
    assert_eq!(v.compaction.as_ref().map(|c| &c.id), Some(&r2));
    let all = lines(&v);
    assert!(
        all.iter().any(|l| l.contains("N2")) && !all.iter().any(|l| l.contains("N1")),
        "no stacking: {all:?}"
    );
    assert_eq!(
        short(&v),
        [
            "user: u1",
            "user: u2",
            "checkpoint: Codewhale handoff note.",
            "user: u3",
            "assistant: a3"
        ]
    );

    // 7. chat
    let _u4 = f.user("u4");
    let a4 = f.assistant("a4");
    assert_eq!(f.tip(), a4);
    let before = view(&f);
    let before_b = view_at(f.journal(), &b2);
    f.sync_blocking().unwrap();
    let before_lines = std::fs::read(f.path()).unwrap();
    let path = f.path().to_owned();
    f.close().unwrap();

    // 8. reload: same HEAD, byte-identical views
    let (f, warnings) = JournalFile::open(&path).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(std::fs::read(&path).unwrap() == before_lines, "opening a sound file changes nothing");
    assert_eq!(f.tip(), a4);
    let after = view(&f);
    assert_eq!(after, before);
    assert_eq!(format!("{after:?}"), format!("{before:?}"));
    assert_eq!(view_at(f.journal(), &b2), before_b);
    // HEAD independence: rendering any head is a function of the data alone.
    assert_eq!(view_at(f.journal(), &a3).compaction.map(|c| c.id), Some(r2.clone()));
    assert_eq!(calls.as_str().len(), 36);
    f.close().unwrap();
}

#[test]
fn a_session_continues_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = JournalFile::create_session(dir.path(), HeaderPayload::new("s-2", "/w")).unwrap();
    f.user("one");
    f.assistant("two");
    let path = f.path().to_owned();
    f.close().unwrap();
    let (mut f, _) = JournalFile::open(&path).unwrap();
    let u = f.user("three");
    assert_eq!(
        f.journal().get(u.as_str()).unwrap().parent,
        Some(f.journal().entries()[2].id.clone())
    );
    f.close().unwrap();
    let loaded = codewhale_journal::load_read_only(&path).unwrap();
    assert_eq!(
        short(&render(&loaded.journal, u.as_str())),
        ["user: one", "assistant: two", "user: three"]
    );
}
