//! [`Timestamp`]: the instant of a journal entry, written as RFC 3339 in UTC with milliseconds.

use std::fmt;

use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};
use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use crate::json_object::Key;

/// A UTC instant written as RFC 3339 with milliseconds and `Z`: `2026-11-29T18:00:00.123Z`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp(DateTime<Utc>);

impl Timestamp {
    /// Now, truncated to milliseconds (so a written and re-read value compares equal).
    pub fn now() -> Timestamp {
        Timestamp(Utc::now().trunc_subsecs(3))
    }

    pub fn from_datetime(t: DateTime<Utc>) -> Timestamp {
        Timestamp(t.trunc_subsecs(3))
    }

    pub fn as_datetime(&self) -> DateTime<Utc> {
        self.0
    }

    /// Formats with a `strftime`-style pattern (UTC), e.g. `%Y-%m-%d %H:%M`.
    pub fn format(&self, pattern: &str) -> String {
        self.0.format(pattern).to_string()
    }
}

/// The Unix epoch: what an unreadable timestamp of another tool's line reads as.
impl Default for Timestamp {
    fn default() -> Self {
        Timestamp(DateTime::<Utc>::UNIX_EPOCH)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Millis, true))
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let k = Key::deserialize(d)?;
        DateTime::parse_from_rfc3339(&k.0)
            .map(|t| Timestamp(t.with_timezone(&Utc)))
            .map_err(|e| de::Error::custom(format!("bad timestamp {:?}: {e}", k.0)))
    }
}

impl crate::lenient::ViaValue for Timestamp {
    const EXPECTED: &'static str = "an RFC 3339 timestamp";
}
