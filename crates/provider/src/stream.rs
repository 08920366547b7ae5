//! Turning a streamed HTTP body into [`StreamEvent`]s: SSE framing, the wire decoder,
//! cancellation and the idle timeout.
//!
//! Invariants: the stream ends after the decoder's terminator or after the first error, and
//! never silently: a body that ends before the terminator yields a `Protocol` error. On
//! cancellation or failure the byte stream is dropped at once, which closes the connection.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::classify;
use crate::config::ProviderKind;
use crate::error::{ErrorKind, ProviderError};
use crate::event::StreamEvent;
use crate::sse::{SseEvent, SseParser};
use crate::{anthropic, openai};

/// The events of one reply. Ends after `Stop`, or after the first error.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// A response body as it arrives.
pub(crate) type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, reqwest::Error>> + Send>>;

/// How long a stream may stay silent: said every `notice`, ended after `idle`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Silence {
    pub notice: Duration,
    pub idle: Duration,
}

/// The events decoded from a streamed body.
pub(crate) fn events(
    bytes: ByteStream,
    kind: ProviderKind,
    cancel: CancellationToken,
    silence: Silence,
    secret: Option<String>,
) -> EventStream {
    let decoder = match kind {
        ProviderKind::OpenAi => Decoder::OpenAi(openai::decode::Decoder::new()),
        ProviderKind::Anthropic => Decoder::Anthropic(anthropic::decode::Decoder::new()),
        ProviderKind::OpenAiResponses => {
            Decoder::Responses(crate::responses::decode::Decoder::new())
        }
    };
    let state = StreamState {
        bytes: Some(bytes),
        parser: SseParser::new(),
        decoder,
        pending: VecDeque::new(),
        cancel,
        silence,
        silent: Duration::ZERO,
        secret,
        seen_events: false,
    };
    Box::pin(futures::stream::unfold(state, |mut state| async move {
        let item = state.next().await?;
        Some((item, state))
    }))
}

enum Decoder {
    OpenAi(openai::decode::Decoder),
    Anthropic(anthropic::decode::Decoder),
    Responses(crate::responses::decode::Decoder),
}

impl Decoder {
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        if event.event.as_deref() == Some("error") {
            let json = serde_json::from_str::<Value>(&event.data)
                .ok()
                .filter(|v| v.get("error").is_some())
                .unwrap_or_else(|| serde_json::json!({ "error": event.data }));
            return Err(classify::stream_error(&json));
        }
        match self {
            Decoder::OpenAi(decoder) => decoder.on_data(&event.data, out),
            Decoder::Anthropic(decoder) => decoder.on_data(&event.data, out),
            Decoder::Responses(decoder) => decoder.on_data(&event.data, out),
        }
    }

    fn is_done(&self) -> bool {
        match self {
            Decoder::OpenAi(decoder) => decoder.is_done(),
            Decoder::Anthropic(decoder) => decoder.is_done(),
            Decoder::Responses(decoder) => decoder.is_done(),
        }
    }

    fn terminator(&self) -> &'static str {
        match self {
            Decoder::OpenAi(_) => "data: [DONE]",
            Decoder::Anthropic(_) => "message_stop",
            Decoder::Responses(_) => "response.completed",
        }
    }
}

struct StreamState {
    /// `None` once finished: dropping it closes the connection.
    bytes: Option<ByteStream>,
    parser: SseParser,
    decoder: Decoder,
    pending: VecDeque<Result<StreamEvent, ProviderError>>,
    cancel: CancellationToken,
    silence: Silence,
    /// How long the server has sent nothing.
    silent: Duration,
    secret: Option<String>,
    /// Whether the body held any SSE event at all (to tell "not a stream" from "cut short").
    seen_events: bool,
}

impl StreamState {
    async fn next(&mut self) -> Option<Result<StreamEvent, ProviderError>> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(item.map_err(|e| e.redacted(self.secret.as_deref())));
            }
            let bytes = self.bytes.as_mut()?;
            let Silence { notice, idle } = self.silence;
            let tick = notice.min(idle.saturating_sub(self.silent)).max(Duration::from_millis(1));
            let chunk = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => Err(ProviderError::cancelled()),
                chunk = tokio::time::timeout(tick, bytes.next()) => match chunk {
                    Err(_) => {
                        self.silent += tick;
                        if self.silent < idle {
                            // Still waiting: said, and the wait goes on.
                            return Some(Ok(StreamEvent::Waiting { silent: self.silent }));
                        }
                        Err(timeout_error(idle))
                    }
                    Ok(Some(Ok(chunk))) => {
                        self.silent = Duration::ZERO;
                        Ok(Some(chunk))
                    }
                    Ok(Some(Err(err))) => Err(network_error("the connection broke mid-reply", &err)),
                    Ok(None) => Ok(None),
                },
            };
            match chunk {
                Ok(Some(chunk)) => self.feed(Some(&chunk)),
                Ok(None) => self.feed(None),
                Err(error) => self.fail(error),
            }
        }
    }

    /// Parse a chunk (or the end of the body) into pending events.
    fn feed(&mut self, chunk: Option<&[u8]>) {
        let mut sse = Vec::new();
        let parsed = match chunk {
            Some(chunk) => self.parser.feed(chunk, &mut sse),
            None => self.parser.finish(&mut sse),
        };
        self.seen_events |= !sse.is_empty();
        let mut out = Vec::new();
        let mut failure = parsed.err();
        for event in &sse {
            if failure.is_some() || self.decoder.is_done() {
                break;
            }
            if let Err(error) = self.decoder.on_event(event, &mut out) {
                failure = Some(error);
            }
        }
        self.pending.extend(out.into_iter().map(Ok));
        if let Some(error) = failure {
            self.fail(error);
        } else if self.decoder.is_done() {
            self.bytes = None;
        } else if chunk.is_none() {
            let error = if self.seen_events {
                let terminator = self.decoder.terminator();
                format!("the stream ended before its terminator ({terminator}): the reply is incomplete")
            } else {
                "the server's reply held no events: it is not an event stream".to_owned()
            };
            self.fail(ProviderError::protocol(error));
        }
    }

    fn fail(&mut self, error: ProviderError) {
        self.bytes = None;
        self.pending.push_back(Err(error));
    }
}

/// A network failure, with every cause in its chain.
pub(crate) fn network_error(what: &str, err: &reqwest::Error) -> ProviderError {
    let mut message = format!("{what}: {err}");
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    ProviderError::new(ErrorKind::Network, message)
}

/// The idle timeout: the server sent nothing for `idle`.
pub(crate) fn timeout_error(idle: Duration) -> ProviderError {
    ProviderError::new(
        ErrorKind::Network,
        format!("the server stopped answering after {} s", idle.as_secs_f32()),
    )
}
