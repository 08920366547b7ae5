#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use super::*;

/// Starts `script` under `sh` in a group of its own; returns the group id once the script
/// said it is ready.
async fn group_running(script: &str) -> (tokio::process::Child, u32) {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c").arg(script).stdout(Stdio::piped()).process_group(0).kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let pgid = child.id().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut ready = [0u8; 5];
    tokio::io::AsyncReadExt::read_exact(&mut out, &mut ready).await.unwrap();
    assert_eq!(&ready, b"ready");
    (child, pgid)
}

/// Waits for `leader` in the background.
fn reap(mut leader: tokio::process::Child) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        leader.wait().await.unwrap();
    })
}

#[tokio::test]
async fn a_group_ends_with_the_children_its_leader_left_behind() {
    let (leader, pgid) = group_running("sleep 300 & sleep 300 & printf ready; wait").await;
    assert!(group_alive(pgid));
    // Reaped as it exits, as the shell tool does, so a zombie leader keeps nothing alive.
    let reaper = reap(leader);
    assert!(end_group(pgid).await, "something was running");
    reaper.await.unwrap();
    let start = Instant::now();
    while group_alive(pgid) && start.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!group_alive(pgid), "the background sleeps outlived the group's end");
}

#[tokio::test]
async fn a_group_that_ignores_sigterm_is_killed_after_the_grace() {
    let script = "trap '' TERM; sh -c \"trap '' TERM; sleep 300\" & printf ready; wait";
    let (leader, pgid) = group_running(script).await;
    let reaper = reap(leader);
    let start = Instant::now();
    assert!(end_group(pgid).await);
    assert!(start.elapsed() >= GRACE, "SIGKILL came before the grace was over");
    reaper.await.unwrap();
    let start = Instant::now();
    while group_alive(pgid) && start.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!group_alive(pgid));
}

#[tokio::test]
async fn ending_a_group_that_is_gone_does_nothing() {
    let (mut leader, pgid) = group_running("printf ready").await;
    leader.wait().await.unwrap();
    assert!(!group_alive(pgid));
    assert!(!end_group(pgid).await, "nothing was running");
    end_group_blocking(pgid);
}

#[test]
fn the_init_and_zero_groups_are_never_signalled() {
    assert!(pid(0).is_none());
    assert!(pid(1).is_none());
    assert!(pid(u32::MAX).is_none());
    assert!(pid(4242).is_some());
}
