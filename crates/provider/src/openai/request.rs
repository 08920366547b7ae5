//! [`Request`] → Chat Completions JSON, with the dialect differences of each server.
//!
//! Invariants: tool-call ids and arguments are replayed byte-for-byte (arguments that were
//! not valid JSON are sent back as the exact text received); every `tool_use` becomes a
//! `tool_calls` entry and every `tool_result` a `role: tool` message, in order; no field a
//! server is known to reject is sent to it.

use serde_json::{json, Map, Value};

use crate::config::OpenAiServer;
use crate::types::{Block, Message, Request, Role};

/// Per-request switches; the client flips them when a server rejects a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodeOptions {
    pub server: OpenAiServer,
    /// Send `stream_options.include_usage`.
    pub include_usage: bool,
    /// Use the other spelling of the output limit (`max_tokens` ⇄ `max_completion_tokens`).
    pub swap_max_field: bool,
    /// Send `temperature` when the request has one.
    pub send_temperature: bool,
}

/// Words servers use when refusing a parameter rather than a value.
const REJECTION: &[&str] = &[
    "unsupported",
    "not supported",
    "unrecognized",
    "unknown",
    "extra inputs",
    "not permitted",
    "only the default",
];

impl EncodeOptions {
    /// Everything on, for `server`.
    pub fn new(server: OpenAiServer) -> Self {
        EncodeOptions { server, include_usage: true, swap_max_field: false, send_temperature: true }
    }

    /// The options to retry with after a 400 whose `message` names a parameter the server
    /// does not accept, or `None` when the message names nothing this can change. Each switch
    /// flips at most once, so adapting always ends.
    pub fn adapt(&self, message: &str) -> Option<EncodeOptions> {
        let lower = message.to_ascii_lowercase();
        let rejected = REJECTION.iter().any(|word| lower.contains(word));
        let mut next = *self;
        if self.include_usage
            && (lower.contains("stream_options") || lower.contains("include_usage"))
        {
            next.include_usage = false;
        } else if !self.swap_max_field && rejected && lower.contains(self.max_field()) {
            next.swap_max_field = true;
        } else if self.send_temperature && rejected && lower.contains("temperature") {
            next.send_temperature = false;
        } else {
            return None;
        }
        Some(next)
    }

    /// The output-limit field sent: OpenAI deprecated `max_tokens` and its reasoning models
    /// reject it, while most other servers only know `max_tokens`.
    fn max_field(&self) -> &'static str {
        match (self.server == OpenAiServer::OpenAi) != self.swap_max_field {
            true => "max_completion_tokens",
            false => "max_tokens",
        }
    }
}

/// The JSON body for `POST /chat/completions`.
pub fn encode(request: &Request, options: EncodeOptions) -> Value {
    let server = options.server;
    let mut messages = Vec::new();
    let system: Vec<&str> = request.system.iter().map(|b| b.text.as_str()).collect();
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system.join("\n\n")}));
    }
    for message in &request.messages {
        match message.role {
            Role::User => encode_user(message, &mut messages),
            Role::Assistant => messages.extend(encode_assistant(message, server)),
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.input_schema,
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if request.tool_choice == crate::types::ToolChoice::None {
            body.insert("tool_choice".into(), json!("none"));
        }
    }
    body.insert(options.max_field().into(), json!(request.max_output_tokens));
    if let (Some(temperature), true) = (request.temperature, options.send_temperature) {
        if !(server == OpenAiServer::OpenAi && is_openai_reasoning_model(&request.model)) {
            body.insert("temperature".into(), crate::types::f32_json(temperature));
        }
    }
    body.insert("stream".into(), json!(true));
    if options.include_usage {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if server == OpenAiServer::OpenRouter {
        // OpenRouter's own switch for the usage chunk, including cached tokens.
        body.insert("usage".into(), json!({"include": true}));
    }
    Value::Object(body)
}

/// o-series and GPT-5 models accept only the default temperature.
fn is_openai_reasoning_model(model: &str) -> bool {
    let model = model.rsplit('/').next().unwrap_or(model);
    ["o1", "o3", "o4", "gpt-5"].iter().any(|prefix| model.starts_with(prefix))
}

/// Tool results become `role: tool` messages (first, in order, as the API requires them right
/// after the assistant's calls); the remaining text becomes one user message.
fn encode_user(message: &Message, out: &mut Vec<Value>) {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for block in &message.content {
        match block {
            Block::ToolResult { tool_use_id, content, .. } => {
                // No `is_error` in this API: the result text itself says what failed.
                out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": content}));
            }
            Block::Text { text } => texts.push(text.as_str()),
            Block::Image { media_type, data } => images.push(json!({
                "type": "image_url",
                "image_url": {"url": Block::data_url(media_type, data)},
            })),
            // Reasoning and calls are assistant-only; a user message never carries them.
            Block::Thinking { .. } | Block::RedactedThinking { .. } | Block::ToolUse { .. } => {}
        }
    }
    if !images.is_empty() {
        // Content parts only when an image needs them.
        let mut parts = Vec::with_capacity(images.len() + 1);
        if !texts.is_empty() {
            parts.push(json!({"type": "text", "text": texts.join("\n\n")}));
        }
        parts.extend(images);
        out.push(json!({"role": "user", "content": parts}));
    } else if !texts.is_empty() {
        // A plain string rather than content parts: older llama.cpp and LM Studio builds
        // reject the array form.
        out.push(json!({"role": "user", "content": texts.join("\n\n")}));
    }
}

/// `None` when the message has neither text nor calls (an interrupted reply that only
/// reasoned): servers reject an empty assistant turn, and consecutive user turns are fine.
fn encode_assistant(message: &Message, server: OpenAiServer) -> Option<Value> {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut has_reasoning = false;
    let mut calls = Vec::new();
    for block in &message.content {
        match block {
            Block::Text { text: t } => text.push_str(t),
            Block::Thinking { thinking, .. } => {
                reasoning.push_str(thinking);
                has_reasoning = true;
            }
            Block::ToolUse { id, name, input } => {
                let arguments = match input {
                    Value::String(raw) => raw.clone(),
                    other => other.to_string(),
                };
                calls.push(json!({
                    "id": id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }));
            }
            Block::RedactedThinking { .. } | Block::ToolResult { .. } | Block::Image { .. } => {}
        }
    }
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    let mut out = Map::new();
    out.insert("role".into(), json!("assistant"));
    // A message of tool calls only has no text: OpenAI and DeepSeek document `null` for it,
    // but llama-cpp-python's server (0.3) refuses a `null` content with a 500, and an empty
    // string is accepted everywhere else.
    let null_content = matches!(server, OpenAiServer::OpenAi | OpenAiServer::DeepSeek);
    let content = if text.is_empty() && !calls.is_empty() && null_content {
        Value::Null
    } else {
        Value::String(text)
    };
    out.insert("content".into(), content);
    // DeepSeek's thinking mode rejects a tool-calling assistant message without its
    // `reasoning_content` (an empty string when the model did not reason); other servers that
    // stream reasoning (vLLM, llama.cpp, LM Studio, OpenRouter, Kimi) accept it back, and
    // OpenAI never produces it.
    let send_reasoning = match server {
        OpenAiServer::OpenAi => false,
        OpenAiServer::DeepSeek => has_reasoning || !calls.is_empty(),
        _ => has_reasoning,
    };
    if send_reasoning {
        out.insert("reasoning_content".into(), Value::String(reasoning));
    }
    if !calls.is_empty() {
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{SystemBlock, ToolSpec};

    fn options(server: OpenAiServer) -> EncodeOptions {
        EncodeOptions::new(server)
    }

    fn conversation() -> Request {
        let mut request = Request::new("deepseek-chat", 1000);
        request.system =
            vec![SystemBlock::cached("You are Codewhale."), SystemBlock::text("Rules.")];
        request.temperature = Some(0.2);
        request.tools = vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object"}),
        }];
        request.messages = vec![
            Message::user_text("look"),
            Message::new(
                Role::Assistant,
                vec![
                    Block::Thinking { thinking: "plan".into(), signature: None },
                    Block::ToolUse {
                        id: "c1".into(),
                        name: "read_file".into(),
                        input: json!({"path": "a"}),
                    },
                    Block::ToolUse {
                        id: "c2".into(),
                        name: "read_file".into(),
                        input: json!("{bad"),
                    },
                ],
            ),
            Message::new(
                Role::User,
                vec![
                    Block::ToolResult {
                        tool_use_id: "c1".into(),
                        content: "A".into(),
                        is_error: false,
                    },
                    Block::ToolResult {
                        tool_use_id: "c2".into(),
                        content: "bad args".into(),
                        is_error: true,
                    },
                    Block::text("and then?"),
                ],
            ),
        ];
        request
    }

    #[test]
    fn tool_exchanges_map_to_tool_calls_and_tool_messages() {
        let body = encode(&conversation(), options(OpenAiServer::DeepSeek));
        let messages = body["messages"].as_array().unwrap();
        let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "tool", "tool", "user"]);
        assert_eq!(messages[0]["content"], "You are Codewhale.\n\nRules.");
        assert_eq!(messages[2]["content"], Value::Null);
        assert_eq!(messages[2]["reasoning_content"], "plan");
        assert_eq!(messages[2]["tool_calls"][0]["function"]["arguments"], "{\"path\":\"a\"}");
        assert_eq!(messages[2]["tool_calls"][1]["function"]["arguments"], "{bad");
        assert_eq!(messages[3]["tool_call_id"], "c1");
        assert_eq!(body["max_tokens"], 1000);
        assert_eq!(body["stream_options"]["include_usage"], true);
    }

    #[test]
    fn deepseek_gets_empty_reasoning_on_tool_calls_openai_gets_none() {
        let mut request = conversation();
        request.messages[1].content.remove(0);
        let deepseek = encode(&request, options(OpenAiServer::DeepSeek));
        assert_eq!(deepseek["messages"][2]["reasoning_content"], "");
        let generic = encode(&request, options(OpenAiServer::Generic));
        assert!(generic["messages"][2].get("reasoning_content").is_none());
        // Tool calls without text: `null` where documented, "" for the rest (llama.cpp's
        // Python server refuses `null`).
        assert_eq!(deepseek["messages"][2]["content"], Value::Null);
        assert_eq!(generic["messages"][2]["content"], "");
        let llama = encode(&request, options(OpenAiServer::LlamaCpp));
        assert_eq!(llama["messages"][2]["content"], "");
        let openai = encode(&conversation(), options(OpenAiServer::OpenAi));
        assert!(openai["messages"][2].get("reasoning_content").is_none());
        assert_eq!(openai["max_completion_tokens"], 1000);
        assert!(openai.get("max_tokens").is_none());
    }

    #[test]
    fn reasoning_only_assistant_turns_are_left_out() {
        let mut request = Request::new("m", 10);
        request.messages = vec![
            Message::user_text("a"),
            Message::new(
                Role::Assistant,
                vec![Block::Thinking { thinking: "cut".into(), signature: None }],
            ),
            Message::user_text("b"),
        ];
        let body = encode(&request, options(OpenAiServer::DeepSeek));
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "user"]);
    }

    #[test]
    fn rejected_parameters_are_dropped_one_at_a_time() {
        let start = options(OpenAiServer::Generic);
        let no_usage =
            start.adapt("Unrecognized request argument supplied: stream_options").unwrap();
        assert!(!no_usage.include_usage);
        let swapped = no_usage
            .adapt("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.")
            .unwrap();
        let body = encode(&conversation(), swapped);
        assert_eq!(body["max_completion_tokens"], 1000);
        assert!(body.get("max_tokens").is_none());
        let cool = swapped
            .adapt("Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported.")
            .unwrap();
        assert!(encode(&conversation(), cool).get("temperature").is_none());
        // Nothing left to change, or nothing named: no more retries.
        assert_eq!(cool.adapt("Unsupported value: 'temperature'"), None);
        assert_eq!(start.adapt("max_tokens is too large: 100000"), None);
        assert_eq!(start.adapt("messages: roles must alternate"), None);
    }

    #[test]
    fn openai_reasoning_models_get_no_temperature() {
        let mut request = conversation();
        request.model = "o4-mini".into();
        assert!(encode(&request, options(OpenAiServer::OpenAi)).get("temperature").is_none());
        request.model = "gpt-4.1".into();
        assert!(encode(&request, options(OpenAiServer::OpenAi)).get("temperature").is_some());
    }

    #[test]
    fn usage_option_can_be_dropped_and_openrouter_asks_its_own_way() {
        let body = encode(
            &conversation(),
            EncodeOptions { include_usage: false, ..EncodeOptions::new(OpenAiServer::Generic) },
        );
        assert!(body.get("stream_options").is_none());
        let openrouter = encode(&conversation(), options(OpenAiServer::OpenRouter));
        assert_eq!(openrouter["usage"]["include"], true);
    }

    #[test]
    fn a_user_image_becomes_an_image_url_part_beside_the_text() {
        let mut request = Request::new("gpt-4.1", 100);
        request.messages = vec![Message::new(
            Role::User,
            vec![
                Block::text("what is this?"),
                Block::Image { media_type: "image/png".into(), data: "iVBO".into() },
            ],
        )];
        let body = encode(&request, options(OpenAiServer::OpenAi));
        assert_eq!(
            body["messages"][0]["content"],
            json!([
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
            ])
        );
    }
}
