//! One background model request a session holds: the background note (docs/compaction.md,
//! *Background compaction*) and the summary of a branch HEAD left (docs/journal-format.md,
//! *`branch_summary`*) are both a [`Job`] — at most one running per kind, its state, its
//! cancellation, its task, and a flag and a wake-up the task sets when its answer is in.
//!
//! Invariants: a job that is dropped, replaced or stopped is cancelled and its task aborted,
//! so no request outlives the session that started it; `done` is set by the task just before
//! it wakes the engine, so a wake-up left over from an earlier job is told apart.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use codewhale_provider::CancellationToken;
use tokio::task::JoinHandle;

/// The job of one kind a session holds, if any.
#[derive(Debug)]
pub(crate) struct Job<S, T> {
    pub(crate) slot: Option<Running<S, T>>,
    /// Woken when the running request ends, so an idle engine takes its answer at once.
    wake: Arc<tokio::sync::Notify>,
}

impl<S, T> Default for Job<S, T> {
    fn default() -> Self {
        Job { slot: None, wake: Arc::default() }
    }
}

/// A job started and not yet taken.
#[derive(Debug)]
pub(crate) struct Running<S, T> {
    /// What the job's owner keeps with it.
    pub(crate) state: S,
    pub(crate) cancel: CancellationToken,
    /// The request; `None` once its answer was taken.
    pub(crate) task: Option<JoinHandle<T>>,
    /// Set by the task when its answer is in (a usable one: a failed request leaves it unset),
    /// just before it wakes the engine.
    pub(crate) done: Arc<AtomicBool>,
}

/// What a job's task is given to say its answer is in.
#[derive(Debug, Clone)]
pub(crate) struct Signal {
    done: Arc<AtomicBool>,
    wake: Arc<tokio::sync::Notify>,
}

impl Signal {
    /// The answer is in: set the flag, then wake the engine.
    pub(crate) fn done(&self) {
        self.done.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    /// The request ended without an answer to use (it failed): wake the engine, which looks at
    /// the task, without setting the flag.
    pub(crate) fn failed(&self) {
        self.wake.notify_one();
    }
}

impl<S, T> Running<S, T> {
    /// Cancels the request and aborts its task.
    pub(crate) fn stop(self) {
        self.cancel.cancel();
        if let Some(task) = self.task {
            task.abort();
        }
    }

    /// Whether the task said its answer is in.
    pub(crate) fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }
}

impl<S, T> Job<S, T> {
    /// Notified when a running request ends.
    pub(crate) fn wake(&self) -> Arc<tokio::sync::Notify> {
        self.wake.clone()
    }

    /// A signal for a task about to start, and the flag it sets.
    pub(crate) fn signal(&self) -> (Signal, Arc<AtomicBool>) {
        let done = Arc::new(AtomicBool::new(false));
        (Signal { done: done.clone(), wake: self.wake.clone() }, done)
    }

    /// Holds a started job, stopping any other.
    pub(crate) fn start(&mut self, running: Running<S, T>) {
        if let Some(old) = self.slot.replace(running) {
            old.stop();
        }
    }

    /// Stops the running job, if any; whether there was one.
    pub(crate) fn stop(&mut self) -> bool {
        self.slot.take().map(Running::stop).is_some()
    }
}

impl<S, T> Drop for Job<S, T> {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_dropped_or_replaced_job_is_cancelled_and_a_finished_one_says_so() {
        let mut job: Job<&str, u32> = Job::default();
        let (signal, done) = job.signal();
        let cancel = CancellationToken::new();
        let first = cancel.clone();
        let task = tokio::spawn(async move {
            signal.done();
            7
        });
        job.start(Running { state: "first", cancel, task: Some(task), done });
        job.wake().notified().await;
        let running = job.slot.as_mut().unwrap();
        assert!(running.is_done());
        assert_eq!(running.task.take().unwrap().await.unwrap(), 7);
        let cancel = CancellationToken::new();
        let second = cancel.clone();
        let (_, done) = job.signal();
        let never = tokio::spawn(std::future::pending::<u32>());
        job.start(Running { state: "second", cancel, task: Some(never), done });
        assert!(first.is_cancelled(), "the replaced job was cancelled");
        drop(job);
        assert!(second.is_cancelled(), "a dropped job is cancelled");
    }
}
