//! The short stable names across the seam: what failed ([`ErrorKind`]), what started a
//! compaction and what it wrote. Each serializes as the string its `as_str` returns.

use serde::{Deserialize, Serialize};

/// What kind of failure an [`Event::Error`](super::Event::Error) reports; serialized as a short
/// stable name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(strum::EnumIter))]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A configuration problem (a bad file, no provider).
    Config,
    /// The session file could not be opened, read or written.
    Journal,
    SessionNotFound,
    Io,
    /// The conversation cannot be sent as it is.
    InvalidView,
    /// A fork, checkout or rewind was refused.
    Branch,
    /// Another op is running; interrupt it or wait.
    Busy,
    /// An op this engine does not know (a front end built against a newer protocol).
    Unsupported,
    /// An approval for a call that is not waiting.
    NoSuchCall,
    /// Pinning or unpinning an anchor failed.
    Anchor,
    /// Even the bounded minimum of the conversation does not fit the window.
    ContextFull,
    // The provider's kinds.
    ContextOverflow,
    RateLimited,
    Overloaded,
    Auth,
    BadRequest,
    Network,
    /// Nothing answers at the provider's address (connection refused, unknown host).
    Unreachable,
    Protocol,
    Cancelled,
    /// A custom slash command that cannot run (not found, or an untrusted workspace's).
    Command,
    /// A user's hook refused what it ran before (a `UserPromptSubmit` hook's exit 2).
    Hook,
}

/// What started a compaction pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(strum::EnumIter))]
#[serde(rename_all = "snake_case")]
pub enum CompactionTrigger {
    Auto,
    Manual,
    Reactive,
    /// The session was idle past `compaction.idle_after_sec` above the early mark: the note was
    /// committed while the provider's cache was still warm.
    Idle,
}

impl CompactionTrigger {
    /// The short name (`auto`, `manual`, `reactive`, `idle`), as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionTrigger::Auto => "auto",
            CompactionTrigger::Manual => "manual",
            CompactionTrigger::Reactive => "reactive",
            CompactionTrigger::Idle => "idle",
        }
    }
}

/// What a compaction pass wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(strum::EnumIter))]
pub enum CompactionKind {
    /// A summary replaced the older part of the conversation.
    #[serde(rename = "summary")]
    Summary,
    /// Long outputs were stubbed or shortened; nothing was summarized.
    #[serde(rename = "prune-only")]
    PruneOnly,
}

impl CompactionKind {
    /// The short name (`summary`, `prune-only`), as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionKind::Summary => "summary",
            CompactionKind::PruneOnly => "prune-only",
        }
    }
}

impl ErrorKind {
    /// The short name, as serialized (`context_overflow`, `busy`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Config => "config",
            ErrorKind::Journal => "journal",
            ErrorKind::SessionNotFound => "session_not_found",
            ErrorKind::Io => "io",
            ErrorKind::InvalidView => "invalid_view",
            ErrorKind::Branch => "branch",
            ErrorKind::Busy => "busy",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::NoSuchCall => "no_such_call",
            ErrorKind::Anchor => "anchor",
            ErrorKind::ContextFull => "context_full",
            ErrorKind::ContextOverflow => "context_overflow",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::Auth => "auth",
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::Network => "network",
            ErrorKind::Unreachable => "unreachable",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Command => "command",
            ErrorKind::Hook => "hook",
        }
    }
}

macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}

display_as_str!(ErrorKind, CompactionTrigger, CompactionKind);
