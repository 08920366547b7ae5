//! The fixtures of `fixtures/import/` through the whole conversion: what is written, what the
//! view of the result is, and what the report says.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use codewhale_journal::{
    check_view, render, Block, CompactionPayload, Entry, ItemKind, Journal, Payload, Trigger,
};

use crate::{import_file, ImportError, Origin, Report, Tool, INTERRUPTED, SUMMARY_PREFIX};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/import").join(name)
}

fn origin() -> Origin {
    Origin { path: "src.jsonl".into(), default_cwd: "/w".into(), app_version: "0.0.0".into() }
}

fn run(name: &str) -> (Vec<Entry>, Report) {
    let mut entries = Vec::new();
    let imported = import_file(&fixture(name), &origin(), |e| {
        entries.push(e);
        Ok(())
    })
    .unwrap();
    assert_eq!(imported.report.entries_written as usize, entries.len() - 1, "{name}");
    (entries, imported.report)
}

/// The kinds and a short form of every entry after the header.
fn shape(entries: &[Entry]) -> Vec<String> {
    entries[1..]
        .iter()
        .map(|e| match &e.payload {
            Payload::User(u) => {
                format!("user{}: {}", if u.synthetic { "*" } else { "" }, texts(&u.content))
            }
            Payload::Assistant(a) => format!("assistant: {}", texts(&a.content)),
            Payload::ToolResult(r) => {
                format!(
                    "result {}{}: {}",
                    r.tool_use_id,
                    if r.is_error { "!" } else { "" },
                    &*r.content
                )
            }
            Payload::Compaction(c) => format!("compaction: {}", c.covers.as_ref().unwrap().count),
            other => other.kind().to_owned(),
        })
        .collect()
}

fn texts(blocks: &[Block]) -> String {
    blocks
        .iter()
        .map(|b| match b {
            Block::Text(t) => t.text.clone(),
            Block::ToolUse(t) => format!("<call {} {}>", t.id, t.name),
            Block::Thinking(t) => format!("<thinking {}>", t.thinking),
            Block::Opaque(raw) => format!("<opaque {}>", raw.get()),
            Block::Image(i) => format!("<image {}>", i.name),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The journal of the entries, its HEAD's view checked as a request would be.
fn view_kinds(entries: &[Entry]) -> Vec<ItemKind> {
    let journal = Journal::from_entries(entries.to_vec()).unwrap();
    assert!(journal.problems().is_empty(), "{:?}", journal.problems());
    let view = render(&journal, journal.head_id().as_str());
    check_view(&view).unwrap();
    view.items.iter().map(|i| i.kind).collect()
}

fn header(entries: &[Entry]) -> &codewhale_journal::HeaderPayload {
    match &entries[0].payload {
        Payload::Header(h) => h,
        other => panic!("first entry is {}", other.kind()),
    }
}

#[test]
fn claude_split_responses_merge_and_sibling_results_pair_in_call_order() {
    let (entries, report) = run("claude/basic.jsonl");
    assert_eq!(
        shape(&entries),
        [
            "user: add a --json flag to the CLI\n  and keep the table output as the default",
            "assistant: <thinking Need to find the CLI parser.> | Let me look at the parser and \
             the output code. | <call toolu_01A Glob> | <call toolu_01B Read>",
            "result toolu_01A: src/main.rs\nsrc/cli.rs",
            "result toolu_01B: pub struct Cli {}",
            "assistant: Here is the plan: add `--json` and keep the table.",
            "user: <opaque {\"source\":{\"data\":\"iVBORw0KGgo=\",\"media_type\":\"image/png\",\
             \"type\":\"base64\"},\"type\":\"image\"}> | this is what the table looks like now",
            "assistant: Thanks, I see the layout.",
        ]
    );
    assert_eq!(report.source, Tool::Claude);
    assert_eq!(report.entries_read, 16);
    assert_eq!(report.blocks_merged, 4);
    assert_eq!((report.thinking_dropped, report.thinking_dropped_reasons["unsigned"]), (1, 1));
    // The image's bytes go to the caller, which stores them in the blob store.
    assert_eq!((report.pairs_repaired, report.images_replaced, report.images_imported), (0, 0, 1));
    assert_eq!(report.lines_unused["harness-injected user text (isMeta)"], 1);
    assert_eq!(report.lines_unused["progress line"], 1);
    assert_eq!(report.lines_unused["metadata line (summary)"], 1);
    assert_eq!(report.lines_unused["metadata line (custom-title)"], 1);
    assert_eq!(report.lines_unused["metadata line (file-history-snapshot)"], 1);
    let h = header(&entries);
    // The session belongs to the workspace it is imported into; the source's own is kept.
    assert_eq!((h.cwd.as_str(), h.model.as_str()), ("/w", "claude-sonnet-4-5-20250929"));
    assert_eq!(h.extra["imported_from"]["cwd"], "/home/u/proj");
    assert_eq!(h.title.as_deref(), Some("json flag"));
    assert_eq!(h.extra["imported_from"]["tool"], "claude");
    assert_eq!(h.extra["imported_from"]["session_id"], "4f0c1d2e-0000-4000-8000-000000000001");
    let Payload::Assistant(a) = &entries[2].payload else { panic!() };
    let Block::Thinking(t) = &a.content[0] else { panic!() };
    assert_eq!(t.signature.as_deref(), Some("EqMBCkYIBxgCKkBsig=="), "signatures stay exact");
    assert_eq!(a.stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(view_kinds(&entries).len(), 7);
}

#[test]
fn a_claude_compact_summary_becomes_a_marked_checkpoint_record() {
    let (entries, report) = run("claude/compact.jsonl");
    assert_eq!(report.summaries_imported, 1);
    let record: &CompactionPayload = entries
        .iter()
        .find_map(|e| match &e.payload {
            Payload::Compaction(c) => Some(&**c),
            _ => None,
        })
        .unwrap();
    let covers = record.covers.as_ref().unwrap();
    assert_eq!(
        (covers.first.clone(), covers.last.clone(), covers.count),
        (entries[1].id.clone(), entries[6].id.clone(), 6)
    );
    assert_eq!(record.trigger, Trigger::Manual);
    assert_eq!(record.tokens_before, Some(167393));
    assert!(record.summary.as_deref().unwrap().contains("Rename the crate `core`"));
    assert!(record.note.starts_with("Codewhale handoff note (imported from Claude Code)."));
    assert!(record.note.contains("## Primary request"));
    assert_eq!(record.extra["imported_from"], "claude");
    let kinds = view_kinds(&entries);
    assert_eq!(
        kinds,
        [
            ItemKind::Checkpoint,
            ItemKind::User,
            ItemKind::Assistant,
            ItemKind::ToolResult,
            ItemKind::Assistant
        ]
    );
    assert_eq!(report.lines_unused["system line"], 1);
}

#[test]
fn claude_sidechains_are_counted_and_the_task_result_stays() {
    let (entries, report) = run("claude/sidechain.jsonl");
    assert_eq!(report.sidechain_lines, 4);
    assert_eq!(
        shape(&entries),
        [
            "user: find where the config is loaded",
            "assistant: <call toolu_task Task>",
            "result toolu_task: It is loaded in src/config.rs, line 12.",
            "assistant: The config is loaded by `load_config` in src/config.rs.",
        ]
    );
}

#[test]
fn a_sub_agents_own_transcript_is_a_session_of_its_own() {
    // Claude Code's `agent-*.jsonl`: every line a sidechain line.
    let (entries, report) = run("claude/agent-subagent.jsonl");
    assert!(report.subagent);
    assert_eq!(report.sidechain_lines, 0, "its lines are the conversation");
    let shape = shape(&entries);
    assert_eq!(shape.len(), 4, "{shape:?}");
    assert_eq!(shape[0], "user: Find where the config file is loaded.");
}

#[test]
fn claude_harness_lines_in_the_user_role_are_counted_not_imported() {
    let line = |uuid: &str, parent: &str, content: &str| {
        format!(
            "{{\"type\":\"user\",\"uuid\":\"{uuid}\",\"parentUuid\":{parent},\"sessionId\":\"s\",\
             \"cwd\":\"/w\",\"timestamp\":\"2025-11-25T09:00:00.000Z\",\"message\":{{\"role\":\"user\",\
             \"content\":{content}}}}}\n"
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("harness.jsonl");
    let text = [
        line("u1", "null", "\"fix the parser\""),
        line("u2", "\"u1\"", "\"[Request interrupted by user]\""),
        line("u3", "\"u2\"", "\"<command-name>/clear</command-name>\""),
        line(
            "u4",
            "\"u3\"",
            "[{\"type\":\"text\",\"text\":\"<local-command-stdout></local-command-stdout>\"}]",
        ),
        line("u5", "\"u4\"", "\"and now the lexer\""),
    ]
    .concat();
    std::fs::write(&path, text).unwrap();
    let mut entries = Vec::new();
    let imported = import_file(&path, &origin(), |e| {
        entries.push(e);
        Ok(())
    })
    .unwrap();
    let texts = shape(&entries).join(" | ");
    assert!(!texts.contains("interrupted") && !texts.contains("command"), "{texts}");
    assert!(texts.contains("fix the parser") && texts.contains("and now the lexer"), "{texts}");
    let unused = &imported.report.lines_unused;
    assert_eq!(unused["interruption marker written by Claude Code"], 1, "{unused:?}");
    assert_eq!(unused["slash command or its local output, written by Claude Code"], 2);
}

#[test]
fn a_line_longer_than_any_session_line_is_skipped_unread_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge-line.jsonl");
    let basic = std::fs::read_to_string(fixture("claude/basic.jsonl")).unwrap();
    let mut text = String::new();
    let mut lines = basic.lines();
    text.push_str(lines.next().unwrap());
    text.push('\n');
    // One "line" past the bound: read in passing, never held whole.
    text.push_str(&"x".repeat(crate::lines::MAX_LINE_BYTES + 1));
    text.push('\n');
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    let mut entries = Vec::new();
    let imported = import_file(&path, &origin(), |e| {
        entries.push(e);
        Ok(())
    })
    .unwrap();
    assert_eq!(imported.report.lines_unused["line over 64 MiB (skipped unread)"], 1);
    let (whole, _) = run("claude/basic.jsonl");
    assert_eq!(entries.len(), whole.len(), "every other line is imported as before");
}

#[test]
fn a_torn_tail_is_reported_and_its_call_interrupted() {
    for name in ["claude/torn.jsonl", "codex/torn.jsonl"] {
        let (entries, report) = run(name);
        assert!(report.torn_tail_bytes.unwrap() > 0, "{name}");
        assert_eq!((report.calls_interrupted, report.pairs_repaired), (1, 1), "{name}");
        let last = shape(&entries).pop().unwrap();
        assert!(last.ends_with(&format!("!: {INTERRUPTED}")), "{name}: {last}");
        view_kinds(&entries);
    }
}

#[test]
fn broken_claude_files_import_what_is_sound_and_count_the_rest() {
    let (entries, report) = run("claude/broken.jsonl");
    assert_eq!(
        shape(&entries),
        [
            "user: continue from before",
            "assistant: <call toolu_b1 Bash>",
            &format!("result toolu_b1!: {INTERRUPTED}"),
            "user: stop, use cargo instead",
            "user*: [Output of tool call toolu_elsewhere, imported from Claude Code; the call \
             itself is not in this conversation.]\noutput of a call this file never shows",
            "assistant: Switching to cargo.",
        ]
    );
    assert_eq!(report.problems["duplicate uuid (the first line with it is used)"], 1);
    assert_eq!(report.problems["missing parent (the conversation starts after it)"], 1);
    assert_eq!((report.pairs_repaired, report.results_kept_as_text), (2, 1));
    assert_eq!(report.lines_unused["API error or notice written by Claude Code, not the model"], 1);
    assert_eq!(report.lines_unused["hologram line"], 1);
    assert_eq!(report.lines_unused["unreadable line (not a JSON object of the expected shape)"], 1);
    assert_eq!(report.lines_unused["line not on the conversation's latest branch"], 2);
    assert_eq!(report.lines_unused["line repeating an earlier uuid"], 1);
    view_kinds(&entries);

    let (entries, report) = run("claude/cycle.jsonl");
    assert_eq!(report.problems["parent cycle (the conversation starts after it)"], 1);
    assert_eq!(shape(&entries).len(), 3);
    view_kinds(&entries);
}

#[test]
fn codex_items_of_one_response_merge_and_calls_pair_by_call_id() {
    let (entries, report) = run("codex/g2.jsonl");
    let orphan =
        "user*: [Output of tool call call_ghost, imported from Codex CLI; the call itself \
                  is not in this conversation.]\noutput of a call that is not in the rollout";
    assert_eq!(
        shape(&entries),
        [
            "user: fix the build, it fails on main",
            "assistant: Let me run the build and look at the manifest. | <call call_Ab1 \
             shell_command> | <call call_Ab2 shell>",
            "result call_Ab1: error[E0432]: unresolved import\n[image (image/png) not imported: \
             Codewhale sends text only]",
            "result call_Ab2: [package]\nname = \"proj\"",
            "assistant: <call call_P2 apply_patch>",
            "result call_P2: {\"output\":\"Success. Updated the following files:\\nM \
             src/main.rs\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0}}",
            "assistant: <call call_L3 local_shell>",
            "result call_L3: Finished dev profile",
            "assistant: [Searched the web: rust unresolved import crate::] | Build fixed: the \
             import needed `crate::`.",
            "user: thanks, now run the tests",
            "assistant: <call call_T9 shell_command>",
            &format!("result call_T9!: {INTERRUPTED}"),
            orphan,
        ]
    );
    assert_eq!(report.source, Tool::Codex);
    assert_eq!(report.thinking_dropped_reasons["encrypted reasoning"], 1);
    assert_eq!((report.blocks_merged, report.images_replaced), (3, 1));
    assert_eq!((report.pairs_repaired, report.calls_interrupted), (2, 1));
    assert_eq!(report.lines_unused["context Codex injected in the user role"], 1);
    assert_eq!(
        report.lines_unused["developer message (instructions Codex sends, not conversation)"],
        1
    );
    let Payload::Assistant(a) = &entries[2].payload else { panic!() };
    let call = a.content[1].as_tool_use().unwrap();
    assert_eq!(call.input["command"], "cargo build", "arguments are parsed from their JSON text");
    let h = header(&entries);
    assert_eq!((h.model.as_str(), h.provider.as_str()), ("gpt-5-codex", "openai"));
    assert_eq!(h.extra["imported_from"]["version"], "0.46.0");
    view_kinds(&entries);
}

#[test]
fn codex_compactions_become_records_and_rolled_back_turns_are_left_out() {
    let (entries, report) = run("codex/compacted.jsonl");
    assert_eq!(report.summaries_imported, 2);
    assert_eq!(report.lines_unused["line of a turn Codex rolled back"], 2);
    let shapes = shape(&entries);
    assert!(!shapes.iter().any(|s| s.contains("configurable")), "{shapes:#?}");
    let records: Vec<(&Entry, &CompactionPayload)> = entries
        .iter()
        .filter_map(|e| match &e.payload {
            Payload::Compaction(c) => Some((e, &**c)),
            _ => None,
        })
        .collect();
    assert_eq!(records.len(), 2);
    assert_eq!(records[1].1.previous_id.as_ref(), Some(&records[0].0.id));
    assert_eq!(
        records[0].1.covers.as_ref().unwrap().first,
        records[1].1.covers.as_ref().unwrap().first
    );
    assert!(records[1].1.summary.as_deref().unwrap().starts_with("Another language model"));
    assert_eq!(records[1].1.retained_ids.len(), 2);
    let journal = Journal::from_entries(entries.clone()).unwrap();
    let view = render(&journal, journal.head_id().as_str());
    check_view(&view).unwrap();
    let users: Vec<String> =
        view.items.iter().filter(|i| i.kind == ItemKind::User).map(|i| texts(i.blocks())).collect();
    assert_eq!(
        users,
        ["add retries to the HTTP client", "write a test for the cap", "run the whole suite"]
    );
    assert_eq!(view.checkpoint().unwrap().source, records[1].0.id);
}

#[test]
fn older_and_newer_codex_generations_import() {
    let (entries, report) = run("codex/g1.jsonl");
    assert_eq!(
        shape(&entries),
        [
            "user: fix the build",
            "assistant: <call call_1 shell>",
            "result call_1: {\"output\":\"Finished\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":4.2}}",
            "assistant: It builds now.",
        ]
    );
    assert_eq!(report.lines_unused["state line (record_type)"], 1);
    assert_eq!(
        header(&entries).extra["imported_from"]["session_id"],
        "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
    );

    let (entries, report) = run("codex/g3.jsonl");
    assert_eq!(shape(&entries), ["user: hello", "assistant: Hello from the model"]);
    assert_eq!(report.lines_unused["world_state line"], 1);
    assert_eq!(report.lines_unused["inter_agent_communication line"], 1);
    assert_eq!(header(&entries).model, "gpt-5.5");
}

#[test]
fn a_summary_with_nothing_before_it_is_a_recognized_checkpoint_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(
        &path,
        "{\"type\":\"system\",\"subtype\":\"compact_boundary\",\"uuid\":\"b\",\"parentUuid\":null,\"logicalParentUuid\":\"elsewhere\"}\n\
         {\"type\":\"user\",\"uuid\":\"s\",\"parentUuid\":\"b\",\"isCompactSummary\":true,\"message\":{\"role\":\"user\",\"content\":\"This session is being continued. Summary: X.\"}}\n\
         {\"type\":\"user\",\"uuid\":\"u\",\"parentUuid\":\"s\",\"message\":{\"role\":\"user\",\"content\":\"go on\"}}\n",
    )
    .unwrap();
    let mut entries = Vec::new();
    let imported = import_file(&path, &origin(), |e| {
        entries.push(e);
        Ok(())
    })
    .unwrap();
    assert_eq!(imported.report.summaries_imported, 1);
    assert_eq!(
        shape(&entries)[0],
        format!("user: {SUMMARY_PREFIX}\n\nThis session is being continued. Summary: X.")
    );
    assert_eq!(header(&entries).cwd, "/w", "no cwd in the source: the caller's workspace");
}

#[test]
fn files_that_are_not_sessions_are_clear_errors_and_reach_no_sink() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8], &str); 4] = [
        ("empty.jsonl", b"", "it is empty"),
        ("other.jsonl", b"{\"hello\":1}\n", "neither a Claude Code session nor a Codex rollout"),
        ("z.jsonl.zst", &[0x28, 0xb5, 0x2f, 0xfd, 1, 2], "is compressed (zstd)"),
        (
            "meta.jsonl",
            b"{\"type\":\"summary\",\"summary\":\"t\",\"leafUuid\":\"x\"}\n",
            "holds no conversation",
        ),
    ];
    for (name, bytes, expected) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let mut written = 0;
        let err = import_file(&path, &origin(), |_| {
            written += 1;
            Ok(())
        })
        .unwrap_err();
        assert!(err.to_string().contains(expected), "{name}: {err}");
        assert_eq!(written, 0, "{name}");
    }
    let missing = import_file(&dir.path().join("nope.jsonl"), &origin(), |_| Ok(())).unwrap_err();
    assert!(matches!(missing, ImportError::Read { .. }));
}

#[test]
fn every_prefix_of_every_fixture_imports_or_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "claude/basic.jsonl",
        "claude/compact.jsonl",
        "claude/broken.jsonl",
        "codex/g2.jsonl",
        "codex/compacted.jsonl",
    ] {
        let bytes = std::fs::read(fixture(name)).unwrap();
        let path = dir.path().join("cut.jsonl");
        for end in (0..bytes.len()).step_by(37) {
            std::fs::write(&path, &bytes[..end]).unwrap();
            let mut entries = Vec::new();
            if import_file(&path, &origin(), |e| {
                entries.push(e);
                Ok(())
            })
            .is_ok()
            {
                view_kinds(&entries);
            }
        }
    }
}

#[test]
fn the_source_is_never_modified() {
    let before = std::fs::read(fixture("claude/torn.jsonl")).unwrap();
    run("claude/torn.jsonl");
    assert_eq!(std::fs::read(fixture("claude/torn.jsonl")).unwrap(), before);
}
