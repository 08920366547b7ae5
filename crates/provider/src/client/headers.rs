//! What every request of a client carries: the URL it is posted to, and its headers (the key
//! among them, marked sensitive; the provider's version header; the config's extra headers).
//!
//! Invariant: the key is only ever in a sensitive header value, so reqwest and hyper never
//! print it; a header the config gets wrong is an error that names the header, not the key.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::anthropic;
use crate::config::{OpenAiServer, ProviderConfig, ProviderKind};
use crate::error::{ErrorKind, ProviderError};

/// `{base}/chat/completions` or `{base}/v1/messages` (a base already ending in `/v1` is fine).
pub(super) fn endpoint(kind: ProviderKind, base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    match kind {
        ProviderKind::OpenAi => format!("{base}/chat/completions"),
        ProviderKind::OpenAiResponses => format!("{base}/responses"),
        ProviderKind::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
        ProviderKind::Anthropic => format!("{base}/v1/messages"),
    }
}

pub(super) fn headers(config: &ProviderConfig) -> Result<HeaderMap, ProviderError> {
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
    use crate::Client;

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
