//! [`EntryId`]: the id of a journal entry, as the journal keeps and compares it.
//!
//! Invariant: an id read from a file is kept exactly as written (never re-formatted).

use std::fmt;

use serde::{Deserialize, Serialize};

/// An entry id: a UUIDv7 in its hyphenated lowercase text form. Ids read from a file are kept
/// exactly as written (never re-formatted), so lookups compare the file's own bytes.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EntryId(String);

impl EntryId {
    /// A fresh UUIDv7 (time-ordered; monotonic within this process).
    pub fn new() -> EntryId {
        EntryId(uuid::Uuid::now_v7().hyphenated().to_string())
    }

    /// Wraps an id as written in a file or typed by a user.
    pub fn from_string(s: impl Into<String>) -> EntryId {
        EntryId(s.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for EntryId {
    fn default() -> Self {
        EntryId::new()
    }
}

impl fmt::Debug for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EntryId({})", self.0)
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for EntryId {
    fn from(s: &str) -> Self {
        EntryId(s.to_owned())
    }
}

impl AsRef<str> for EntryId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for EntryId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl crate::lenient::ViaValue for Option<EntryId> {
    const EXPECTED: &'static str = "an entry id";
}
