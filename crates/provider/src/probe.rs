//! Asking a local server what window it runs a model with (docs/compaction.md, *Small local
//! models*): the catalog does not know local models, and their servers load them with a window
//! of their own (Ollama's `num_ctx`, 4096 by default on machines under 24 GiB of VRAM;
//! llama.cpp's `--ctx-size`; LM Studio's per-model setting).
//!
//! In order, each a `GET` of at most [`EACH`]: Ollama is recognised by `/api/version`
//! answering first, and its `/api/ps` gives the context the model is loaded with; llama.cpp's
//! `/props` gives `n_ctx`; LM Studio's `/api/v0/models` gives the model's loaded (else
//! maximum) context length. Nothing is ever POSTed, and nothing is asked of a hosted API.

use std::time::Duration;

use serde_json::Value;

use crate::client::Client;

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
    /// llama.cpp's `/props`: `n_ctx`.
    LlamacppProps,
    /// LM Studio's `/api/v0/models`: the loaded (else maximum) context length.
    LmStudio,
}

impl ProbeSource {
    /// Every source, for parsing and tests.
    pub const ALL: [ProbeSource; 3] =
        [ProbeSource::OllamaPs, ProbeSource::LlamacppProps, ProbeSource::LmStudio];

    /// The journal's and `context --json`'s spelling after `probe:` (`ollama-ps`).
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeSource::OllamaPs => "ollama-ps",
            ProbeSource::LlamacppProps => "llamacpp-props",
            ProbeSource::LmStudio => "lmstudio",
        }
    }

    /// The source as a user reads it ("Ollama's /api/ps").
    pub fn describe(self) -> &'static str {
        match self {
            ProbeSource::OllamaPs => "Ollama's /api/ps",
            ProbeSource::LlamacppProps => "llama.cpp's /props",
            ProbeSource::LmStudio => "LM Studio's /api/v0/models",
        }
    }

    /// The source spelled `s` ([`ProbeSource::as_str`]).
    pub fn parse(s: &str) -> Option<ProbeSource> {
        ProbeSource::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

impl Client {
    /// The window the server runs `model` with, when it says; `None` for a hosted API, a
    /// server that does not say, or one that does not answer in time.
    pub async fn probe_window(&self, model: &str) -> Option<ProbedWindow> {
        if !self.config().lists_own_models() {
            return None;
        }
        let base = self.config().base_url.trim_end_matches('/');
        let root = base.strip_suffix("/v1").unwrap_or(base);
        let found = |tokens: u64, source: ProbeSource| {
            (tokens > 0).then_some(ProbedWindow { tokens, source })
        };
        if self.get_json(&format!("{root}/api/version")).await.is_some() {
            let ps = self.get_json(&format!("{root}/api/ps")).await?;
            return found(ollama_loaded(&ps, model)?, ProbeSource::OllamaPs);
        }
        if let Some(props) = self.get_json(&format!("{root}/props")).await {
            let n_ctx = props["default_generation_settings"]["n_ctx"]
                .as_u64()
                .or_else(|| props["n_ctx"].as_u64())?;
            return found(n_ctx, ProbeSource::LlamacppProps);
        }
        let models = self.get_json(&format!("{root}/api/v0/models")).await?;
        found(lm_studio_context(&models, model)?, ProbeSource::LmStudio)
    }

    async fn get_json(&self, url: &str) -> Option<Value> {
        let ask = self.http().get(url).send();
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
    fn lm_studio_prefers_the_loaded_length() {
        let models = json!({"data": [
            {"id": "a", "loaded_context_length": 4096, "max_context_length": 32768},
            {"id": "b", "max_context_length": 16384},
        ]});
        assert_eq!(lm_studio_context(&models, "a"), Some(4096));
        assert_eq!(lm_studio_context(&models, "b"), Some(16384));
    }
}
