//! The indexed, lazy open path against a full parse: for random journals — forks, compaction
//! and prune records, anchors and their withdrawal, repairs, notices, and lines whose content
//! is malformed — a journal opened from its file (with no sidecar, and through a sidecar that
//! covers a prefix) holds the same entries, replays the same HEAD, reports the same problems
//! (duplicate ids, dangling parents) and renders exactly the same view at every head as one
//! built by parsing every line, and both skip the same lines.

use std::io::Write;
use std::path::Path;

use codewhale_journal::{
    index_path, load_read_only, render, write_index, Entry, EntryId, Journal, JournalFile,
    LoadWarning, Payload, SystemPayload, ToolResultPayload, UserPayload,
};
use proptest::prelude::*;

use super::support::{journal, Sink};
use super::view_props::{apply, op, Op};

#[derive(Clone, Debug)]
enum Step {
    Base(Op),
    Anchor,
    /// Withdraw the n-th anchor (modulo), if any.
    Withdraw(u16),
    /// A late result for the n-th call (modulo), marked as a repair.
    Repair(u16),
    Notice,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        12 => op().prop_map(Step::Base),
        1 => Just(Step::Anchor),
        1 => any::<u16>().prop_map(Step::Withdraw),
        1 => any::<u16>().prop_map(Step::Repair),
        1 => Just(Step::Notice),
    ]
}

/// How a line is spoiled.
#[derive(Clone, Copy, Debug)]
enum Spoil {
    /// A content block without its required field: valid JSON, not a valid entry.
    Blocks,
    /// Cut in the middle: not JSON.
    Cut,
}

fn build(steps: &[Step]) -> Journal {
    let mut j = journal();
    j.user("start");
    let mut calls = 0;
    let mut anchors: Vec<EntryId> = Vec::new();
    for s in steps {
        match s {
            Step::Base(op) => apply(&mut j, op, &mut calls),
            Step::Anchor => {
                let mut u = UserPayload::text("pinned: keep the tests green");
                u.anchor = true;
                anchors.push(j.on_head(u));
            }
            Step::Withdraw(n) if !anchors.is_empty() => {
                let mut u = UserPayload::synthetic("the pin no longer applies");
                u.withdraws = Some(anchors[*n as usize % anchors.len()].clone());
                j.on_head(u);
            }
            Step::Withdraw(_) => {}
            Step::Repair(n) if calls > 0 => {
                let mut r = ToolResultPayload::new(
                    format!("call-{}", u32::from(*n) % calls + 1),
                    "late".repeat(200),
                    false,
                );
                r.repairs = true;
                j.on_head(r);
            }
            Step::Repair(_) => {}
            Step::Notice => {
                j.on_head(SystemPayload::new(codewhale_journal::Level::Info, "a notice"));
            }
        }
    }
    j
}

fn spoil(line: &str, how: Spoil) -> String {
    match how {
        Spoil::Blocks if line.contains(r#""content":["#) => {
            line.replacen(r#""content":["#, r#""content":[{"type":"text"},"#, 1)
        }
        // Kinds without content blocks: a payload that is not an object.
        Spoil::Blocks => line.replacen(r#""payload":{"#, r#""payload":[{"#, 1).replacen(
            r#"},"tokens""#,
            r#"}],"tokens""#,
            1,
        ),
        Spoil::Cut => line[..line.len() / 2].to_owned(),
    }
}

/// The reference: every line parsed on its own, the unusable ones skipped.
fn full_parse(lines: &[String]) -> (Journal, Vec<u32>) {
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        match Entry::parse_line(l) {
            Ok(e) => entries.push(e),
            Err(_) => skipped.push(i as u32 + 1),
        }
    }
    (Journal::from_entries(entries).unwrap(), skipped)
}

fn write(path: &Path, lines: &[String]) {
    let mut f = std::fs::File::create(path).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

fn append(path: &Path, lines: &[String]) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

fn malformed_lines(warnings: &[LoadWarning]) -> Vec<u32> {
    warnings
        .iter()
        .filter_map(|w| match w {
            LoadWarning::Malformed(m) => Some(m.line),
            _ => None,
        })
        .collect()
}

/// Asserts `loaded` is `reference` as far as anyone can tell.
fn same(loaded: &Journal, reference: &Journal) -> Result<(), TestCaseError> {
    prop_assert_eq!(loaded.head_id(), reference.head_id());
    prop_assert_eq!(loaded.len(), reference.len());
    prop_assert_eq!(loaded.entries(), reference.entries());
    let problems = |j: &Journal| j.problems().iter().map(|(_, p)| p.clone()).collect::<Vec<_>>();
    prop_assert_eq!(problems(loaded), problems(reference));
    for pos in 0..reference.len() as u32 {
        if reference.entry_at(pos).payload.is_model_visible() {
            let head = reference.id_at(pos);
            prop_assert_eq!(render(loaded, &head), render(reference, &head));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn indexed_and_lazy_opens_render_what_a_full_parse_renders(
        steps in proptest::collection::vec(step(), 1..50),
        spoils in proptest::collection::vec((any::<u16>(), prop_oneof![
            Just(Spoil::Blocks), Just(Spoil::Cut)]), 0..4),
        copies in proptest::collection::vec((any::<u16>(), any::<u16>()), 0..3),
        split in any::<u16>(),
    ) {
        let built = build(&steps);
        let mut lines: Vec<String> =
            built.entries().iter().map(|e| e.to_line().unwrap()).collect();
        // Spoil lines between the header and the last line (a spoiled last line is a torn
        // tail, reported as such).
        if lines.len() > 2 {
            for (at, how) in &spoils {
                let i = 1 + *at as usize % (lines.len() - 2);
                lines[i] = spoil(&lines[i], *how);
            }
        }
        // Lines written twice (a duplicate id: reported, and the copy ignored).
        for (from, to) in &copies {
            if lines.len() > 2 {
                let from = 1 + *from as usize % (lines.len() - 1);
                let to = from + 1 + *to as usize % (lines.len() - from);
                let copy = lines[from].clone();
                lines.insert(to.min(lines.len() - 1), copy);
            }
        }
        let (reference, skipped) = full_parse(&lines);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");

        // No sidecar: every line scanned.
        write(&path, &lines);
        let cold = load_read_only(&path).unwrap();
        prop_assert_eq!(malformed_lines(&cold.warnings), skipped.clone());
        same(&cold.journal, &reference)?;

        // A sidecar covering a prefix, the rest appended after it was written.
        let cut = 1 + split as usize % lines.len();
        write(&path, &lines[..cut]);
        prop_assert!(write_index(&path).unwrap());
        append(&path, &lines[cut..]);
        let warm = load_read_only(&path).unwrap();
        prop_assert_eq!(malformed_lines(&warm.warnings), skipped.clone());
        same(&warm.journal, &reference)?;

        // The locking open reads through the same sidecar.
        let (file, warnings) = JournalFile::open(&path).unwrap();
        prop_assert_eq!(malformed_lines(&warnings), skipped);
        same(file.journal(), &reference)?;
    }
}

/// A sidecar describes one file: after the file is replaced by another session of the same
/// length, the sidecar is ignored and the new file is read in full.
#[test]
fn a_sidecar_is_not_used_for_a_file_it_does_not_describe() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let lines = |text: &str| -> Vec<String> {
        let mut j = journal();
        j.user(text);
        j.assistant(text);
        j.entries().iter().map(|e| e.to_line().unwrap()).collect()
    };
    write(&path, &lines("first"));
    assert!(write_index(&path).unwrap());
    assert!(index_path(&path).exists());
    let other = lines("other");
    write(&path, &other);
    let loaded = load_read_only(&path).unwrap();
    let (reference, _) = full_parse(&other);
    assert_eq!(loaded.journal.entries(), reference.entries());
    // A damaged sidecar is ignored the same way.
    std::fs::write(index_path(&path), b"CWINDEX1 and then nonsense").unwrap();
    let loaded = load_read_only(&path).unwrap();
    assert_eq!(loaded.journal.entries(), reference.entries());
}

/// A FIFO where the sidecar belongs hung every open of the session (`codewhale context`):
/// it is ignored like a damaged sidecar, and the file is read in full.
#[test]
fn a_fifo_as_the_sidecar_is_ignored_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut j = journal();
    j.user("first");
    j.assistant("answer");
    let lines: Vec<String> = j.entries().iter().map(|e| e.to_line().unwrap()).collect();
    write(&path, &lines);
    let made = std::process::Command::new("mkfifo").arg(index_path(&path)).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let loaded = load_read_only(&path).unwrap();
    let (reference, _) = full_parse(&lines);
    assert_eq!(loaded.journal.entries(), reference.entries());
}

/// A line whose bytes change after the journal was opened reads as an entry of an unknown kind
/// (left out of the view) rather than as another entry or a panic.
#[test]
fn a_line_changed_under_an_open_journal_reads_as_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut j = journal();
    j.user("one");
    j.assistant("two");
    let lines: Vec<String> = j.entries().iter().map(|e| e.to_line().unwrap()).collect();
    write(&path, &lines);
    let loaded = load_read_only(&path).unwrap().journal;
    let mut changed = lines.clone();
    changed[1] = changed[1].replace("one", "eins");
    write(&path, &changed);
    assert_eq!(loaded.take_unreadable(), 0);
    let e = loaded.entry_at(1);
    assert_eq!(e.id, j.entry_at(1).id);
    assert!(matches!(&e.payload, Payload::Unknown { kind, .. } if kind == "unreadable"));
    // Counted once, for the session to tell the user, then the count starts again.
    assert_eq!(loaded.take_unreadable(), 1);
    assert_eq!(loaded.take_unreadable(), 0);
}

/// The spoiled lines of the property test are in fact unusable, for every kind it spoils.
#[test]
fn spoiled_lines_are_not_entries() {
    let mut j = journal();
    j.user("u");
    j.assistant("a");
    j.tools(&["c1"]);
    j.on_head(SystemPayload::new(codewhale_journal::Level::Info, "n"));
    for e in j.entries().iter().skip(1) {
        let line = e.to_line().unwrap();
        for how in [Spoil::Blocks, Spoil::Cut] {
            assert!(Entry::parse_line(&spoil(&line, how)).is_err(), "{how:?} {line}");
        }
    }
}

/// A session that appended a lot writes its sidecar when it closes, placing every appended line
/// where it is in the file: the next open through that sidecar equals a full read, line numbers
/// of the malformed lines before it included, and so does one after a second session.
#[test]
fn a_session_writes_its_sidecar_when_it_closes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut j = journal();
    j.user("first");
    let mut lines: Vec<String> = j.entries().iter().map(|e| e.to_line().unwrap()).collect();
    lines.insert(2, "{not json".to_owned());
    lines.push(lines[1].clone()); // a duplicate id
    write(&path, &lines);
    for round in 0..2 {
        let (mut file, _) = JournalFile::open(&path).unwrap();
        for i in 0..60 {
            let head = file.journal().head_id().clone();
            let output = format!("round {round} output {i} \"quoted\"\n").repeat(700);
            let call = format!("c{round}-{i}");
            file.append(Entry::new(Some(head), ToolResultPayload::new(call, output, false)))
                .unwrap();
        }
        file.close().unwrap();
        assert!(index_path(&path).exists(), "round {round}");
        let text = std::fs::read_to_string(&path).unwrap();
        let all: Vec<String> = text.lines().map(str::to_owned).collect();
        let (reference, skipped) = full_parse(&all);
        let loaded = load_read_only(&path).unwrap();
        assert_eq!(malformed_lines(&loaded.warnings), skipped);
        same(&loaded.journal, &reference).unwrap();
        let problems: Vec<u32> = loaded.journal.problems().iter().map(|(l, _)| *l).collect();
        assert_eq!(problems, vec![4], "the duplicate, on its own line");
    }
    // The reopen read the sidecar, not the lines: a line spoiled behind its back (which the
    // append-only contract rules out) goes unreported until something reads it.
    let mut bytes = std::fs::read(&path).unwrap();
    let fifth = bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(3).unwrap().0 + 1;
    bytes[fifth] = b'x';
    std::fs::write(&path, &bytes).unwrap();
    let loaded = load_read_only(&path).unwrap();
    assert_eq!(malformed_lines(&loaded.warnings), vec![3]);
    std::fs::remove_file(index_path(&path)).unwrap();
    let loaded = load_read_only(&path).unwrap();
    assert_eq!(malformed_lines(&loaded.warnings), vec![3, 5]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A damaged sidecar (bytes changed, cut short, or grown) is never believed: the open reads
    /// the file and finds what a full parse finds, and nothing panics or allocates by its word.
    #[test]
    fn a_damaged_sidecar_is_ignored(
        flips in proptest::collection::vec((any::<u32>(), any::<u8>()), 0..4),
        cut in proptest::option::of(any::<u32>()),
        grow in proptest::collection::vec(any::<u8>(), 0..3),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut j = journal();
        for i in 0..20 {
            j.user(&format!("prompt {i}"));
            j.tools(&[&format!("c{i}")]);
        }
        let lines: Vec<String> = j.entries().iter().map(|e| e.to_line().unwrap()).collect();
        write(&path, &lines);
        prop_assert!(write_index(&path).unwrap());
        let mut bytes = std::fs::read(index_path(&path)).unwrap();
        for (at, xor) in &flips {
            let at = *at as usize % bytes.len();
            bytes[at] ^= xor | 1;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut as usize % bytes.len());
        }
        bytes.extend_from_slice(&grow);
        std::fs::write(index_path(&path), &bytes).unwrap();
        let (reference, _) = full_parse(&lines);
        let loaded = load_read_only(&path).unwrap();
        same(&loaded.journal, &reference)?;
    }
}

/// A long view read from its file is converted from entries parsed for the moment (none is
/// kept), on two threads: the same view as one rendered from the entries in memory, and a
/// view never compacted sums to the same total from the index alone.
#[test]
fn a_long_view_read_from_its_file_renders_the_same_and_sums_from_the_index() {
    use codewhale_journal::{view_total_from_index, AssistantPayload, Block};
    let mut j = journal();
    let add = |j: &mut Journal, payload: Payload, tokens: u32| {
        let entry = Entry::new(Some(j.head_id().clone()), payload).with_tokens(tokens);
        j.push(entry);
    };
    for i in 0..9_000u32 {
        add(&mut j, UserPayload::text(format!("question {i}")).into(), 5);
        let call = format!("call_{i}");
        let blocks = vec![
            Block::text(format!("reading {i}")),
            Block::tool_use(
                call.clone(),
                "read_file",
                serde_json::json!({"path": format!("f{i}.rs")}),
            ),
        ];
        add(&mut j, AssistantPayload::new(blocks).into(), 20 + i % 7);
        let output = format!("line {i}\n").repeat(80);
        add(&mut j, ToolResultPayload::new(call, output, false).into(), 400 + i % 13);
    }
    let lines: Vec<String> = j.entries().iter().map(|e| e.to_line().unwrap()).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.jsonl");
    write(&path, &lines);
    let file = load_read_only(&path).unwrap().journal;
    let head = file.head_id().clone();
    let from_file = render(&file, head.as_str());
    let in_memory = render(&j, head.as_str());
    assert_eq!(from_file.items.len(), 27_000);
    assert_eq!(from_file, in_memory);
    let tokens =
        |v: &codewhale_journal::View| v.items.iter().map(|i| i.tokens.map(u64::from)).sum();
    let total = view_total_from_index(&file, head.as_str());
    assert!(total.is_some_and(|t| t > 0), "{total:?}");
    assert_eq!(total, tokens(&from_file));
}
