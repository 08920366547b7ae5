//! The view → provider request conversion. The only code in Codewhale that turns journal
//! content into provider messages (docs/architecture.md).
//!
//! Rules: the system prompt goes first as system blocks, its last block a cache breakpoint;
//! consecutive user-role items (tool results, then any user text right after them) become one
//! user message, tool results first, as Anthropic requires; the checkpoint stays a message of
//! its own and is a cache breakpoint, so the cached prefix survives until the next compaction;
//! a branch summary is a message of its own, never glued to the user's message after it;
//! block bytes (thinking signatures, tool ids and inputs) are carried unchanged; blocks of
//! unknown types are left out (they cannot be expressed in the normalized request) except
//! Anthropic's `redacted_thinking`, which is carried opaquely; a pinned note is a text block
//! of its own with a label, even when it shares a user message with the text after it; an
//! image is sent with its bytes from the blob store, or as its one line where the request may
//! not carry images ([`Images`]) or its blob cannot be read.

use std::path::Path;

use base64::Engine as _;
use codewhale_journal::{
    Block as JBlock, ImageBlock, ItemContent, ItemKind, Role as JRole, View, ViewItem,
};
use codewhale_provider::{Block, Message, Request, Role, SystemBlock, ToolSpec};

use crate::prompt::SystemPrompt;

/// What a request needs besides the view.
#[derive(Debug, Clone)]
pub struct RequestParams<'a> {
    pub model: &'a str,
    pub system: &'a SystemPrompt,
    pub tools: Vec<ToolSpec>,
    pub max_output_tokens: u32,
    pub images: Images<'a>,
}

/// How the images of a view go into a request.
#[derive(Debug, Clone, Copy)]
pub enum Images<'a> {
    /// With their bytes, read from this blob folder.
    Send(&'a Path),
    /// As their one line only: a summary request, or a model that refused images.
    Describe,
    /// As their one line saying the model does not take images.
    Refused,
}

/// Builds the request for `view`.
pub fn to_request(view: &View, params: RequestParams<'_>) -> Request {
    let mut request = Request::new(params.model, params.max_output_tokens);
    let blocks = params.system.blocks();
    let last = blocks.len().saturating_sub(1);
    request.system = blocks
        .into_iter()
        .enumerate()
        .map(
            |(i, text)| if i == last { SystemBlock::cached(text) } else { SystemBlock::text(text) },
        )
        .collect();
    request.messages = to_messages(&view.items, params.images);
    request.tools = params.tools;
    request
}

/// The first tool output of `view` that cannot be read back from the session file, with the
/// reason; a request is never built with a notice in place of an output the model saw before.
pub fn unreadable_output(view: &View) -> Option<String> {
    view.items.iter().find_map(|item| match &item.content {
        ItemContent::ToolResult(r) => r.content.try_str().err().map(|notice| {
            format!("the output of call {}: {}", r.tool_use_id, notice.trim_matches(['[', ']']))
        }),
        ItemContent::Blocks(_) => None,
    })
}

/// The messages of a view.
pub fn to_messages(items: &[ViewItem], images: Images<'_>) -> Vec<Message> {
    let mut messages: Vec<Message> = Vec::with_capacity(items.len());
    // Whether the last message may take more user content (it is a user message that is not a
    // checkpoint and its last content came from a tool result or a plain user entry).
    let mut open_user = false;
    for item in items {
        let role = match item.role {
            JRole::User => Role::User,
            JRole::Assistant => Role::Assistant,
        };
        let blocks = item_blocks(item, images);
        if blocks.is_empty() {
            continue;
        }
        let is_checkpoint = item.kind == ItemKind::Checkpoint;
        // A branch summary is a message of its own too: never read as part of the user's
        // message after it.
        let alone = is_checkpoint || item.kind == ItemKind::BranchSummary;
        let is_result = matches!(item.content, ItemContent::ToolResult(_));
        match messages.last_mut() {
            Some(last) if role == Role::User && open_user && !alone => {
                // A user text after tool results joins them; a tool result never follows user
                // text inside one message (the view check guarantees results follow their call).
                let last_is_result =
                    last.content.last().is_some_and(|b| matches!(b, Block::ToolResult { .. }));
                if is_result && !last_is_result {
                    messages.push(Message::new(role, blocks));
                } else {
                    last.content.extend(blocks);
                }
            }
            _ => {
                let mut message = Message::new(role, blocks);
                message.cache_breakpoint = is_checkpoint;
                messages.push(message);
            }
        }
        open_user = role == Role::User && !alone;
    }
    messages
}

/// The label of a pinned note's block: the note is then never read as part of the user
/// message it is sent with.
pub(crate) const ANCHOR_LABEL: &str = include_str!("../../../assets/prompts/anchor-label.md");

fn item_blocks(item: &ViewItem, images: Images<'_>) -> Vec<Block> {
    match &item.content {
        ItemContent::Blocks(blocks) if item.kind == ItemKind::Anchor => blocks
            .iter()
            .filter_map(|b| convert_block(b, images))
            .map(|b| match b {
                Block::Text { text } => {
                    Block::Text { text: format!("{}\n\n{text}", ANCHOR_LABEL.trim_end()) }
                }
                other => other,
            })
            .collect(),
        ItemContent::ToolResult(r) => vec![Block::ToolResult {
            tool_use_id: r.tool_use_id.clone(),
            content: r.content.to_string(),
            is_error: r.is_error,
        }],
        ItemContent::Blocks(blocks) => {
            blocks.iter().filter_map(|b| convert_block(b, images)).collect()
        }
    }
}

/// The block an image is sent as (module docs).
fn image_block(image: &ImageBlock, images: Images<'_>) -> Block {
    let dir = match images {
        Images::Send(dir) => dir,
        Images::Describe => return Block::text(image.describe()),
        Images::Refused => {
            return Block::text(image.line(" left out: this model does not take images"))
        }
    };
    match crate::images::read_blob(dir, &image.blob) {
        Ok(bytes) => Block::Image {
            media_type: image.media_type.clone(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        },
        Err(e) => {
            tracing::warn!(blob = %image.blob, error = %e, "an image's blob cannot be read");
            Block::text(image.line(": its bytes are missing from the session's blob store"))
        }
    }
}

fn convert_block(block: &JBlock, images: Images<'_>) -> Option<Block> {
    match block {
        JBlock::Image(image) => Some(image_block(image, images)),
        JBlock::Text(t) => Some(Block::Text { text: t.text.clone() }),
        JBlock::Thinking(t) => {
            Some(Block::Thinking { thinking: t.thinking.clone(), signature: t.signature.clone() })
        }
        JBlock::ToolUse(t) => {
            Some(Block::ToolUse { id: t.id.clone(), name: t.name.clone(), input: t.input.clone() })
        }
        JBlock::Opaque(raw) => {
            #[derive(serde::Deserialize)]
            struct Redacted {
                #[serde(rename = "type")]
                ty: String,
                data: String,
            }
            match serde_json::from_str::<Redacted>(raw.get()) {
                Ok(r) if r.ty == "redacted_thinking" => {
                    Some(Block::RedactedThinking { data: r.data })
                }
                _ => {
                    tracing::debug!("left a block of an unknown type out of the request");
                    None
                }
            }
        }
    }
}

/// Journal blocks for a provider response's blocks (the assistant entry's content).
pub fn from_response_blocks(blocks: &[Block]) -> Vec<JBlock> {
    blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(JBlock::text(text.clone())),
            Block::Thinking { thinking, signature } => {
                Some(JBlock::thinking(thinking.clone(), signature.clone()))
            }
            Block::ToolUse { id, name, input } => {
                Some(JBlock::tool_use(id.clone(), name.clone(), input.clone()))
            }
            Block::RedactedThinking { data } => {
                let json = serde_json::json!({"type": "redacted_thinking", "data": data});
                JBlock::opaque(&json.to_string()).ok()
            }
            // A model never answers with a tool result or an image.
            Block::ToolResult { .. } | Block::Image { .. } => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use codewhale_journal::{
        AssistantPayload, Entry, HeaderPayload, Journal, ToolResultPayload, UserPayload,
    };
    use serde_json::json;

    fn journal_of(payloads: Vec<codewhale_journal::Payload>) -> Journal {
        let header = Entry::new(None, HeaderPayload::new("s", "/w"));
        let mut parent = header.id.clone();
        let mut j = Journal::new(header).unwrap();
        for p in payloads {
            let e = Entry::new(Some(parent), p);
            parent = e.id.clone();
            j.push(e);
        }
        j
    }

    #[test]
    fn consecutive_results_and_following_text_form_one_user_message() {
        let call = AssistantPayload::new(vec![
            JBlock::thinking("plan", Some("c2ln".into())),
            JBlock::tool_use("a", "read_file", json!({"path": "x"})),
            JBlock::tool_use("b", "list_dir", json!({"path": "."})),
        ]);
        let j = journal_of(vec![
            UserPayload::text("hi").into(),
            call.into(),
            ToolResultPayload::new("a", "x", false).into(),
            ToolResultPayload::new("b", "y", true).into(),
            UserPayload::text("go on").into(),
        ]);
        let view = codewhale_journal::render(&j, j.head_id().as_str());
        let messages = to_messages(&view.items, Images::Describe);
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1].role, Role::Assistant);
        assert_eq!(
            messages[1].content[0],
            Block::Thinking { thinking: "plan".into(), signature: Some("c2ln".into()) }
        );
        assert_eq!(messages[2].content.len(), 3);
        assert!(matches!(&messages[2].content[1], Block::ToolResult { is_error: true, .. }));
        assert_eq!(messages[2].content[2], Block::text("go on"));
    }

    #[test]
    fn a_pinned_note_is_a_labelled_block_of_its_own_before_the_next_message() {
        let j = journal_of(vec![
            UserPayload::anchor("never push to main").into(),
            UserPayload::text("ship the fix").into(),
        ]);
        let view = codewhale_journal::render(&j, j.head_id().as_str());
        let messages = to_messages(&view.items, Images::Describe);
        assert_eq!(messages.len(), 1, "one user message");
        let Block::Text { text } = &messages[0].content[0] else { panic!("a text block") };
        assert!(text.starts_with(ANCHOR_LABEL.trim_end()), "{text}");
        assert!(text.ends_with("\n\nnever push to main"), "the note verbatim: {text}");
        assert_eq!(messages[0].content[1], Block::text("ship the fix"));
    }

    #[test]
    fn a_branch_summary_is_a_message_of_its_own_before_the_users_message() {
        use codewhale_journal::{BranchSummaryPayload, EntryId};
        let j = journal_of(vec![
            UserPayload::text("first question").into(),
            AssistantPayload::new(vec![JBlock::text("an answer")]).into(),
            BranchSummaryPayload::new(EntryId::from("left"), "tried nom; it failed").into(),
            UserPayload::text("edited question").into(),
        ]);
        let view = codewhale_journal::render(&j, j.head_id().as_str());
        let messages = to_messages(&view.items, Images::Describe);
        assert_eq!(messages.len(), 4, "{messages:?}");
        let summary = format!(
            "{BRANCH_SUMMARY}tried nom; it failed",
            BRANCH_SUMMARY = codewhale_journal::BRANCH_SUMMARY_PREFIX
        );
        assert_eq!(messages[2].content, [Block::text(summary)]);
        assert_eq!(messages[3].content, [Block::text("edited question")]);
    }

    #[test]
    fn the_checkpoint_is_its_own_cached_message_of_two_blocks() {
        use codewhale_journal::{CompactionPath, CompactionPayload, Covers, Trigger};
        let header = Entry::new(None, HeaderPayload::new("s", "/w"));
        let mut j = Journal::new(header.clone()).unwrap();
        let u1 = Entry::new(Some(header.id.clone()), UserPayload::text("old question"));
        let a1 = Entry::new(Some(u1.id.clone()), AssistantPayload::new(vec![JBlock::text("old")]));
        let u2 = Entry::new(Some(a1.id.clone()), UserPayload::text("new question"));
        let mut record = CompactionPayload::new(CompactionPath::Summary, Trigger::Manual);
        record.note = "Codewhale handoff note. Earlier work: ...".into();
        record.covers = Some(Covers::new(u1.id.clone(), a1.id.clone(), 2));
        record.retained_ids = vec![u1.id.clone()];
        let compaction = Entry::new(Some(header.id.clone()), record);
        for e in [u1, a1, u2, compaction] {
            j.push(e);
        }
        let view = codewhale_journal::render(&j, j.head_id().as_str());
        let messages = to_messages(&view.items, Images::Describe);
        let shape: Vec<(Role, usize, bool)> =
            messages.iter().map(|m| (m.role, m.content.len(), m.cache_breakpoint)).collect();
        // retained user text, the checkpoint (note + marker, cached), the new question.
        assert_eq!(shape, [(Role::User, 1, false), (Role::User, 2, true), (Role::User, 1, false)]);
        assert_eq!(messages[1].content[1], Block::text(codewhale_journal::CHECKPOINT_MARKER));
    }

    #[test]
    fn the_system_prompt_ends_with_a_cache_breakpoint() {
        let j = journal_of(vec![UserPayload::text("hi").into()]);
        let view = codewhale_journal::render(&j, j.head_id().as_str());
        let system = SystemPrompt::load(std::path::Path::new("/nowhere"), false);
        let r = to_request(
            &view,
            RequestParams {
                model: "m",
                system: &system,
                tools: vec![],
                max_output_tokens: 10,
                images: Images::Describe,
            },
        );
        assert!(r.system.last().unwrap().cache_breakpoint);
        assert_eq!(r.messages, vec![Message::user_text("hi")]);
    }

    #[test]
    fn response_blocks_round_trip_into_the_journal() {
        let blocks = vec![
            Block::text("a"),
            Block::RedactedThinking { data: "xyz".into() },
            Block::ToolUse {
                id: "t".into(),
                name: "shell".into(),
                input: json!({"command": "ls"}),
            },
        ];
        let journal_blocks = from_response_blocks(&blocks);
        assert_eq!(journal_blocks[1].block_type(), "redacted_thinking");
        assert_eq!(
            journal_blocks
                .iter()
                .filter_map(|b| convert_block(b, Images::Describe))
                .collect::<Vec<_>>(),
            blocks
        );
    }
}
