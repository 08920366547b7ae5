//! How to reach a provider: wire format, endpoint, key, headers, retry policy, timeouts.
//!
//! Invariant: the API key never appears in `Debug` output, so a config can be logged.

use std::fmt;
use std::time::Duration;

/// Which wire format the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// OpenAI Chat Completions (`POST {base_url}/chat/completions`), spoken by OpenAI and by
    /// most other servers.
    OpenAi,
    /// Anthropic Messages (`POST {base_url}/v1/messages`).
    Anthropic,
    /// The OpenAI Responses API (`POST {base_url}/responses`): OpenAI's codex models, Azure,
    /// xAI, OpenRouter.
    OpenAiResponses,
}

impl ProviderKind {
    /// The spelling used on the command line and in config files.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenAiResponses => "openai-responses",
        }
    }

    /// The official endpoint, used when no base URL is configured.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
        }
    }
}

/// Which OpenAI-compatible server is on the other end; selects the quirks to work around.
/// Detected from the base URL unless configured (see [`OpenAiServer::detect`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpenAiServer {
    OpenAi,
    DeepSeek,
    OpenRouter,
    Ollama,
    LlamaCpp,
    Vllm,
    LmStudio,
    /// Anything else: the most widely accepted subset of the API.
    Generic,
}

impl OpenAiServer {
    /// A guess from the base URL: the official hosts by name, local servers by their default
    /// ports (Ollama 11434, LM Studio 1234). vLLM and llama.cpp have no distinctive default
    /// (8000, 8080 are used by everything), so they are `Generic` unless configured; the
    /// generic dialect works with both.
    pub fn detect(base_url: &str) -> OpenAiServer {
        let lower = base_url.to_ascii_lowercase();
        let after_scheme = lower.split_once("://").map_or(lower.as_str(), |(_, rest)| rest);
        let authority = after_scheme.split('/').next().unwrap_or_default();
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => (host, Some(port)),
            _ => (authority, None),
        };
        if host == "api.openai.com" || host.ends_with(".openai.azure.com") {
            OpenAiServer::OpenAi
        } else if host.ends_with("deepseek.com") {
            OpenAiServer::DeepSeek
        } else if host.ends_with("openrouter.ai") {
            OpenAiServer::OpenRouter
        } else if port == Some("11434") {
            OpenAiServer::Ollama
        } else if port == Some("1234") {
            OpenAiServer::LmStudio
        } else {
            OpenAiServer::Generic
        }
    }

    /// Parse a configured server name (`openai`, `deepseek`, `openrouter`, `ollama`,
    /// `llama.cpp`/`llamacpp`, `vllm`, `lmstudio`, `generic`).
    pub fn parse(name: &str) -> Option<OpenAiServer> {
        let name = name.to_ascii_lowercase().replace(['-', '_', ' ', '.'], "");
        Some(match name.as_str() {
            "openai" => OpenAiServer::OpenAi,
            "deepseek" => OpenAiServer::DeepSeek,
            "openrouter" => OpenAiServer::OpenRouter,
            "ollama" => OpenAiServer::Ollama,
            "llamacpp" | "llamaserver" => OpenAiServer::LlamaCpp,
            "vllm" => OpenAiServer::Vllm,
            "lmstudio" => OpenAiServer::LmStudio,
            "generic" => OpenAiServer::Generic,
            _ => return None,
        })
    }
}

/// When and how often a request is retried after a transient failure.
///
/// Only failures before the first streamed event are retried (429, 5xx, 529, network); a reply
/// that has started streaming is never silently restarted, it fails with its partial content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (docs/providers.md, *Retries*: 3).
    pub max_retries: u32,
    /// Backoff before the first retry; doubles each retry, with full jitter.
    pub initial_backoff: Duration,
    /// Cap on one computed backoff.
    pub max_backoff: Duration,
    /// The longest `Retry-After` honoured. A server asking for more ends the retries with
    /// `RateLimited { retry_after }` so the caller can tell the user instead of hanging.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(1000),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// Never retry.
    pub fn none() -> Self {
        RetryPolicy { max_retries: 0, ..RetryPolicy::default() }
    }

    /// The default number of retries with millisecond waits, for tests.
    pub fn fast() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(5),
            max_retry_after: Duration::from_secs(5),
        }
    }
}

/// Everything [`crate::Client::new`] needs.
#[derive(Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// For OpenAI-compatible servers the URL up to and including `/v1`
    /// (`https://api.openai.com/v1`, `http://localhost:11434/v1`); for Anthropic the origin
    /// (`https://api.anthropic.com`; a trailing `/v1` is accepted too).
    pub base_url: String,
    /// From the environment or a config file, never from the journal.
    pub api_key: Option<String>,
    /// Extra HTTP headers (`anthropic-beta`, OpenRouter's `HTTP-Referer`/`X-Title` ...).
    pub extra_headers: Vec<(String, String)>,
    pub retry: RetryPolicy,
    /// Force the OpenAI-compatible dialect instead of detecting it from `base_url`.
    pub server: Option<OpenAiServer>,
    /// Time allowed to connect.
    pub connect_timeout: Duration,
    /// Longest silence tolerated between two chunks of a response (and before the response
    /// headers), `idle_timeout_sec` in the config (default 300 s, as Codex). Local servers can
    /// take minutes to process a long prompt before the first token, so it is generous.
    pub idle_timeout: Duration,
    /// How often a silence is said while it lasts ([`crate::StreamEvent::Waiting`]; 30 s).
    pub silence_notice: Duration,
    /// `reasoning.effort` sent on the Responses API (`low`, `medium`, `high`), when set.
    pub reasoning_effort: Option<String>,
    /// `[provider] hosted = true`: the server is a hosted API whatever its address (never
    /// probed, never suspected of cutting prompts silently); `None` decides by the host.
    pub hosted: Option<bool>,
}

impl ProviderConfig {
    /// A config for `kind` at its official endpoint, with default retries and timeouts.
    pub fn new(kind: ProviderKind, api_key: Option<String>) -> Self {
        ProviderConfig {
            kind,
            base_url: kind.default_base_url().to_owned(),
            api_key,
            extra_headers: Vec::new(),
            retry: RetryPolicy::default(),
            server: None,
            connect_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(300),
            silence_notice: Duration::from_secs(30),
            reasoning_effort: None,
            hosted: None,
        }
    }

    /// The same config pointed at another server.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// The same config with another retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The OpenAI-compatible dialect in effect: configured, else detected.
    pub fn openai_server(&self) -> OpenAiServer {
        self.server.unwrap_or_else(|| OpenAiServer::detect(&self.base_url))
    }

    /// Whether the server is a hosted API: the official hosts of the APIs Codewhale knows
    /// ([`HOSTED_APIS`]), or any base URL configured with `[provider] hosted = true`. Every
    /// other server is local or self-hosted: probed for its window and watched for silent
    /// truncation (docs/compaction.md, *Small windows*).
    pub fn is_hosted(&self) -> bool {
        if let Some(hosted) = self.hosted {
            return hosted;
        }
        let host = host_of(&self.base_url);
        HOSTED_APIS.iter().any(|api| match api.strip_prefix("*.") {
            Some(suffix) => host.ends_with(&format!(".{suffix}")),
            None => host == *api,
        })
    }

    /// Whether `/model` should offer the server's own model list: a local or self-hosted
    /// OpenAI-compatible server (the hosted APIs list hundreds; their ids are in the catalog).
    pub fn lists_own_models(&self) -> bool {
        self.kind == ProviderKind::OpenAi
            && !matches!(self.openai_server(), OpenAiServer::OpenAi | OpenAiServer::OpenRouter)
    }

    /// Whether the server may cut an over-long prompt silently and answer 200 (Ollama past its
    /// `num_ctx`, llama.cpp and LM Studio with context shifting) instead of rejecting it, as
    /// every hosted API does: any OpenAI-compatible server that is not a hosted API
    /// ([`ProviderConfig::is_hosted`]), wherever it listens — what it is does not follow from
    /// its port.
    pub fn may_truncate_silently(&self) -> bool {
        self.kind == ProviderKind::OpenAi && !self.is_hosted()
    }
}

/// The hosted APIs: never probed, never suspected of silent truncation (`*.` matches any
/// subdomain).
pub const HOSTED_APIS: &[&str] = &[
    "api.openai.com",
    "*.openai.azure.com",
    "openrouter.ai",
    "api.deepseek.com",
    "api.anthropic.com",
    "api.x.ai",
    "api.groq.com",
    "api.together.xyz",
    "api.fireworks.ai",
    "api.mistral.ai",
    "generativelanguage.googleapis.com",
];

/// The host of `base_url`, lower-case, without scheme, credentials or port.
pub fn host_of(base_url: &str) -> String {
    let lower = base_url.trim().to_ascii_lowercase();
    let after_scheme = lower.split_once("://").map_or(lower.as_str(), |(_, rest)| rest);
    let authority = after_scheme.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = if let Some(bracketed) = authority.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or_default()
    } else {
        authority.rsplit_once(':').map_or(authority, |(host, _)| host)
    };
    host.trim_end_matches('.').to_owned()
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.extra_headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[REDACTED]"))
            .field("extra_headers", &header_names)
            .field("retry", &self.retry)
            .field("server", &self.server)
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("hosted", &self.hosted)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosted_apis_are_known_by_host_and_configured_ones_by_the_flag() {
        let at = |url: &str| ProviderConfig::new(ProviderKind::OpenAi, None).with_base_url(url);
        assert!(at("https://api.openai.com/v1").is_hosted());
        assert!(at("https://my-east.openai.azure.com/openai").is_hosted());
        assert!(at("https://openrouter.ai/api/v1").is_hosted());
        assert!(at("https://API.Groq.com:443/openai/v1").is_hosted());
        assert!(!at("http://localhost:11434/v1").is_hosted());
        assert!(!at("http://10.0.0.5:8000/v1").is_hosted());
        assert!(!at("https://openai.azure.com.evil.example/v1").is_hosted());
        assert!(!at("http://[::1]:8080/v1").is_hosted());
        let mut proxy = at("http://gateway.internal:4000/v1");
        proxy.hosted = Some(true);
        assert!(proxy.is_hosted());
    }

    #[test]
    fn every_openai_compatible_server_but_a_hosted_api_may_cut_silently() {
        let at = |kind, url: &str| ProviderConfig::new(kind, None).with_base_url(url);
        assert!(at(ProviderKind::OpenAi, "http://127.0.0.1:39017/v1").may_truncate_silently());
        assert!(at(ProviderKind::OpenAi, "http://localhost:11434/v1").may_truncate_silently());
        assert!(at(ProviderKind::OpenAi, "http://gpu-box:8080/v1").may_truncate_silently());
        assert!(!at(ProviderKind::OpenAi, "https://api.openai.com/v1").may_truncate_silently());
        assert!(!at(ProviderKind::OpenAi, "https://openrouter.ai/api/v1").may_truncate_silently());
        assert!(!at(ProviderKind::Anthropic, "http://127.0.0.1:9/").may_truncate_silently());
        let mut proxy = at(ProviderKind::OpenAi, "http://gateway.internal:4000/v1");
        proxy.hosted = Some(true);
        assert!(!proxy.may_truncate_silently(), "[provider] hosted = true");
    }

    #[test]
    fn debug_never_shows_the_key() {
        let config = ProviderConfig::new(ProviderKind::OpenAi, Some("sk-live-abcdef".into()));
        let shown = format!("{config:?}");
        assert!(!shown.contains("sk-live"), "{shown}");
        assert!(shown.contains("[REDACTED]"));
    }

    #[test]
    fn servers_are_detected_from_the_base_url() {
        let cases = [
            ("https://api.openai.com/v1", OpenAiServer::OpenAi),
            ("https://api.deepseek.com/v1", OpenAiServer::DeepSeek),
            ("https://openrouter.ai/api/v1", OpenAiServer::OpenRouter),
            ("http://localhost:11434/v1", OpenAiServer::Ollama),
            ("http://127.0.0.1:1234/v1", OpenAiServer::LmStudio),
            ("http://localhost:8000/v1", OpenAiServer::Generic),
            ("http://[::1]:8080", OpenAiServer::Generic),
        ];
        for (url, expected) in cases {
            assert_eq!(OpenAiServer::detect(url), expected, "{url}");
        }
    }

    #[test]
    fn server_names_parse_leniently() {
        assert_eq!(OpenAiServer::parse("llama.cpp"), Some(OpenAiServer::LlamaCpp));
        assert_eq!(OpenAiServer::parse("LM-Studio"), Some(OpenAiServer::LmStudio));
        assert_eq!(OpenAiServer::parse("nope"), None);
    }
}
