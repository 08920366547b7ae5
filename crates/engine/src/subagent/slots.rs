//! How many subagents run at once in the process: a count shared by every session of the
//! process, bounded by the `[tools] max_subagents` of the session that asks for a slot.
//!
//! Invariant: a [`Slot`] is held for the whole life of one child and given back when dropped
//! (a child that ends in any way, a parent's turn cancelled while it waits), so the count never
//! leaks.

use std::sync::{Mutex, OnceLock};

use tokio::sync::Notify;

struct Shared {
    running: Mutex<u32>,
    freed: Notify,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| Shared { running: Mutex::new(0), freed: Notify::new() })
}

/// One running child's place.
#[derive(Debug)]
pub struct Slot(());

impl Drop for Slot {
    fn drop(&mut self) {
        let shared = shared();
        let mut running = shared.running.lock().unwrap_or_else(|p| p.into_inner());
        *running = running.saturating_sub(1);
        drop(running);
        shared.freed.notify_waiters();
    }
}

/// Waits until fewer than `limit` children run in the process, and takes a place.
pub async fn acquire(limit: u32) -> Slot {
    let shared = shared();
    loop {
        let freed = shared.freed.notified();
        tokio::pin!(freed);
        freed.as_mut().enable();
        {
            let mut running = shared.running.lock().unwrap_or_else(|p| p.into_inner());
            if *running < limit.max(1) {
                *running += 1;
                return Slot(());
            }
        }
        freed.await;
    }
}
