//! A last user message that never got a reply — the process ended (a crash, a kill) after it was
//! journaled and before any answer was — is set aside when the session is opened again
//! (docs/journal-format.md, *`head`*, `head` reason `unanswered`): HEAD moves to the entry before
//! it and the front end offers its text back. Otherwise the next prompt would be sent glued to it.
//!
//! Invariant: only a plain user message at the very end of HEAD's branch (its attachments may
//! follow it) is set aside; the message stays in the file, on a branch of its own.

use codewhale_journal::{flags, Journal, Payload};

use super::Session;
use crate::error::EngineError;

/// The id and text of HEAD's unanswered last message, if the branch ends with one.
fn unanswered_tail(journal: &Journal) -> Option<(String, String)> {
    let spine = journal.spine_positions(journal.head_position());
    for &p in spine.iter().rev() {
        if !journal.is_model_visible_at(p) {
            continue;
        }
        let entry = journal.read_entry(p);
        let Payload::User(user) = &entry.payload else { return None };
        if user.attachment.is_some() {
            continue;
        }
        if !journal.has_flags(p, flags::PLAIN) || !user.is_plain() {
            return None;
        }
        let text: Vec<&str> = user.content.iter().filter_map(|b| b.as_text()).collect();
        return Some((entry.id.to_string(), text.join("\n")));
    }
    None
}

impl Session {
    /// Sets aside HEAD's unanswered last message, if there is one, and returns its text.
    pub fn set_aside_unanswered(&mut self) -> Result<Option<String>, EngineError> {
        let Some((id, text)) = unanswered_tail(self.state.journal.journal()) else {
            return Ok(None);
        };
        let record = self.state.journal.journal().set_aside(&id)?;
        self.append_entry(record)?;
        self.replay_budget();
        Ok(Some(text))
    }
}
