//! [`check_view`]: whether a view can be sent as a request (docs/journal-format.md, *The view*,
//! "Before every request").
//!
//! Pure: tool pairs complete, no orphans, legal role order. The engine runs it before every
//! request and before a compaction record is written; `journal check` runs it on HEAD's view.

use crate::block::Block;
use crate::entry::EntryId;
use crate::view::{ItemContent, Role, View};

/// Why a view cannot be sent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    #[error("the view starts with an assistant message (entry {entry})")]
    FirstNotUser { entry: EntryId },
    #[error("assistant entry {entry} follows another assistant message with no user message or tool result between")]
    AssistantAfterAssistant { entry: EntryId },
    #[error("tool call {call_id} in assistant entry {entry} has no tool result after it")]
    MissingResult { entry: EntryId, call_id: String },
    #[error("tool result entry {entry} answers call {call_id}, which is not a pending call of the assistant message before it")]
    OrphanResult { entry: EntryId, call_id: String },
    #[error("assistant entry {entry} uses tool call id {call_id} twice")]
    DuplicateCall { entry: EntryId, call_id: String },
}

impl ViewError {
    /// The entry the error names.
    pub fn entry(&self) -> &EntryId {
        match self {
            ViewError::FirstNotUser { entry }
            | ViewError::AssistantAfterAssistant { entry }
            | ViewError::MissingResult { entry, .. }
            | ViewError::OrphanResult { entry, .. }
            | ViewError::DuplicateCall { entry, .. } => entry,
        }
    }
}

/// Checks that a view can be sent: the first item is a user message; no assistant message
/// follows another without a user message or tool result between; every `tool_use` is answered
/// by a tool result directly after its assistant message (results of one batch may come in any
/// order), and every tool result answers a call of the assistant message just before it.
pub fn check_view(view: &View) -> Result<(), ViewError> {
    let mut pending: Vec<(&str, &EntryId)> = Vec::new();
    let mut last_role: Option<Role> = None;
    for item in &view.items {
        match (&item.content, item.kind) {
            (ItemContent::ToolResult(r), _) => {
                match pending.iter().position(|(id, _)| *id == r.tool_use_id) {
                    Some(i) => {
                        pending.remove(i);
                    }
                    None => {
                        return Err(ViewError::OrphanResult {
                            entry: item.source.clone(),
                            call_id: r.tool_use_id.clone(),
                        })
                    }
                }
            }
            (ItemContent::Blocks(blocks), _) => {
                if let Some((call_id, entry)) = pending.first() {
                    return Err(ViewError::MissingResult {
                        entry: (*entry).clone(),
                        call_id: (*call_id).to_owned(),
                    });
                }
                if item.role == Role::Assistant {
                    match last_role {
                        None => return Err(ViewError::FirstNotUser { entry: item.source.clone() }),
                        Some(Role::Assistant) => {
                            return Err(ViewError::AssistantAfterAssistant {
                                entry: item.source.clone(),
                            })
                        }
                        Some(Role::User) => {}
                    }
                    for call in blocks.iter().filter_map(Block::as_tool_use) {
                        if pending.iter().any(|(id, _)| *id == call.id) {
                            return Err(ViewError::DuplicateCall {
                                entry: item.source.clone(),
                                call_id: call.id.clone(),
                            });
                        }
                        pending.push((&call.id, &item.source));
                    }
                }
            }
        }
        last_role = Some(item.role);
    }
    match pending.first() {
        Some((call_id, entry)) => Err(ViewError::MissingResult {
            entry: (*entry).clone(),
            call_id: (*call_id).to_owned(),
        }),
        None => Ok(()),
    }
}
