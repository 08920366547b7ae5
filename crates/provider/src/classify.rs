//! Turning a failed HTTP response, or an error object inside a stream, into a [`ProviderError`].
//!
//! One place decides the [`ErrorKind`] for every server: overflow first (from the message,
//! the code/type fields and the status, see [`crate::overflow`]), then by error type, then by
//! status. The message keeps the server's own words (bounded) so the user sees why.

use std::time::Duration;

use serde_json::Value;

use crate::error::{ErrorKind, ProviderError};
use crate::overflow;

/// Longest server message carried into an error.
const MAX_MESSAGE: usize = 2000;

/// Classify a non-success HTTP response.
pub fn http_error(status: u16, retry_after: Option<Duration>, body: &str) -> ProviderError {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let (message, codes) = match &parsed {
        Some(json) => extract(json),
        None => (body.trim().to_owned(), Vec::new()),
    };
    let message = if message.is_empty() { body.trim().to_owned() } else { message };
    let kind = kind_for(Some(status), &message, &codes, body, retry_after);
    let reason = status_reason(status);
    ProviderError::new(kind, format!("the server answered {status}{reason}: {}", bounded(&message)))
        .with_status(status)
}

/// Classify an error delivered inside a 200 response: an `error` SSE event (Anthropic), a
/// `data:` object with an `error` member (OpenRouter, vLLM, llama.cpp), or a JSON error body
/// sent with status 200 (LM Studio).
pub fn stream_error(json: &Value) -> ProviderError {
    let (message, codes) = extract(json);
    let status = json
        .get("error")
        .and_then(|e| e.get("code"))
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c));
    let raw = json.to_string();
    let kind = kind_for(status, &message, &codes, &raw, None);
    let error = ProviderError::new(
        kind,
        format!("the server reported an error mid-stream: {}", bounded(&message)),
    );
    match status {
        Some(status) => error.with_status(status),
        None => error,
    }
}

/// The human message and the machine codes (`type`, `code`) of an error body, whatever its
/// shape: `{"error":{"message","type","code"}}` (OpenAI family, Anthropic inside `error`),
/// `{"error":"text"}` (Ollama), `{"message":...}`, `{"detail":...}`.
fn extract(json: &Value) -> (String, Vec<String>) {
    let mut codes = Vec::new();
    let mut message = String::new();
    let error = json.get("error").unwrap_or(json);
    match error {
        Value::String(text) => message = text.clone(),
        Value::Object(map) => {
            for key in ["message", "detail", "msg"] {
                if let Some(text) = map.get(key).and_then(Value::as_str) {
                    message = text.to_owned();
                    break;
                }
            }
            for key in ["type", "code", "status"] {
                match map.get(key) {
                    Some(Value::String(code)) => codes.push(code.clone()),
                    Some(Value::Number(code)) => codes.push(code.to_string()),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    if message.is_empty() {
        if let Some(text) = json.get("message").and_then(Value::as_str) {
            message = text.to_owned();
        }
    }
    if let Some(Value::String(code)) = json.get("type") {
        codes.push(code.clone());
    }
    (message, codes)
}

fn kind_for(
    status: Option<u16>,
    message: &str,
    codes: &[String],
    raw: &str,
    retry_after: Option<Duration>,
) -> ErrorKind {
    let code_refs: Vec<&str> = codes.iter().map(String::as_str).collect();
    if let Some(mut numbers) = overflow::detect(status, message, &code_refs) {
        // llama.cpp states its numbers as JSON fields beside the message.
        let from_body = overflow::numbers(&raw.to_ascii_lowercase());
        numbers.limit = numbers.limit.or(from_body.limit);
        numbers.requested = numbers.requested.or(from_body.requested);
        return ErrorKind::ContextOverflow { limit: numbers.limit, requested: numbers.requested };
    }
    let has = |code: &str| codes.iter().any(|c| c.eq_ignore_ascii_case(code));
    if has("insufficient_quota") || has("billing_error") {
        return ErrorKind::Auth;
    }
    if has("overloaded_error") || has("api_error") || has("server_error") {
        return ErrorKind::Overloaded;
    }
    if has("rate_limit_error") || has("rate_limit_exceeded") {
        return ErrorKind::RateLimited { retry_after };
    }
    if has("authentication_error") || has("permission_error") || has("invalid_api_key") {
        return ErrorKind::Auth;
    }
    match status {
        Some(401 | 403) => ErrorKind::Auth,
        Some(429) => ErrorKind::RateLimited { retry_after },
        Some(408) => ErrorKind::Network,
        Some(409 | 500..=599) => ErrorKind::Overloaded,
        Some(_) => ErrorKind::BadRequest,
        // An error inside a stream with no status: the server gave up mid-reply.
        None if has("invalid_request_error") => ErrorKind::BadRequest,
        None => ErrorKind::Overloaded,
    }
}

fn status_reason(status: u16) -> &'static str {
    match status {
        400 => " Bad Request",
        401 => " Unauthorized",
        403 => " Forbidden",
        404 => " Not Found",
        408 => " Request Timeout",
        413 => " Payload Too Large",
        422 => " Unprocessable Entity",
        429 => " Too Many Requests",
        500 => " Internal Server Error",
        502 => " Bad Gateway",
        503 => " Service Unavailable",
        504 => " Gateway Timeout",
        529 => " Overloaded",
        _ => "",
    }
}

fn bounded(message: &str) -> String {
    if message.len() <= MAX_MESSAGE {
        return message.to_owned();
    }
    format!("{}…", &message[..message.floor_char_boundary(MAX_MESSAGE)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kind(status: u16, body: &str) -> ErrorKind {
        http_error(status, None, body).kind
    }

    #[test]
    fn statuses_and_types_map_to_kinds() {
        assert_eq!(
            kind(
                401,
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#
            ),
            ErrorKind::Auth
        );
        assert_eq!(kind(403, "forbidden"), ErrorKind::Auth);
        assert_eq!(
            kind(
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            ErrorKind::Overloaded
        );
        assert_eq!(kind(500, "oops"), ErrorKind::Overloaded);
        assert_eq!(kind(404, r#"{"error":"model 'x' not found"}"#), ErrorKind::BadRequest);
        assert_eq!(
            kind(
                429,
                r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#
            ),
            ErrorKind::Auth
        );
        let limited = http_error(429, Some(Duration::from_secs(3)), "slow down");
        assert_eq!(
            limited.kind,
            ErrorKind::RateLimited { retry_after: Some(Duration::from_secs(3)) }
        );
        assert_eq!(limited.status, Some(429));
    }

    #[test]
    fn overflow_bodies_of_each_shape_are_recognised() {
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#;
        assert_eq!(
            kind(400, anthropic),
            ErrorKind::ContextOverflow { limit: Some(200000), requested: Some(208310) }
        );
        let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}"#;
        assert_eq!(
            kind(400, llama),
            ErrorKind::ContextOverflow { limit: Some(8192), requested: Some(14429) }
        );
        // Older llama.cpp used 500 for the same error.
        assert!(matches!(kind(500, llama), ErrorKind::ContextOverflow { .. }));
        // Ollama with truncation off wraps llama.cpp's error, as a string, inside its own.
        let ollama = r#"{"error":"{\"error\":{\"code\":400,\"message\":\"request (351 tokens) exceeds the available context size (256 tokens), try increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":351,\"n_ctx\":256}}"}"#;
        assert_eq!(
            kind(400, ollama),
            ErrorKind::ContextOverflow { limit: Some(256), requested: Some(351) }
        );
        let vllm = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#;
        assert_eq!(
            kind(400, vllm),
            ErrorKind::ContextOverflow { limit: Some(4096), requested: Some(5000) }
        );
    }

    #[test]
    fn stream_errors_are_classified_too() {
        let overloaded =
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}});
        assert_eq!(stream_error(&overloaded).kind, ErrorKind::Overloaded);
        let lm_studio = json!({"error":"Trying to keep the first 9000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough."});
        assert_eq!(
            stream_error(&lm_studio).kind,
            ErrorKind::ContextOverflow { limit: Some(4096), requested: Some(9000) }
        );
        let openrouter = json!({"error":{"code":502,"message":"Provider returned error"}});
        let error = stream_error(&openrouter);
        assert_eq!((error.kind, error.status), (ErrorKind::Overloaded, Some(502)));
    }

    #[test]
    fn long_messages_are_bounded_on_a_char_boundary() {
        let long = "é".repeat(5000);
        let error = http_error(400, None, &long);
        assert!(error.message.len() < 2100);
    }
}
