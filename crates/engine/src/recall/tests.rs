//! Tests of `recall`: scope, search, lookup by id, caps and redaction, on journals built in
//! memory.

use codewhale_journal::{
    AssistantPayload, Block, CompactionPath, CompactionPayload, Covers, Entry, EntryId,
    HeaderPayload, ToolResultPayload, UserPayload,
};

use super::*;

/// u1 (a fact) · a1 · u2 · a2 (a long reply) · u3 · a3, with u1..a1 covered by a record;
/// and b1, a side branch off u1.
fn session() -> (Journal, Vec<EntryId>, EntryId) {
    let header = Entry::new(None, HeaderPayload::new("s", "/w"));
    let mut journal = Journal::new(header.clone()).unwrap();
    let mut ids = Vec::new();
    let mut parent = header.id.clone();
    let long = format!("Here is the plan. {}", "lorem ipsum ".repeat(200));
    let payloads: Vec<Payload> = vec![
        UserPayload::text("Remember: the staging port is 48213, not 8080.").into(),
        AssistantPayload::new(vec![Block::tool_use(
            "t1",
            "shell",
            json!({"command": "deploy --port 48213"}),
        )])
        .into(),
        UserPayload::text("Next, the docs.").into(),
        AssistantPayload::new(vec![Block::text(long)]).into(),
        UserPayload::text("And now?").into(),
        AssistantPayload::new(vec![Block::text("Done.")]).into(),
    ];
    for payload in payloads {
        let e = Entry::new(Some(parent.clone()), payload);
        parent = e.id.clone();
        ids.push(e.id.clone());
        journal.push(e);
    }
    let side = Entry::new(Some(ids[0].clone()), UserPayload::text("ORCHID on a side branch"));
    let side_id = side.id.clone();
    journal.push(side);
    let mut record = CompactionPayload::new(CompactionPath::Summary, Trigger::Manual);
    record.covers = Some(Covers::new(ids[0].clone(), ids[1].clone(), 2));
    record.note = "Codewhale handoff note. x\n\n## Objective\nDeploy.".into();
    record.summary = Some("## Objective\nDeploy.".into());
    journal.push(Entry::new(Some(header.id.clone()), record));
    (journal, ids, side_id)
}

use codewhale_journal::Trigger;

fn call(journal: &Journal, room: usize, input: Value) -> Result<String, String> {
    let view = codewhale_journal::render(journal, journal.head_id().as_str());
    let redactor = Redactor::default();
    run(
        &RecallContext { journal, view: &view, room_chars: room, redactor: &redactor, trim: None },
        &input,
    )
}

/// A journal of a header alone, and what appends an entry on its HEAD and returns the id.
fn chain() -> (Journal, impl FnMut(&mut Journal, Payload) -> EntryId) {
    let header = Entry::new(None, HeaderPayload::new("s", "/w"));
    let journal = Journal::new(header.clone()).unwrap();
    let mut parent = header.id.clone();
    let push = move |journal: &mut Journal, payload: Payload| {
        let e = Entry::new(Some(parent.clone()), payload);
        parent = e.id.clone();
        journal.push(e.clone());
        e.id
    };
    (journal, push)
}

#[test]
fn a_covered_fact_is_found_by_its_words_and_read_whole_by_id() {
    let (journal, ids, _) = session();
    let view = codewhale_journal::render(&journal, journal.head_id().as_str());
    let scoped: Vec<u32> = scope(&journal, &view, None).into_iter().map(|(p, _)| p).collect();
    assert_eq!(scoped.len(), 2, "only the covered entries: {scoped:?}");
    let hits = call(&journal, 50_000, json!({"query": "which staging port?"})).unwrap();
    assert!(hits.contains(&format!("entry {}", ids[0])), "{hits}");
    assert!(hits.contains("48213") && hits.contains("covered by compaction"), "{hits}");
    // The tool call's input is searched too.
    assert!(hits.contains(&format!("entry {}", ids[1])), "{hits}");
    let prefix = &ids[0].as_str()[..30];
    let whole = call(&journal, 50_000, json!({"entry": prefix})).unwrap();
    assert!(whole.ends_with("the staging port is 48213, not 8080."), "{whole}");
}

#[test]
fn another_branch_and_what_the_view_holds_whole_are_refused() {
    let (journal, ids, side) = session();
    let err = call(&journal, 50_000, json!({"entry": side.as_str()})).unwrap_err();
    assert!(err.contains("not on this branch"), "{err}");
    let none = call(&journal, 50_000, json!({"query": "ORCHID"})).unwrap();
    assert!(none.starts_with("no match"), "{none}");
    let err = call(&journal, 50_000, json!({"entry": ids[4].as_str()})).unwrap_err();
    assert!(err.contains("in your context whole"), "{err}");
    let err = call(&journal, 50_000, json!({"entry": "zzz"})).unwrap_err();
    assert!(err.contains("no journal entry"), "{err}");
    assert!(call(&journal, 50_000, json!({})).unwrap_err().contains("needs a query"));
}

/// What the last request's fail-open trim left out is in scope, though the view holds it;
/// and what comes back is redacted by the redactor of now.
#[test]
fn a_trimmed_entry_is_in_scope_and_results_are_redacted_again() {
    let (mut journal, mut push) = chain();
    let old = push(&mut journal, UserPayload::text("the token is tok-ABCDEF123456 for CI").into());
    push(&mut journal, AssistantPayload::new(vec![Block::text("noted")]).into());
    let kept = push(&mut journal, UserPayload::text("go on").into());
    let mut reply = AssistantPayload::new(vec![Block::text("going")]);
    let mut reads = codewhale_journal::Reads::new(kept.clone(), None);
    reads.trimmed_before = Some(kept.clone());
    reply.reads = Some(reads);
    push(&mut journal, reply.into());
    let view = codewhale_journal::render(&journal, journal.head_id().as_str());
    let scoped = scope(&journal, &view, None);
    assert_eq!(scoped.len(), 2, "the two entries before the trim: {scoped:?}");
    assert!(scoped.iter().all(|(_, a)| *a == Absence::Trimmed));
    let redactor = Redactor::new(&[], &["tok-ABCDEF123456".to_owned()]).unwrap();
    let ctx = RecallContext {
        journal: &journal,
        view: &view,
        room_chars: 10_000,
        redactor: &redactor,
        trim: None,
    };
    let out = run(&ctx, &json!({"entry": old.as_str()})).unwrap();
    assert!(out.contains("left out of the last request"), "{out}");
    assert!(!out.contains("tok-ABCDEF123456") && out.contains("REDACTED"), "{out}");
}

#[test]
fn an_output_the_last_request_bounded_is_in_scope_and_a_request_not_sent_yet_counts_too() {
    let (mut journal, mut push) = chain();
    let ask = push(&mut journal, UserPayload::text("run the tests").into());
    let call = AssistantPayload::new(vec![Block::tool_use("c1", "shell", json!({"command": "t"}))]);
    push(&mut journal, call.into());
    let output = format!("{}\nfailed: parser::nested_arrays\n", "ok\n".repeat(5_000));
    let result = push(&mut journal, ToolResultPayload::new("c1", output, false).into());
    let view = codewhale_journal::render(&journal, journal.head_id().as_str());
    // Not yet sent: the view carries everything whole, so nothing is in scope.
    assert!(scope(&journal, &view, None).is_empty());
    // The request about to be sent bounds the output (it is not journaled yet).
    let cut = RequestCut { first: None, bounded: vec![result.clone()] };
    assert_eq!(scope(&journal, &view, Some(&cut)).len(), 1);
    let redactor = Redactor::default();
    let ctx = RecallContext {
        journal: &journal,
        view: &view,
        room_chars: 1 << 20,
        redactor: &redactor,
        trim: Some(&cut),
    };
    let out = run(&ctx, &json!({"query": "which test failed nested_arrays"})).unwrap();
    assert!(out.contains("parser::nested_arrays"), "{out}");
    // Sent: its reply records the bound, and the same output is in scope from the journal.
    let mut reply = AssistantPayload::new(vec![Block::text("one failure")]);
    let mut reads = codewhale_journal::Reads::new(result.clone(), None);
    reads.bounded = Some(vec![codewhale_journal::Bounded::new(result.clone(), 8_192)]);
    reply.reads = Some(reads);
    push(&mut journal, reply.into());
    let view = codewhale_journal::render(&journal, journal.head_id().as_str());
    let scoped = scope(&journal, &view, None);
    assert_eq!(scoped.len(), 1, "{scoped:?}");
    assert_eq!(journal.id_at(scoped[0].0).to_string(), result.to_string());
    assert_eq!(scoped[0].1, Absence::Bounded);
    assert_ne!(journal.id_at(scoped[0].0).to_string(), ask.to_string());
}

#[test]
fn results_stay_inside_the_room_the_budget_leaves() {
    let (mut journal, ids, _) = session();
    // Cover the long reply too.
    let mut record = CompactionPayload::new(CompactionPath::Summary, Trigger::Manual);
    record.covers = Some(Covers::new(ids[0].clone(), ids[3].clone(), 4));
    record.note = "Codewhale handoff note. y\n\n## Objective\nDeploy.".into();
    let header = journal.header_entry().id.clone();
    journal.push(Entry::new(Some(header), record));
    let out = call(&journal, 400, json!({"entry": ids[3].as_str()})).unwrap();
    assert!(out.chars().count() <= 400 && out.contains("bytes cut; the limit was"), "{out}");
    let out = call(&journal, 50_000, json!({"entry": ids[3].as_str(), "max_chars": 300})).unwrap();
    assert!(out.chars().count() <= 300, "{}", out.chars().count());
    let err = call(&journal, 100, json!({"query": "port"})).unwrap_err();
    assert!(err.contains("no room"), "{err}");
}

#[test]
fn terms_drop_stopwords_and_punctuation() {
    assert_eq!(terms("What was the error code of `deploy.sh`?"), ["error", "code", "deploy.sh"]);
    assert_eq!(terms("the a of"), Vec::<String>::new());
}

#[test]
fn snippets_are_one_line_around_the_match() {
    let text = format!("{}needle\nin a haystack{}", "x ".repeat(300), " y".repeat(300));
    let at = text.find("needle").unwrap();
    let s = snippet(&text, at);
    assert!(s.starts_with('…') && s.ends_with('…') && s.contains("needle in a haystack"));
    assert!(s.chars().count() <= 2 * SNIPPET_SIDE + 2, "{}", s.chars().count());
    assert_eq!(snippet("short é text", 0), "short é text");
}

#[test]
fn cap_says_how_much_is_left_out() {
    let out = cap("é".repeat(1000), 500);
    assert!(out.chars().count() <= 500, "{}", out.chars().count());
    assert!(out.ends_with("[… 1400 of 2000 bytes cut; the limit was 500 characters: ask for less, or a more specific query …]"), "{out}");
    assert_eq!(cap("short".into(), 500), "short");
}

#[test]
fn the_schema_has_the_fixed_optional_fields() {
    let s = spec();
    assert_eq!(s.name, "recall");
    let props = s.input_schema["properties"].as_object().unwrap();
    let names: Vec<&str> = props.keys().map(String::as_str).collect();
    assert_eq!(names.len(), 3);
    for n in ["query", "entry", "max_chars"] {
        assert!(names.contains(&n));
    }
    assert!(s.input_schema.get("required").is_none());
}

/// An old entry quoting the phrase the model looks for, then a dozen newer ones where its
/// words are frequent but never together, all covered: the phrase's entry is listed first.
#[test]
fn an_exact_phrase_in_the_covered_part_ranks_first() {
    let (mut journal, mut push) = chain();
    let quoted = push(
        &mut journal,
        ToolResultPayload::new("c0", "step 3/7: error: disk quota exceeded\nbuild stopped", true)
            .into(),
    );
    let mut last = quoted.clone();
    for n in 0..12 {
        let noise = format!(
            "disk usage {n}: the quota report shows every disk; nothing exceeded yet. {}{}",
            "quota ".repeat(5),
            "disk exceeded ".repeat(10)
        );
        last = push(&mut journal, UserPayload::text(noise).into());
    }
    push(&mut journal, UserPayload::text("go on").into());
    push(&mut journal, AssistantPayload::new(vec![Block::text("on it")]).into());
    let mut record = CompactionPayload::new(CompactionPath::Summary, Trigger::Manual);
    record.covers = Some(Covers::new(quoted.clone(), last, 13));
    record.note = "Codewhale handoff note. x\n\n## Objective\nBuild.".into();
    record.summary = Some("## Objective\nBuild.".into());
    let header = journal.header_entry().id.clone();
    journal.push(Entry::new(Some(header), record));
    for query in ["disk quota exceeded", "\"Disk  Quota exceeded\""] {
        let out = call(&journal, 1 << 20, json!({"query": query})).unwrap();
        let first = out.lines().find(|l| l.starts_with("1. ")).unwrap_or_default();
        assert!(first.contains(quoted.as_str()), "{query}: {out}");
        assert!(first.ends_with("exact phrase"), "{first}");
        assert!(out.contains("error: disk quota exceeded"), "the snippet is the phrase: {out}");
        assert_eq!(out.matches("exact phrase").count(), 1, "{out}");
    }
    // A phrase of common words is searched for, rather than refused; no entry holds it.
    let out = call(&journal, 1 << 20, json!({"query": "to be or not to be"})).unwrap();
    assert!(!out.contains("exact phrase"), "{out}");
}
