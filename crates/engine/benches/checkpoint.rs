//! File checkpoints (docs/journal-format.md, *The file store*): keeping a 10 MB file before and
//! after a write, the two worktree snapshots around a shell call in a 10,000-file git repository
//! (the delay a call pays; the target is ≤ 100 ms), and restoring 100 files. Figures in
//! docs/performance.md.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use codewhale_engine::checkpoint::restore;
use codewhale_engine::checkpoint::snapshot::Snapshots;
use codewhale_engine::checkpoint::{capture, FileStore};
use codewhale_journal::FileChange;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

fn checkpoint_10mb(c: &mut Criterion) {
    let ws = tempfile::tempdir().unwrap();
    let file = ws.path().join("big.bin");
    let old: Vec<u8> = (0..10 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    let new: Vec<u8> = old.iter().map(|b| b.wrapping_add(1)).collect();
    c.bench_function("checkpoint_write_10mb", |b| {
        b.iter_batched(
            || {
                std::fs::write(&file, &old).unwrap();
                tempfile::tempdir().unwrap()
            },
            |home| {
                let store = FileStore::beside(&home.path().join("s.jsonl"));
                let (_, change) = capture(Some(&store), &file, "big.bin", || {
                    std::fs::write(&file, &new)
                        .map(|()| "written".to_owned())
                        .map_err(|e| e.to_string())
                })
                .unwrap();
                assert!(change.is_some());
                home
            },
            BatchSize::PerIteration,
        )
    });
}

fn git(dir: &Path, args: &[&str]) {
    assert!(Command::new("git").current_dir(dir).args(args).output().unwrap().status.success());
}

fn snapshot_10000_files(c: &mut Criterion) {
    if Command::new("git").arg("--version").output().is_err() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let ws_path = std::fs::canonicalize(ws.path()).unwrap();
    git(&ws_path, &["init", "-q"]);
    std::fs::write(ws_path.join(".gitignore"), "target/\n").unwrap();
    for d in 0..100 {
        let dir = ws_path.join(format!("src/m{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            let text = format!("// module {d} file {f}\n{}\n", "fn x() {}\n".repeat(20));
            std::fs::write(dir.join(format!("f{f}.rs")), text).unwrap();
        }
    }
    let home = tempfile::tempdir().unwrap();
    let store = FileStore::beside(&home.path().join("s.jsonl"));
    let snaps = Snapshots::discover(&store, &ws_path).expect("a git work tree");
    let start = Instant::now();
    snaps.snapshot().unwrap();
    eprintln!("first snapshot of 10,000 files (cold index): {:?}", start.elapsed());
    c.bench_function("snapshot_10000_files_warm", |b| b.iter(|| snaps.snapshot().unwrap()));
    let touched = ws_path.join("src/m7/f7.rs");
    let mut n = 0u64;
    c.bench_function("shell_snapshots_10000_files", |b| {
        b.iter(|| {
            // What a shell call pays: a snapshot before, one after, and the diff of one file.
            let before = snaps.snapshot().unwrap();
            n += 1;
            std::fs::write(&touched, format!("// edit {n}\n")).unwrap();
            let after = snaps.snapshot().unwrap();
            let changes = snaps.changes(&store, &before, &after).unwrap();
            assert_eq!(changes.len(), 1);
        })
    });
    c.bench_function("shell_snapshots_10000_files_unchanged", |b| {
        b.iter(|| {
            // A command that changed nothing (a build, a test run, a search): the two snapshots.
            let before = snaps.snapshot().unwrap();
            let after = snaps.snapshot().unwrap();
            assert!(snaps.changes(&store, &before, &after).unwrap().is_empty());
        })
    });
}

fn restore_100_files(c: &mut Criterion) {
    let ws = tempfile::tempdir().unwrap();
    let ws_path = std::fs::canonicalize(ws.path()).unwrap();
    let home = tempfile::tempdir().unwrap();
    let store = FileStore::beside(&home.path().join("s.jsonl"));
    let mut changes = Vec::new();
    for i in 0..100 {
        let before = format!("before {i}\n{}", "line\n".repeat(200));
        let after = format!("after {i}\n{}", "line\n".repeat(200));
        changes.push(FileChange {
            path: format!("d{}/f{i}.txt", i % 10),
            before: Some(store.put(before.as_bytes()).unwrap()),
            after: Some(store.put(after.as_bytes()).unwrap()),
            extra: Default::default(),
        });
    }
    c.bench_function("restore_100_files", |b| {
        b.iter_batched(
            || {
                for (i, ch) in changes.iter().enumerate() {
                    let path = ws_path.join(&ch.path);
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    let after = format!("after {i}\n{}", "line\n".repeat(200));
                    std::fs::write(path, after).unwrap();
                }
            },
            |()| {
                let plan = restore::plan(&changes, &ws_path, &store);
                let outcome =
                    restore::apply(&plan, &ws_path, &store, restore::Consent::of_user(false));
                assert_eq!(outcome.restored.len(), 100);
            },
            BatchSize::PerIteration,
        )
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = checkpoint_10mb, snapshot_10000_files, restore_100_files
}
criterion_main!(benches);
