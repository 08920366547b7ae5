//! Running work and the clock it is measured by: the tool calls running, the turn's progress
//! and a retry's countdown.
//!
//! Invariant: every time drawn is measured from [`Progress::clock`], the time of the last tick,
//! so a frame never mixes two "now"s; a turn's end clears all three kinds of work.

use std::time::Instant;

/// How far the running turn has come, for the status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnProgress {
    pub since: Instant,
    /// Bytes of reply text streamed so far.
    pub bytes: usize,
}

/// A provider request being retried: shown as "retrying in 4 s · attempt 2/5".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    pub attempt: u32,
    pub max_attempts: u32,
    pub until: Instant,
}

/// The work that runs, with when it started.
#[derive(Debug, Clone)]
pub struct Progress {
    /// The time as of the last tick (elapsed times and countdowns are drawn from it).
    pub clock: Instant,
    /// Tool calls running, with when they started.
    pub running_since: Vec<(String, Instant)>,
    /// The turn that runs: since when, and how much reply text came so far (the status
    /// line's "working (7 s · ~120 tokens)").
    pub turn_progress: Option<TurnProgress>,
    /// A provider request being retried.
    pub retry: Option<Retry>,
    /// When the engine last heard from this front end (an op, or that the user is typing):
    /// idle compaction waits while the user types.
    pub typing_told: Option<Instant>,
}

impl Default for Progress {
    fn default() -> Progress {
        let now = Instant::now();
        Progress {
            clock: now,
            running_since: Vec::new(),
            turn_progress: None,
            retry: None,
            typing_told: Some(now),
        }
    }
}

impl Progress {
    /// The clock moves to `now`; a retry whose wait is over is no longer shown.
    pub fn tick(&mut self, now: Instant) {
        self.clock = now;
        if self.retry.is_some_and(|r| r.until <= now) {
            self.retry = None;
        }
    }

    /// Whether anything drawn from this changes with time.
    pub fn animating(&self) -> bool {
        !self.running_since.is_empty() || self.retry.is_some() || self.turn_progress.is_some()
    }

    /// The turn ended: nothing of it runs any more.
    pub fn turn_ended(&mut self) {
        self.retry = None;
        self.turn_progress = None;
        self.running_since.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_retry_is_shown_until_its_wait_is_over_and_a_turn_end_clears_everything() {
        let start = Instant::now();
        let mut progress = Progress { clock: start, ..Progress::default() };
        assert!(!progress.animating());
        progress.retry =
            Some(Retry { attempt: 1, max_attempts: 5, until: start + Duration::from_secs(4) });
        progress.running_since.push(("c1".into(), start));
        progress.tick(start + Duration::from_secs(3));
        assert!(progress.retry.is_some(), "still waiting");
        progress.tick(start + Duration::from_secs(4));
        assert_eq!(progress.retry, None, "the wait is over");
        assert!(progress.animating(), "the call still runs");
        progress.turn_progress = Some(TurnProgress { since: start, bytes: 10 });
        progress.turn_ended();
        assert!(!progress.animating());
    }
}
