//! One background model request a session holds: the background note (docs/compaction.md,
//! *Background compaction*) and the summary of a branch HEAD left (docs/journal-format.md,
//! *`branch_summary`*) are both a [`Job`] — at most one running per kind, its state, its
//! cancellation, its task, and a flag and a wake-up the task sets when its answer is in.
//!
//! Invariants: a job that is dropped, replaced or stopped is cancelled and its task aborted,
//! so no request outlives the session that started it; `done` (a usable answer) and `ended`
//! (any answer, a failure too) are set by the task just before it wakes the engine and returns,
//! so a wake-up left over from an earlier job is told apart, and an engine woken by it waits
//! for the task's answer instead of taking a task not finished yet for one still running.

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
    /// Set by the task when its request has ended, usable or not, just before it wakes the
    /// engine and returns.
    pub(crate) ended: Arc<AtomicBool>,
}

/// What a job's task is given to say its answer is in.
#[derive(Debug, Clone)]
pub(crate) struct Signal {
    done: Arc<AtomicBool>,
    ended: Arc<AtomicBool>,
    wake: Arc<tokio::sync::Notify>,
}

impl Signal {
    /// The answer is in: set the flags, then wake the engine.
    pub(crate) fn done(&self) {
        self.done.store(true, Ordering::Release);
        self.ended.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    /// The request ended without an answer to use (it failed): wake the engine, which looks at
    /// the task, without setting `done`.
    pub(crate) fn failed(&self) {
        self.ended.store(true, Ordering::Release);
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

    /// Whether the task said its request has ended (its answer, or its failure, is about to be
    /// returned): waiting for the task now takes no time.
    pub(crate) fn has_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
            || self.task.as_ref().is_some_and(tokio::task::JoinHandle::is_finished)
    }
}

impl<S, T> Job<S, T> {
    /// Notified when a running request ends.
    pub(crate) fn wake(&self) -> Arc<tokio::sync::Notify> {
        self.wake.clone()
    }

    /// A signal for a task about to start, and the flags it sets (`done`, `ended`).
    pub(crate) fn signal(&self) -> (Signal, (Arc<AtomicBool>, Arc<AtomicBool>)) {
        let done = Arc::new(AtomicBool::new(false));
        let ended = Arc::new(AtomicBool::new(false));
        let signal = Signal { done: done.clone(), ended: ended.clone(), wake: self.wake.clone() };
        (signal, (done, ended))
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
        let (signal, (done, ended)) = job.signal();
        let cancel = CancellationToken::new();
        let first = cancel.clone();
        let task = tokio::spawn(async move {
            signal.done();
            7
        });
        job.start(Running { state: "first", cancel, task: Some(task), done, ended });
        job.wake().notified().await;
        let running = job.slot.as_mut().unwrap();
        assert!(running.is_done());
        assert_eq!(running.task.take().unwrap().await.unwrap(), 7);
        let cancel = CancellationToken::new();
        let second = cancel.clone();
        let (_, (done, ended)) = job.signal();
        let never = tokio::spawn(std::future::pending::<u32>());
        job.start(Running { state: "second", cancel, task: Some(never), done, ended });
        assert!(first.is_cancelled(), "the replaced job was cancelled");
        drop(job);
        assert!(second.is_cancelled(), "a dropped job is cancelled");
    }

    /// The race idle compaction lost: the task wakes the engine just before it returns, so an
    /// engine that looks at the handle alone may find it still running. `ended` is set first,
    /// failures included, and says the answer is a wait of no time away.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_ended_request_is_told_apart_before_its_task_returns() {
        for fails in [false, true] {
            let mut job: Job<(), u32> = Job::default();
            let (signal, (done, ended)) = job.signal();
            let (release, hold) = tokio::sync::oneshot::channel::<()>();
            let task = tokio::spawn(async move {
                if fails {
                    signal.failed();
                } else {
                    signal.done();
                }
                let _ = hold.await;
                7
            });
            let cancel = CancellationToken::new();
            job.start(Running { state: (), cancel, task: Some(task), done, ended });
            job.wake().notified().await;
            let running = job.slot.as_mut().unwrap();
            assert!(!running.task.as_ref().unwrap().is_finished(), "not returned yet");
            assert!(running.has_ended(), "but ended");
            assert_eq!(running.is_done(), !fails);
            let _ = release.send(());
            assert_eq!(running.task.take().unwrap().await.unwrap(), 7);
        }
    }
}
