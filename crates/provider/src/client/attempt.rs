//! One HTTP exchange up to the start of the reply body: the request sent while a silence
//! before the headers is said, then the body handed on as a stream or, for an error or a JSON
//! answer, read through its bound and classified.
//!
//! Invariants: nothing here retries (the caller decides from the error and the `Retry-After`
//! returned with it); an error or JSON body is never read past [`crate::body::BODY_LIMIT`];
//! a success labelled anything but JSON is read as a stream.

use std::time::Duration;

use reqwest::header::CONTENT_TYPE;
use serde_json::Value;

use super::unreachable::unreachable;
use super::Client;
use crate::classify;
use crate::config::ProviderKind;
use crate::error::ProviderError;
use crate::event::StreamEvent;
use crate::openai;
use crate::retry;
use crate::stream::{network_error, timeout_error, ByteStream};

pub(super) enum Attempt {
    Stream(ByteStream),
    Whole(Vec<StreamEvent>),
}

impl Client {
    /// One HTTP exchange up to the start of the reply body; a silence before the headers is
    /// said through `waiting` every [`crate::ProviderConfig::silence_notice`].
    pub(super) async fn attempt(
        &self,
        body: &Value,
        waiting: &mut (dyn FnMut(Duration) + Send),
    ) -> Result<Attempt, (ProviderError, Option<Duration>)> {
        let response = self.send(body, waiting).await?;
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
        let text = self.read_bounded(response, status).await?;
        if !(200..300).contains(&status) {
            return Err((classify::http_error(status, retry_after, &text), retry_after));
        }
        self.whole(status, &text)
    }

    /// Sends `body` and waits for the reply's headers, at most the idle timeout; the silence
    /// is said through `waiting` every [`crate::ProviderConfig::silence_notice`].
    async fn send(
        &self,
        body: &Value,
        waiting: &mut (dyn FnMut(Duration) + Send),
    ) -> Result<reqwest::Response, (ProviderError, Option<Duration>)> {
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
        Ok(response)
    }

    /// The text of an error or JSON body (of a reply with `status`), read through its bound: a
    /// server that never stops sending costs 1 MiB, and what was kept still says what went
    /// wrong.
    async fn read_bounded(
        &self,
        response: reqwest::Response,
        status: u16,
    ) -> Result<String, (ProviderError, Option<Duration>)> {
        let idle = self.config.idle_timeout;
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
        Ok(text)
    }

    /// A JSON success: an error sent with 200 (LM Studio), or a whole completion from a
    /// server that ignored `stream: true`.
    fn whole(&self, status: u16, text: &str) -> Result<Attempt, (ProviderError, Option<Duration>)> {
        let json: Value = serde_json::from_str(text).map_err(|_| {
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
