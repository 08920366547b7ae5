//! Anthropic Messages stream events → [`StreamEvent`]s.
//!
//! Content blocks are numbered by the wire across all kinds; tool calls are renumbered
//! `0, 1, ...` in the order they start. Usage is merged from `message_start` (prompt and cache
//! figures) and `message_delta` (output, and prompt figures on newer API versions), and
//! normalized so `input_tokens` counts the whole prompt (see [`Usage`]).
//!
//! Invariant: the terminator is `message_stop`; `Stop` is emitted only then. An `error` event
//! fails the stream with its classified kind (`overloaded_error` → `Overloaded` ...).

use std::collections::HashMap;

use serde_json::Value;

use crate::classify;
use crate::error::ProviderError;
use crate::event::{StopReason, StreamEvent, Usage};

#[derive(Debug, Clone, Copy)]
enum Open {
    Text,
    Thinking,
    Tool(usize),
    Other,
}

/// Decoder state for one streamed reply.
#[derive(Debug, Default)]
pub struct Decoder {
    blocks: HashMap<u64, Open>,
    next_tool: usize,
    input: u64,
    cache_read: u64,
    cache_write: u64,
    output: u64,
    stop: Option<StopReason>,
    done: bool,
}

impl Decoder {
    pub fn new() -> Self {
        Decoder::default()
    }

    /// Whether `message_stop` has arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Decode one SSE event. The `event:` name is advisory; the payload's `type` decides.
    pub fn on_data(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        let event = crate::sse::json_event(data)?;
        let kind = event.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "message_start" => {
                let message = event.get("message");
                if let Some(usage) = message.and_then(|m| m.get("usage")) {
                    self.merge_usage(usage);
                    // Early, so a reply that fails mid-stream still reports its prompt size.
                    out.push(StreamEvent::Usage(self.usage()));
                }
            }
            "content_block_start" => self.on_block_start(&event, out)?,
            "content_block_delta" => self.on_block_delta(&event, out)?,
            "content_block_stop" => {
                let index = block_index(&event)?;
                if let Some(Open::Tool(ordinal)) = self.blocks.get(&index) {
                    out.push(StreamEvent::ToolCallEnd { index: *ordinal });
                }
            }
            "message_delta" => {
                if let Some(reason) =
                    event.get("delta").and_then(|d| d.get("stop_reason")).and_then(Value::as_str)
                {
                    self.stop = Some(stop_reason(reason));
                }
                if let Some(usage) = event.get("usage") {
                    self.merge_usage(usage);
                    out.push(StreamEvent::Usage(self.usage()));
                }
            }
            "message_stop" => {
                out.push(StreamEvent::Stop(self.stop.clone().unwrap_or(StopReason::EndTurn)));
                self.done = true;
            }
            "error" => return Err(classify::stream_error(&event)),
            // `ping` and event types added after this was written.
            _ => {}
        }
        Ok(())
    }

    fn on_block_start(
        &mut self,
        event: &Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let index = block_index(event)?;
        let block = event.get("content_block").ok_or_else(|| missing("content_block"))?;
        let text_of =
            |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let open = match block.get("type").and_then(Value::as_str).unwrap_or_default() {
            "text" => {
                out.push(StreamEvent::TextDelta { text: text_of("text") });
                Open::Text
            }
            "thinking" => {
                // Always emitted, even empty: it opens a new thinking block downstream.
                out.push(StreamEvent::ThinkingDelta { text: text_of("thinking") });
                let signature = text_of("signature");
                if !signature.is_empty() {
                    out.push(StreamEvent::ThinkingSignature { signature });
                }
                Open::Thinking
            }
            "redacted_thinking" => {
                out.push(StreamEvent::RedactedThinking { data: text_of("data") });
                Open::Other
            }
            "tool_use" => {
                let ordinal = self.next_tool;
                self.next_tool += 1;
                out.push(StreamEvent::ToolCallStart {
                    index: ordinal,
                    id: text_of("id"),
                    name: text_of("name"),
                });
                // The start event carries `input: {}`; the real input streams as JSON deltas.
                if let Some(input) =
                    block.get("input").filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                {
                    out.push(StreamEvent::ToolCallArgsDelta {
                        index: ordinal,
                        json_fragment: input.to_string(),
                    });
                }
                Open::Tool(ordinal)
            }
            _ => Open::Other,
        };
        self.blocks.insert(index, open);
        Ok(())
    }

    fn on_block_delta(
        &mut self,
        event: &Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let index = block_index(event)?;
        let delta = event.get("delta").ok_or_else(|| missing("delta"))?;
        let field =
            |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        match (
            delta.get("type").and_then(Value::as_str).unwrap_or_default(),
            self.blocks.get(&index),
        ) {
            ("text_delta", Some(Open::Text)) => {
                out.push(StreamEvent::TextDelta { text: field("text") })
            }
            ("thinking_delta", Some(Open::Thinking)) => {
                out.push(StreamEvent::ThinkingDelta { text: field("thinking") })
            }
            ("signature_delta", Some(Open::Thinking)) => {
                out.push(StreamEvent::ThinkingSignature { signature: field("signature") })
            }
            ("input_json_delta", Some(Open::Tool(ordinal))) => {
                out.push(StreamEvent::ToolCallArgsDelta {
                    index: *ordinal,
                    json_fragment: field("partial_json"),
                })
            }
            (_, None) => {
                return Err(ProviderError::protocol(format!(
                    "the server sent a delta for content block {index}, which never started"
                )))
            }
            // Citations and future delta kinds carry nothing this client replays.
            _ => {}
        }
        Ok(())
    }

    fn merge_usage(&mut self, usage: &Value) {
        let get = |key: &str| usage.get(key).and_then(Value::as_u64);
        if let Some(v) = get("input_tokens") {
            self.input = v;
        }
        if let Some(v) = get("cache_read_input_tokens") {
            self.cache_read = v;
        }
        if let Some(v) = get("cache_creation_input_tokens") {
            self.cache_write = v;
        }
        if let Some(v) = get("output_tokens") {
            self.output = v;
        }
    }

    fn usage(&self) -> Usage {
        Usage {
            input_tokens: self.input + self.cache_read + self.cache_write,
            output_tokens: self.output,
            cache_read_tokens: self.cache_read,
            cache_write_tokens: self.cache_write,
        }
    }
}

fn block_index(event: &Value) -> Result<u64, ProviderError> {
    event.get("index").and_then(Value::as_u64).ok_or_else(|| missing("index"))
}

fn missing(field: &str) -> ProviderError {
    ProviderError::protocol(format!("the server sent a stream event without its `{field}`"))
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Block, ResponseBuilder};
    use serde_json::json;

    fn run(events: &[Value]) -> Result<Vec<StreamEvent>, ProviderError> {
        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        for event in events {
            decoder.on_data(&event.to_string(), &mut out)?;
        }
        Ok(out)
    }

    #[test]
    fn thinking_text_and_tool_use_fold_into_blocks() {
        let events = [
            json!({"type": "message_start", "message": {"model": "claude-sonnet-4-5", "usage": {"input_tokens": 10, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me look."}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds/+=="}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Reading."}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {}}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": "}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"src/main.rs\"}"}}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 42}}),
            json!({"type": "message_stop"}),
        ];
        let out = run(&events).unwrap();
        let mut builder = ResponseBuilder::new();
        for event in &out {
            builder.push(event).unwrap();
        }
        let response = builder.finish().unwrap();
        assert_eq!(
            response.content,
            vec![
                Block::Thinking {
                    thinking: "Let me look.".into(),
                    signature: Some(
                        "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds/+==".into()
                    )
                },
                Block::text("Reading."),
                Block::ToolUse {
                    id: "toolu_01".into(),
                    name: "read_file".into(),
                    input: json!({"path": "src/main.rs"})
                },
            ]
        );
        assert_eq!(response.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(
            response.usage,
            Some(Usage {
                input_tokens: 115,
                output_tokens: 42,
                cache_read_tokens: 100,
                cache_write_tokens: 5
            })
        );
    }

    #[test]
    fn error_events_are_classified() {
        let err = run(&[json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})]).unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::Overloaded);
    }

    #[test]
    fn deltas_for_unknown_blocks_are_protocol_errors() {
        let err = run(&[json!({"type": "content_block_delta", "index": 4, "delta": {"type": "text_delta", "text": "x"}})]).unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::Protocol);
    }

    #[test]
    fn redacted_thinking_and_pings_pass_through() {
        let out = run(&[
            json!({"type": "ping"}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_stop"}),
        ])
        .unwrap();
        assert_eq!(
            out[0],
            StreamEvent::RedactedThinking { data: "EmwKAhgBEgy3va3pzix/LafPsn4a".into() }
        );
        assert_eq!(out.last(), Some(&StreamEvent::Stop(StopReason::EndTurn)));
    }
}
