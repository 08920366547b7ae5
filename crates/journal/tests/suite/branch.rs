//! HEAD replay and the branch operations.

use codewhale_journal::{BranchError, HeadReason, Payload};

use super::support::{journal, summary_record, Sink};

fn reason(e: &codewhale_journal::Entry) -> (&HeadReason, &str) {
    match &e.payload {
        Payload::Head(h) => (&h.reason, h.to.as_str()),
        _ => unreachable!(),
    }
}

#[test]
fn the_header_is_the_first_head_and_the_chain_moves_it() {
    let mut j = journal();
    assert_eq!(j.head_id(), &j.header_entry().id);
    let u = j.user("u");
    assert_eq!(j.head_id(), &u);
}

#[test]
fn a_write_on_a_side_branch_leaves_head_alone() {
    let mut j = journal();
    let u = j.user("u");
    let a = j.assistant("a");
    let side = j.record(&u, codewhale_journal::UserPayload::text("side"));
    assert_eq!(j.head_id(), &a);
    assert_eq!(j.tips().len(), 2);
    assert!(j.tips().iter().any(|t| t.id == side));
}

#[test]
fn compaction_records_never_move_head_and_branch_summaries_extend_it() {
    let mut j = journal();
    let u = j.user("u");
    let a = j.assistant("a");
    j.record(&a, summary_record(&u, &a, 2, "n"));
    assert_eq!(j.head_id(), &a);
    // A branch summary is appended on HEAD like a message: it moves HEAD, and the model reads
    // it as a user-role text.
    let s = j.record(&a, codewhale_journal::BranchSummaryPayload::new(u.clone(), "tried X"));
    assert_eq!(j.head_id(), &s);
    let view = codewhale_journal::render(&j, s.as_str());
    let last = view.items.last().unwrap();
    assert_eq!(last.kind, codewhale_journal::ItemKind::BranchSummary);
    assert_eq!(last.role, codewhale_journal::Role::User);
    let codewhale_journal::ItemContent::Blocks(blocks) = &last.content else { panic!() };
    assert_eq!(blocks[0].as_text(), Some("What was tried on a branch you left: tried X"));
}

#[test]
fn retry_edit_fork_checkout_rewind() {
    let mut j = journal();
    let u1 = j.user("u1");
    let a1 = j.assistant("a1");
    let u2 = j.user("u2");
    let a2 = j.assistant("a2");

    let retry = j.retry(a2.as_str()).unwrap();
    assert_eq!(reason(&retry), (&HeadReason::Retry, u2.as_str()));
    assert_eq!(retry.parent.as_ref(), Some(&a2), "a head record's parent is the HEAD it left");
    j.move_head(retry);
    assert_eq!(j.head_id(), &u2);
    let a2b = j.assistant("a2 again");
    assert_eq!(j.tips().len(), 2);

    let edit = j.edit(u2.as_str()).unwrap();
    assert_eq!(reason(&edit), (&HeadReason::Edit, a1.as_str()));
    j.move_head(edit);
    let u2b = j.user("u2 edited");
    assert_eq!(j.get(u2b.as_str()).unwrap().parent.as_ref(), Some(&a1));

    let checkout = j.checkout(a2b.as_str()).unwrap();
    j.move_head(checkout);
    assert_eq!(j.head_id(), &a2b);

    let rewind = j.rewind(u1.as_str()).unwrap();
    assert_eq!(reason(&rewind).0, &HeadReason::Rewind);
    j.move_head(rewind);
    assert_eq!(j.head_id(), &u1);
    assert_eq!(j.rewind(a2.as_str()), Err(BranchError::NotOnSpine(a2.clone())));

    let fork = j.fork(a1.as_str()).unwrap();
    assert_eq!(reason(&fork).0, &HeadReason::Fork);
    j.move_head(fork);
    assert_eq!(j.head_id(), &a1);
}

#[test]
fn branch_operations_refuse_the_wrong_targets() {
    let mut j = journal();
    let u = j.user("u");
    let a = j.assistant("a");
    let rec = j.record(&a, summary_record(&u, &a, 2, "n"));
    assert!(matches!(j.retry(u.as_str()), Err(BranchError::WrongKind { .. })));
    assert!(matches!(j.edit(a.as_str()), Err(BranchError::WrongKind { .. })));
    assert!(matches!(j.checkout(rec.as_str()), Err(BranchError::NotConversation { .. })));
    assert!(matches!(j.fork("nope"), Err(BranchError::NotFound(_))));
    let anchor = j.on_head(codewhale_journal::UserPayload::anchor("pin"));
    assert!(matches!(j.edit(anchor.as_str()), Err(BranchError::WrongKind { .. })));
}

#[test]
fn a_duplicate_id_is_reported_and_ignored_on_load() {
    let mut j = journal();
    let u = j.user("u");
    let mut lines: Vec<codewhale_journal::Entry> = j.entries().into_iter().cloned().collect();
    let mut dup = lines[1].clone();
    dup.payload = codewhale_journal::UserPayload::text("impostor").into();
    lines.push(dup);
    let a = codewhale_journal::Entry::new(
        Some(u.clone()),
        codewhale_journal::UserPayload::text("after"),
    );
    lines.push(a.clone());
    let j = codewhale_journal::Journal::from_entries(lines).unwrap();
    assert_eq!(j.entries().len(), 3);
    assert_eq!(j.line_of(a.id.as_str()), Some(4));
    assert!(matches!(j.problems(), [(3, codewhale_journal::DagProblem::DuplicateId { .. })]));
    assert_eq!(j.head_id(), &a.id);
}

#[test]
fn a_unique_prefix_names_an_entry_and_an_ambiguous_one_says_so() {
    let mut j = journal();
    let u1 = j.user("u1");
    let a1 = j.assistant("a1");
    let u2 = j.user("u2");
    // UUIDv7 ids of entries written together share their time prefix; the tail tells them apart.
    let others = [j.header_entry().id.clone(), a1, u2];
    let unique = (8..u1.as_str().len())
        .map(|n| &u1.as_str()[..n])
        .find(|p| others.iter().all(|o| !o.as_str().starts_with(p)))
        .unwrap();
    assert_eq!(j.resolve_entry(unique).unwrap(), u1);
    assert!(j.rewind(unique).is_ok());
    let common = &u1.as_str()[..4];
    assert!(matches!(
        j.resolve_entry(common),
        Err(BranchError::Ambiguous { count, .. }) if count >= 2
    ));
    assert!(matches!(j.resolve_entry("zzzz"), Err(BranchError::NotFound(_))));
}

#[test]
fn an_id_ending_as_the_pickers_show_it_names_an_entry() {
    let mut j = journal();
    let u1 = j.user("u1");
    let a1 = j.assistant("a1");
    let ending = &u1.as_str()[u1.as_str().len() - 8..];
    assert_eq!(j.resolve_entry(&format!("…{ending}")).unwrap(), u1);
    assert_eq!(j.resolve_entry(ending).unwrap(), u1, "the ellipsis may be left out");
    assert!(j.checkout(&format!("...{}", &a1.as_str()[a1.as_str().len() - 8..])).is_ok());
    // A prefix still wins over an ending: every id of the session starts alike.
    let common = &u1.as_str()[..4];
    assert!(matches!(j.resolve_entry(common), Err(BranchError::Ambiguous { .. })));
}
