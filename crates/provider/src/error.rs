//! The one error type of this crate, and the failure that carries a partial reply.
//!
//! Invariant: no message built by this crate contains the API key. Every error leaving
//! [`crate::Client`] passes through [`ProviderError::redacted`] with the configured key, so
//! even a server that echoes the `Authorization` header back cannot leak it into a log or the
//! journal.

use std::time::Duration;

use crate::types::Response;

/// What went wrong, in terms a caller can act on.
///
/// Not `#[non_exhaustive]`: the engine maps every kind to the protocol's one to one, and a new
/// kind must not compile until that mapping decides what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request does not fit the model's context window. Numbers are parsed from the
    /// server's message when it states them: `limit` is the window (or the most the server
    /// would accept), `requested` what this request needed.
    ContextOverflow { limit: Option<u64>, requested: Option<u64> },
    /// 429: slow down. `retry_after` is what the server asked for, if it said.
    RateLimited { retry_after: Option<Duration> },
    /// The server is overloaded or failed transiently (5xx, Anthropic 529, an `overloaded_error`
    /// event mid-stream).
    Overloaded,
    /// The key is missing, wrong or lacks permission (401, 403). Never retried.
    Auth,
    /// The server refused the request as invalid for a reason other than its length. Never
    /// retried.
    BadRequest,
    /// Connecting, sending or receiving failed (includes a connection dropped mid-stream).
    Network,
    /// Nothing answers at the configured address: the connection was refused (a local server
    /// that is not running) or the host name does not resolve. Not retried: the message says
    /// which address and what to do.
    Unreachable,
    /// The server broke the wire protocol: malformed SSE or JSON, or a stream that ended
    /// without its terminator.
    Protocol,
    /// The caller cancelled the request.
    Cancelled,
}

impl ErrorKind {
    /// Whether another attempt of the same request may succeed without changing it.
    pub fn is_transient(&self) -> bool {
        matches!(self, ErrorKind::RateLimited { .. } | ErrorKind::Overloaded | ErrorKind::Network)
    }

    /// A short stable name for logs and UI events (`context_overflow`, `rate_limited` ...).
    pub fn name(&self) -> &'static str {
        match self {
            ErrorKind::ContextOverflow { .. } => "context_overflow",
            ErrorKind::RateLimited { .. } => "rate_limited",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::Auth => "auth",
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::Network => "network",
            ErrorKind::Unreachable => "unreachable",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Cancelled => "cancelled",
        }
    }
}

/// A failed provider call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ProviderError {
    pub kind: ErrorKind,
    /// One readable sentence, including the server's own message when there was one.
    pub message: String,
    /// The HTTP status, when the failure came with one.
    pub status: Option<u16>,
}

impl ProviderError {
    /// An error of `kind` with no HTTP status.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ProviderError { kind, message: message.into(), status: None }
    }

    /// The same error with an HTTP status attached.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// The caller cancelled.
    pub fn cancelled() -> Self {
        ProviderError::new(ErrorKind::Cancelled, "the request was cancelled")
    }

    /// The stream broke its protocol.
    pub fn protocol(message: impl Into<String>) -> Self {
        ProviderError::new(ErrorKind::Protocol, message)
    }

    /// Whether this is a context overflow, the trigger for reactive compaction.
    pub fn is_context_overflow(&self) -> bool {
        matches!(self.kind, ErrorKind::ContextOverflow { .. })
    }

    /// Whether the server refused the request because the model does not take images (a bad
    /// request whose message says so, in the phrasings of OpenAI, Anthropic, Ollama, llama.cpp,
    /// vLLM and DeepSeek-style servers). The retry leaves the images out.
    pub fn rejects_images(&self) -> bool {
        if self.kind != ErrorKind::BadRequest {
            return false;
        }
        let message = self.message.to_ascii_lowercase();
        let about_images = ["image", "vision", "multimodal", "multi-modal", "mmproj"]
            .iter()
            .any(|word| message.contains(word));
        let refusal = [
            "not support",
            "unsupported",
            "only supported by",
            "not a multimodal",
            "unknown variant",
            "invalid content type",
            "cannot read",
            "does not accept",
            "not enabled",
            "expected `text`",
        ]
        .iter()
        .any(|phrase| message.contains(phrase));
        about_images && refusal
    }

    /// The error with every occurrence of `secret` (and of its `Bearer ` form) replaced by
    /// `[REDACTED]`. Secrets shorter than 4 bytes are left alone: replacing them would
    /// mangle ordinary words and they cannot be real keys.
    pub fn redacted(mut self, secret: Option<&str>) -> Self {
        if let Some(secret) = secret {
            self.message = redact(&self.message, secret);
        }
        self
    }
}

/// `text` with `secret` replaced by `[REDACTED]`.
pub(crate) fn redact(text: &str, secret: &str) -> String {
    let secret = secret.trim();
    if secret.len() < 4 {
        return text.to_owned();
    }
    text.replace(secret, "[REDACTED]")
}

/// A failed [`crate::Client::complete`]: the error, plus whatever had streamed before it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{error}")]
pub struct ProviderFailure {
    pub error: ProviderError,
    /// What arrived before the failure: finished blocks, the unfinished text or thinking block,
    /// and no unfinished tool call, with the usage reported so far. `None` when no content
    /// arrived. The engine journals it as an
    /// `interrupted` assistant entry.
    pub partial: Option<Response>,
}

impl From<ProviderError> for ProviderFailure {
    fn from(error: ProviderError) -> Self {
        ProviderFailure { error, partial: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_removes_every_occurrence_of_the_key() {
        let err = ProviderError::new(
            ErrorKind::Auth,
            "invalid key sk-secret-123; header was Bearer sk-secret-123",
        )
        .redacted(Some("sk-secret-123"));
        assert_eq!(err.message, "invalid key [REDACTED]; header was Bearer [REDACTED]");
        assert!(!err.to_string().contains("sk-secret"));
    }

    #[test]
    fn a_refusal_of_images_is_recognised_in_the_common_phrasings() {
        let refusals = [
            "Invalid content type. image_url is only supported by certain models.",
            "model does not support images",
            "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj",
            "unknown variant `image_url`, expected `text`",
            "Qwen2 is not a multimodal model",
        ];
        for message in refusals {
            let err = ProviderError::new(ErrorKind::BadRequest, message);
            assert!(err.rejects_images(), "{message}");
        }
        let other = ProviderError::new(ErrorKind::BadRequest, "messages: field required");
        assert!(!other.rejects_images());
        let auth =
            ProviderError::new(ErrorKind::Auth, "image models are not supported on this key");
        assert!(!auth.rejects_images(), "only a bad request is a refusal of the request's images");
    }

    #[test]
    fn redaction_ignores_tiny_secrets() {
        assert_eq!(redact("a b c", "a"), "a b c");
    }

    #[test]
    fn only_rate_limits_overload_and_network_are_transient() {
        assert!(ErrorKind::RateLimited { retry_after: None }.is_transient());
        assert!(ErrorKind::Overloaded.is_transient());
        assert!(ErrorKind::Network.is_transient());
        assert!(!ErrorKind::Auth.is_transient());
        assert!(!ErrorKind::BadRequest.is_transient());
        assert!(!ErrorKind::ContextOverflow { limit: None, requested: None }.is_transient());
        assert!(!ErrorKind::Protocol.is_transient());
        assert!(!ErrorKind::Cancelled.is_transient());
    }
}
