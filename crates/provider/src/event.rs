//! The normalized stream of events every wire format decodes into.
//!
//! Invariants the decoders guarantee, and [`crate::ResponseBuilder`] relies on:
//! - a thinking block opens with a `ThinkingDelta` (possibly empty) and its signature, when the
//!   provider signs it, arrives as `ThinkingSignature` before the next block opens;
//! - tool calls are numbered `0, 1, 2 ...` in the order they start, whatever numbering the wire
//!   format uses; every `ToolCallStart` is followed by its argument fragments and a `ToolCallEnd`
//!   before the stream's `Stop`;
//! - `Usage` may come zero or more times; the last one is the complete figure;
//! - `Stop` is the last event of a complete reply. A stream that ends without it fails.

use serde::{Deserialize, Serialize};

/// One streamed piece of a model reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// Visible text.
    TextDelta { text: String },
    /// Reasoning text (Anthropic thinking, OpenAI-compatible `reasoning_content`).
    ThinkingDelta { text: String },
    /// Anthropic's signature of the current thinking block, byte-exact.
    ThinkingSignature { signature: String },
    /// An Anthropic `redacted_thinking` block, opaque.
    RedactedThinking { data: String },
    /// A tool call begins. `index` is the call's ordinal in this reply.
    ToolCallStart { index: usize, id: String, name: String },
    /// A fragment of the call's JSON arguments; concatenated they form the arguments text.
    ToolCallArgsDelta { index: usize, json_fragment: String },
    /// The call's arguments are complete.
    ToolCallEnd { index: usize },
    /// Token accounting as reported by the server.
    Usage(Usage),
    /// Generation finished; the last event of a complete reply.
    Stop(StopReason),
    /// Not part of the reply: a transient failure before it began; the request is sent again
    /// after `wait` (attempt `attempt` of `max_attempts`, counting the first).
    Retrying { attempt: u32, max_attempts: u32, wait: std::time::Duration, reason: String },
    /// Not part of the reply: the server has sent nothing for `silent` (said every
    /// [`crate::ProviderConfig::silence_notice`] until the idle timeout ends the request).
    Waiting { silent: std::time::Duration },
}

/// Token accounting, normalized across providers.
///
/// `input_tokens` is the whole prompt, cached parts included: for Anthropic it is
/// `input_tokens + cache_read_input_tokens + cache_creation_input_tokens` as reported, for
/// OpenAI-compatible servers `prompt_tokens`. The cache figures are the parts of it read from
/// or written to the prompt cache. This makes `input_tokens` directly comparable with the
/// size of the request, which is what the engine's budget needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

/// Why the model stopped generating.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "reason", rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its turn (`end_turn`, `stop`, `stop_sequence`).
    EndTurn,
    /// The model wants its tool calls run (`tool_use`, `tool_calls`).
    ToolUse,
    /// The output budget ran out (`max_tokens`, `length`).
    MaxTokens,
    /// Anything else, verbatim (`refusal`, `content_filter`, `pause_turn` ...).
    Other(String),
}

impl StopReason {
    /// The journal's spelling of the reason.
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::Other(other) => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reason_spelling_matches_the_journal() {
        assert_eq!(StopReason::EndTurn.as_str(), "end_turn");
        assert_eq!(StopReason::ToolUse.as_str(), "tool_use");
        assert_eq!(StopReason::MaxTokens.as_str(), "max_tokens");
        assert_eq!(StopReason::Other("refusal".into()).as_str(), "refusal");
    }
}
