//! Backoff arithmetic and `Retry-After` parsing; the retry loop itself lives in the client.
//!
//! Invariants: a computed wait never exceeds `max_backoff`; a server-requested wait is honoured
//! exactly (not jittered) when it is within `max_retry_after`, and ends the retries otherwise.

use std::time::{Duration, SystemTime};

use rand::Rng;

use crate::config::RetryPolicy;

/// What to do after a transient failure on attempt `attempt` (0 = the first try).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    Wait(Duration),
    GiveUp,
}

/// Decide whether and how long to wait before the next attempt.
pub fn decide(policy: &RetryPolicy, attempt: u32, retry_after: Option<Duration>) -> RetryDecision {
    if attempt >= policy.max_retries {
        return RetryDecision::GiveUp;
    }
    if let Some(wait) = retry_after {
        return if wait <= policy.max_retry_after {
            RetryDecision::Wait(wait)
        } else {
            RetryDecision::GiveUp
        };
    }
    RetryDecision::Wait(backoff(policy, attempt))
}

/// Exponential backoff with full jitter: uniform in `[0, min(max, initial · 2^attempt)]`, so
/// many clients hit by the same outage do not retry in lockstep.
pub fn backoff(policy: &RetryPolicy, attempt: u32) -> Duration {
    let factor = 1u32.checked_shl(attempt.min(20)).unwrap_or(u32::MAX);
    let ceiling = policy.initial_backoff.saturating_mul(factor).min(policy.max_backoff);
    let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
    // Never zero: a retry that spins immediately helps no overloaded server.
    let low = millis.min(1).max(millis / 10);
    Duration::from_millis(rand::rng().random_range(low..=millis.max(low)))
}

/// The server's requested wait, from `retry-after-ms` (OpenAI), or `retry-after` as seconds
/// (possibly fractional) or an HTTP date.
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    if let Some(ms) =
        header_str(headers, "retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok())
    {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    let value = header_str(headers, "retry-after")?;
    parse_retry_after(value, SystemTime::now())
}

fn header_str<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// `Retry-After` as seconds or an HTTP date in any of the three forms RFC 9110 allows
/// (`Wed, 21 Oct 2015 07:28:00 GMT`, `Wednesday, 21-Oct-15 07:28:00 GMT`,
/// `Wed Oct 21 07:28:00 2015`).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;

    #[test]
    fn backoff_grows_and_stays_bounded() {
        let policy = RetryPolicy {
            max_retries: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(1000),
            max_retry_after: Duration::from_secs(60),
        };
        for attempt in 0..10 {
            for _ in 0..50 {
                let wait = backoff(&policy, attempt);
                let ceiling = (100u64 << attempt).min(1000);
                assert!(wait <= Duration::from_millis(ceiling), "{attempt}: {wait:?}");
                assert!(wait >= Duration::from_millis(1));
            }
        }
    }

    #[test]
    fn decisions_honour_the_policy_and_retry_after() {
        let policy = RetryPolicy::fast();
        assert_eq!(decide(&policy, 3, None), RetryDecision::GiveUp);
        assert_eq!(
            decide(&policy, 0, Some(Duration::from_secs(2))),
            RetryDecision::Wait(Duration::from_secs(2))
        );
        assert_eq!(decide(&policy, 0, Some(Duration::from_secs(600))), RetryDecision::GiveUp);
        assert_eq!(decide(&RetryPolicy::none(), 0, None), RetryDecision::GiveUp);
    }

    #[test]
    fn retry_after_parses_seconds_and_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(1_445_412_470); // 2015-10-21 07:27:50 GMT
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("0.5", now), Some(Duration::from_millis(500)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now), Some(Duration::ZERO));
        // The two obsolete forms a server may still send.
        let ten = Some(Duration::from_secs(10));
        assert_eq!(parse_retry_after("Wednesday, 21-Oct-15 07:28:00 GMT", now), ten);
        assert_eq!(parse_retry_after("Wed Oct 21 07:28:00 2015", now), ten);
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn retry_after_ms_header_wins() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after-ms", "250".parse().unwrap());
        headers.insert("retry-after", "9".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
    }
}
