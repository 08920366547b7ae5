//! The decisions of background compaction (docs/compaction.md, *Background compaction*), as pure
//! functions over plain data: when a pass starts, when its snapshot no longer describes the
//! session, how long a note not ready yet is waited for. The shell in [`super`] gathers the figures
//! and acts on the answers.

use std::time::Duration;

use crate::budget::Limits;

/// docs/compaction.md, *Limits and configuration*: a background pass starts at this fraction of
/// usable input.
pub const DEFAULT_BACKGROUND_AT: f64 = 0.6;

/// The kept tail a snapshot at `pressure` aims at, as a fraction of usable input: what the
/// conversation will still add before the threshold comes out of the usual 25 %, so the tail is
/// about 25 % of `U` when the note is committed, as a foreground pass would keep
/// (docs/compaction.md, *The cut*), instead of 25 % plus everything said meanwhile. Never below
/// zero: the cut keeps at least the protected part anyway.
pub fn snapshot_tail_fraction(limits: &Limits, pressure: u64) -> f64 {
    let to_come =
        limits.threshold.saturating_sub(pressure) as f64 / limits.usable_input.max(1) as f64;
    (super::super::cut::TAIL_FRACTION - to_come).max(0.0)
}

/// How long a note not ready yet is waited for when no summary request of its model has been
/// timed yet: about what a 12,000-character note takes a real model to write.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(90);

/// The early mark, in provider tokens: `fraction × U` (default [`DEFAULT_BACKGROUND_AT`]).
pub fn early_mark(limits: &Limits, fraction: Option<f64>) -> u64 {
    (limits.usable_input as f64 * fraction.unwrap_or(DEFAULT_BACKGROUND_AT)).floor() as u64
}

/// What decides whether a background pass starts now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartCheck {
    /// `compaction.background` (default true).
    pub enabled: bool,
    pub pressure: u64,
    pub early_mark: u64,
    pub threshold: u64,
    /// A background pass is running or its note waits.
    pub busy: bool,
    /// A note was already used up since the last record (the mark re-arms after a record).
    pub spent: bool,
    /// Auto passes hold back after failed summaries (docs/compaction.md, *Triggers*).
    pub backing_off: bool,
    /// `exec` lives for one turn: only inside its tool loop (after the turn's first reply).
    pub allowed_here: bool,
}

/// Whether a background pass starts: between the early mark and the threshold (at the threshold
/// the foreground pass runs anyway), when none runs and nothing holds it back.
pub fn should_start(c: &StartCheck) -> bool {
    c.enabled
        && c.allowed_here
        && !c.busy
        && !c.spent
        && !c.backing_off
        && c.early_mark < c.threshold
        && c.pressure >= c.early_mark
        && c.pressure < c.threshold
}

/// What a snapshot was taken on, and what the session is now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Basis {
    pub model: String,
    pub anchors: Option<String>,
    /// Compaction records in the journal.
    pub records: usize,
}

/// Why a snapshot no longer describes the session, if it does not.
pub fn stale(then: &Basis, now: &Basis, head_on_spine: bool) -> Option<&'static str> {
    if !head_on_spine {
        Some("HEAD moved off the branch it was written on")
    } else if then.model != now.model {
        Some("the model changed")
    } else if then.anchors != now.anchors {
        Some("the anchors changed")
    } else if then.records != now.records {
        Some("another compaction record was written")
    } else {
        None
    }
}

/// How long a note not ready yet is waited for: as long as a foreground pass would take — the
/// last summary request of the model timed in this session (never a pass that only committed a
/// ready note), else [`DEFAULT_WAIT`].
pub fn wait_bound(last_request: Option<Duration>) -> Duration {
    last_request.unwrap_or(DEFAULT_WAIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check() -> StartCheck {
        StartCheck {
            enabled: true,
            pressure: 6_500,
            early_mark: 6_000,
            threshold: 8_000,
            busy: false,
            spent: false,
            backing_off: false,
            allowed_here: true,
        }
    }

    #[test]
    fn starts_between_the_early_mark_and_the_threshold_only() {
        assert!(should_start(&check()));
        assert!(!should_start(&StartCheck { pressure: 5_999, ..check() }));
        assert!(should_start(&StartCheck { pressure: 6_000, ..check() }));
        assert!(!should_start(&StartCheck { pressure: 8_000, ..check() }), "foreground's turn");
    }

    #[test]
    fn one_at_a_time_and_never_when_held_back() {
        for held in [
            StartCheck { busy: true, ..check() },
            StartCheck { spent: true, ..check() },
            StartCheck { backing_off: true, ..check() },
            StartCheck { enabled: false, ..check() },
            StartCheck { allowed_here: false, ..check() },
            StartCheck { early_mark: 8_000, ..check() },
        ] {
            assert!(!should_start(&held), "{held:?}");
        }
    }

    #[test]
    fn a_snapshot_goes_stale_on_every_change_it_was_built_on() {
        let then = Basis { model: "m".into(), anchors: Some("a".into()), records: 1 };
        assert_eq!(stale(&then, &then.clone(), true), None);
        assert!(stale(&then, &then.clone(), false).unwrap().contains("HEAD"));
        let model = Basis { model: "n".into(), ..then.clone() };
        assert!(stale(&then, &model, true).unwrap().contains("model"));
        let anchors = Basis { anchors: None, ..then.clone() };
        assert!(stale(&then, &anchors, true).unwrap().contains("anchors"));
        let records = Basis { records: 2, ..then.clone() };
        assert!(stale(&then, &records, true).unwrap().contains("record"));
    }

    #[test]
    fn the_wait_is_bounded_by_a_foreground_pass() {
        assert_eq!(wait_bound(Some(Duration::from_secs(3))), Duration::from_secs(3));
        assert_eq!(wait_bound(None), DEFAULT_WAIT);
    }

    #[test]
    fn a_snapshot_leaves_room_for_what_comes_before_the_threshold() {
        let limits = Limits::compute(20_000, crate::budget::WindowSource::Config, None, 0.8);
        // U = 15,000, threshold 12,000: at 9,000 there are 3,000 (20 %) to come.
        let at_mark = snapshot_tail_fraction(&limits, 9_000);
        assert!((at_mark - 0.05).abs() < 1e-9, "{at_mark}");
        assert_eq!(snapshot_tail_fraction(&limits, 6_000), 0.0);
        let at_threshold = snapshot_tail_fraction(&limits, 12_000);
        assert!((at_threshold - crate::compaction::cut::TAIL_FRACTION).abs() < 1e-9);
    }

    #[test]
    fn the_early_mark_defaults_to_six_tenths_of_usable_input() {
        let limits = Limits::compute(20_000, crate::budget::WindowSource::Config, None, 0.8);
        assert_eq!(early_mark(&limits, None), (limits.usable_input as f64 * 0.6) as u64);
        assert_eq!(early_mark(&limits, Some(0.5)), limits.usable_input / 2);
    }
}
