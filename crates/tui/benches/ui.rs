//! Terminal UI benchmarks: what one keystroke costs in the `@` file picker over a large tree,
//! laying out a long composer draft, and one frame (render + diff) over a 100k-line
//! transcript at 200×60.
//!
//! `cargo bench -p codewhale-tui --bench ui` (or `scripts/bench.sh -p codewhale-tui`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use codewhale_protocol::{
    Event, EventMsg, HistoryItem, HistoryPage, Op, SubmissionId, ToolOutcome,
};
use codewhale_tui::tui::composer::Composer;
use codewhale_tui::tui::mentions::{best_matches, index, SHOWN};
use codewhale_tui::tui::{App, AppEvent, OpSink};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

/// `n` paths shaped like a large monorepo's: nested directories, varied names.
fn paths(n: usize) -> Vec<String> {
    let areas = ["crates", "services", "web/src", "docs", "tools", "vendor/lib"];
    let names = ["parser", "lexer", "server", "client", "config", "render", "store", "auth"];
    (0..n)
        .map(|i| {
            let area = areas[i % areas.len()];
            let name = names[(i / 7) % names.len()];
            format!("{area}/module_{}/{name}_{i}/{}.rs", i % 97, names[i % names.len()])
        })
        .collect()
}

fn picker(c: &mut Criterion) {
    let mut group = c.benchmark_group("mentions");
    let tree = paths(100_000);
    for query in ["", "lex", "srvcfg", "crates/module_42/parser"] {
        group.bench_with_input(BenchmarkId::new("match_100k", query), &query, |b, q| {
            b.iter(|| best_matches(&tree, q, SHOWN))
        });
    }
    // The first scan: a real directory tree of 20,000 files.
    let dir = tempfile::tempdir().unwrap();
    for p in paths(20_000) {
        let path = dir.path().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x").unwrap();
    }
    group.sample_size(10);
    group.bench_function("index_20k_files", |b| b.iter(|| index(dir.path())));
    group.finish();
}

fn composer(c: &mut Criterion) {
    let mut draft = Composer::default();
    draft.insert_str(&"漢字 and words, mixed with emoji 👩‍💻 and more text. ".repeat(400));
    c.bench_function("composer_layout_20k_chars", |b| b.iter(|| draft.layout(100).rows.len()));
}

/// Takes every op and answers nothing (the frame is all that is measured).
struct Discard;

impl OpSink for Discard {
    fn submit(&mut self, _op: Op) -> Option<SubmissionId> {
        Some(SubmissionId(1))
    }
}

/// A conversation of about `lines` rows at 200 columns: questions, markdown replies with code
/// and lists, and tool calls with their output.
fn conversation(lines: usize) -> HistoryPage {
    let reply = "The parser reads tokens and builds a tree; here is **why** it stalls:\n\n\
        - the lexer backs off on every `'` in a lifetime\n- the cache is rebuilt per file\n\n\
        ```rust\nfn lex(input: &str) -> Vec<Token> {\n    input.split_whitespace().map(Token::from).collect()\n}\n```\n";
    let mut items = Vec::new();
    let mut rows = 0;
    let mut i = 0;
    while rows < lines {
        items.push(HistoryItem::User {
            id: format!("u{i}"),
            text: format!("question {i}: why is the parser slow on file {i}?"),
            covered: false,
            images: Vec::new(),
        });
        items.push(HistoryItem::Tool {
            id: format!("t{i}"),
            call_id: format!("c{i}"),
            name: "shell".into(),
            input: serde_json::json!({"command": format!("cargo test parser_{i}")}),
            result: Some(ToolOutcome {
                is_error: false,
                output: "test result: ok. 12 passed\n[exit code: 0]".into(),
                end: codewhale_protocol::CallEnd::Completed,
                exit_code: Some(0),
                exit_code_in_output: true,
                reason: None,
            }),
            covered: false,
        });
        items.push(HistoryItem::Assistant {
            id: format!("a{i}"),
            text: reply.into(),
            thinking: String::new(),
            covered: false,
        });
        // The question, the folded call and the reply, with the blank lines between them.
        rows += 13;
        i += 1;
    }
    HistoryPage { head: format!("a{i}"), items, older: None, reset: true }
}

fn frame(c: &mut Criterion) {
    let mut app = App::new(Box::new(Discard), "gpt-bench");
    app.handle(AppEvent::Engine(EventMsg {
        id: SubmissionId(0),
        event: Event::History { page: conversation(100_000) },
    }));
    let rows = app.transcript().total_height(200);
    assert!(rows >= 100_000, "the transcript has only {rows} rows");
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    // The first frame measures every cell once; later frames read the cached heights.
    terminal.draw(|f| app.draw(f)).unwrap();
    let mut group = c.benchmark_group("frame_200x60_100k_lines");
    group.bench_function("at_the_tail", |b| {
        b.iter(|| {
            terminal.draw(|f| app.draw(f)).unwrap();
        })
    });
    // Scrolling: every frame shows different rows, so the diff has a whole screen to send.
    let key = |code| AppEvent::Input(TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    let mut up = true;
    group.bench_function("scrolling_a_page", |b| {
        b.iter(|| {
            app.handle(key(if up { KeyCode::PageUp } else { KeyCode::PageDown }));
            up = !up;
            terminal.draw(|f| app.draw(f)).unwrap();
        })
    });
    app.handle(AppEvent::Input(TermEvent::Key(KeyEvent::new(
        KeyCode::Home,
        KeyModifiers::CONTROL,
    ))));
    group.bench_function("scrolling_at_the_top", |b| {
        b.iter(|| {
            app.handle(key(if up { KeyCode::PageDown } else { KeyCode::PageUp }));
            up = !up;
            terminal.draw(|f| app.draw(f)).unwrap();
        })
    });
    group.finish();
}

criterion_group!(benches, picker, composer, frame);
criterion_main!(benches);
