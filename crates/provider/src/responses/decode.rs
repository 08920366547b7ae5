//! Responses API stream events → [`StreamEvent`]s.
//!
//! Output items are numbered by the wire (`output_index`); function calls are renumbered
//! `0, 1, ...` in the order they start. Text comes from `response.output_text.delta`, call
//! arguments from `response.function_call_arguments.delta` (or whole from the item when no
//! delta came), reasoning from `response.reasoning_summary_text.delta`; a reasoning item ends
//! with its JSON as the block's signature ([`super::REASONING_PREFIX`]), so it can be sent back.
//! Usage comes from `response.completed` (or `response.incomplete`): `input_tokens` counts the
//! whole prompt, `input_tokens_details.cached_tokens` the part read from the cache.
//!
//! Invariants: the terminator is `response.completed` or `response.incomplete`; `Stop` is
//! emitted only then (`MaxTokens` for an incomplete reply cut by `max_output_tokens`, the
//! reason verbatim otherwise). `response.failed` and `error` fail the stream with their
//! classified kind (`context_length_exceeded` is an overflow).

use std::collections::HashMap;

use serde_json::Value;

use crate::classify;
use crate::error::ProviderError;
use crate::event::{StopReason, StreamEvent, Usage};

#[derive(Debug, Clone)]
enum Open {
    /// A function call: its ordinal, and whether argument deltas came.
    Call {
        ordinal: usize,
        streamed: bool,
    },
    Reasoning,
    Other,
}

/// Decoder state for one streamed reply.
#[derive(Debug, Default)]
pub struct Decoder {
    items: HashMap<u64, Open>,
    next_call: usize,
    done: bool,
}

impl Decoder {
    pub fn new() -> Self {
        Decoder::default()
    }

    /// Whether the reply's terminator has arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Decode one SSE event; the payload's `type` decides.
    pub fn on_data(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        let event = crate::sse::json_event(data)?;
        let kind = event.get("type").and_then(Value::as_str).unwrap_or_default();
        let index = event.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "response.output_item.added" => self.on_added(index, &event, out),
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(text) = event.get("delta").and_then(Value::as_str) {
                    out.push(StreamEvent::TextDelta { text: text.to_owned() });
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(text) = event.get("delta").and_then(Value::as_str) {
                    out.push(StreamEvent::ThinkingDelta { text: text.to_owned() });
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(Open::Call { ordinal, streamed }) = self.items.get_mut(&index) {
                    *streamed = true;
                    let fragment = event.get("delta").and_then(Value::as_str).unwrap_or_default();
                    out.push(StreamEvent::ToolCallArgsDelta {
                        index: *ordinal,
                        json_fragment: fragment.to_owned(),
                    });
                }
            }
            "response.output_item.done" => self.on_done(index, &event, out),
            "response.completed" | "response.incomplete" => self.on_end(&event, out),
            "response.failed" => {
                let error = event.pointer("/response/error").cloned().unwrap_or(Value::Null);
                return Err(classify::stream_error(&serde_json::json!({ "error": error })));
            }
            "error" => {
                let error = serde_json::json!({ "error": {
                    "code": event.get("code"),
                    "message": event.get("message"),
                    "type": event.get("code"),
                }});
                return Err(classify::stream_error(&error));
            }
            // response.created, response.in_progress, content parts, *.done of deltas.
            _ => {}
        }
        Ok(())
    }

    fn on_added(&mut self, index: u64, event: &Value, out: &mut Vec<StreamEvent>) {
        let item = event.get("item").unwrap_or(&Value::Null);
        let open = match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                let ordinal = self.next_call;
                self.next_call += 1;
                let id = item
                    .get("call_id")
                    .or_else(|| item.get("id"))
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("call_{ordinal}"), str::to_owned);
                let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
                out.push(StreamEvent::ToolCallStart { index: ordinal, id, name: name.to_owned() });
                Open::Call { ordinal, streamed: false }
            }
            Some("reasoning") => {
                out.push(StreamEvent::ThinkingDelta { text: String::new() });
                Open::Reasoning
            }
            _ => Open::Other,
        };
        self.items.insert(index, open);
    }

    fn on_done(&mut self, index: u64, event: &Value, out: &mut Vec<StreamEvent>) {
        let item = event.get("item").unwrap_or(&Value::Null);
        match self.items.get(&index).cloned() {
            Some(Open::Call { ordinal, streamed }) => {
                if !streamed {
                    let arguments = item.get("arguments").and_then(Value::as_str).unwrap_or("{}");
                    out.push(StreamEvent::ToolCallArgsDelta {
                        index: ordinal,
                        json_fragment: arguments.to_owned(),
                    });
                }
                out.push(StreamEvent::ToolCallEnd { index: ordinal });
            }
            Some(Open::Reasoning) => {
                let signature = format!("{}{item}", super::REASONING_PREFIX);
                out.push(StreamEvent::ThinkingSignature { signature });
            }
            Some(Open::Other) | None => {}
        }
    }

    fn on_end(&mut self, event: &Value, out: &mut Vec<StreamEvent>) {
        let response = event.get("response").unwrap_or(&Value::Null);
        if let Some(usage) = response.get("usage").filter(|u| !u.is_null()) {
            let number =
                |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
            out.push(StreamEvent::Usage(Usage {
                input_tokens: number("/input_tokens"),
                output_tokens: number("/output_tokens"),
                cache_read_tokens: number("/input_tokens_details/cached_tokens"),
                cache_write_tokens: 0,
            }));
        }
        let stop = match response.pointer("/incomplete_details/reason").and_then(Value::as_str) {
            Some("max_output_tokens") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_owned()),
            None if self.next_call > 0 => StopReason::ToolUse,
            None => StopReason::EndTurn,
        };
        out.push(StreamEvent::Stop(stop));
        self.done = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(events: &[Value]) -> Result<Vec<StreamEvent>, ProviderError> {
        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        for event in events {
            decoder.on_data(&event.to_string(), &mut out)?;
        }
        assert!(decoder.is_done());
        Ok(out)
    }

    #[test]
    fn calls_reasoning_and_usage() {
        let reasoning = serde_json::json!({"type": "reasoning", "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "check it"}], "encrypted_content": "gAAA"});
        let out = decode(&[
            serde_json::json!({"type": "response.created", "response": {"id": "r"}}),
            serde_json::json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            serde_json::json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "check it"}),
            serde_json::json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning}),
            serde_json::json!({"type": "response.output_item.added", "output_index": 1,
                "item": {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "read_file", "arguments": ""}}),
            serde_json::json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{\"path\""}),
            serde_json::json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": ":\"a.rs\"}"}),
            serde_json::json!({"type": "response.output_item.done", "output_index": 1,
                "item": {"type": "function_call", "call_id": "call_9", "name": "read_file", "arguments": "{\"path\":\"a.rs\"}"}}),
            serde_json::json!({"type": "response.output_item.added", "output_index": 2,
                "item": {"type": "function_call", "call_id": "call_10", "name": "list_dir"}}),
            serde_json::json!({"type": "response.output_item.done", "output_index": 2,
                "item": {"type": "function_call", "call_id": "call_10", "name": "list_dir", "arguments": "{\"path\":\".\"}"}}),
            serde_json::json!({"type": "response.completed", "response": {"status": "completed",
                "usage": {"input_tokens": 900, "input_tokens_details": {"cached_tokens": 512}, "output_tokens": 40}}}),
        ])
        .unwrap();
        assert_eq!(out[0], StreamEvent::ThinkingDelta { text: String::new() });
        assert_eq!(out[1], StreamEvent::ThinkingDelta { text: "check it".into() });
        let StreamEvent::ThinkingSignature { signature } = &out[2] else { panic!("{out:?}") };
        let back: Value = serde_json::from_str(
            signature.strip_prefix(crate::responses::REASONING_PREFIX).unwrap(),
        )
        .unwrap();
        assert_eq!(back, reasoning);
        assert_eq!(
            out[3],
            StreamEvent::ToolCallStart { index: 0, id: "call_9".into(), name: "read_file".into() }
        );
        assert_eq!(out[6], StreamEvent::ToolCallEnd { index: 0 });
        assert_eq!(
            out[8],
            StreamEvent::ToolCallArgsDelta { index: 1, json_fragment: "{\"path\":\".\"}".into() }
        );
        assert_eq!(
            out[10],
            StreamEvent::Usage(Usage {
                input_tokens: 900,
                output_tokens: 40,
                cache_read_tokens: 512,
                cache_write_tokens: 0
            })
        );
        assert_eq!(out[11], StreamEvent::Stop(StopReason::ToolUse));
    }

    #[test]
    fn an_incomplete_reply_stops_with_its_reason_and_a_failure_is_classified() {
        let out = decode(&[
            serde_json::json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Part of"}),
            serde_json::json!({"type": "response.incomplete", "response": {"status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"}, "usage": {"input_tokens": 10, "output_tokens": 5}}}),
        ])
        .unwrap();
        assert_eq!(out.last(), Some(&StreamEvent::Stop(StopReason::MaxTokens)));
        let mut decoder = Decoder::new();
        let failed = serde_json::json!({"type": "response.failed", "response": {"status": "failed",
            "error": {"code": "context_length_exceeded", "message": "Your input exceeds the context window of this model. Please adjust your input and try again."}}});
        let err = decoder.on_data(&failed.to_string(), &mut Vec::new()).unwrap_err();
        assert!(err.is_context_overflow(), "{err:?}");
    }
}
