//! Rendering a scripted [`Reply`] as a Responses API stream (`POST /v1/responses`): the
//! documented `response.*` events — `response.created`, an `output_item.added` / `.done` pair
//! per item (a `message` with `output_text` deltas, a `function_call` with argument deltas, a
//! `reasoning` item with summary deltas and its `encrypted_content`), then `response.completed`
//! with usage, or `response.incomplete` when the reply's stop says the output ran out (or says
//! `content_filter`).

use serde_json::{json, Value};

use super::reply::{Part, Reply};

fn event(value: &Value) -> String {
    let name = value.get("type").and_then(Value::as_str).unwrap_or("message");
    format!("event: {name}\ndata: {value}\n\n")
}

/// The frames of `parts` for a request on `model`.
pub(crate) fn frames(parts: &[Part], reply: &Reply, model: &str) -> Vec<String> {
    let response = |status: &str| json!({"id": "resp_mock", "object": "response", "model": model, "status": status, "output": []});
    let mut frames = vec![
        event(&json!({"type": "response.created", "response": response("in_progress")})),
        event(&json!({"type": "response.in_progress", "response": response("in_progress")})),
    ];
    let mut output = Vec::new();
    for (index, part) in parts.iter().enumerate() {
        if let Some(item) = output_item(&mut frames, index, part) {
            output.push(item);
        }
    }
    frames.push(end_frame(reply, model, output));
    frames
}

/// The frames of output item `index` (added, its deltas, done); the finished item, or `None`
/// for a part this wire does not send.
fn output_item(frames: &mut Vec<String>, index: usize, part: &Part) -> Option<Value> {
    let added = |item: Value| {
        event(&json!({"type": "response.output_item.added", "output_index": index, "item": item}))
    };
    let done = |item: &Value| {
        event(&json!({"type": "response.output_item.done", "output_index": index, "item": item}))
    };
    let item = match part {
        Part::Text(text) => {
            let id = format!("msg_{index}");
            frames.push(added(json!({"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []})));
            for piece in pieces(text, 8) {
                frames.push(event(&json!({"type": "response.output_text.delta", "item_id": id,
                    "output_index": index, "content_index": 0, "delta": piece})));
            }
            json!({"type": "message", "id": id, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]})
        }
        Part::Thinking { text, signature } => {
            let id = format!("rs_{index}");
            frames.push(added(json!({"type": "reasoning", "id": id, "summary": []})));
            for piece in pieces(text, 8) {
                frames.push(event(&json!({"type": "response.reasoning_summary_text.delta",
                    "item_id": id, "output_index": index, "summary_index": 0, "delta": piece})));
            }
            json!({"type": "reasoning", "id": id,
                "summary": [{"type": "summary_text", "text": text}],
                "encrypted_content": signature})
        }
        Part::RedactedThinking(_) => return None,
        Part::ToolCall(call) => {
            let id = format!("fc_{index}");
            let arguments = call.input.to_string();
            frames.push(added(json!({"type": "function_call", "id": id, "call_id": call.id,
                "name": call.name, "arguments": "", "status": "in_progress"})));
            for piece in pieces(&arguments, 7) {
                frames.push(event(&json!({"type": "response.function_call_arguments.delta",
                    "item_id": id, "output_index": index, "delta": piece})));
            }
            json!({"type": "function_call", "id": id, "call_id": call.id, "name": call.name,
                "arguments": arguments, "status": "completed"})
        }
    };
    frames.push(done(&item));
    Some(item)
}

/// `response.completed` with the items and usage, or `response.incomplete` with its reason.
fn end_frame(reply: &Reply, model: &str, output: Vec<Value>) -> String {
    let usage = reply.usage.map(|u| {
        json!({"input_tokens": u.input, "input_tokens_details": {"cached_tokens": u.cache_read},
            "output_tokens": u.output, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": u.input + u.output})
    });
    // A reply cut short: by the output limit, or by the server's content filter.
    let reason = match reply.stop.as_deref() {
        Some("max_tokens" | "length" | "max_output_tokens") => Some("max_output_tokens"),
        Some("content_filter") => Some("content_filter"),
        _ => None,
    };
    let incomplete = reason.is_some();
    let (kind, status) = if incomplete {
        ("response.incomplete", "incomplete")
    } else {
        ("response.completed", "completed")
    };
    let mut end = json!({"id": "resp_mock", "object": "response", "model": model, "status": status,
        "output": output, "usage": usage});
    if incomplete {
        end["incomplete_details"] = json!({"reason": reason});
    }
    event(&json!({"type": kind, "response": end}))
}

/// Split `text` into pieces of at most `size` bytes on char boundaries.
pub(crate) fn pieces(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let end = text.ceil_char_boundary(start + size);
        out.push(&text[start..end]);
        start = end;
    }
    out
}
