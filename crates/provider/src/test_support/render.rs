//! Rendering a [`Reply`] in a wire format: SSE frames for content, status + body for faults.
//!
//! The frames follow the documented shapes of each API (OpenAI chunk objects ending with
//! `data: [DONE]`; Anthropic's named events ending with `message_stop`), with text and tool
//! arguments split into small pieces so clients must reassemble them.

use serde_json::{json, Value};

use super::render_responses::pieces;
use super::reply::{Content, Cut, Fault, MockUsage, OverflowShape, Part, Reply};

/// Which API the request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    OpenAi,
    Anthropic,
    /// The OpenAI Responses API: errors in the OpenAI shape, replies as `response.*` events.
    Responses,
}

/// What the server sends back.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    Json {
        status: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
    Stream {
        frames: Vec<String>,
        cut: Option<(usize, Cut)>,
    },
    /// A body past every bound ([`super::reply::Flood`]), generated as it is sent.
    Flood(super::reply::Flood),
}

/// Text used by the mid-stream faults; long enough to be cut in the middle.
pub const FAULT_TEXT: &str = "This partial reply never reaches its proper end.";

/// Render `reply` for a request on `wire` with `body` (the parsed request JSON) and the API
/// key the request carried.
pub fn render(wire: Wire, reply: &Reply, body: &Value, key: Option<&str>) -> Plan {
    match &reply.content {
        Content::Script(parts) => {
            Plan::Stream { frames: frames(wire, parts, reply, body), cut: reply.cut }
        }
        Content::RawSse(text) => Plan::Stream { frames: vec![text.clone()], cut: reply.cut },
        // Read by the server, which knows where fixtures live.
        Content::SseFile(_) => Plan::Stream { frames: Vec::new(), cut: reply.cut },
        Content::Fault(fault) => fault_plan(wire, fault, reply, body, key),
    }
}

fn fault_plan(wire: Wire, fault: &Fault, reply: &Reply, body: &Value, key: Option<&str>) -> Plan {
    let mid_stream = |cut: Cut| {
        let frames = frames(wire, &[Part::Text(FAULT_TEXT.to_owned())], reply, body);
        let at = frames.len() / 2;
        Plan::Stream { frames, cut: Some((at, cut)) }
    };
    let json = |status: u16, body: Value| Plan::Json {
        status,
        body: body.to_string(),
        headers: Vec::new(),
    };
    match fault {
        Fault::Overflow { shape, limit, requested } => overflow(wire, *shape, *limit, *requested),
        Fault::RateLimited { retry_after_secs } => {
            let body = error_body(
                wire,
                "rate_limit_error",
                "rate_limit_exceeded",
                "Rate limit reached: too many requests per minute.",
            );
            let headers = retry_after_secs
                .map(|s| vec![("retry-after".to_owned(), s.to_string())])
                .unwrap_or_default();
            Plan::Json { status: 429, body: body.to_string(), headers }
        }
        Fault::ServerError(status) => json(
            *status,
            error_body(
                wire,
                "api_error",
                "server_error",
                "The server had an error while processing your request.",
            ),
        ),
        Fault::Overloaded => match wire {
            Wire::Anthropic => json(529, error_body(wire, "overloaded_error", "", "Overloaded")),
            Wire::OpenAi | Wire::Responses => json(
                503,
                error_body(
                    wire,
                    "",
                    "server_error",
                    "The engine is currently overloaded, please try again later.",
                ),
            ),
        },
        Fault::Unauthorized => {
            let message = format!("Incorrect API key provided: {}.", key.unwrap_or("(none)"));
            json(401, error_body(wire, "authentication_error", "invalid_api_key", &message))
        }
        Fault::Status { status, body } => {
            Plan::Json { status: *status, body: body.clone(), headers: Vec::new() }
        }
        Fault::MalformedSse => mid_stream(Cut::Malformed),
        Fault::DropMidStream => mid_stream(Cut::Drop),
        Fault::EndEarly => mid_stream(Cut::End),
        Fault::Hangup => Plan::Stream { frames: Vec::new(), cut: Some((0, Cut::Hangup)) },
        Fault::Flood(flood) => Plan::Flood(*flood),
    }
}

fn error_body(wire: Wire, anthropic_type: &str, openai_code: &str, message: &str) -> Value {
    match wire {
        Wire::Anthropic => {
            json!({"type": "error", "error": {"type": anthropic_type, "message": message}})
        }
        Wire::OpenAi | Wire::Responses => {
            json!({"error": {"message": message, "type": openai_code, "param": null, "code": openai_code}})
        }
    }
}

fn overflow(wire: Wire, shape: OverflowShape, limit: u64, requested: u64) -> Plan {
    let plan = |status: u16, body: Value| Plan::Json {
        status,
        body: body.to_string(),
        headers: Vec::new(),
    };
    match (shape, wire) {
        (OverflowShape::Wire, Wire::Anthropic) => plan(
            400,
            json!({"type": "error", "error": {
                "type": "invalid_request_error",
                "message": format!("prompt is too long: {requested} tokens > {limit} maximum"),
            }}),
        ),
        (OverflowShape::Wire, Wire::Responses) => plan(
            400,
            json!({"error": {
                "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
                "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded",
            }}),
        ),
        (OverflowShape::Wire, Wire::OpenAi) => plan(
            400,
            json!({"error": {
                "message": format!("This model's maximum context length is {limit} tokens. However, your messages resulted in {requested} tokens. Please reduce the length of the messages."),
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
            }}),
        ),
        (OverflowShape::LlamaCpp, _) => plan(400, llama_cpp_error(limit, requested)),
        (OverflowShape::Ollama, _) => {
            plan(400, json!({"error": llama_cpp_error(limit, requested).to_string()}))
        }
        (OverflowShape::Vllm, _) => plan(
            400,
            json!({
                "object": "error",
                "message": format!("This model's maximum context length is {limit} tokens. However, you requested {requested} tokens ({} in the messages, 1000 in the completion). Please reduce the length of the messages or completion.", requested.saturating_sub(1000)),
                "type": "BadRequestError", "param": null, "code": 400,
            }),
        ),
        (OverflowShape::LmStudio, _) => plan(
            200,
            json!({"error": format!(
                "Trying to keep the first {requested} tokens when context the overflows. However, the model is loaded with context length of only {limit} tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"
            )}),
        ),
        (OverflowShape::OpenRouter, _) => plan(
            400,
            json!({"error": {
                "message": format!("This endpoint's maximum context length is {limit} tokens. However, you requested about {requested} tokens ({requested} of text input). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically."),
                "code": 400, "metadata": {"provider_name": null},
            }}),
        ),
        (OverflowShape::DeepSeek, _) => plan(
            400,
            json!({"error": {
                "message": format!("This model's maximum context length is {limit} tokens. However, you requested {requested} tokens ({requested} in the messages, 0 in the completion). Please reduce the length of the messages or completion."),
                "type": "invalid_request_error", "param": null, "code": "invalid_request_error",
            }}),
        ),
    }
}

fn llama_cpp_error(limit: u64, requested: u64) -> Value {
    json!({"error": {
        "code": 400,
        "message": format!("request ({requested} tokens) exceeds the available context size ({limit} tokens), try increasing it"),
        "type": "exceed_context_size_error",
        "n_prompt_tokens": requested,
        "n_ctx": limit,
    }})
}

fn frames(wire: Wire, parts: &[Part], reply: &Reply, body: &Value) -> Vec<String> {
    let model = body.get("model").and_then(Value::as_str).unwrap_or("mock-model");
    match wire {
        Wire::OpenAi => openai_frames(parts, reply, body, model),
        Wire::Anthropic => anthropic_frames(parts, reply, model),
        Wire::Responses => super::render_responses::frames(parts, reply, model),
    }
}

fn data(value: &Value) -> String {
    format!("data: {value}\n\n")
}

fn openai_chunk(model: &str, delta: Value, finish: Option<&str>) -> String {
    data(&json!({
        "id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1_764_000_000u64,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }))
}

fn openai_frames(parts: &[Part], reply: &Reply, body: &Value, model: &str) -> Vec<String> {
    let mut frames = vec![openai_chunk(model, json!({"role": "assistant", "content": ""}), None)];
    let mut calls = 0usize;
    for part in parts {
        match part {
            Part::Text(text) => {
                for piece in pieces(text, 8) {
                    frames.push(openai_chunk(model, json!({"content": piece}), None));
                }
            }
            Part::Thinking { text, .. } => {
                for piece in pieces(text, 8) {
                    frames.push(openai_chunk(model, json!({"reasoning_content": piece}), None));
                }
            }
            Part::RedactedThinking(_) => {}
            Part::ToolCall(call) => {
                let index = calls;
                calls += 1;
                frames.push(openai_chunk(
                    model,
                    json!({"tool_calls": [{
                        "index": index, "id": call.id, "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }]}),
                    None,
                ));
                let arguments = call.input.to_string();
                for piece in pieces(&arguments, 7) {
                    frames.push(openai_chunk(
                        model,
                        json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                        None,
                    ));
                }
            }
        }
    }
    let finish = reply.stop.clone().unwrap_or_else(|| {
        if calls > 0 {
            "tool_calls".into()
        } else {
            "stop".into()
        }
    });
    frames.push(openai_chunk(model, json!({}), Some(&finish)));
    let asked =
        body.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false)
            || body.pointer("/usage/include").and_then(Value::as_bool).unwrap_or(false);
    if let (Some(usage), true) = (reply.usage, asked) {
        frames.push(data(&json!({
            "id": "chatcmpl-mock", "object": "chat.completion.chunk", "model": model, "choices": [],
            "usage": {
                "prompt_tokens": usage.input, "completion_tokens": usage.output,
                "total_tokens": usage.input + usage.output,
                "prompt_tokens_details": {"cached_tokens": usage.cache_read},
            },
        })));
    }
    frames.push("data: [DONE]\n\n".to_owned());
    frames
}

fn event(name: &str, value: &Value) -> String {
    format!("event: {name}\ndata: {value}\n\n")
}

fn anthropic_frames(parts: &[Part], reply: &Reply, model: &str) -> Vec<String> {
    let usage = reply.usage.unwrap_or_default();
    let mut frames = anthropic_start(&usage, model);
    let mut any_call = false;
    for (index, part) in parts.iter().enumerate() {
        any_call |= matches!(part, Part::ToolCall(_));
        anthropic_block(&mut frames, index, part);
    }
    let stop = reply.stop.clone().unwrap_or_else(|| {
        if any_call {
            "tool_use".into()
        } else {
            "end_turn".into()
        }
    });
    frames.push(event(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": usage.output},
        }),
    ));
    frames.push(event("message_stop", &json!({"type": "message_stop"})));
    frames
}

/// `message_start` (with the prompt's usage, cache figures apart) and the first `ping`.
fn anthropic_start(usage: &MockUsage, model: &str) -> Vec<String> {
    let uncached = usage.input.saturating_sub(usage.cache_read + usage.cache_write);
    vec![
        event(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": "msg_mock", "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {
                    "input_tokens": uncached,
                    "cache_creation_input_tokens": usage.cache_write,
                    "cache_read_input_tokens": usage.cache_read,
                    "output_tokens": 1,
                },
            }}),
        ),
        event("ping", &json!({"type": "ping"})),
    ]
}

/// The content block `index` of the reply: its start, its deltas in small pieces, its stop.
fn anthropic_block(frames: &mut Vec<String>, index: usize, part: &Part) {
    let start = |block: Value| {
        event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": block}),
        )
    };
    let delta = |delta: Value| {
        event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    };
    match part {
        Part::Text(text) => {
            frames.push(start(json!({"type": "text", "text": ""})));
            for piece in pieces(text, 8) {
                frames.push(delta(json!({"type": "text_delta", "text": piece})));
            }
        }
        Part::Thinking { text, signature } => {
            frames.push(start(json!({"type": "thinking", "thinking": ""})));
            for piece in pieces(text, 8) {
                frames.push(delta(json!({"type": "thinking_delta", "thinking": piece})));
            }
            frames.push(delta(json!({"type": "signature_delta", "signature": signature})));
        }
        Part::RedactedThinking(data) => {
            frames.push(start(json!({"type": "redacted_thinking", "data": data})))
        }
        Part::ToolCall(call) => {
            frames.push(start(
                json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}}),
            ));
            let arguments = call.input.to_string();
            for piece in pieces(&arguments, 7) {
                frames.push(delta(json!({"type": "input_json_delta", "partial_json": piece})));
            }
        }
    }
    frames
        .push(event("content_block_stop", &json!({"type": "content_block_stop", "index": index})));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_respect_char_boundaries() {
        let text = "aé✓bcdefgh✓";
        let joined: String = pieces(text, 3).concat();
        assert_eq!(joined, text);
        assert!(pieces(text, 3).iter().all(|p| !p.is_empty()));
    }

    #[test]
    fn openai_usage_is_sent_only_when_asked() {
        let reply = Reply::text("hi").with_usage(10, 2);
        let asked = json!({"model": "m", "stream_options": {"include_usage": true}});
        let Plan::Stream { frames, .. } = render(Wire::OpenAi, &reply, &asked, None) else {
            panic!()
        };
        assert!(frames.iter().any(|f| f.contains("\"prompt_tokens\":10")));
        let Plan::Stream { frames, .. } =
            render(Wire::OpenAi, &reply, &json!({"model": "m"}), None)
        else {
            panic!()
        };
        assert!(!frames.iter().any(|f| f.contains("prompt_tokens")));
        assert_eq!(frames.last().map(String::as_str), Some("data: [DONE]\n\n"));
    }
}
