//! The script language of the mock server: what one reply contains and how it is delivered.
//!
//! A [`Reply`] is content (text, thinking, tool calls, usage), a fault, or a recorded SSE file,
//! plus delivery options (delay between frames, chunk size, a cut after N frames). Content is
//! wire-neutral: the server renders it in the format of the path that was requested.

use std::time::Duration;

use serde_json::Value;

/// One part of a scripted reply, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    /// Reasoning; the signature is sent by the Anthropic wire only (OpenAI-compatible servers
    /// stream `reasoning_content`, unsigned).
    Thinking {
        text: String,
        signature: String,
    },
    RedactedThinking(String),
    ToolCall(ToolCall),
}

/// A scripted tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        ToolCall { id: id.into(), name: name.into(), input }
    }
}

/// Usage as the normalized [`crate::Usage`] will report it: `input` is the whole prompt,
/// cache figures are parts of it (the Anthropic rendering subtracts them again).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MockUsage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// A context-overflow error in the shape a particular server sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverflowShape {
    /// The shape of the requested wire: OpenAI `context_length_exceeded` on
    /// `/chat/completions`, Anthropic `prompt is too long` on `/v1/messages`.
    Wire,
    /// `exceed_context_size_error` with `n_prompt_tokens`/`n_ctx`.
    LlamaCpp,
    /// `{"object":"error","message":"This model's maximum context length is ..."}`.
    Vllm,
    /// An error string sent with status 200 and a JSON body.
    LmStudio,
    /// llama.cpp's error wrapped as a string inside Ollama's `{"error": "..."}`.
    Ollama,
    /// "This endpoint's maximum context length is ...".
    OpenRouter,
    /// OpenAI's phrasing with DeepSeek's `invalid_request_error` code.
    DeepSeek,
}

/// A failure to inject.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// 400 (or what the shape uses) saying the prompt is too long.
    Overflow { shape: OverflowShape, limit: u64, requested: u64 },
    /// 429, with `retry-after: N` when given.
    RateLimited { retry_after_secs: Option<u64> },
    /// A 5xx with the wire's error body (500 `api_error`, 503 ...).
    ServerError(u16),
    /// Anthropic's 529 `overloaded_error` (503 on the OpenAI wire).
    Overloaded,
    /// 401 with the wire's authentication error; the body echoes the key it was sent, so
    /// tests can check redaction.
    Unauthorized,
    /// Any status and body, sent as JSON.
    Status { status: u16, body: String },
    /// A text reply whose third frame is not JSON.
    MalformedSse,
    /// A text reply whose connection is aborted after two frames.
    DropMidStream,
    /// A text reply whose body ends cleanly after two frames, without the terminator.
    EndEarly,
    /// The connection closes before any byte of the response: a network failure the client
    /// may retry, since no reply started.
    Hangup,
    /// A body far longer than any bound a client keeps (a hostile or broken server).
    Flood(Flood),
}

/// A body that goes on far past every bound: `bytes` of it in all (finite, so a client without
/// a bound runs out of patience rather than memory in a test), sent in 64 KiB chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flood {
    pub status: u16,
    pub shape: FloodShape,
    pub bytes: u64,
}

/// What a [`Flood`] body looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloodShape {
    /// `text/event-stream`: one event whose `data:` lines (64 KiB each) never end.
    SseData,
    /// `application/json`: an object whose string value never closes.
    Json,
}

impl Flood {
    /// An SSE stream of one endless event, `bytes` long.
    pub fn sse_data(bytes: u64) -> Flood {
        Flood { status: 200, shape: FloodShape::SseData, bytes }
    }

    /// A JSON body with `status`, `bytes` long.
    pub fn json(status: u16, bytes: u64) -> Flood {
        Flood { status, shape: FloodShape::Json, bytes }
    }
}

impl Fault {
    /// An overflow in the requested wire's own shape.
    pub fn overflow(limit: u64, requested: u64) -> Fault {
        Fault::Overflow { shape: OverflowShape::Wire, limit, requested }
    }

    /// An overflow in another server's shape.
    pub fn overflow_as(shape: OverflowShape, limit: u64, requested: u64) -> Fault {
        Fault::Overflow { shape, limit, requested }
    }
}

/// How a streamed body ends early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Abort the connection (the client sees a broken body).
    Drop,
    /// End the body cleanly without the terminator.
    End,
    /// Send a frame that is not valid JSON, then end.
    Malformed,
    /// Keep the connection open, sending only keep-alive comments, until the client leaves.
    Hang,
    /// Fail the body before anything is flushed, so not even the status line goes out.
    Hangup,
}

/// What a reply consists of.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Script(Vec<Part>),
    Fault(Fault),
    /// A recorded stream from `fixtures/sse/`, served verbatim.
    SseFile(String),
    /// SSE text served verbatim.
    RawSse(String),
}

/// One scripted reply. Build with the constructors, refine with the `with_*`/`then_*`
/// methods, queue with [`crate::test_support::MockServer::push`].
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub content: Content,
    pub usage: Option<MockUsage>,
    /// A wire-level stop reason overriding the default (`stop`/`tool_calls`,
    /// `end_turn`/`tool_use`).
    pub stop: Option<String>,
    /// Pause before each frame.
    pub delay: Option<Duration>,
    /// Pause once before the first frame: a model that takes this long to start answering
    /// (the headers go out at once, as a streaming server sends them).
    pub first_delay: Option<Duration>,
    /// Re-split the body into chunks of this many bytes (exercises SSE reassembly).
    pub chunk_size: Option<usize>,
    /// End the body after this many frames, this way.
    pub cut: Option<(usize, Cut)>,
    /// The `content-type` of a streamed body (default `text/event-stream`).
    pub content_type: Option<String>,
}

impl Reply {
    fn of(content: Content) -> Reply {
        Reply {
            content,
            usage: None,
            stop: None,
            delay: None,
            first_delay: None,
            chunk_size: None,
            cut: None,
            content_type: None,
        }
    }

    /// A plain text answer.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::of(Content::Script(vec![Part::Text(text.into())]))
    }

    /// A thinking block (signed on the Anthropic wire); chain `then_text` for the answer.
    pub fn thinking(text: impl Into<String>, signature: impl Into<String>) -> Reply {
        Reply::of(Content::Script(vec![Part::Thinking {
            text: text.into(),
            signature: signature.into(),
        }]))
    }

    /// One tool call.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, input: Value) -> Reply {
        Reply::tool_calls(vec![ToolCall::new(id, name, input)])
    }

    /// Parallel tool calls, in order.
    pub fn tool_calls(calls: Vec<ToolCall>) -> Reply {
        Reply::of(Content::Script(calls.into_iter().map(Part::ToolCall).collect()))
    }

    /// Any sequence of parts.
    pub fn parts(parts: Vec<Part>) -> Reply {
        Reply::of(Content::Script(parts))
    }

    /// A failure instead of a reply.
    pub fn fault(fault: Fault) -> Reply {
        Reply::of(Content::Fault(fault))
    }

    /// A recorded stream from `fixtures/sse/<name>`, served in 29-byte chunks unless
    /// `with_chunk_size` says otherwise.
    pub fn sse_file(name: impl Into<String>) -> Reply {
        Reply::of(Content::SseFile(name.into()))
    }

    /// SSE text served verbatim.
    pub fn raw_sse(text: impl Into<String>) -> Reply {
        Reply::of(Content::RawSse(text.into()))
    }

    fn push_part(mut self, part: Part) -> Reply {
        match &mut self.content {
            Content::Script(parts) => parts.push(part),
            _ => self.content = Content::Script(vec![part]),
        }
        self
    }

    pub fn then_text(self, text: impl Into<String>) -> Reply {
        self.push_part(Part::Text(text.into()))
    }

    pub fn then_thinking(self, text: impl Into<String>, signature: impl Into<String>) -> Reply {
        self.push_part(Part::Thinking { text: text.into(), signature: signature.into() })
    }

    pub fn then_redacted_thinking(self, data: impl Into<String>) -> Reply {
        self.push_part(Part::RedactedThinking(data.into()))
    }

    pub fn then_tool_call(
        self,
        id: impl Into<String>,
        name: impl Into<String>,
        input: Value,
    ) -> Reply {
        self.push_part(Part::ToolCall(ToolCall::new(id, name, input)))
    }

    /// Report usage: `input` prompt tokens (whole prompt), `output` generated tokens.
    pub fn with_usage(mut self, input: u64, output: u64) -> Reply {
        let usage = self.usage.get_or_insert_with(MockUsage::default);
        usage.input = input;
        usage.output = output;
        self
    }

    /// Report prompt-cache reads and writes (parts of the prompt given to `with_usage`).
    pub fn with_cache(mut self, read: u64, write: u64) -> Reply {
        let usage = self.usage.get_or_insert_with(MockUsage::default);
        usage.cache_read = read;
        usage.cache_write = write;
        self
    }

    /// Override the wire-level stop reason (`length`, `max_tokens`, `refusal` ...).
    pub fn with_stop(mut self, reason: impl Into<String>) -> Reply {
        self.stop = Some(reason.into());
        self
    }

    /// Pause before every frame: a slow stream.
    pub fn slow(mut self, delay: Duration) -> Reply {
        self.delay = Some(delay);
        self
    }

    /// Pause once before the first frame: a reply that takes `delay` to arrive, however many
    /// frames it has.
    pub fn after(mut self, delay: Duration) -> Reply {
        self.first_delay = Some(delay);
        self
    }

    /// Deliver the body in chunks of `bytes` bytes, ignoring frame boundaries.
    pub fn with_chunk_size(mut self, bytes: usize) -> Reply {
        self.chunk_size = Some(bytes.max(1));
        self
    }

    /// Label a streamed body with another `content-type`, as some servers and proxies do.
    pub fn with_content_type(mut self, content_type: impl Into<String>) -> Reply {
        self.content_type = Some(content_type.into());
        self
    }

    /// Abort the connection after `frames` frames.
    pub fn drop_after(mut self, frames: usize) -> Reply {
        self.cut = Some((frames, Cut::Drop));
        self
    }

    /// End the body cleanly, without the terminator, after `frames` frames.
    pub fn end_after(mut self, frames: usize) -> Reply {
        self.cut = Some((frames, Cut::End));
        self
    }

    /// Send a malformed frame after `frames` frames.
    pub fn malformed_after(mut self, frames: usize) -> Reply {
        self.cut = Some((frames, Cut::Malformed));
        self
    }

    /// After `frames` frames send only keep-alives until the client disconnects.
    pub fn hang_after(mut self, frames: usize) -> Reply {
        self.cut = Some((frames, Cut::Hang));
        self
    }
}
