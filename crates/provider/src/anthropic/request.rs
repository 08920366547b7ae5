//! [`Request`] → Anthropic Messages JSON.
//!
//! Invariants: thinking signatures, redacted-thinking data, tool ids and inputs are replayed
//! byte-for-byte; a thinking block without a signature is never sent (the API rejects it, and
//! only an interrupted reply produces one); at most [`MAX_BREAKPOINTS`] `cache_control` marks
//! are sent (the API's limit), preferring the system prompt and then the newest messages.

use serde_json::{json, Map, Value};

use crate::types::{Block, Message, Request, Role};

/// Anthropic accepts at most four cache breakpoints per request.
pub const MAX_BREAKPOINTS: usize = 4;

/// Smallest thinking budget the API accepts.
const MIN_THINKING_BUDGET: u32 = 1024;

/// The JSON body for `POST /v1/messages`.
pub fn encode(request: &Request) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("max_tokens".into(), json!(request.max_output_tokens));
    let system_marks = request.system.iter().filter(|b| b.cache_breakpoint).count();
    if !request.system.is_empty() {
        let mut marks_left = MAX_BREAKPOINTS;
        let system: Vec<Value> = request
            .system
            .iter()
            .map(|block| {
                let mut value = json!({"type": "text", "text": block.text});
                if block.cache_breakpoint && marks_left > 0 {
                    marks_left -= 1;
                    value["cache_control"] = json!({"type": "ephemeral"});
                }
                value
            })
            .collect();
        body.insert("system".into(), Value::Array(system));
    }
    let message_marks = MAX_BREAKPOINTS.saturating_sub(system_marks);
    body.insert("messages".into(), Value::Array(encode_messages(&request.messages, message_marks)));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if request.tool_choice == crate::types::ToolChoice::None {
            body.insert("tool_choice".into(), json!({"type": "none"}));
        }
    }
    let thinking = thinking_budget(request);
    if let Some(budget) = thinking {
        body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
    } else if let Some(temperature) = request.temperature {
        // With thinking on, the API rejects any temperature but the default.
        body.insert("temperature".into(), crate::types::f32_json(temperature));
    }
    body.insert("stream".into(), json!(true));
    Value::Object(body)
}

/// The budget actually sent: it must be at least 1024 and below `max_tokens`; a request that
/// cannot satisfy both goes without thinking rather than failing.
///
/// Also off while a tool loop is in progress whose assistant turn has no signed thinking block
/// in front of its calls (thinking switched on mid-loop, or an interrupted reply lost its
/// signature): with thinking enabled the API rejects such a turn ("Expected `thinking` or
/// `redacted_thinking`, but found `tool_use`").
fn thinking_budget(request: &Request) -> Option<u32> {
    let budget = request.thinking_budget?.min(request.max_output_tokens.saturating_sub(1));
    if budget < MIN_THINKING_BUDGET {
        return None;
    }
    // Only a tool loop in progress is checked: the request ends with the calls' results.
    let mid_loop = request.messages.last().is_some_and(|m| {
        m.role == Role::User && m.content.iter().any(|b| matches!(b, Block::ToolResult { .. }))
    });
    let last_assistant = request.messages.iter().rev().find(|m| m.role == Role::Assistant);
    if let (true, Some(message)) = (mid_loop, last_assistant) {
        let calls = message.content.iter().any(|b| matches!(b, Block::ToolUse { .. }));
        let opens_with_thinking = matches!(
            message.content.first(),
            Some(Block::Thinking { signature: Some(_), .. } | Block::RedactedThinking { .. })
        );
        if calls && !opens_with_thinking {
            return None;
        }
    }
    Some(budget)
}

fn encode_messages(messages: &[Message], marks: usize) -> Vec<Value> {
    // Honour the newest breakpoints first: the freshest checkpoint is the one worth caching.
    let mut marks_left = marks;
    let mut marked = vec![false; messages.len()];
    for (index, message) in messages.iter().enumerate().rev() {
        if message.cache_breakpoint && marks_left > 0 {
            marked[index] = true;
            marks_left -= 1;
        }
    }
    messages
        .iter()
        .zip(marked)
        .filter_map(|(message, mark)| {
            let role = match message.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            let mut content = encode_blocks(message);
            // Nothing sendable (an interrupted reply that only held unsigned thinking): the API
            // rejects empty messages, and merges the same-role turns that dropping one leaves.
            if content.is_empty() {
                return None;
            }
            if mark {
                // Thinking blocks cannot carry cache_control; mark the last block that can.
                if let Some(last) = content.iter_mut().rev().find(|block| {
                    !matches!(block["type"].as_str(), Some("thinking" | "redacted_thinking"))
                }) {
                    last["cache_control"] = json!({"type": "ephemeral"});
                }
            }
            Some(json!({"role": role, "content": content}))
        })
        .collect()
}

fn encode_blocks(message: &Message) -> Vec<Value> {
    let mut results = Vec::new();
    let mut others = Vec::new();
    for block in &message.content {
        match block {
            // The API rejects empty text blocks.
            Block::Text { text } if text.is_empty() => {}
            Block::Text { text } => others.push(json!({"type": "text", "text": text})),
            // A Responses API reasoning item is that wire's own; Anthropic would reject it.
            Block::Thinking { signature: Some(signature), .. }
                if crate::responses::is_reasoning_item(signature) => {}
            Block::Thinking { thinking, signature: Some(signature) } => others.push(json!({
                "type": "thinking", "thinking": thinking, "signature": signature,
            })),
            Block::Thinking { signature: None, .. } => {}
            Block::RedactedThinking { data } => {
                others.push(json!({"type": "redacted_thinking", "data": data}))
            }
            Block::ToolUse { id, name, input } => {
                // A call whose streamed arguments were not JSON still needs an object here.
                let input = match input {
                    Value::Object(_) => input.clone(),
                    Value::String(raw) => json!({"_raw_arguments": raw}),
                    other => json!({"_value": other}),
                };
                others.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}))
            }
            Block::Image { media_type, data } => others.push(json!({
                "type": "image",
                "source": {"type": "base64", "media_type": media_type, "data": data},
            })),
            Block::ToolResult { tool_use_id, content, is_error } => {
                let mut value =
                    json!({"type": "tool_result", "tool_use_id": tool_use_id, "content": content});
                if *is_error {
                    value["is_error"] = json!(true);
                }
                results.push(value);
            }
        }
    }
    // Tool results must open the user message that answers the calls.
    results.extend(others);
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::SystemBlock;

    #[test]
    fn unsigned_thinking_and_empty_text_are_dropped_signed_thinking_is_exact() {
        let mut request = Request::new("claude-sonnet-4-5", 4096);
        request.messages = vec![
            Message::user_text("hi"),
            Message::new(
                Role::Assistant,
                vec![
                    Block::Thinking { thinking: "a".into(), signature: Some("Eq/+==".into()) },
                    Block::Thinking { thinking: "cut".into(), signature: None },
                    Block::text(""),
                    Block::text("answer"),
                ],
            ),
        ];
        let body = encode(&request);
        let content = body["messages"][1]["content"].as_array().unwrap();
        assert_eq!(content.len(), 2);
        assert_eq!(content[0]["signature"], "Eq/+==");
    }

    #[test]
    fn messages_with_nothing_sendable_are_left_out() {
        let mut request = Request::new("m", 100);
        request.messages = vec![
            Message::user_text("hi"),
            Message::new(
                Role::Assistant,
                vec![Block::Thinking { thinking: "cut off".into(), signature: None }],
            ),
            Message::user_text("again"),
        ];
        let body = encode(&request);
        assert_eq!(body["messages"].as_array().unwrap().len(), 2);
        assert_eq!(body["messages"][1]["content"][0]["text"], "again");
    }

    #[test]
    fn tool_results_come_first_and_errors_are_flagged() {
        let mut request = Request::new("m", 100);
        request.messages = vec![Message::new(
            Role::User,
            vec![
                Block::text("also"),
                Block::ToolResult {
                    tool_use_id: "t".into(),
                    content: "boom".into(),
                    is_error: true,
                },
            ],
        )];
        let body = encode(&request);
        let content = &body["messages"][0]["content"];
        assert_eq!(content[0]["type"], "tool_result");
        assert_eq!(content[0]["is_error"], true);
        assert_eq!(content[1]["type"], "text");
    }

    #[test]
    fn breakpoints_are_capped_at_four_keeping_system_and_newest() {
        let mut request = Request::new("m", 100);
        request.system = vec![SystemBlock::cached("sys")];
        request.messages = (0..6)
            .map(|i| {
                let mut message = Message::user_text(format!("m{i}"));
                message.cache_breakpoint = true;
                message
            })
            .collect();
        let body = encode(&request);
        assert!(body["system"][0].get("cache_control").is_some());
        let marked: Vec<bool> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"][0].get("cache_control").is_some())
            .collect();
        assert_eq!(marked, [false, false, false, true, true, true]);
    }

    #[test]
    fn thinking_budget_is_clamped_and_drops_temperature() {
        let mut request = Request::new("m", 8000);
        request.temperature = Some(0.5);
        request.thinking_budget = Some(20000);
        let body = encode(&request);
        assert_eq!(body["thinking"]["budget_tokens"], 7999);
        assert!(body.get("temperature").is_none());
        request.max_output_tokens = 1000;
        let body = encode(&request);
        assert!(body.get("thinking").is_none());
        assert_eq!(body["temperature"], 0.5);
    }

    #[test]
    fn thinking_is_off_when_the_last_tool_turn_has_no_signed_thinking() {
        let mut request = Request::new("m", 8000);
        request.thinking_budget = Some(2000);
        let call = Block::ToolUse { id: "t".into(), name: "n".into(), input: json!({}) };
        let result =
            Block::ToolResult { tool_use_id: "t".into(), content: "r".into(), is_error: false };
        request.messages = vec![
            Message::user_text("go"),
            Message::new(Role::Assistant, vec![call.clone()]),
            Message::new(Role::User, vec![result.clone()]),
        ];
        assert!(encode(&request).get("thinking").is_none());
        let signed = Block::Thinking { thinking: "t".into(), signature: Some("s".into()) };
        request.messages[1] = Message::new(Role::Assistant, vec![signed, call.clone()]);
        assert_eq!(encode(&request)["thinking"]["budget_tokens"], 2000);
        // A new user turn after the loop starts fresh: thinking is allowed again.
        request.messages[1] = Message::new(Role::Assistant, vec![call]);
        request.messages.push(Message::user_text("next task"));
        assert_eq!(encode(&request)["thinking"]["budget_tokens"], 2000);
    }

    #[test]
    fn a_user_image_becomes_an_image_block_with_a_base64_source() {
        let mut request = Request::new("claude-sonnet-4-5", 100);
        request.messages = vec![Message::new(
            Role::User,
            vec![
                Block::text("what is this?"),
                Block::Image { media_type: "image/jpeg".into(), data: "/9j/".into() },
            ],
        )];
        let body = encode(&request);
        assert_eq!(
            body["messages"][0]["content"][1],
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}})
        );
    }
}
