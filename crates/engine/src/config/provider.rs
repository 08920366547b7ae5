//! Which provider a configuration talks to: the environment it reads keys and base URLs from,
//! the resolved provider, the default model of each kind, and the variables that hold keys.
//!
//! Invariant: a key is only ever read from the environment, never from a file; talking to a
//! provider's official address without its key is an error, not a request sent bare.

use codewhale_provider::{OpenAiServer, ProviderConfig, ProviderKind};

use super::{Config, ConfigError};

/// The environment variables Codewhale reads, captured once so tests can supply their own.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub openai_api_key: Option<String>,
    pub anthropic_api_key: Option<String>,
    pub openai_base_url: Option<String>,
    pub anthropic_base_url: Option<String>,
    /// Every other variable, for `api_key_env`.
    pub others: std::collections::BTreeMap<String, String>,
}

impl Env {
    /// Reads the process environment, with the key variables the process was handed on a
    /// pipe when it re-executed itself without them ([`crate::sandbox::keys`]); empty values
    /// count as unset.
    pub fn from_process() -> Env {
        let inherited = crate::sandbox::keys::inherited();
        let var = |name: &str| {
            std::env::var(name)
                .ok()
                .or_else(|| inherited.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()))
                .filter(|v| !v.trim().is_empty())
        };
        let mut others: std::collections::BTreeMap<String, String> =
            std::env::vars().filter(|(_, v)| !v.trim().is_empty()).collect();
        for (name, value) in inherited {
            others.entry(name.clone()).or_insert_with(|| value.clone());
        }
        Env {
            openai_api_key: var("OPENAI_API_KEY"),
            anthropic_api_key: var("ANTHROPIC_API_KEY"),
            openai_base_url: var("OPENAI_BASE_URL"),
            anthropic_base_url: var("ANTHROPIC_BASE_URL"),
            others,
        }
    }

    /// The value of variable `name`, if set and not empty.
    pub fn var(&self, name: &str) -> Option<String> {
        match name {
            "OPENAI_API_KEY" => self.openai_api_key.clone(),
            "ANTHROPIC_API_KEY" => self.anthropic_api_key.clone(),
            other => self.others.get(other).cloned(),
        }
    }
}

/// The provider to talk to, fully resolved.
#[derive(Debug, Clone)]
pub struct ResolvedProvider {
    pub kind: ProviderKind,
    pub model: String,
    pub base_url: String,
    pub api_key: Option<String>,
    /// The configured OpenAI-compatible dialect, if any (else detected from `base_url`).
    pub server: Option<OpenAiServer>,
}

impl ResolvedProvider {
    /// What a session opened without a provider holds (`Engine::spawn_without_model`): never
    /// asked, as the session knows it has no model.
    pub fn unconfigured() -> ResolvedProvider {
        let kind = ProviderKind::OpenAi;
        ResolvedProvider {
            kind,
            model: default_model(kind).to_owned(),
            base_url: kind.default_base_url().to_owned(),
            api_key: None,
            server: None,
        }
    }

    /// The provider crate's client configuration.
    pub fn provider_config(&self) -> ProviderConfig {
        let mut config = ProviderConfig::new(self.kind, self.api_key.clone())
            .with_base_url(self.base_url.clone());
        config.server = self.server;
        config
    }
}

/// The model used when none is configured.
pub fn default_model(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAi => "gpt-4.1",
        ProviderKind::Anthropic => "claude-sonnet-4-5",
        ProviderKind::OpenAiResponses => "gpt-5-codex",
    }
}

impl Config {
    /// The provider to use, or `None` when nothing configures one (no provider named, no key
    /// and no base URL in the environment).
    pub fn resolve_provider(&self, env: &Env) -> Result<Option<ResolvedProvider>, ConfigError> {
        let kind = match self.provider {
            Some(kind) => kind,
            None if env.anthropic_api_key.is_some() => ProviderKind::Anthropic,
            None if env.openai_api_key.is_some() || env.openai_base_url.is_some() => {
                ProviderKind::OpenAi
            }
            None if self.base_url.is_some() => ProviderKind::OpenAi,
            None => return Ok(None),
        };
        let (env_base, default_key_name) = match kind {
            ProviderKind::OpenAi => (&env.openai_base_url, "OPENAI_API_KEY"),
            ProviderKind::Anthropic => (&env.anthropic_base_url, "ANTHROPIC_API_KEY"),
            ProviderKind::OpenAiResponses => (&env.openai_base_url, "OPENAI_API_KEY"),
        };
        let key_name = self.api_key_env.clone().unwrap_or_else(|| default_key_name.to_owned());
        let key = &env.var(&key_name);
        let base_url = self
            .base_url
            .clone()
            .or_else(|| env_base.clone())
            .unwrap_or_else(|| kind.default_base_url().to_owned());
        let official = base_url.trim_end_matches('/') == kind.default_base_url();
        if key.is_none() && official {
            return Err(ConfigError::MissingKey { provider: kind.as_str(), env: key_name });
        }
        Ok(Some(ResolvedProvider {
            kind,
            model: self.model.clone().unwrap_or_else(|| default_model(kind).to_owned()),
            base_url,
            api_key: key.clone(),
            server: self.server,
        }))
    }

    /// The variables that hold provider keys, which no command may see: the built-in ones
    /// and the one `api_key_env` names.
    pub fn key_variables(&self) -> Vec<String> {
        let mut names: Vec<String> =
            crate::sandbox::keys::BUILT_IN.iter().map(|n| (*n).to_owned()).collect();
        if let Some(name) = self.api_key_env.as_ref().filter(|n| !n.trim().is_empty()) {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }
}
