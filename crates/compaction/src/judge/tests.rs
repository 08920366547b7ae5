use codewhale_journal::{
    ActiveCompaction, Block, Bounded, CompactionPath, EntryId, ItemContent, ItemKind,
    Role as JRole, Trigger, ViewItem,
};

use super::*;
use crate::message::Message;

/// Two exchanges; the first answer is long. Items and plain messages name the same things.
struct Case {
    ids: Vec<EntryId>,
    texts: Vec<String>,
    tokens: Vec<u64>,
}

impl Case {
    fn new() -> Case {
        let texts = vec![
            "why does parse() fail on empty input?".to_owned(),
            format!("It reads past the end: {}", "the loop over bytes ".repeat(200)),
            "fix it and add a test".to_owned(),
            "Done: parse() returns an error on empty input.".to_owned(),
        ];
        Case { ids: (0..4).map(|_| EntryId::new()).collect(), texts, tokens: vec![10, 800, 8, 12] }
    }

    fn plain(&self) -> PlainView {
        let messages =
            self.texts
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    if i % 2 == 0 {
                        Message::user(t.clone())
                    } else {
                        Message::assistant(t.clone())
                    }
                })
                .collect();
        PlainView {
            messages,
            tokens: self.tokens.clone(),
            sources: self.ids.clone(),
            pruned: vec![],
        }
    }

    fn view(&self, entry: &Entry) -> View {
        let items = self
            .texts
            .iter()
            .zip(&self.ids)
            .enumerate()
            .map(|(i, (text, id))| ViewItem {
                source: id.clone(),
                role: if i % 2 == 0 { JRole::User } else { JRole::Assistant },
                kind: if i % 2 == 0 { ItemKind::User } else { ItemKind::Assistant },
                content: ItemContent::Blocks(vec![Block::text(text.clone())]),
                tokens: None,
                shortened: None,
            })
            .collect();
        let Payload::Compaction(record) = &entry.payload else { panic!("not a record") };
        View {
            head: self.ids[3].clone(),
            items,
            compaction: Some(ActiveCompaction {
                id: entry.id.clone(),
                record: (**record).clone(),
                tokens: None,
            }),
        }
    }

    /// A prune-only record bounding the long first answer.
    fn record(&self) -> Entry {
        let mut record = CompactionPayload::new(CompactionPath::PruneOnly, Trigger::Auto);
        record.bounded.push(Bounded::new(self.ids[1].clone(), 200));
        Entry::new(Some(self.ids[3].clone()), record)
    }
}

fn judged<'a>(
    before: &'a PlainView,
    entry: &'a Entry,
    view: &'a View,
    plain: &'a PlainView,
) -> Judged<'a> {
    Judged {
        before,
        previous: None,
        entry,
        view,
        plain,
        anchors: None,
        live_plan: None,
        tail_target: 1_000,
    }
}

#[test]
fn a_smaller_view_that_keeps_the_contract_may_be_written() {
    let case = Case::new();
    let before = case.plain();
    let entry = case.record();
    let view = case.view(&entry);
    let mut after = case.plain();
    after.tokens[1] = 60;
    after.messages[1] = Message::assistant("It reads past the end: the loop over bytes […]");
    assert_eq!(judge(&judged(&before, &entry, &view, &after)), Ok((830, 90)));
}

#[test]
fn a_record_that_changes_nothing_or_names_another_branch_is_refused() {
    let case = Case::new();
    let before = case.plain();
    let entry = case.record();
    let Payload::Compaction(record) = &entry.payload else { panic!("not a record") };
    let view = case.view(&entry);
    let same = Judged { previous: Some(record), ..judged(&before, &entry, &view, &before) };
    assert_eq!(judge(&same), Err(Refusal::NoChange));

    let mut elsewhere = view.clone();
    elsewhere.compaction = None;
    let refused = judge(&judged(&before, &entry, &elsewhere, &before));
    assert!(
        matches!(&refused, Err(Refusal::Failed(why)) if why.contains("current branch")),
        "{refused:?}"
    );
}

#[test]
fn losing_a_user_message_of_the_last_round_breaks_the_contract() {
    let case = Case::new();
    let before = case.plain();
    let entry = case.record();
    let view = case.view(&entry);
    let mut after = case.plain();
    after.messages[2] = Message::user("rewrite the parser");
    let refused = judge(&judged(&before, &entry, &view, &after));
    assert!(
        matches!(&refused, Err(Refusal::Failed(why)) if why.contains("survival contract")),
        "{refused:?}"
    );
}

#[test]
fn a_view_that_does_not_shrink_gains_nothing() {
    let case = Case::new();
    let before = case.plain();
    let entry = case.record();
    let view = case.view(&entry);
    let refused = judge(&judged(&before, &entry, &view, &before));
    assert!(
        matches!(&refused, Err(Refusal::NoGain(why)) if why.contains("830 → 830")),
        "{refused:?}"
    );
}

#[test]
fn anchors_the_view_carried_must_survive_a_prune_only_record() {
    let case = Case::new();
    let mut before = case.plain();
    before.messages.insert(0, Message::user("ANCHOR: never touch the lockfile"));
    before.tokens.insert(0, 7);
    let entry = case.record();
    let view = case.view(&entry);
    let mut after = case.plain();
    after.tokens[1] = 60;
    let anchored = Judged {
        anchors: Some("ANCHOR: never touch the lockfile"),
        ..judged(&before, &entry, &view, &after)
    };
    let refused = judge(&anchored);
    assert!(
        matches!(&refused, Err(Refusal::Failed(why)) if why.contains("anchors text")),
        "{refused:?}"
    );
}
