//! Folding a stream of [`StreamEvent`]s into a [`Response`].
//!
//! Invariants: blocks keep the order in which they started; a thinking signature is stored
//! exactly as streamed (concatenated if it came in pieces); tool-call arguments are the exact
//! concatenation of their fragments, parsed once at the end. A partial response (after a
//! failure) keeps finished blocks and unfinished text/thinking, but never an unfinished tool
//! call: its arguments may be cut mid-JSON and it must not be run. A reply is made consistent
//! as it is assembled: a tool call id used twice in one reply is renamed (`id`, `id-2`, …), so
//! the journal never holds a reply the request builder would refuse.

use std::collections::HashMap;

use crate::error::ProviderError;
use crate::event::{StopReason, StreamEvent, Usage};
use crate::types::{Block, Response};

/// A block while it streams.
#[derive(Debug)]
enum Slot {
    Text(String),
    Thinking { text: String, signature: Option<String> },
    Redacted(String),
    Tool { id: String, name: String, args: String, ended: bool },
}

/// Builds one [`Response`] from its events. Feed every event to [`ResponseBuilder::push`], then
/// call [`ResponseBuilder::finish`] (complete reply) or [`ResponseBuilder::into_partial`]
/// (after a failure).
#[derive(Debug, Default)]
pub struct ResponseBuilder {
    slots: Vec<Slot>,
    /// Tool-call ordinal → position in `slots`.
    tools: HashMap<usize, usize>,
    usage: Option<Usage>,
    stop: Option<StopReason>,
    model: Option<String>,
}

impl ResponseBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        ResponseBuilder::default()
    }

    /// Record the model id the server reported.
    pub fn set_model(&mut self, model: impl Into<String>) {
        self.model = Some(model.into());
    }

    /// Whether any content, usage or stop has arrived.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty() && self.usage.is_none() && self.stop.is_none()
    }

    /// Whether the reply's `Stop` has arrived.
    pub fn has_stop(&self) -> bool {
        self.stop.is_some()
    }

    /// Fold one event in. Fails only on events that contradict the stream's own history
    /// (arguments for a call that never started, a call started twice).
    pub fn push(&mut self, event: &StreamEvent) -> Result<(), ProviderError> {
        match event {
            StreamEvent::TextDelta { text } => match self.slots.last_mut() {
                Some(Slot::Text(existing)) => existing.push_str(text),
                _ => self.slots.push(Slot::Text(text.clone())),
            },
            StreamEvent::ThinkingDelta { text } => match self.slots.last_mut() {
                // A signed block is closed; what follows is a new block.
                Some(Slot::Thinking { text: existing, signature: None }) => existing.push_str(text),
                _ => self.slots.push(Slot::Thinking { text: text.clone(), signature: None }),
            },
            StreamEvent::ThinkingSignature { signature } => match self.slots.last_mut() {
                Some(Slot::Thinking { signature: Some(existing), .. }) => {
                    existing.push_str(signature)
                }
                Some(Slot::Thinking { signature: slot @ None, .. }) => {
                    *slot = Some(signature.clone())
                }
                // A signature with no visible reasoning (thinking display omitted).
                _ => self.slots.push(Slot::Thinking {
                    text: String::new(),
                    signature: Some(signature.clone()),
                }),
            },
            StreamEvent::RedactedThinking { data } => self.slots.push(Slot::Redacted(data.clone())),
            StreamEvent::ToolCallStart { index, id, name } => {
                if self.tools.contains_key(index) {
                    return Err(ProviderError::protocol(format!(
                        "tool call {index} started twice in one reply"
                    )));
                }
                self.tools.insert(*index, self.slots.len());
                self.slots.push(Slot::Tool {
                    id: id.clone(),
                    name: name.clone(),
                    args: String::new(),
                    ended: false,
                });
            }
            StreamEvent::ToolCallArgsDelta { index, json_fragment } => {
                match self.tool_mut(*index)? {
                    Slot::Tool { args, .. } => args.push_str(json_fragment),
                    _ => return Err(unknown_call(*index)),
                }
            }
            StreamEvent::ToolCallEnd { index } => match self.tool_mut(*index)? {
                Slot::Tool { ended, .. } => *ended = true,
                _ => return Err(unknown_call(*index)),
            },
            StreamEvent::Usage(usage) => self.usage = Some(*usage),
            StreamEvent::Stop(reason) => self.stop = Some(reason.clone()),
            StreamEvent::Retrying { .. } | StreamEvent::Waiting { .. } => {}
        }
        Ok(())
    }

    fn tool_mut(&mut self, index: usize) -> Result<&mut Slot, ProviderError> {
        let position = *self.tools.get(&index).ok_or_else(|| unknown_call(index))?;
        self.slots.get_mut(position).ok_or_else(|| unknown_call(index))
    }

    /// The complete reply. Fails when no `Stop` arrived: a reply without its end is not an
    /// answer.
    pub fn finish(self) -> Result<Response, ProviderError> {
        let Some(stop) = self.stop.clone() else {
            return Err(ProviderError::protocol("the reply ended without a stop reason"));
        };
        let mut response = self.build(true);
        response.stop_reason = Some(stop);
        Ok(response)
    }

    /// What arrived so far, or `None` when no content did.
    pub fn into_partial(self) -> Option<Response> {
        let mut response = self.build(false);
        response.stop_reason = None;
        // Usage alone is no reply: there is nothing to journal or show.
        if response.content.is_empty() {
            return None;
        }
        Some(response)
    }

    fn build(self, complete: bool) -> Response {
        let mut ids = std::collections::HashSet::new();
        let content = self
            .slots
            .into_iter()
            .filter_map(|slot| match slot {
                Slot::Text(text) if text.is_empty() => None,
                Slot::Text(text) => Some(Block::Text { text }),
                Slot::Thinking { text, signature } => {
                    if text.is_empty() && signature.is_none() {
                        None
                    } else {
                        Some(Block::Thinking { thinking: text, signature })
                    }
                }
                Slot::Redacted(data) => Some(Block::RedactedThinking { data }),
                Slot::Tool { id, name, args, ended } => {
                    // In a complete reply every call is finished by definition (`Stop` came);
                    // a server that never said "end" still delivered all its arguments.
                    if complete || ended {
                        let id = unique(id, &mut ids);
                        Some(Block::ToolUse { id, name, input: parse_arguments(args) })
                    } else {
                        None
                    }
                }
            })
            .collect();
        Response { content, usage: self.usage, stop_reason: None, model: self.model }
    }
}

/// `id`, or, when the reply already used it, the first of `id-2`, `id-3`, … it did not.
fn unique(id: String, used: &mut std::collections::HashSet<String>) -> String {
    if used.insert(id.clone()) {
        return id;
    }
    let mut n = 2;
    loop {
        let renamed = format!("{id}-{n}");
        if used.insert(renamed.clone()) {
            return renamed;
        }
        n += 1;
    }
}

fn unknown_call(index: usize) -> ProviderError {
    ProviderError::protocol(format!(
        "arguments streamed for tool call {index}, which never started"
    ))
}

/// Tool arguments as JSON. Empty means no arguments (`{}`); text that is not JSON is kept
/// verbatim as a JSON string so it replays unchanged and the engine can report it.
fn parse_arguments(args: String) -> serde_json::Value {
    if args.trim().is_empty() {
        return serde_json::Value::Object(serde_json::Map::new());
    }
    match serde_json::from_str(&args) {
        Ok(value) => value,
        Err(_) => serde_json::Value::String(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn feed(events: &[StreamEvent]) -> ResponseBuilder {
        let mut builder = ResponseBuilder::new();
        for event in events {
            builder.push(event).unwrap();
        }
        builder
    }

    fn text(t: &str) -> StreamEvent {
        StreamEvent::TextDelta { text: t.into() }
    }

    fn thinking(t: &str) -> StreamEvent {
        StreamEvent::ThinkingDelta { text: t.into() }
    }

    #[test]
    fn a_call_id_used_twice_in_one_reply_is_renamed() {
        let call = |index: usize, id: &str| StreamEvent::ToolCallStart {
            index,
            id: id.into(),
            name: "read_file".into(),
        };
        let events = [
            call(0, "same"),
            call(1, "same"),
            call(2, "same-2"),
            call(3, "same"),
            StreamEvent::Stop(StopReason::ToolUse),
        ];
        let response = feed(&events).finish().unwrap();
        let ids: Vec<&str> = response.tool_uses().map(|(id, _, _)| id).collect();
        assert_eq!(ids, ["same", "same-2", "same-2-2", "same-3"]);
    }

    #[test]
    fn blocks_keep_stream_order_and_exact_signature() {
        let events = [
            thinking(""),
            thinking("let me "),
            thinking("see"),
            StreamEvent::ThinkingSignature { signature: "EqQBCgIYAh+/=".into() },
            thinking(""),
            thinking("second"),
            StreamEvent::ThinkingSignature { signature: "c2ln".into() },
            text("Hello"),
            text(" world"),
            StreamEvent::ToolCallStart { index: 0, id: "toolu_1".into(), name: "shell".into() },
            StreamEvent::ToolCallArgsDelta { index: 0, json_fragment: "{\"comm".into() },
            StreamEvent::ToolCallArgsDelta { index: 0, json_fragment: "and\": \"ls\"}".into() },
            StreamEvent::ToolCallEnd { index: 0 },
            StreamEvent::Usage(Usage { input_tokens: 10, output_tokens: 3, ..Usage::default() }),
            StreamEvent::Stop(StopReason::ToolUse),
        ];
        let response = feed(&events).finish().unwrap();
        assert_eq!(
            response.content,
            vec![
                Block::Thinking {
                    thinking: "let me see".into(),
                    signature: Some("EqQBCgIYAh+/=".into())
                },
                Block::Thinking { thinking: "second".into(), signature: Some("c2ln".into()) },
                Block::text("Hello world"),
                Block::ToolUse {
                    id: "toolu_1".into(),
                    name: "shell".into(),
                    input: json!({"command": "ls"})
                },
            ]
        );
        assert_eq!(response.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(response.usage.unwrap().input_tokens, 10);
    }

    #[test]
    fn parallel_calls_reassemble_independently() {
        let events = [
            StreamEvent::ToolCallStart { index: 0, id: "a".into(), name: "read_file".into() },
            StreamEvent::ToolCallStart { index: 1, id: "b".into(), name: "list_dir".into() },
            StreamEvent::ToolCallArgsDelta { index: 1, json_fragment: "{\"path\":".into() },
            StreamEvent::ToolCallArgsDelta { index: 0, json_fragment: "{\"path\":\"x\"}".into() },
            StreamEvent::ToolCallArgsDelta { index: 1, json_fragment: "\".\"}".into() },
            StreamEvent::ToolCallEnd { index: 0 },
            StreamEvent::ToolCallEnd { index: 1 },
            StreamEvent::Stop(StopReason::ToolUse),
        ];
        let response = feed(&events).finish().unwrap();
        let calls: Vec<_> =
            response.tool_uses().map(|(id, _, input)| (id.to_owned(), input.clone())).collect();
        assert_eq!(
            calls,
            vec![("a".into(), json!({"path": "x"})), ("b".into(), json!({"path": "."}))]
        );
    }

    #[test]
    fn invalid_or_empty_arguments_are_kept_replayable() {
        let events = [
            StreamEvent::ToolCallStart { index: 0, id: "a".into(), name: "n".into() },
            StreamEvent::ToolCallArgsDelta { index: 0, json_fragment: "{not json".into() },
            StreamEvent::ToolCallStart { index: 1, id: "b".into(), name: "n".into() },
            StreamEvent::Stop(StopReason::ToolUse),
        ];
        let response = feed(&events).finish().unwrap();
        let inputs: Vec<_> = response.tool_uses().map(|(_, _, input)| input.clone()).collect();
        assert_eq!(inputs, vec![json!("{not json"), json!({})]);
    }

    #[test]
    fn finish_without_stop_is_a_protocol_error() {
        let err = feed(&[text("half")]).finish().unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::Protocol);
    }

    #[test]
    fn partial_keeps_text_and_ended_calls_but_not_unfinished_ones() {
        let events = [
            text("I will run two things"),
            StreamEvent::ToolCallStart { index: 0, id: "a".into(), name: "shell".into() },
            StreamEvent::ToolCallArgsDelta { index: 0, json_fragment: "{}".into() },
            StreamEvent::ToolCallEnd { index: 0 },
            StreamEvent::ToolCallStart { index: 1, id: "b".into(), name: "shell".into() },
            StreamEvent::ToolCallArgsDelta { index: 1, json_fragment: "{\"comma".into() },
        ];
        let partial = feed(&events).into_partial().unwrap();
        assert_eq!(partial.stop_reason, None);
        assert_eq!(partial.content.len(), 2);
        assert_eq!(partial.tool_uses().count(), 1);
        assert!(ResponseBuilder::new().into_partial().is_none());
        let usage_only = feed(&[StreamEvent::Usage(Usage { input_tokens: 5, ..Usage::default() })]);
        assert!(usage_only.into_partial().is_none());
    }

    #[test]
    fn arguments_for_an_unknown_call_are_rejected() {
        let mut builder = ResponseBuilder::new();
        let err = builder
            .push(&StreamEvent::ToolCallArgsDelta { index: 3, json_fragment: "{}".into() })
            .unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::Protocol);
    }

    #[test]
    fn signature_without_thinking_text_still_makes_a_block() {
        let events = [
            StreamEvent::ThinkingSignature { signature: "sig".into() },
            text("hi"),
            StreamEvent::Stop(StopReason::EndTurn),
        ];
        let response = feed(&events).finish().unwrap();
        assert_eq!(
            response.content[0],
            Block::Thinking { thinking: String::new(), signature: Some("sig".into()) }
        );
    }
}
