//! The HTTP client: one request in, one stream of [`StreamEvent`]s (or one [`Response`]) out.
//!
//! Owns the request lifecycle: encoding for the configured wire format, sending, retrying
//! transient failures before the first byte of a reply (backoff with jitter, `Retry-After`),
//! classifying failures, and cancellation.
//!
//! Invariants:
//! - a reply that has started streaming is never retried here; its failure reaches the caller
//!   with whatever arrived (see [`Client::complete`]);
//! - cancelling the token ends the stream with `Cancelled` at the next poll and drops the HTTP
//!   response, which closes the connection, so the server stops generating;
//! - every error returned has the API key redacted.
//!
//! One exchange (sending, waiting for the headers, reading an error body) is in `attempt`; the
//! URL and headers a request carries in `headers`; telling a server that is not there from
//! other failures in `unreachable`.

use std::time::Duration;

use futures::StreamExt;
use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::accumulate::ResponseBuilder;
use crate::config::{ProviderConfig, ProviderKind};
use crate::error::{ErrorKind, ProviderError, ProviderFailure};
use crate::event::StreamEvent;
use crate::retry::{self, RetryDecision};
use crate::stream::{self, EventStream};
use crate::types::{Request, Response};
use crate::{anthropic, openai};

mod attempt;
mod headers;
mod unreachable;

use attempt::Attempt;
use headers::{endpoint, headers};

/// A client for one provider endpoint. Cheap to clone; clones share connections.
#[derive(Clone, Debug)]
pub struct Client {
    config: ProviderConfig,
    http: reqwest::Client,
    url: String,
    headers: HeaderMap,
}

/// The most a reply may carry, in bytes of text, reasoning and tool arguments (docs/security.md,
/// *Network reads*): four times the output tokens asked for, at four bytes a token, and never more
/// than 16 MiB.
pub fn reply_bound(max_output_tokens: u32) -> u64 {
    const MAX_REPLY_BYTES: u64 = 16 * 1024 * 1024;
    (u64::from(max_output_tokens.max(1)) * 4 * 4).min(MAX_REPLY_BYTES)
}

/// reqwest is built without a TLS crypto provider of its own and asks the process for one;
/// ring is Codewhale's (the MCP client installs the same). Installing twice is harmless: the
/// first one stays. Call it before building any `reqwest::Client`.
pub fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The bytes of content an event adds to the reply.
fn content_bytes(event: &StreamEvent) -> u64 {
    let len = match event {
        StreamEvent::TextDelta { text } | StreamEvent::ThinkingDelta { text } => text.len(),
        StreamEvent::ThinkingSignature { signature } => signature.len(),
        StreamEvent::RedactedThinking { data } => data.len(),
        StreamEvent::ToolCallStart { id, name, .. } => id.len() + name.len(),
        StreamEvent::ToolCallArgsDelta { json_fragment, .. } => json_fragment.len(),
        _ => 0,
    };
    len as u64
}

impl Client {
    /// A client for `config`. Fails on a header that is not valid HTTP, or if the TLS
    /// backend cannot start.
    pub fn new(config: ProviderConfig) -> Result<Client, ProviderError> {
        install_crypto();
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|err| {
                ProviderError::new(
                    ErrorKind::Network,
                    format!("cannot start the HTTP client: {err}"),
                )
            })?;
        let url = endpoint(config.kind, &config.base_url);
        let headers = headers(&config).map_err(|e| e.redacted(config.api_key.as_deref()))?;
        Ok(Client { config, http, url, headers })
    }

    /// The configuration this client was built with.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// The HTTP client, for the probes of a local server.
    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// The headers every request carries (the key among them), for the probes of a local
    /// server: a self-hosted server behind a key answers them too.
    pub(crate) fn request_headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The URL requests are posted to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Send `request` and stream the reply's events. Transient failures before the reply
    /// starts are retried per the config's policy; the error returned here is the last one.
    pub async fn stream(
        &self,
        request: &Request,
        cancel: CancellationToken,
    ) -> Result<EventStream, ProviderError> {
        self.start(request, &cancel, &mut |_| {}).await.map_err(|e| self.redact(e))
    }

    /// Send `request` and fold the whole reply. On failure, [`ProviderFailure::partial`]
    /// holds what streamed before it.
    pub async fn complete(
        &self,
        request: &Request,
        cancel: CancellationToken,
    ) -> Result<Response, ProviderFailure> {
        self.complete_with(request, cancel, |_| {}).await
    }

    /// Like [`Client::complete`], also handing every event to `on_event` as it arrives (to
    /// show the reply while it streams).
    pub async fn complete_with(
        &self,
        request: &Request,
        cancel: CancellationToken,
        mut on_event: impl FnMut(&StreamEvent) + Send,
    ) -> Result<Response, ProviderFailure> {
        let mut events = self
            .start(request, &cancel, &mut on_event)
            .await
            .map_err(|e| ProviderFailure::from(self.redact(e)))?;
        let mut builder = ResponseBuilder::new();
        builder.set_model(request.model.clone());
        let bound = reply_bound(request.max_output_tokens);
        let mut received: u64 = 0;
        while let Some(item) = events.next().await {
            let pushed = item.and_then(|event| {
                received += content_bytes(&event);
                if received > bound {
                    // A server that never stops (or a reply far past what was asked for) must
                    // not take all memory: the turn ends with what came.
                    return Err(ProviderError::protocol(format!(
                        "the server kept sending: the reply was cut at {received} bytes (at most \
                         {bound} are read, four times the {} output tokens asked for)",
                        request.max_output_tokens
                    )));
                }
                on_event(&event);
                builder.push(&event)
            });
            if let Err(error) = pushed {
                return Err(ProviderFailure { error, partial: builder.into_partial() });
            }
        }
        // Decoders end cleanly only after their terminator, which carries `Stop`; checked
        // anyway so a reply without one can never pass as complete.
        if !builder.has_stop() {
            let error = ProviderError::protocol("the reply ended without a stop reason");
            return Err(ProviderFailure { error, partial: builder.into_partial() });
        }
        builder.finish().map_err(ProviderFailure::from)
    }

    /// The model ids the server lists at `GET {base_url}/models` (OpenAI shape), within 2 s;
    /// empty when it lists none or does not answer. Only for servers that list their own
    /// models worth choosing from ([`ProviderConfig::lists_own_models`]).
    pub async fn list_models(&self) -> Vec<String> {
        if !self.config.lists_own_models() {
            return Vec::new();
        }
        let url = format!("{}/models", self.config.base_url.trim_end_matches('/'));
        let ask = self.http.get(&url).headers(self.headers.clone()).send();
        let Ok(Ok(response)) = tokio::time::timeout(Duration::from_secs(2), ask).await else {
            return Vec::new();
        };
        if !response.status().is_success() {
            return Vec::new();
        }
        let read = crate::body::read_capped(response, crate::body::PROBE_LIMIT);
        let Ok(Ok(read)) = tokio::time::timeout(Duration::from_secs(2), read).await else {
            return Vec::new();
        };
        let Some(body) =
            (!read.cut).then(|| serde_json::from_slice::<Value>(&read.bytes).ok()).flatten()
        else {
            return Vec::new();
        };
        body["data"]
            .as_array()
            .map(|models| {
                models
                    .iter()
                    .filter_map(|m| m["id"].as_str().map(str::to_owned))
                    .take(200)
                    .collect()
            })
            .unwrap_or_default()
    }

    fn redact(&self, error: ProviderError) -> ProviderError {
        error.redacted(self.config.api_key.as_deref())
    }

    async fn start(
        &self,
        request: &Request,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(&StreamEvent) + Send),
    ) -> Result<EventStream, ProviderError> {
        let mut options = openai::request::EncodeOptions::new(self.config.openai_server());
        let mut attempt = 0u32;
        loop {
            let body = self.encode(request, options);
            let mut waiting = |silent| on_event(&StreamEvent::Waiting { silent });
            let outcome = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(ProviderError::cancelled()),
                outcome = self.attempt(&body, &mut waiting) => outcome,
            };
            let (error, retry_after) = match outcome {
                Ok(Attempt::Stream(bytes)) => {
                    return Ok(stream::events(
                        bytes,
                        self.config.kind,
                        cancel.clone(),
                        stream::Silence {
                            notice: self.config.silence_notice,
                            idle: self.config.idle_timeout,
                        },
                        self.config.api_key.clone(),
                    ))
                }
                Ok(Attempt::Whole(events)) => {
                    return Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
                }
                Err(failure) => failure,
            };
            if let Some(adapted) = self.adapt(&error, &options) {
                // The server refused a parameter some servers need; ask again without it.
                tracing::info!(
                    "provider rejected a parameter, retrying without it: {}",
                    error.message
                );
                options = adapted;
                continue;
            }
            if !error.kind.is_transient() {
                return Err(error);
            }
            match retry::decide(&self.config.retry, attempt, retry_after) {
                RetryDecision::GiveUp => return Err(error),
                RetryDecision::Wait(wait) => {
                    on_event(&StreamEvent::Retrying {
                        attempt: attempt + 2,
                        max_attempts: self.config.retry.max_retries + 1,
                        wait,
                        reason: self.redact(error.clone()).to_string(),
                    });
                    tracing::warn!(
                        attempt,
                        ?wait,
                        kind = error.kind.name(),
                        "retrying provider request: {}",
                        self.redact(error.clone())
                    );
                    tokio::select! {
                        biased;
                        _ = cancel.cancelled() => return Err(ProviderError::cancelled()),
                        _ = tokio::time::sleep(wait) => {}
                    }
                }
            }
            attempt += 1;
        }
    }

    fn encode(&self, request: &Request, options: openai::request::EncodeOptions) -> Value {
        match self.config.kind {
            ProviderKind::OpenAi => openai::request::encode(request, options),
            ProviderKind::Anthropic => anthropic::request::encode(request),
            ProviderKind::OpenAiResponses => {
                crate::responses::request::encode(request, self.config.reasoning_effort.as_deref())
            }
        }
    }

    fn adapt(
        &self,
        error: &ProviderError,
        options: &openai::request::EncodeOptions,
    ) -> Option<openai::request::EncodeOptions> {
        let rejected =
            error.kind == ErrorKind::BadRequest && matches!(error.status, Some(400 | 422));
        if self.config.kind != ProviderKind::OpenAi || !rejected {
            return None;
        }
        options.adapt(&error.message)
    }
}
