//! The fields docs/journal-format.md lists are on every written line, `null` when unset, and lines
//! written without them (by older versions or other tools) still read.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use codewhale_journal::{
    AssistantPayload, Block, BranchSummaryPayload, CompactionPath, CompactionPayload, Entry,
    EntryId, Payload, Reads, Trigger,
};
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/journal").join(name)
}

/// The line of `payload` as JSON.
fn line_json(payload: impl Into<Payload>) -> Value {
    let entry = Entry::new(Some(EntryId::new()), payload);
    serde_json::from_str(&entry.to_line().unwrap()).unwrap()
}

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

fn set<'a>(k: &[&'a str]) -> BTreeSet<&'a str> {
    k.iter().copied().collect()
}

#[test]
fn an_assistant_entry_writes_every_contract_field() {
    let mut a = AssistantPayload::new(vec![Block::text("hi")]);
    a.reads = Some(Reads::new(EntryId::new(), None));
    let line = line_json(a);
    let payload = &line["payload"];
    assert_eq!(keys(payload), set(&["content", "model", "stop_reason", "usage", "reads"]));
    assert_eq!(keys(&payload["reads"]), set(&["head", "summary"]), "trimmed_before is optional");
    assert!(payload["reads"]["summary"].is_null());
    assert!(payload["model"].is_null() && payload["usage"].is_null());

    let bare = line_json(AssistantPayload::new(vec![Block::text("hi")]));
    assert!(bare["payload"]["reads"].is_null());
}

#[test]
fn a_prune_only_compaction_record_writes_every_contract_field_as_null() {
    let mut c = CompactionPayload::new(CompactionPath::PruneOnly, Trigger::Auto);
    c.pruned_ids = vec![EntryId::new()];
    let line = line_json(c);
    let payload = &line["payload"];
    let contract = [
        "summary",
        "covers",
        "retained_ids",
        "pruned_ids",
        "bounded",
        "files_touched",
        "anchors",
        "trigger",
        "focus",
        "path",
        "previous_id",
        "model",
        "tokens_before",
        "tokens_after",
        "receipt",
    ];
    let mut expected = set(&contract);
    expected.insert("note");
    assert_eq!(keys(payload), expected);
    for k in [
        "summary",
        "covers",
        "anchors",
        "focus",
        "previous_id",
        "model",
        "tokens_before",
        "tokens_after",
        "receipt",
    ] {
        assert!(payload[k].is_null(), "{k}: {}", payload[k]);
    }
}

#[test]
fn a_branch_summary_writes_its_parent_branch_as_null() {
    let line = line_json(BranchSummaryPayload::new(EntryId::new(), "tried X"));
    let fields = ["branch_id", "summary", "parent_branch_id", "from", "tip"];
    assert_eq!(keys(&line["payload"]), set(&fields));
}

#[test]
fn lines_without_the_null_fields_still_read_and_are_written_whole() {
    let line = r#"{"v":1,"id":"c","parent":"p","kind":"compaction","ts":"2026-11-29T18:00:00.000Z","payload":{"pruned_ids":["t"],"trigger":"auto","path":"prune-only"}}"#;
    let e = Entry::parse_line(line).unwrap();
    let Payload::Compaction(c) = &e.payload else { panic!("not a compaction") };
    assert_eq!((c.summary.as_deref(), c.note.as_str(), c.receipt.as_ref()), (None, "", None));
    let written: Value = serde_json::from_str(&e.to_line().unwrap()).unwrap();
    assert!(written["payload"]["covers"].is_null());
    assert!(written["payload"]["receipt"].is_null());

    let line = r#"{"v":1,"id":"a","parent":"p","kind":"assistant","ts":"2026-11-29T18:00:00.000Z","payload":{"content":[],"reads":{"head":"p"}}}"#;
    let e = Entry::parse_line(line).unwrap();
    let Payload::Assistant(a) = &e.payload else { panic!("not an assistant entry") };
    assert_eq!(a.reads.as_ref().map(|r| r.summary.clone()), Some(None));
}

#[test]
fn the_sound_fixture_is_written_exactly_as_this_version_writes() {
    let text = std::fs::read_to_string(fixture("sound.jsonl")).unwrap();
    for line in text.lines() {
        assert_eq!(Entry::parse_line(line).unwrap().to_line().unwrap(), line);
    }
}
