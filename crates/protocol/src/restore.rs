//! What `/rewind`, `/fork`, `/undo` and `codewhale rewind` can take back: the types of the
//! restore ops and events (docs/journal-format.md, *The file store*).

use serde::{Deserialize, Serialize};

/// What a rewind or fork takes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TakeBack {
    /// Only the conversation: HEAD moves, the files stay as they are.
    #[default]
    Conversation,
    /// Only the code: the files return to their content then, HEAD stays.
    Code,
    /// Both.
    Both,
}

impl TakeBack {
    pub fn conversation(self) -> bool {
        matches!(self, TakeBack::Conversation | TakeBack::Both)
    }

    pub fn code(self) -> bool {
        matches!(self, TakeBack::Code | TakeBack::Both)
    }
}

/// What a restore does (or would do) to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestoreState {
    /// Written back to its earlier content.
    Restore,
    /// It did not exist then: removed.
    Remove,
    /// Already holds its earlier content: left alone (restoring twice is harmless).
    Unchanged,
    /// Holds content no tool recorded: someone else changed it. Overwritten only when forced.
    ChangedElsewhere,
    /// Its earlier content is missing from the session's file store: cannot be restored.
    Unavailable,
    /// A path git or Codewhale executes or reads as instructions (a `.git` or `.codewhale`
    /// component, an `AGENTS.md` or `CLAUDE.md`): written back only with the user's yes, the
    /// same second yes as a file changed elsewhere.
    Protected,
}

/// One file of a restore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreFile {
    /// Workspace-relative, as the tool showed it.
    pub path: String,
    pub state: RestoreState,
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RestoreOutcome {
    /// Files written back or removed.
    pub restored: Vec<String>,
    /// Files left as they are for want of a yes (not forced): changed by someone else, or
    /// protected (those are also in `protected`).
    pub skipped: Vec<String>,
    /// The files of `skipped` left because they are protected paths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected: Vec<String>,
    /// Files that could not be restored, each with the reason.
    pub failed: Vec<(String, String)>,
}
