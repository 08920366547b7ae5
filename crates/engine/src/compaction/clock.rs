//! How long summary requests take, per model (docs/compaction.md, *Background compaction*): the
//! bound on waiting for a background note is what a foreground pass would take, measured from
//! the summary requests actually sent — never from a pass that only committed a ready note.
//!
//! Shared between the session and the summarizers it hands out (a background pass measures its
//! own request); a clone sees the same figures. Nothing here blocks for long: one short lock
//! per answered request and per look.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The duration of the last answered summary request of each model.
#[derive(Clone, Debug, Default)]
pub(crate) struct SummaryClock(Arc<Mutex<HashMap<String, Duration>>>);

impl SummaryClock {
    /// Records that a summary request of `model` was answered after `took`.
    pub(crate) fn record(&self, model: &str, took: Duration) {
        let mut times = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        times.insert(model.to_owned(), took);
    }

    /// How long the last answered summary request of `model` took, if one was timed.
    pub(crate) fn measured(&self, model: &str) -> Option<Duration> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).get(model).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_model_keeps_its_last_measure_and_clones_share_them() {
        let clock = SummaryClock::default();
        let seen_by_a_pass = clock.clone();
        assert_eq!(clock.measured("m"), None);
        seen_by_a_pass.record("m", Duration::from_secs(3));
        seen_by_a_pass.record("m", Duration::from_secs(2));
        seen_by_a_pass.record("other", Duration::from_millis(5));
        assert_eq!(clock.measured("m"), Some(Duration::from_secs(2)));
        assert_eq!(clock.measured("other"), Some(Duration::from_millis(5)));
    }
}
