//! Which part of the conversation the transcript holds, and the notices that wait for the
//! engine's next page.
//!
//! Invariant: the transcript shows the newest pages and nothing in between is missing;
//! [`Paging::older`] is the one cursor that reaches what is not loaded.

/// The loaded pages of the conversation.
#[derive(Debug, Clone, Default)]
pub struct Paging {
    /// The cursor of the page before the oldest one shown; `None` when the beginning of the
    /// conversation is shown.
    pub older: Option<String>,
    /// A notice to show under the conversation once the engine's next page replaces it (a
    /// resumed session, a HEAD move).
    pub reset_notice: Option<String>,
    /// A notice for the session being switched to (an import's report), shown under its
    /// conversation once it is open.
    pub carried_notice: Option<String>,
}
