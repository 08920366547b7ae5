//! The normalized request and response: one shape for every provider.
//!
//! The engine builds a [`Request`] from journal entries; the wire modules (`openai`,
//! `anthropic`) translate it to each provider's JSON. A [`Response`] is what one model reply
//! folds into (see [`crate::ResponseBuilder`]).
//!
//! Invariants: block bytes are sacred. `Thinking::signature`, `RedactedThinking::data`,
//! `ToolUse::id` and `ToolUse::input` are carried to the wire exactly as given, so a reply
//! replayed from the journal is byte-identical to what the provider produced.

use serde::{Deserialize, Serialize};

use crate::event::{StopReason, Usage};

/// One model request, independent of the wire format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The model id sent to the server (`claude-sonnet-4-5`, `gpt-4.1`, `deepseek-chat` ...).
    pub model: String,
    /// System prompt blocks, in order. OpenAI-compatible servers receive them joined by a
    /// blank line as the first `system` message; Anthropic receives them as `system` blocks.
    pub system: Vec<SystemBlock>,
    /// The conversation. Tool results travel as [`Block::ToolResult`] inside a `User` message.
    pub messages: Vec<Message>,
    /// Tools the model may call. Empty means the request carries no `tools` field.
    pub tools: Vec<ToolSpec>,
    /// Whether the model may call the tools. [`ToolChoice::None`] keeps their definitions (a
    /// conversation holding tool blocks needs them, and the prompt-cache prefix stays the same)
    /// while forbidding calls.
    pub tool_choice: ToolChoice,
    /// Upper bound on generated tokens for this reply.
    pub max_output_tokens: u32,
    /// Sampling temperature; `None` leaves the server default. Dropped when extended
    /// thinking is enabled, because Anthropic rejects a modified temperature with thinking.
    pub temperature: Option<f32>,
    /// Anthropic extended thinking budget (`thinking: {type: enabled, budget_tokens}`).
    /// Ignored by OpenAI-compatible servers, whose reasoning models think unasked.
    pub thinking_budget: Option<u32>,
}

impl Request {
    /// A request with no system prompt, messages or tools; fill the public fields after.
    pub fn new(model: impl Into<String>, max_output_tokens: u32) -> Self {
        Request {
            model: model.into(),
            system: Vec::new(),
            messages: Vec::new(),
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            max_output_tokens,
            temperature: None,
            thinking_budget: None,
        }
    }
}

/// Whether a reply may call the request's tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToolChoice {
    /// The model decides (no `tool_choice` field is sent).
    #[default]
    Auto,
    /// The model must answer in text (`tool_choice: "none"` / `{"type": "none"}`).
    None,
}

/// One block of the system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemBlock {
    pub text: String,
    /// Ask Anthropic to cache the prompt prefix ending with this block (`cache_control`).
    /// Mark the last stable block: the system prompt does not change between compactions.
    pub cache_breakpoint: bool,
}

impl SystemBlock {
    /// A plain block, not a cache breakpoint.
    pub fn text(text: impl Into<String>) -> Self {
        SystemBlock { text: text.into(), cache_breakpoint: false }
    }

    /// A block that ends a cached prefix.
    pub fn cached(text: impl Into<String>) -> Self {
        SystemBlock { text: text.into(), cache_breakpoint: true }
    }
}

/// Who wrote a message. Tool results are user-role content, as in the Anthropic API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// One conversation message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
    /// Mark this message as the end of a cached prefix (Anthropic `cache_control` on its last
    /// block). The engine sets it on the compaction checkpoint so the cached prefix survives
    /// until the next compaction. Ignored by OpenAI-compatible servers, which cache
    /// automatically.
    pub cache_breakpoint: bool,
}

impl Message {
    /// A user message with one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message { role: Role::User, content: vec![Block::text(text)], cache_breakpoint: false }
    }

    /// An assistant message with one text block.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Message { role: Role::Assistant, content: vec![Block::text(text)], cache_breakpoint: false }
    }

    /// A message of the given role and blocks, not a cache breakpoint.
    pub fn new(role: Role, content: Vec<Block>) -> Self {
        Message { role, content, cache_breakpoint: false }
    }
}

/// One content block. The serde shape matches the journal's block shape
/// (`{"type":"tool_use","id",...}`), so the engine can store and reload it directly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    /// Model reasoning. Anthropic signs it (`signature`, replayed byte-for-byte; an unsigned
    /// thinking block is never sent to Anthropic); OpenAI-compatible servers stream it as
    /// `reasoning_content` and never sign it.
    Thinking {
        thinking: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Anthropic's encrypted reasoning; opaque, replayed as is, dropped for other servers.
    RedactedThinking {
        data: String,
    },
    /// A tool call. `input` is the parsed argument object; when a server streamed arguments
    /// that are not valid JSON, `input` is a JSON string holding the raw text, so it can be
    /// replayed unchanged and reported to the model as an error.
    ToolUse {
        id: String,
        name: String,
        input: serde_json::Value,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
    /// An image in a user message: its bytes, base64-encoded, and their media type
    /// (`image/png`, `image/jpeg`, `image/gif`, `image/webp`). Each wire sends its own part.
    Image {
        media_type: String,
        data: String,
    },
}

impl Block {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Block::Text { text: text.into() }
    }

    /// The data URL of an image block (`data:image/png;base64,...`), as Chat Completions and
    /// the Responses API take it.
    pub fn data_url(media_type: &str, data: &str) -> String {
        format!("data:{media_type};base64,{data}")
    }
}

/// What an image of `width`×`height` pixels costs in input tokens, by the providers' published
/// rules: Anthropic ≈ w·h/750 after scaling to fit 1568 px and 1.15 megapixels; OpenAI 85 plus
/// 170 per 512-px tile after scaling to fit 2048 px and then 768 px on the short side. The
/// larger of the two, so a budget never counts an image short on either wire.
pub fn image_tokens(width: u32, height: u32) -> u32 {
    let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let fit = |w: f64, h: f64, long: f64| {
        let scale = (long / w.max(h)).min(1.0);
        (w * scale, h * scale)
    };
    let (aw, ah) = fit(w, h, 1568.0);
    let pixels = (aw * ah).min(1_150_000.0);
    let anthropic = (pixels / 750.0).ceil();
    let (ow, oh) = fit(w, h, 2048.0);
    let short = ow.min(oh);
    let scale = if short > 768.0 { 768.0 / short } else { 1.0 };
    let tiles = ((ow * scale) / 512.0).ceil() * ((oh * scale) / 512.0).ceil();
    let openai = 85.0 + 170.0 * tiles;
    anthropic.max(openai) as u32
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: serde_json::Value,
}

/// One complete (or, inside a [`crate::ProviderFailure`], partial) assistant reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Blocks in the order the model produced them.
    pub content: Vec<Block>,
    /// The last usage the server reported; `None` when it never reported any (some
    /// OpenAI-compatible servers ignore `stream_options.include_usage`).
    pub usage: Option<Usage>,
    /// Why generation stopped; always `Some` for a complete reply, `None` in a partial one.
    pub stop_reason: Option<StopReason>,
    /// The model id the reply is attributed to (the requested one).
    pub model: Option<String>,
}

impl Response {
    /// All text blocks joined, for callers that only want the prose (e.g. the summarizer).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let Block::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }

    /// The tool calls of this reply, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &serde_json::Value)> {
        self.content.iter().filter_map(|block| match block {
            Block::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }
}

/// An `f32` as the JSON number a person would write (`0.3`, not `0.30000001192092896`).
pub(crate) fn f32_json(value: f32) -> serde_json::Value {
    format!("{value}")
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(serde_json::Value::Null, serde_json::Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_serialize_in_journal_shape() {
        let block = Block::ToolUse {
            id: "toolu_1".into(),
            name: "shell".into(),
            input: json!({"command": "ls"}),
        };
        assert_eq!(
            serde_json::to_value(&block).unwrap(),
            json!({"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"command": "ls"}})
        );
        let thinking = Block::Thinking { thinking: "hm".into(), signature: Some("c2ln".into()) };
        assert_eq!(
            serde_json::to_value(&thinking).unwrap(),
            json!({"type": "thinking", "thinking": "hm", "signature": "c2ln"})
        );
        let back: Block = serde_json::from_value(
            json!({"type": "tool_result", "tool_use_id": "t", "content": "x"}),
        )
        .unwrap();
        assert_eq!(
            back,
            Block::ToolResult { tool_use_id: "t".into(), content: "x".into(), is_error: false }
        );
    }

    #[test]
    fn temperatures_serialize_as_written() {
        assert_eq!(f32_json(0.3).to_string(), "0.3");
        assert_eq!(f32_json(1.0).to_string(), "1.0");
    }

    #[test]
    fn response_text_joins_text_blocks_only() {
        let response = Response {
            content: vec![
                Block::Thinking { thinking: "plan".into(), signature: None },
                Block::text("a"),
                Block::ToolUse { id: "1".into(), name: "n".into(), input: json!({}) },
                Block::text("b"),
            ],
            ..Response::default()
        };
        assert_eq!(response.text(), "ab");
        assert_eq!(response.tool_uses().count(), 1);
    }

    #[test]
    fn an_image_costs_the_larger_of_the_published_rules() {
        // OpenAI: one 512-px tile (85 + 170); Anthropic: 64·48/750 rounds up to 5.
        assert_eq!(image_tokens(64, 48), 255);
        // Anthropic: 1568² is over 1.15 MP, so 1,150,000/750; OpenAI: 768² is four tiles.
        assert_eq!(image_tokens(2048, 2048), 1534);
        assert_eq!(image_tokens(0, 0), 255, "a degenerate size still costs a tile");
    }
}
