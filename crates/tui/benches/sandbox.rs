//! What confinement adds to one shell call: `bash -c true` started directly, next to the same
//! command started through the `codewhale sandbox-exec` helper with the rules of a
//! `workspace-write` session (the workspace, the temp dir, `/dev/shm`), and through the helper
//! in namespaces of its own with the workspace's `.git` bound read-only. The differences are the
//! cost of one more exec of the binary, the ABI probe and the ruleset; and of the namespaces,
//! the binds, `/proc` and the second stage's exec.
//!
//! `cargo bench -p codewhale-tui --bench sandbox` (or `scripts/bench.sh -p codewhale-tui`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::process::{Command, Stdio};

use criterion::{criterion_group, criterion_main, Criterion};

fn run(cmd: &mut Command) {
    let status = cmd.stdin(Stdio::null()).stdout(Stdio::null()).status().unwrap();
    assert!(status.success(), "{cmd:?} failed: {status}");
}

fn shell_call(c: &mut Criterion) {
    if codewhale_engine::sandbox::confine::abi().is_none() {
        eprintln!("skipped: this kernel offers no Landlock, so nothing can be confined");
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let tmp = std::env::temp_dir();
    let helper = env!("CARGO_BIN_EXE_codewhale");
    let mut group = c.benchmark_group("shell_call");
    group.bench_function("bash -c true, unconfined", |b| {
        b.iter(|| run(Command::new("bash").args(["-c", "true"]).current_dir(ws.path())))
    });
    group.bench_function("bash -c true, confined", |b| {
        b.iter(|| {
            run(Command::new(helper)
                .arg(codewhale_engine::sandbox::HELPER_SUBCOMMAND)
                .arg("--write")
                .arg(ws.path())
                .arg("--write")
                .arg(&tmp)
                .args(["--write", "/dev/shm", "--", "bash", "-c", "true"])
                .current_dir(ws.path()))
        })
    });
    let git = ws.path().join(".git");
    std::fs::create_dir_all(&git).unwrap();
    let probe = Command::new(helper).args(["sandbox-exec", "--probe"]).output().unwrap();
    if String::from_utf8_lossy(&probe.stdout).trim() == "ok" {
        group.bench_function("bash -c true, confined in namespaces", |b| {
            b.iter(|| {
                run(Command::new(helper)
                    .arg(codewhale_engine::sandbox::HELPER_SUBCOMMAND)
                    .args(["--ns", "--ro"])
                    .arg(&git)
                    .arg("--write")
                    .arg(ws.path())
                    .arg("--write")
                    .arg(&tmp)
                    .args(["--write", "/dev/shm", "--", "bash", "-c", "true"])
                    .current_dir(ws.path()))
            })
        });
    } else {
        eprintln!("skipped the namespace case: {}", String::from_utf8_lossy(&probe.stdout));
    }
    group.finish();
}

criterion_group!(benches, shell_call);
criterion_main!(benches);
