//! The guard around every shell command (docs/security.md, *What git and Codewhale execute is out of the model's reach*):
//! the survey before and the check after one command in a workspace of 20,000 folders holding
//! three nested repositories — walked from scratch (a session's first command), and with the
//! walk cached (every later one). Figures in docs/performance.md.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use codewhale_engine::protected::walk::Walk;
use codewhale_engine::protected::Survey;
use codewhale_engine::tools::guard::GitGuard;
use criterion::{criterion_group, criterion_main, Criterion};

/// 20 × 20 × 50 folders, a repository at the top and three nested ones.
fn workspace(root: &Path) {
    for a in 0..20 {
        for b in 0..20 {
            for c in 0..50 {
                std::fs::create_dir_all(root.join(format!("d{a}/e{b}/f{c}"))).unwrap();
            }
        }
    }
    for repo in [".", "d1", "d2/e3", "d9/e9/f9"] {
        let git = root.join(repo).join(".git");
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::write(git.join("config"), "[core]\n\tbare = false\n").unwrap();
        for hook in ["pre-commit.sample", "pre-push.sample", "commit-msg.sample"] {
            std::fs::write(git.join("hooks").join(hook), "#!/bin/sh\n".repeat(50)).unwrap();
        }
    }
}

fn guard(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    workspace(&ws);
    let mut group = c.benchmark_group("guard_20k_folders");
    group.sample_size(20);
    group.bench_function("survey, cold walk", |b| {
        b.iter(|| Survey::take(&ws, &mut Walk::default()))
    });
    let g = GitGuard::new(ws.clone(), vec![ws.join("AGENTS.md")]);
    group.bench_function("before and after one command, cached walk", |b| {
        b.iter(|| {
            let before = g.before();
            g.after(&before)
        })
    });
    group.finish();
}

criterion_group!(benches, guard);
criterion_main!(benches);
