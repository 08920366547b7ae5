//! How a call ended, between its two spellings: the protocol's [`CallEnd`] (what front ends
//! show) and the journal's (what a `tool_result` or a `user_shell` entry records). One mapping
//! each way, so a tool call and the user's own `!CMD` are journaled and read back alike.

use codewhale_journal::CallEnd as Journaled;
use codewhale_protocol::CallEnd;

/// The journal's value for `end`.
pub(crate) fn to_journal(end: CallEnd) -> Journaled {
    match end {
        CallEnd::Completed => Journaled::Completed,
        CallEnd::Failed => Journaled::Failed,
        CallEnd::TimedOut => Journaled::TimedOut,
        CallEnd::Denied => Journaled::Denied,
        CallEnd::NotApproved => Journaled::NotApproved,
        CallEnd::NotRun => Journaled::NotRun,
        CallEnd::Interrupted => Journaled::Interrupted,
    }
}

/// The protocol's value for a journaled `end`; one a newer version wrote reads as `failed`.
pub(crate) fn from_journal(end: &Journaled) -> CallEnd {
    match end {
        Journaled::Completed => CallEnd::Completed,
        Journaled::TimedOut => CallEnd::TimedOut,
        Journaled::Denied => CallEnd::Denied,
        Journaled::NotApproved => CallEnd::NotApproved,
        Journaled::NotRun => CallEnd::NotRun,
        Journaled::Interrupted => CallEnd::Interrupted,
        Journaled::Failed | Journaled::Other(_) => CallEnd::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_end_survives_the_journal() {
        use CallEnd::*;
        for end in [Completed, Failed, TimedOut, Denied, NotApproved, NotRun, Interrupted] {
            assert_eq!(from_journal(&to_journal(end)), end);
        }
    }
}
