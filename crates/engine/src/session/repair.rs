//! Answering the tool calls a crash or an interrupt left without a result (docs/journal-format.md,
//! *The view*): before anything else is appended after them, each gets an "interrupted" error
//! result.

use codewhale_journal::ToolResultPayload;

use super::{Session, INTERRUPTED_RESULT};
use crate::error::EngineError;

impl Session {
    /// Gives every tool call in the view that has no result an "interrupted" error result (a crash
    /// or an interrupt left it). Calls of the last assistant message are answered in place; a call
    /// further back — anywhere on the chain — gets a result with `repairs: true` appended at HEAD,
    /// which the view reads right after its call (docs/journal-format.md, *The view*). Returns how
    /// many.
    pub fn heal_dangling_calls(&mut self) -> Result<usize, EngineError> {
        let view = self.render();
        let mut answered: std::collections::HashSet<&str> = view
            .items
            .iter()
            .filter_map(|i| i.tool_result().map(|r| r.tool_use_id.as_str()))
            .collect();
        // The last assistant message whose calls are still the end of the view: answering
        // those at HEAD puts the results right where they belong.
        let tail_from = view
            .items
            .iter()
            .rposition(|i| i.role == codewhale_journal::Role::Assistant)
            .filter(|&p| view.items[p + 1..].iter().all(|i| i.tool_result().is_some()));
        let mut missing: Vec<(String, bool)> = Vec::new();
        for (index, item) in view.items.iter().enumerate() {
            if item.role != codewhale_journal::Role::Assistant {
                continue;
            }
            for call in item.blocks().iter().filter_map(|b| b.as_tool_use()) {
                if answered.insert(call.id.as_str()) {
                    missing.push((call.id.clone(), Some(index) != tail_from));
                }
            }
        }
        for (id, repairs) in &missing {
            let mut result = ToolResultPayload::new(id.clone(), INTERRUPTED_RESULT, true);
            result.repairs = *repairs;
            self.append(result)?;
        }
        Ok(missing.len())
    }
}
