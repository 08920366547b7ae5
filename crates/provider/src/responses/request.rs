//! [`Request`] → Responses API JSON.
//!
//! Invariants: every `tool_use` becomes a `function_call` item and every `tool_result` a
//! `function_call_output` item, in order, with the call ids byte-for-byte; a reasoning item
//! (a thinking block carrying one, [`super::REASONING_PREFIX`]) is sent back exactly as it came;
//! thinking from another wire is left out; nothing is stored on the server (`store: false`).

use serde_json::{json, Value};

use crate::types::{Block, Message, Request, Role, ToolChoice};

/// The JSON body for `POST /responses`; `effort` is `reasoning.effort` when configured.
pub fn encode(request: &Request, effort: Option<&str>) -> Value {
    let mut input = Vec::new();
    for message in &request.messages {
        push_items(message, &mut input);
    }
    let mut body = json!({
        "model": request.model,
        "input": input,
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "max_output_tokens": request.max_output_tokens,
    });
    let instructions: Vec<&str> = request.system.iter().map(|b| b.text.as_str()).collect();
    if !instructions.is_empty() {
        body["instructions"] = json!(instructions.join("\n\n"));
    }
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(tools(request));
        if request.tool_choice == ToolChoice::None {
            body["tool_choice"] = json!("none");
        }
    }
    if let Some(effort) = effort {
        body["reasoning"] = json!({"effort": effort, "summary": "auto"});
    }
    body
}

/// Appends the input items of `message` to `input`, in order: its texts and images gathered
/// into `message` items, each call, result and reasoning item on its own between them.
fn push_items(message: &Message, input: &mut Vec<Value>) {
    let mut texts: Vec<Value> = Vec::new();
    let flush = |texts: &mut Vec<Value>, input: &mut Vec<Value>| {
        if !texts.is_empty() {
            let role = match message.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            input.push(json!({"type": "message", "role": role, "content": std::mem::take(texts)}));
        }
    };
    for block in &message.content {
        match block {
            Block::Text { text } => {
                let kind = match message.role {
                    Role::User => "input_text",
                    Role::Assistant => "output_text",
                };
                texts.push(json!({"type": kind, "text": text}));
            }
            Block::Thinking { signature: Some(signature), .. } => {
                let item = signature
                    .strip_prefix(super::REASONING_PREFIX)
                    .and_then(|raw| serde_json::from_str::<Value>(raw).ok());
                if let Some(item) = item {
                    flush(&mut texts, input);
                    input.push(item);
                }
            }
            Block::Image { media_type, data } => texts.push(json!({
                "type": "input_image",
                "image_url": Block::data_url(media_type, data),
            })),
            // Reasoning of another wire, or none the server can read back.
            Block::Thinking { signature: None, .. } | Block::RedactedThinking { .. } => {}
            Block::ToolUse { id, name, input: arguments } => {
                flush(&mut texts, input);
                // Arguments that were not JSON travel as the exact text received.
                let arguments = match arguments {
                    Value::String(raw) => raw.clone(),
                    other => other.to_string(),
                };
                input.push(json!({
                    "type": "function_call", "call_id": id, "name": name,
                    "arguments": arguments,
                }));
            }
            Block::ToolResult { tool_use_id, content, .. } => {
                flush(&mut texts, input);
                input.push(json!({
                    "type": "function_call_output", "call_id": tool_use_id,
                    "output": content,
                }));
            }
        }
    }
    flush(&mut texts, input);
}

/// The request's tools as Responses API function tools.
fn tools(request: &Request) -> Vec<Value> {
    request
        .tools
        .iter()
        .map(|tool| {
            json!({
                "type": "function", "name": tool.name, "description": tool.description,
                "parameters": tool.input_schema, "strict": false,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Message, SystemBlock, ToolSpec};

    #[test]
    fn a_tool_loop_becomes_items_in_order_and_reasoning_comes_back_unchanged() {
        let item =
            json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"});
        let signature = format!("{}{item}", crate::responses::REASONING_PREFIX);
        let mut request = Request::new("gpt-5-codex", 4_000);
        request.system = vec![SystemBlock::text("Be brief."), SystemBlock::text("Workspace: /w")];
        request.tools = vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object"}),
        }];
        request.messages = vec![
            Message::user_text("read a.rs"),
            Message::new(
                Role::Assistant,
                vec![
                    Block::Thinking { thinking: "look".into(), signature: Some(signature) },
                    Block::Thinking {
                        thinking: "other wire".into(),
                        signature: Some("anthropic-sig".into()),
                    },
                    Block::Text { text: "Reading.".into() },
                    Block::ToolUse {
                        id: "call_1".into(),
                        name: "read_file".into(),
                        input: json!({"path": "a.rs"}),
                    },
                ],
            ),
            Message::new(
                Role::User,
                vec![
                    Block::ToolResult {
                        tool_use_id: "call_1".into(),
                        content: "fn main(){}".into(),
                        is_error: false,
                    },
                    Block::Text { text: "and now?".into() },
                ],
            ),
        ];
        let body = encode(&request, Some("high"));
        assert_eq!(body["store"], false);
        assert_eq!(body["stream"], true);
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["instructions"], "Be brief.\n\nWorkspace: /w");
        assert_eq!(body["reasoning"]["effort"], "high");
        assert_eq!(body["tools"][0]["parameters"], json!({"type": "object"}));
        let kinds: Vec<&str> =
            body["input"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            ["message", "reasoning", "message", "function_call", "function_call_output", "message"]
        );
        assert_eq!(body["input"][1], item, "sent back exactly");
        assert_eq!(body["input"][2]["content"][0]["type"], "output_text");
        assert_eq!(body["input"][3]["arguments"], "{\"path\":\"a.rs\"}");
        assert_eq!(body["input"][4]["call_id"], "call_1");
        assert_eq!(
            body["input"][5]["content"][0],
            json!({"type": "input_text", "text": "and now?"})
        );
        assert!(body.get("previous_response_id").is_none());
    }

    #[test]
    fn a_user_image_becomes_an_input_image_of_the_message() {
        let mut request = Request::new("gpt-5-codex", 100);
        request.messages = vec![Message::new(
            Role::User,
            vec![
                Block::text("what is this?"),
                Block::Image { media_type: "image/webp".into(), data: "UklG".into() },
            ],
        )];
        let body = encode(&request, None);
        assert_eq!(
            body["input"][0]["content"],
            json!([
                {"type": "input_text", "text": "what is this?"},
                {"type": "input_image", "image_url": "data:image/webp;base64,UklG"},
            ])
        );
    }
}
