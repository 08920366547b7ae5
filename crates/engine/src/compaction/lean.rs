//! The lean summary request (docs/compaction.md, *Small local models*): when the session's shared
//! prefix — system prompt, project instructions and tool schemas — would take more than a third
//! of the summarizing model's window, the summary request goes without it, so the room is
//! spent on the conversation it summarizes.
//!
//! Without tool schemas a provider refuses tool-call blocks (Anthropic) or may, so the
//! transcript is flattened: a call becomes a `[call <id>: <name> <arguments>]` line of its
//! assistant message, a result a user message `[result of call <id>]` followed by its output,
//! and thinking and provider-specific blocks are left out (the note is about what was said and
//! done). Pure: items in, items out.

use codewhale_journal::{Block, ItemContent, ItemKind, Role, ViewItem};

use crate::prompt::SystemPrompt;

/// The system prompt of a lean request.
const SYSTEM: &str = "You write the handoff note of a coding session between a user and an AI \
                      assistant that works through tools. In the transcript, a tool call is a \
                      `[call ID: NAME ARGUMENTS]` line and its output a `[result of call ID]` \
                      message.";

/// The longest argument text a flattened call shows, in bytes.
const ARGUMENTS_MAX_BYTES: usize = 2_000;

/// Whether a summary request leaves the shared prefix out: it would take more than a third of
/// the summarizer's window.
pub fn wanted(prefix_tokens: u64, window: u64) -> bool {
    prefix_tokens.saturating_mul(3) > window
}

/// The lean request's system prompt.
pub fn system_prompt() -> SystemPrompt {
    SystemPrompt {
        base: SYSTEM.to_owned(),
        instructions: Vec::new(),
        skipped: Vec::new(),
        skills: String::new(),
    }
}

/// Estimated tokens of [`system_prompt`] (an upper bound: a quarter of its bytes, rounded up,
/// plus a little for the message framing).
pub fn system_tokens() -> u64 {
    (SYSTEM.len() as u64).div_ceil(3) + 8
}

/// `items` with every tool call and result as plain text (module docs).
pub fn flatten(items: Vec<ViewItem>) -> Vec<ViewItem> {
    items.into_iter().filter_map(flatten_item).collect()
}

fn flatten_item(mut item: ViewItem) -> Option<ViewItem> {
    match item.content {
        ItemContent::ToolResult(r) => {
            let output = r.content.try_str().unwrap_or("[output that is not text]");
            let error = if r.is_error { " (an error)" } else { "" };
            let text = format!("[result of call {}{error}]\n{output}", r.tool_use_id);
            item.role = Role::User;
            item.kind = ItemKind::Synthetic;
            item.content = ItemContent::Blocks(vec![Block::text(text)]);
            Some(item)
        }
        ItemContent::Blocks(blocks) => {
            let blocks: Vec<Block> = blocks
                .into_iter()
                .filter_map(|b| match b {
                    Block::Text(_) => Some(b),
                    Block::ToolUse(call) => {
                        let args = call.input.to_string();
                        let whole = codewhale_journal::cut::Whole::Entry(&item.source);
                        let args = codewhale_journal::cut::head(&args, ARGUMENTS_MAX_BYTES, whole)
                            .unwrap_or(args);
                        Some(Block::text(format!("[call {}: {} {args}]", call.id, call.name)))
                    }
                    Block::Image(image) => Some(Block::text(image.describe())),
                    Block::Thinking(_) | Block::Opaque(_) => None,
                })
                .collect();
            if blocks.is_empty() {
                return None;
            }
            item.content = ItemContent::Blocks(blocks);
            Some(item)
        }
    }
}

#[cfg(test)]
mod tests {
    use codewhale_journal::{EntryId, Text, ToolResultView};
    use serde_json::json;

    use super::*;

    fn item(role: Role, kind: ItemKind, content: ItemContent) -> ViewItem {
        ViewItem {
            source: EntryId::from_string("e"),
            role,
            kind,
            content,
            tokens: None,
            shortened: None,
        }
    }

    #[test]
    fn calls_and_results_become_text_and_thinking_is_left_out() {
        let call = item(
            Role::Assistant,
            ItemKind::Assistant,
            ItemContent::Blocks(vec![
                Block::thinking("hmm", Some("sig".into())),
                Block::text("Reading it."),
                Block::tool_use("c1", "read_file", json!({"path": "a.rs"})),
            ]),
        );
        let result = item(
            Role::User,
            ItemKind::ToolResult,
            ItemContent::ToolResult(ToolResultView {
                tool_use_id: "c1".into(),
                content: Text::from("fn main() {}".to_owned()),
                is_error: false,
                content_blocks: None,
            }),
        );
        let only_thinking = item(
            Role::Assistant,
            ItemKind::Assistant,
            ItemContent::Blocks(vec![Block::thinking("…", None)]),
        );
        let flat = flatten(vec![call, result, only_thinking]);
        assert_eq!(flat.len(), 2, "a message of thinking alone is left out");
        let texts: Vec<String> = flat
            .iter()
            .flat_map(|i| match &i.content {
                ItemContent::Blocks(b) => {
                    b.iter().filter_map(|b| b.as_text()).map(str::to_owned).collect()
                }
                ItemContent::ToolResult(_) => vec!["a result block".to_owned()],
            })
            .collect();
        assert_eq!(
            texts,
            [
                "Reading it.",
                "[call c1: read_file {\"path\":\"a.rs\"}]",
                "[result of call c1]\nfn main() {}"
            ]
        );
        assert_eq!(flat[1].role, Role::User);
    }

    #[test]
    fn a_third_of_the_window_is_the_line() {
        assert!(!wanted(1_365, 4_096));
        assert!(wanted(1_366, 4_096));
        assert!(!wanted(1_706, 32_768));
    }
}
