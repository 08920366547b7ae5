//! Asking a local or self-hosted server what it is and what window it runs a model with
//! (docs/compaction.md, *Small local models*): the catalog does not know local
//! models, and their servers load them with a window of their own (Ollama's `num_ctx`, 4096 by
//! default on machines under 24 GiB of VRAM; llama.cpp's `--ctx-size`; LM Studio's per-model
//! setting).
//!
//! A server is known by what it answers, not by its port: one round sends, at once, `GET
//! /api/version` (Ollama answers it), `GET /props` (llama.cpp states `n_ctx` there) and `GET
//! /api/v0/models` (LM Studio lists each model's context length), each allowed at most
//! [`EACH`]. A server that answered `/api/version` is Ollama, and only then is it asked more:
//! `GET /api/ps` for the context the model is loaded with and, when the model is not loaded,
//! `POST /api/show` for the `num_ctx` its Modelfile sets. Ports 11434 (Ollama) and 1234 (LM
//! Studio) are hints: at 11434 `/api/ps` goes out with the first requests instead of after them.
//! Nothing is asked of a hosted API ([`ProviderConfig::is_probed`]).
//!
//! The same round names the servers a first run finds on this machine ([`find_local_servers`]),
//! so the code base has one way of asking a local server who it is. Caching the answer across
//! processes, and when a request waits for it, is the engine's (`probe` there).

use std::time::Duration;

use reqwest::header::{HeaderValue, ACCEPT};
use serde_json::Value;

use crate::client::Client;
use crate::config::{ProviderConfig, ProviderKind};

/// Each probe request's time limit.
pub const EACH: Duration = Duration::from_millis(800);

/// A window a server stated, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbedWindow {
    pub tokens: u64,
    pub source: ProbeSource,
}

/// Which answer of a local server stated a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProbeSource {
    /// Ollama's `/api/ps`: the context the model is loaded with.
    OllamaPs,
    /// Ollama's `/api/show`: the `num_ctx` the model's Modelfile sets (a model not loaded yet
    /// is loaded with it).
    OllamaShow,
    /// llama.cpp's `/props`: `n_ctx`.
    LlamacppProps,
    /// LM Studio's `/api/v0/models`: the loaded (else maximum) context length.
    LmStudio,
}

impl ProbeSource {
    /// Every source, for parsing and tests.
    pub const ALL: [ProbeSource; 4] = [
        ProbeSource::OllamaPs,
        ProbeSource::OllamaShow,
        ProbeSource::LlamacppProps,
        ProbeSource::LmStudio,
    ];

    /// The journal's and `context --json`'s spelling after `probe:` (`ollama-ps`).
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeSource::OllamaPs => "ollama-ps",
            ProbeSource::OllamaShow => "ollama-show",
            ProbeSource::LlamacppProps => "llamacpp-props",
            ProbeSource::LmStudio => "lmstudio",
        }
    }

    /// The source as a user reads it ("Ollama's /api/ps").
    pub fn describe(self) -> &'static str {
        match self {
            ProbeSource::OllamaPs => "Ollama's /api/ps",
            ProbeSource::OllamaShow => "Ollama's /api/show",
            ProbeSource::LlamacppProps => "llama.cpp's /props",
            ProbeSource::LmStudio => "LM Studio's /api/v0/models",
        }
    }

    /// The source spelled `s` ([`ProbeSource::as_str`]).
    pub fn parse(s: &str) -> Option<ProbeSource> {
        ProbeSource::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// A server recognised by what it answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LocalServer {
    /// Answered `GET /api/version`.
    Ollama,
    /// Stated `n_ctx` in `GET /props`.
    LlamaCpp,
    /// Listed models with their context length in `GET /api/v0/models`.
    LmStudio,
}

impl LocalServer {
    /// Every server, for parsing and tests.
    pub const ALL: [LocalServer; 3] =
        [LocalServer::Ollama, LocalServer::LlamaCpp, LocalServer::LmStudio];

    /// Its name as users know it ("llama.cpp").
    pub fn name(self) -> &'static str {
        match self {
            LocalServer::Ollama => "Ollama",
            LocalServer::LlamaCpp => "llama.cpp",
            LocalServer::LmStudio => "LM Studio",
        }
    }

    /// The name spelled `s` ([`LocalServer::name`]).
    pub fn parse(s: &str) -> Option<LocalServer> {
        LocalServer::ALL.into_iter().find(|l| l.name() == s)
    }
}

/// What one probe round learned: which server answered, and the window it states for the
/// model (`None`: it states none, or nothing answered in time).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeAnswer {
    pub server: Option<LocalServer>,
    pub window: Option<ProbedWindow>,
}

impl ProviderConfig {
    /// Whether this server is ever probed: an OpenAI-compatible server (Chat Completions or
    /// Responses) that is not a hosted API ([`ProviderConfig::is_hosted`]), wherever it listens.
    pub fn is_probed(&self) -> bool {
        self.kind != ProviderKind::Anthropic && !self.is_hosted()
    }
}

impl Client {
    /// The window the server runs `model` with, when it says; `None` for a hosted API, a
    /// server that does not say, or one that does not answer in time. One round, sent now
    /// (the engine's cache decides whether one is sent at all).
    pub async fn probe_window(&self, model: &str) -> Option<ProbedWindow> {
        self.probe(model).await.window
    }

    /// One probe round (module docs): which server this is and the window it states for
    /// `model`. Nothing is sent to a server that is not probed.
    pub async fn probe(&self, model: &str) -> ProbeAnswer {
        if !self.config().is_probed() {
            return ProbeAnswer::default();
        }
        let ask = Ask { client: self, root: root_of(&self.config().base_url) };
        ask.round(model).await
    }
}

/// A server a first run found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundServer {
    /// What it answered as, when it did.
    pub server: Option<LocalServer>,
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    /// The model ids it lists at `GET /v1/models`.
    pub models: Vec<String>,
}

/// The OpenAI-compatible servers listening on `ports` of 127.0.0.1, asked all at once within
/// `within` in all: each is named by what it answers (the round of [`Client::probe`]), and one
/// that does not list models at `GET /v1/models` in the OpenAI shape is left out. In the order
/// of `ports`.
pub async fn find_local_servers(ports: &[u16], within: Duration) -> Vec<FoundServer> {
    let asks = ports.iter().map(|&port| async move {
        let base_url = format!("http://127.0.0.1:{port}/v1");
        let config = ProviderConfig::new(ProviderKind::OpenAi, None).with_base_url(&base_url);
        let client = Client::new(config).ok()?;
        let ask = Ask { client: &client, root: root_of(&base_url) };
        let (models, who) = tokio::join!(ask.get_json("/v1/models"), ask.round(""));
        let models: Vec<String> = models?
            .get("data")?
            .as_array()?
            .iter()
            .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_owned))
            .take(200)
            .collect();
        Some(FoundServer { server: who.server, base_url, models })
    });
    let all = futures::future::join_all(asks);
    tokio::time::timeout(within, all)
        .await
        .map(|r| r.into_iter().flatten().collect())
        .unwrap_or_default()
}

/// The server's root: the base URL without a trailing `/v1`.
fn root_of(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base).to_owned()
}

/// The port of `root`, if it names one.
fn port_of(root: &str) -> Option<u16> {
    let after_scheme = root.split_once("://").map_or(root, |(_, rest)| rest);
    let authority = after_scheme.split('/').next().unwrap_or_default();
    let (_, port) = authority.rsplit_once(':')?;
    port.parse().ok()
}

/// One server asked through one client.
struct Ask<'a> {
    client: &'a Client,
    root: String,
}

impl Ask<'_> {
    async fn round(&self, model: &str) -> ProbeAnswer {
        // Ollama's default port: its loaded models are asked for with the first requests.
        let ps_early = port_of(&self.root) == Some(11434);
        let early_ps = async {
            match ps_early {
                true => self.get_json("/api/ps").await,
                false => None,
            }
        };
        let (version, props, lm_models, ps) = tokio::join!(
            self.get_json("/api/version"),
            self.get_json("/props"),
            self.get_json("/api/v0/models"),
            early_ps,
        );
        let found = |tokens: u64, source: ProbeSource| {
            (tokens > 0).then_some(ProbedWindow { tokens, source })
        };
        if version.as_ref().is_some_and(|v| v["version"].is_string()) {
            let ps = match ps {
                Some(ps) => Some(ps),
                None => self.get_json("/api/ps").await,
            };
            let loaded = ps.as_ref().and_then(|ps| ollama_loaded(ps, model));
            let window = match loaded {
                Some(tokens) => found(tokens, ProbeSource::OllamaPs),
                None if !model.is_empty() => self
                    .post_json("/api/show", serde_json::json!({"model": model}))
                    .await
                    .and_then(|show| ollama_num_ctx(&show))
                    .and_then(|tokens| found(tokens, ProbeSource::OllamaShow)),
                None => None,
            };
            return ProbeAnswer { server: Some(LocalServer::Ollama), window };
        }
        if let Some(n_ctx) = props.as_ref().and_then(llamacpp_n_ctx) {
            return ProbeAnswer {
                server: Some(LocalServer::LlamaCpp),
                window: found(n_ctx, ProbeSource::LlamacppProps),
            };
        }
        if let Some(models) = lm_models.filter(is_lm_studio_list) {
            let window = lm_studio_context(&models, model)
                .and_then(|tokens| found(tokens, ProbeSource::LmStudio));
            return ProbeAnswer { server: Some(LocalServer::LmStudio), window };
        }
        ProbeAnswer::default()
    }

    /// The JSON a `GET` of `path` (under the root) answers with, within [`EACH`] and the
    /// probe bound.
    async fn get_json(&self, path: &str) -> Option<Value> {
        let mut headers = self.client.request_headers().clone();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let url = format!("{}{path}", self.root);
        let ask = self.client.http().get(url).headers(headers).send();
        self.read_json(ask).await
    }

    /// The JSON a `POST` of `body` to `path` answers with (only ever to a server that
    /// answered as Ollama).
    async fn post_json(&self, path: &str, body: Value) -> Option<Value> {
        let mut headers = self.client.request_headers().clone();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let url = format!("{}{path}", self.root);
        let ask = self.client.http().post(url).headers(headers).json(&body).send();
        self.read_json(ask).await
    }

    async fn read_json(
        &self,
        ask: impl std::future::Future<Output = reqwest::Result<reqwest::Response>>,
    ) -> Option<Value> {
        let response = tokio::time::timeout(EACH, ask).await.ok()?.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let read = crate::body::read_capped(response, crate::body::PROBE_LIMIT);
        let read = tokio::time::timeout(EACH, read).await.ok()?.ok()?;
        if read.cut {
            return None;
        }
        serde_json::from_slice(&read.bytes).ok()
    }
}

/// The context `model` is loaded with, from Ollama's `/api/ps` (`name` or `model` matches,
/// `:latest` implied).
fn ollama_loaded(ps: &Value, model: &str) -> Option<u64> {
    let same = |name: &str| {
        name == model
            || name.strip_suffix(":latest") == Some(model)
            || model.strip_suffix(":latest") == Some(name)
    };
    ps["models"].as_array()?.iter().find_map(|m| {
        let named = m["name"].as_str().is_some_and(same) || m["model"].as_str().is_some_and(same);
        named.then(|| m["context_length"].as_u64()).flatten()
    })
}

/// The `num_ctx` a model's Modelfile sets, from Ollama's `/api/show` (its `parameters` text, a
/// line `num_ctx  8192`).
fn ollama_num_ctx(show: &Value) -> Option<u64> {
    show["parameters"].as_str()?.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("num_ctx")).then(|| words.next()?.parse().ok()).flatten()
    })
}

/// llama.cpp's `n_ctx` in `/props` (per slot under `default_generation_settings`, else at the
/// top).
fn llamacpp_n_ctx(props: &Value) -> Option<u64> {
    props["default_generation_settings"]["n_ctx"].as_u64().or_else(|| props["n_ctx"].as_u64())
}

/// Whether `/api/v0/models` answered as LM Studio: a model list whose entries state a context
/// length.
fn is_lm_studio_list(models: &Value) -> bool {
    models["data"].as_array().is_some_and(|data| {
        data.iter().any(|m| m["max_context_length"].is_u64() || m["loaded_context_length"].is_u64())
    })
}

/// LM Studio's loaded (else maximum) context length of `model`.
fn lm_studio_context(models: &Value, model: &str) -> Option<u64> {
    let m = models["data"].as_array()?.iter().find(|m| m["id"].as_str() == Some(model))?;
    m["loaded_context_length"].as_u64().or_else(|| m["max_context_length"].as_u64())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ollama_names_match_with_or_without_latest() {
        let ps = json!({"models": [
            {"name": "qwen2.5-coder:7b", "model": "qwen2.5-coder:7b", "context_length": 4096},
            {"name": "llama3.2:latest", "model": "llama3.2:latest", "context_length": 8192},
        ]});
        assert_eq!(ollama_loaded(&ps, "qwen2.5-coder:7b"), Some(4096));
        assert_eq!(ollama_loaded(&ps, "llama3.2"), Some(8192));
        assert_eq!(ollama_loaded(&ps, "mistral"), None, "not loaded: nothing is said");
    }

    #[test]
    fn ollama_show_states_the_modelfile_num_ctx() {
        let show = json!({"parameters": "stop                           \"<|im_end|>\"\nnum_ctx                        16384\ntemperature 0.2"});
        assert_eq!(ollama_num_ctx(&show), Some(16_384));
        assert_eq!(ollama_num_ctx(&json!({"parameters": "temperature 0.2"})), None);
        assert_eq!(ollama_num_ctx(&json!({"license": "MIT"})), None);
    }

    #[test]
    fn lm_studio_prefers_the_loaded_length() {
        let models = json!({"data": [
            {"id": "a", "loaded_context_length": 4096, "max_context_length": 32768},
            {"id": "b", "max_context_length": 16384},
        ]});
        assert!(is_lm_studio_list(&models));
        assert_eq!(lm_studio_context(&models, "a"), Some(4096));
        assert_eq!(lm_studio_context(&models, "b"), Some(16384));
        assert!(!is_lm_studio_list(&json!({"data": [{"id": "gpt-4.1"}]})), "an OpenAI list");
    }

    #[test]
    fn the_root_and_the_port_come_from_the_base_url() {
        assert_eq!(root_of("http://10.0.0.5:11434/v1/"), "http://10.0.0.5:11434");
        assert_eq!(port_of("http://10.0.0.5:11434"), Some(11434));
        assert_eq!(port_of("https://llm.internal"), None);
        assert_eq!(root_of("http://box:8080"), "http://box:8080");
    }

    #[test]
    fn names_and_sources_parse_back() {
        for source in ProbeSource::ALL {
            assert_eq!(ProbeSource::parse(source.as_str()), Some(source));
        }
        for server in LocalServer::ALL {
            assert_eq!(LocalServer::parse(server.name()), Some(server));
        }
    }
}
