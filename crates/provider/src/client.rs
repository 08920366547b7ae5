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

use std::io;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::accumulate::ResponseBuilder;
use crate::classify;
use crate::config::{OpenAiServer, ProviderConfig, ProviderKind};
use crate::error::{ErrorKind, ProviderError, ProviderFailure};
use crate::event::StreamEvent;
use crate::retry::{self, RetryDecision};
use crate::stream::{self, network_error, timeout_error, ByteStream, EventStream};
use crate::types::{Request, Response};
use crate::{anthropic, openai};

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

/// Why a connection could not be made, when it says the server is not there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NotThere {
    /// The host answered that nothing listens on the port (ECONNREFUSED: 111 on Linux, 61 on
    /// macOS; std names both [`io::ErrorKind::ConnectionRefused`]).
    Refused,
    /// The host's name did not resolve.
    UnknownHost,
}

/// What the error's source chain says of the server: the I/O error's kind where there is one.
/// A failed name lookup has no [`io::ErrorKind`] of its own (std reports getaddrinfo's failure
/// as uncategorized), so it is told by the resolver's own wording, which hyper's connector
/// fixes as "dns error".
fn not_there(err: &(dyn std::error::Error + 'static)) -> Option<NotThere> {
    let mut source = Some(err);
    let mut lookup_failed = false;
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<io::Error>() {
            if io.kind() == io::ErrorKind::ConnectionRefused {
                return Some(NotThere::Refused);
            }
        }
        let text = cause.to_string();
        lookup_failed |= text.starts_with("dns error") || text.contains("failed to lookup address");
        source = cause.source();
    }
    lookup_failed.then_some(NotThere::UnknownHost)
}

/// The error for a server that is not there — the connection refused, the host unknown — naming
/// the address and what to do; `None` for any other failure.
fn unreachable(url: &str, err: &reqwest::Error) -> Option<ProviderError> {
    let base = url.rsplit_once("/v1/").map_or(url, |(base, _)| base);
    let message = match not_there(err)? {
        NotThere::Refused => format!(
            "nothing answers at {base} (connection refused): start the server there, or point \
             --base-url (base_url in config.toml) at one that runs"
        ),
        NotThere::UnknownHost => format!(
            "the host of {base} cannot be found (DNS lookup failed): check the address in \
             --base-url (base_url in config.toml) and the network"
        ),
    };
    Some(ProviderError::new(ErrorKind::Unreachable, message))
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

    /// One HTTP exchange up to the start of the reply body; a silence before the headers is
    /// said through `waiting` every [`ProviderConfig::silence_notice`].
    async fn attempt(
        &self,
        body: &Value,
        waiting: &mut (dyn FnMut(Duration) + Send),
    ) -> Result<Attempt, (ProviderError, Option<Duration>)> {
        let idle = self.config.idle_timeout;
        let send = self.http.post(&self.url).headers(self.headers.clone()).json(body).send();
        let mut send = std::pin::pin!(send);
        let mut silent = Duration::ZERO;
        let response = loop {
            let tick = self
                .config
                .silence_notice
                .min(idle.saturating_sub(silent))
                .max(Duration::from_millis(1));
            match tokio::time::timeout(tick, &mut send).await {
                Err(_) => {
                    silent += tick;
                    if silent >= idle {
                        return Err((timeout_error(idle), None));
                    }
                    waiting(silent);
                }
                Ok(Err(err)) => {
                    let error = unreachable(&self.url, &err)
                        .unwrap_or_else(|| network_error("sending the request failed", &err));
                    return Err((error, None));
                }
                Ok(Ok(response)) => break response,
            }
        };
        let status = response.status().as_u16();
        let retry_after = retry::retry_after(response.headers());
        // Anything but JSON is read as a stream: some servers and proxies label SSE
        // `text/plain` or not at all. A body that holds no events then fails as such.
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("json"));
        if (200..300).contains(&status) && !is_json {
            return Ok(Attempt::Stream(Box::pin(response.bytes_stream())));
        }
        // An error or JSON body is read through its bound: a server that never stops sending
        // costs 1 MiB, and what was kept still says what went wrong.
        let body = crate::body::read_capped(response, crate::body::BODY_LIMIT);
        let text = match tokio::time::timeout(idle, body).await {
            Err(_) => return Err((timeout_error(idle), None)),
            Ok(Err(err)) => {
                return Err((network_error("reading the error response failed", &err), None))
            }
            Ok(Ok(body)) if body.cut && (200..300).contains(&status) => {
                return Err((
                    ProviderError::protocol(format!(
                        "the server answered {status} with a JSON body over {} MiB; only \
                         streamed replies may be that long",
                        crate::body::BODY_LIMIT >> 20
                    )),
                    None,
                ))
            }
            Ok(Ok(body)) => body.text(),
        };
        if !(200..300).contains(&status) {
            return Err((classify::http_error(status, retry_after, &text), retry_after));
        }
        // A JSON success: an error sent with 200 (LM Studio), or a whole completion from a
        // server that ignored `stream: true`.
        let json: Value = serde_json::from_str(&text).map_err(|_| {
            (
                ProviderError::protocol(format!("the server answered {status} with invalid JSON")),
                None,
            )
        })?;
        if json.get("error").is_some_and(|e| !e.is_null()) {
            return Err((classify::stream_error(&json), None));
        }
        match self.config.kind {
            ProviderKind::OpenAi => {
                openai::decode::decode_whole(&json).map(Attempt::Whole).map_err(|e| (e, None))
            }
            ProviderKind::Anthropic | ProviderKind::OpenAiResponses => {
                Err((ProviderError::protocol("the server answered without an event stream"), None))
            }
        }
    }
}

enum Attempt {
    Stream(ByteStream),
    Whole(Vec<StreamEvent>),
}

/// `{base}/chat/completions` or `{base}/v1/messages` (a base already ending in `/v1` is fine).
fn endpoint(kind: ProviderKind, base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    match kind {
        ProviderKind::OpenAi => format!("{base}/chat/completions"),
        ProviderKind::OpenAiResponses => format!("{base}/responses"),
        ProviderKind::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
        ProviderKind::Anthropic => format!("{base}/v1/messages"),
    }
}

fn headers(config: &ProviderConfig) -> Result<HeaderMap, ProviderError> {
    let mut headers = HeaderMap::new();
    headers.insert(reqwest::header::ACCEPT, HeaderValue::from_static("text/event-stream"));
    let key = config.api_key.as_deref().map(str::trim).filter(|k| !k.is_empty());
    match config.kind {
        ProviderKind::OpenAi | ProviderKind::OpenAiResponses => {
            if let Some(key) = key {
                headers
                    .insert(reqwest::header::AUTHORIZATION, sensitive(&format!("Bearer {key}"))?);
            }
        }
        ProviderKind::Anthropic => {
            if let Some(key) = key {
                headers.insert("x-api-key", sensitive(key)?);
            }
            headers.insert("anthropic-version", HeaderValue::from_static(anthropic::API_VERSION));
        }
    }
    if config.kind == ProviderKind::OpenAi && config.openai_server() == OpenAiServer::OpenRouter {
        headers.insert("x-title", HeaderValue::from_static("Codewhale"));
    }
    for (name, value) in &config.extra_headers {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            ProviderError::new(
                ErrorKind::BadRequest,
                format!("invalid header name {name:?} in the provider config"),
            )
        })?;
        let value = HeaderValue::from_str(value).map_err(|_| {
            ProviderError::new(
                ErrorKind::BadRequest,
                format!("invalid value for header {name} in the provider config"),
            )
        })?;
        headers.insert(name, value);
    }
    Ok(headers)
}

/// A header value marked sensitive, so reqwest and hyper never print it.
fn sensitive(value: &str) -> Result<HeaderValue, ProviderError> {
    let mut header = HeaderValue::from_str(value).map_err(|_| {
        ProviderError::new(
            ErrorKind::Auth,
            "the API key contains characters not allowed in an HTTP header",
        )
    })?;
    header.set_sensitive(true);
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that wraps another, as hyper's connector wraps the socket's.
    #[derive(Debug)]
    struct Wrapped(&'static str, io::Error);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.1)
        }
    }

    #[test]
    fn a_refused_connection_is_told_by_its_kind_not_its_words() {
        // Whatever the platform's wording or number (111 on Linux, 61 on macOS), the kind.
        let refused = io::Error::new(io::ErrorKind::ConnectionRefused, "verbindung abgelehnt");
        let wrapped = Wrapped("tcp connect error", refused);
        assert_eq!(not_there(&wrapped), Some(NotThere::Refused));
        // The words alone, on an error of another kind, are not a refusal.
        let other = io::Error::other("Connection refused (os error 111)");
        assert_eq!(not_there(&Wrapped("tcp connect error", other)), None);
        let reset = io::Error::new(io::ErrorKind::ConnectionReset, "reset by peer");
        assert_eq!(not_there(&Wrapped("tcp connect error", reset)), None);
    }

    #[test]
    fn a_failed_name_lookup_is_an_unknown_host() {
        let lookup = io::Error::other("failed to lookup address information: Name not known");
        assert_eq!(not_there(&Wrapped("dns error", lookup)), Some(NotThere::UnknownHost));
    }

    #[test]
    fn endpoints_follow_each_providers_base_url_convention() {
        assert_eq!(
            endpoint(ProviderKind::OpenAi, "https://api.openai.com/v1/"),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            endpoint(ProviderKind::Anthropic, "https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            endpoint(ProviderKind::Anthropic, "http://proxy/v1"),
            "http://proxy/v1/messages"
        );
    }

    #[test]
    fn keys_go_in_sensitive_headers() {
        let config = ProviderConfig::new(ProviderKind::Anthropic, Some("sk-ant-xyz".into()));
        let headers = headers(&config).unwrap();
        assert!(headers["x-api-key"].is_sensitive());
        assert_eq!(headers["anthropic-version"], "2023-06-01");
        let config = ProviderConfig::new(ProviderKind::OpenAi, Some("sk-1".into()));
        assert_eq!(headers_of(&config)["authorization"], "Bearer sk-1");
        let config = ProviderConfig::new(ProviderKind::OpenAi, None);
        assert!(headers_of(&config).get("authorization").is_none());
    }

    fn headers_of(config: &ProviderConfig) -> HeaderMap {
        headers(config).unwrap()
    }

    #[test]
    fn bad_header_values_are_reported_without_the_key() {
        let config = ProviderConfig::new(ProviderKind::OpenAi, Some("sk-bad\nkey".into()));
        let err = Client::new(config).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Auth);
        assert!(!err.message.contains("sk-bad"));
    }
}
