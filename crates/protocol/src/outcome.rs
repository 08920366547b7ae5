//! What an explicit user action changed, as data: the front end decides from these, and shows
//! the sentence that comes with them, never the other way round.

use serde::{Deserialize, Serialize};

/// An anchor pinned or unpinned ([`super::Op::AddAnchor`], [`super::Op::RemoveAnchor`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum AnchorChange {
    /// `text` is the note as pinned: redacted, as the model reads it.
    Pinned { index: usize, text: String },
    /// `text` is the note that was unpinned, redacted.
    Removed { index: usize, text: String },
}

/// How HEAD moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeadMove {
    /// To another branch's tip ([`super::Op::Checkout`]).
    Checkout,
    /// To a new branch from an earlier message ([`super::Op::Fork`], a fork that takes back).
    Fork,
    /// Back on this branch ([`super::Op::Rewind`], a rewind that takes back).
    Rewind,
}
