//! Chat Completions stream chunks → [`StreamEvent`]s, tolerant of how servers differ.
//!
//! Quirks handled here: reasoning arrives as `reasoning_content` (DeepSeek, vLLM, llama.cpp,
//! LM Studio) or `reasoning` (OpenRouter, Ollama); tool calls may lack `index` (older Ollama),
//! arrive whole in one chunk (Ollama), reuse index 0 for parallel calls with fresh ids, or
//! lack an id (some local servers; one is generated); `finish_reason` may say `stop` after
//! tool calls (Ollama); usage comes in its own final chunk, with the finish chunk, or never;
//! errors may arrive as a `data:` object with an `error` member (OpenRouter, vLLM).
//!
//! Invariant: the terminator is `data: [DONE]`. `Stop` is emitted only then, after any usage,
//! and a body that ends before it is a protocol error.

use serde_json::Value;

use super::think_tags::ThinkTags;
use crate::classify;
use crate::error::ProviderError;
use crate::event::{StopReason, StreamEvent, Usage};

#[derive(Debug)]
struct Call {
    wire_index: Option<u64>,
    id: String,
    ordinal: usize,
    ended: bool,
}

/// Decoder state for one streamed reply.
#[derive(Debug, Default)]
pub struct Decoder {
    calls: Vec<Call>,
    finish: Option<String>,
    done: bool,
    model: Option<String>,
    think: ThinkTags,
}

impl Decoder {
    pub fn new() -> Self {
        Decoder::default()
    }

    /// Whether `[DONE]` has arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The model id the server reported, if any.
    #[cfg(test)]
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// Decode one SSE `data` payload.
    pub fn on_data(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        if data.trim() == "[DONE]" {
            self.think.finish(out);
            self.end_calls(out);
            out.push(StreamEvent::Stop(self.stop_reason()));
            self.done = true;
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|err| {
            ProviderError::protocol(format!(
                "the server sent a stream chunk that is not JSON: {err}"
            ))
        })?;
        self.on_chunk(&chunk, out)
    }

    fn on_chunk(&mut self, chunk: &Value, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            return Err(classify::stream_error(chunk));
        }
        if self.model.is_none() {
            self.model = chunk.get("model").and_then(Value::as_str).map(str::to_owned);
        }
        let choice = chunk.get("choices").and_then(|c| c.get(0));
        if let Some(choice) = choice {
            let delta = choice.get("delta").or_else(|| choice.get("message"));
            if let Some(delta) = delta {
                self.on_delta(delta, out)?;
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.think.finish(out);
                self.finish = Some(reason.to_owned());
                self.end_calls(out);
            }
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            out.push(StreamEvent::Usage(parse_usage(usage)));
        }
        Ok(())
    }

    fn on_delta(&mut self, delta: &Value, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        for key in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta.get(key).and_then(Value::as_str).filter(|t| !t.is_empty()) {
                // The server parses reasoning itself; content is content.
                self.think.disable();
                out.push(StreamEvent::ThinkingDelta { text: text.to_owned() });
                break;
            }
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            self.think.push(text, out);
        }
        // OpenAI streams a refusal in its own field; the user must still see it.
        if let Some(text) = delta.get("refusal").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            out.push(StreamEvent::TextDelta { text: text.to_owned() });
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            // Release held-back content first so blocks keep their order.
            self.think.finish(out);
            for call in calls {
                self.on_tool_call(call, out);
            }
        }
        Ok(())
    }

    fn on_tool_call(&mut self, call: &Value, out: &mut Vec<StreamEvent>) {
        let wire_index = call.get("index").and_then(Value::as_u64);
        let id = call.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
        let function = call.get("function");
        let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
        let arguments = match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Null) | None => String::new(),
            // Some servers send the arguments object itself.
            Some(other) => other.to_string(),
        };
        let position = self.find_open(wire_index, id);
        let ordinal = match position {
            Some(position) => self.calls[position].ordinal,
            None => {
                let ordinal = self.calls.len();
                let id = id.map_or_else(|| format!("call_{ordinal}"), str::to_owned);
                out.push(StreamEvent::ToolCallStart {
                    index: ordinal,
                    id: id.clone(),
                    name: name.unwrap_or_default().to_owned(),
                });
                self.calls.push(Call { wire_index, id, ordinal, ended: false });
                ordinal
            }
        };
        if !arguments.is_empty() {
            out.push(StreamEvent::ToolCallArgsDelta { index: ordinal, json_fragment: arguments });
        }
    }

    /// The open call this fragment continues, if any. A fragment naming a new id starts a new
    /// call even at a known index (servers that number every parallel call 0).
    fn find_open(&self, wire_index: Option<u64>, id: Option<&str>) -> Option<usize> {
        let position = match (wire_index, id) {
            (Some(index), _) => {
                self.calls.iter().rposition(|call| !call.ended && call.wire_index == Some(index))
            }
            (None, Some(id)) => self.calls.iter().rposition(|call| !call.ended && call.id == id),
            (None, None) => self.calls.iter().rposition(|call| !call.ended),
        }?;
        match id {
            Some(id) if self.calls[position].id != id => None,
            _ => Some(position),
        }
    }

    fn end_calls(&mut self, out: &mut Vec<StreamEvent>) {
        for call in self.calls.iter_mut().filter(|call| !call.ended) {
            call.ended = true;
            out.push(StreamEvent::ToolCallEnd { index: call.ordinal });
        }
    }

    fn stop_reason(&self) -> StopReason {
        let called = !self.calls.is_empty();
        match self.finish.as_deref() {
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            Some("length" | "max_tokens") => StopReason::MaxTokens,
            // Ollama and some templates say "stop" after emitting calls; the calls win.
            Some("stop" | "eos" | "end_turn" | "stop_sequence") | None if called => {
                StopReason::ToolUse
            }
            Some("stop" | "eos" | "end_turn" | "stop_sequence") | None => StopReason::EndTurn,
            Some(other) => StopReason::Other(other.to_owned()),
        }
    }
}

/// Decode a complete (non-streamed) completion, for servers that ignore `stream: true`.
pub fn decode_whole(body: &Value) -> Result<Vec<StreamEvent>, ProviderError> {
    if body.get("choices").is_none() {
        return Err(ProviderError::protocol(
            "the server answered with JSON that is not a completion",
        ));
    }
    let mut decoder = Decoder::new();
    let mut out = Vec::new();
    decoder.on_chunk(body, &mut out)?;
    decoder.on_data("[DONE]", &mut out)?;
    Ok(out)
}

/// Usage in OpenAI's shape, with DeepSeek's cache figures as a fallback.
fn parse_usage(usage: &Value) -> Usage {
    let number = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let cached = usage
        .get("prompt_tokens_details")
        .and_then(|d| d.get("cached_tokens"))
        .and_then(Value::as_u64)
        .or_else(|| usage.get("prompt_cache_hit_tokens").and_then(Value::as_u64))
        .unwrap_or(0);
    Usage {
        input_tokens: number(usage.get("prompt_tokens")),
        output_tokens: number(usage.get("completion_tokens")),
        cache_read_tokens: cached,
        cache_write_tokens: number(usage.get("cache_creation_input_tokens")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ResponseBuilder;
    use serde_json::json;

    fn decode(chunks: &[Value], done: bool) -> (Vec<StreamEvent>, Decoder) {
        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.on_data(&chunk.to_string(), &mut out).unwrap();
        }
        if done {
            decoder.on_data("[DONE]", &mut out).unwrap();
        }
        (out, decoder)
    }

    fn fold(events: &[StreamEvent]) -> crate::Response {
        let mut builder = ResponseBuilder::new();
        for event in events {
            builder.push(event).unwrap();
        }
        builder.finish().unwrap()
    }

    #[test]
    fn fragmented_parallel_calls_reassemble() {
        let chunks = [
            json!({"model": "gpt-4o", "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": ""}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"pa"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "list_dir", "arguments": "{\"path\""}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "th\":\"a\"}"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 1, "function": {"arguments": ":\".\"}"}}]}}]}),
            json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 32}}}),
        ];
        let (events, decoder) = decode(&chunks, true);
        assert_eq!(decoder.model(), Some("gpt-4o"));
        assert!(matches!(events.last(), Some(StreamEvent::Stop(StopReason::ToolUse))));
        let response = fold(&events);
        let calls: Vec<_> = response
            .tool_uses()
            .map(|(id, name, input)| (id.to_owned(), name.to_owned(), input.clone()))
            .collect();
        assert_eq!(
            calls,
            vec![
                ("call_a".into(), "read_file".into(), json!({"path": "a"})),
                ("call_b".into(), "list_dir".into(), json!({"path": "."})),
            ]
        );
        assert_eq!(
            response.usage,
            Some(Usage {
                input_tokens: 50,
                output_tokens: 9,
                cache_read_tokens: 32,
                cache_write_tokens: 0
            })
        );
    }

    #[test]
    fn ollama_whole_calls_without_index_and_stop_reason_stop() {
        let chunks = [
            json!({"choices": [{"delta": {"role": "assistant", "content": "", "tool_calls": [{"id": "call_x1", "function": {"name": "shell", "arguments": "{\"command\":\"ls\"}"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"id": "call_x2", "function": {"name": "shell", "arguments": {"command": "pwd"}}}]}}]}),
            json!({"choices": [{"delta": {"content": ""}, "finish_reason": "stop"}]}),
        ];
        let (events, _) = decode(&chunks, true);
        let response = fold(&events);
        assert_eq!(response.stop_reason, Some(StopReason::ToolUse));
        let inputs: Vec<_> =
            response.tool_uses().map(|(id, _, input)| (id.to_owned(), input.clone())).collect();
        assert_eq!(
            inputs,
            vec![
                ("call_x1".into(), json!({"command": "ls"})),
                ("call_x2".into(), json!({"command": "pwd"}))
            ]
        );
    }

    #[test]
    fn parallel_calls_all_numbered_zero_are_told_apart_by_id() {
        let chunks = [
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "n", "arguments": "{}"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "b", "function": {"name": "n", "arguments": "{\"x\":1}"}}]}}]}),
        ];
        let (events, _) = decode(&chunks, true);
        assert_eq!(fold(&events).tool_uses().count(), 2);
    }

    #[test]
    fn reasoning_fields_become_thinking() {
        let chunks = [
            json!({"choices": [{"delta": {"reasoning_content": "hmm "}}]}),
            json!({"choices": [{"delta": {"reasoning": "ok"}}]}),
            json!({"choices": [{"delta": {"content": "Answer"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "prompt_cache_hit_tokens": 4}}),
        ];
        let (events, _) = decode(&chunks, true);
        let response = fold(&events);
        assert_eq!(
            response.content[0],
            crate::Block::Thinking { thinking: "hmm ok".into(), signature: None }
        );
        assert_eq!(response.text(), "Answer");
        assert_eq!(response.usage.unwrap().cache_read_tokens, 4);
        assert_eq!(response.stop_reason, Some(StopReason::EndTurn));
    }

    #[test]
    fn inline_think_tags_are_split_into_thinking() {
        let chunks = [
            json!({"choices": [{"delta": {"content": "<thi"}}]}),
            json!({"choices": [{"delta": {"content": "nk>check the file</th"}}]}),
            json!({"choices": [{"delta": {"content": "ink>\n\nIt is fine."}, "finish_reason": "stop"}]}),
        ];
        let (events, _) = decode(&chunks, true);
        let response = fold(&events);
        assert_eq!(
            response.content[0],
            crate::Block::Thinking { thinking: "check the file".into(), signature: None }
        );
        assert_eq!(response.text(), "It is fine.");
    }

    /// One tool call delta: maybe an index, maybe an id, a fragment of arguments.
    fn call_delta() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        (
            proptest::option::weighted(0.7, 0..3u32),
            proptest::option::weighted(0.4, proptest::sample::select(&["a", "b", "c", ""][..])),
            proptest::sample::select(&["{", "\"x\":", "1", "}", ""][..]),
        )
            .prop_map(|(index, id, fragment)| {
                let mut call = serde_json::Map::new();
                if let Some(index) = index {
                    call.insert("index".into(), json!(index));
                }
                if let Some(id) = id {
                    call.insert("id".into(), json!(id));
                }
                call.insert("function".into(), json!({"name": "n", "arguments": fragment}));
                json!({"choices": [{"delta": {"tool_calls": [call]}}]})
            })
    }

    proptest::proptest! {
        /// Whatever mix of indexes, ids and fragments a server sends, the events are
        /// consistent: the builder accepts every one and every started call ends.
        #[test]
        fn random_tool_call_deltas_always_fold(
            chunks in proptest::collection::vec(call_delta(), 1..12),
        ) {
            let mut decoder = Decoder::new();
            let mut out = Vec::new();
            for chunk in &chunks {
                decoder.on_data(&chunk.to_string(), &mut out).unwrap();
            }
            decoder.on_data("[DONE]", &mut out).unwrap();
            let starts =
                out.iter().filter(|e| matches!(e, StreamEvent::ToolCallStart { .. })).count();
            let ends = out.iter().filter(|e| matches!(e, StreamEvent::ToolCallEnd { .. })).count();
            proptest::prop_assert_eq!(starts, ends);
            let response = fold(&out);
            proptest::prop_assert_eq!(response.tool_uses().count(), starts);
        }
    }

    #[test]
    fn refusals_are_shown_as_text() {
        let chunks = [
            json!({"choices": [{"delta": {"content": null, "refusal": "I can't help with that."}, "finish_reason": "stop"}]}),
        ];
        let (events, _) = decode(&chunks, true);
        assert_eq!(fold(&events).text(), "I can't help with that.");
    }

    #[test]
    fn error_chunks_and_bad_json_fail() {
        let mut decoder = Decoder::new();
        let err = decoder
            .on_data(r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":400}}"#, &mut Vec::new())
            .unwrap_err();
        assert!(err.is_context_overflow());
        let err = Decoder::new().on_data("{not json", &mut Vec::new()).unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::Protocol);
    }

    #[test]
    fn missing_id_gets_a_generated_one_and_length_maps_to_max_tokens() {
        let chunks = [
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "n", "arguments": "{}"}}]}, "finish_reason": "length"}]}),
        ];
        let (events, _) = decode(&chunks, true);
        let response = fold(&events);
        assert_eq!(response.tool_uses().next().unwrap().0, "call_0");
        assert_eq!(response.stop_reason, Some(StopReason::MaxTokens));
    }

    #[test]
    fn whole_completions_decode_like_streams() {
        let body = json!({"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}});
        let response = fold(&decode_whole(&body).unwrap());
        assert_eq!(response.text(), "hi");
        assert!(decode_whole(&json!({"ok": true})).is_err());
    }
}
