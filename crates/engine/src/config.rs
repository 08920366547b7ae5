//! Configuration: `$CODEWHALE_HOME/config.toml`, the workspace's `.codewhale/config.toml`,
//! the environment and command-line overrides, folded into one [`Config`].
//!
//! Precedence, lowest first: user file, workspace file, command-line flags. API keys and base
//! URLs also come from `OPENAI_API_KEY`/`ANTHROPIC_API_KEY` and `OPENAI_BASE_URL`/
//! `ANTHROPIC_BASE_URL`; a base URL in a file or flag beats the environment. Invariants: an
//! unknown key or a bad value is an error naming the file, the line and the key (never
//! silently ignored); keys are never read from files, so a config file can be shared.

use std::ops::Range;
use std::path::{Path, PathBuf};

use codewhale_provider::{OpenAiServer, ProviderConfig, ProviderKind};
use serde::Deserialize;
use toml::Spanned;

use crate::approval::ApprovalMode;

/// A configuration problem, phrased for the user.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("cannot read {path}: {source}; check its permissions or remove it")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}:{line}: bad `{key}`: {message}; fix or remove that line")]
    Invalid { path: PathBuf, line: usize, key: String, message: String },
    #[error("unknown provider {0:?}; use `openai` (any OpenAI-compatible server) or `anthropic`")]
    UnknownProvider(String),
    #[error(
        "no API key for {provider}: set {env}, or point --base-url at a server that needs none"
    )]
    MissingKey { provider: &'static str, env: &'static str },
}

/// Settings of the compaction pipeline. Every field is optional; absent means the default of
/// DESIGN §9.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompactionConfig {
    /// Auto-compaction threshold as a fraction of usable input (0 < t ≤ 1; default 0.8).
    pub threshold: Option<f64>,
    /// The model that writes summaries (default: the session's model).
    pub compaction_model: Option<String>,
    /// Token budget for retained user messages (default min(20,000, 10 % of usable input)).
    pub retained_user_tokens: Option<u64>,
}

/// The merged configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    pub provider: Option<ProviderKind>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// The OpenAI-compatible dialect (`ollama`, `vllm`, ...) when detection from the base URL
    /// is not enough.
    pub server: Option<OpenAiServer>,
    /// Context window `W` in tokens, overriding the catalog.
    pub context_window: Option<u64>,
    /// Reserved output `R` in tokens, overriding min(16,384, W/4).
    pub reserved_output: Option<u64>,
    pub approval: Option<ApprovalMode>,
    pub compaction: CompactionConfig,
}

/// Values from the command line; each one set beats both files.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub context_window: Option<u64>,
    pub approval: Option<ApprovalMode>,
}

/// The environment variables Codewhale reads, captured once so tests can supply their own.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub openai_api_key: Option<String>,
    pub anthropic_api_key: Option<String>,
    pub openai_base_url: Option<String>,
    pub anthropic_base_url: Option<String>,
}

impl Env {
    /// Reads the process environment; empty values count as unset.
    pub fn from_process() -> Env {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Env {
            openai_api_key: var("OPENAI_API_KEY"),
            anthropic_api_key: var("ANTHROPIC_API_KEY"),
            openai_base_url: var("OPENAI_BASE_URL"),
            anthropic_base_url: var("ANTHROPIC_BASE_URL"),
        }
    }
}

/// The user-level config file under `home`.
pub fn user_file(home: &Path) -> PathBuf {
    home.join("config.toml")
}

/// The workspace-level config file.
pub fn workspace_file(workspace: &Path) -> PathBuf {
    workspace.join(".codewhale").join("config.toml")
}

/// Loads and merges both files (a missing file is an empty one), then applies `overrides`.
pub fn load(home: &Path, workspace: &Path, overrides: &Overrides) -> Result<Config, ConfigError> {
    let mut config = Config::default();
    for path in [user_file(home), workspace_file(workspace)] {
        match std::fs::read_to_string(&path) {
            Ok(text) => config.merge(parse(&path, &text)?),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(ConfigError::Read { path, source }),
        }
    }
    config.apply(overrides)?;
    Ok(config)
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    provider: Option<Spanned<String>>,
    model: Option<String>,
    base_url: Option<String>,
    server: Option<Spanned<String>>,
    context_window: Option<Spanned<u64>>,
    reserved_output: Option<Spanned<u64>>,
    approval: Option<ApprovalMode>,
    #[serde(default)]
    compaction: FileCompaction,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCompaction {
    threshold: Option<Spanned<f64>>,
    compaction_model: Option<String>,
    retained_user_tokens: Option<u64>,
}

/// Parses one config file's text; `path` only names it in errors.
pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
    let invalid = |span: Option<Range<usize>>, message: String| {
        let (line, key) = locate(text, span.map_or(0, |s| s.start));
        ConfigError::Invalid { path: path.to_owned(), line, key, message }
    };
    let file: FileConfig =
        toml::from_str(text).map_err(|e| invalid(e.span(), e.message().trim().to_owned()))?;
    let provider = match file.provider {
        Some(p) => Some(parse_provider(p.get_ref()).ok_or_else(|| {
            invalid(Some(p.span()), format!("{:?} is not `openai` or `anthropic`", p.get_ref()))
        })?),
        None => None,
    };
    let server = match file.server {
        Some(name) => Some(OpenAiServer::parse(name.get_ref()).ok_or_else(|| {
            invalid(
                Some(name.span()),
                format!(
                    "{:?} is not a known server; use openai, deepseek, openrouter, ollama, \
                     llama.cpp, vllm, lmstudio or generic",
                    name.get_ref()
                ),
            )
        })?),
        None => None,
    };
    let positive = |v: Option<Spanned<u64>>| match v {
        Some(v) if *v.get_ref() == 0 => {
            Err(invalid(Some(v.span()), "must be a positive number of tokens".into()))
        }
        v => Ok(v.map(Spanned::into_inner)),
    };
    let threshold = match file.compaction.threshold {
        Some(t) if !(*t.get_ref() > 0.0 && *t.get_ref() <= 1.0) => {
            return Err(invalid(
                Some(t.span()),
                format!("{} is not a fraction in (0, 1], e.g. 0.8", t.get_ref()),
            ))
        }
        t => t.map(Spanned::into_inner),
    };
    Ok(Config {
        provider,
        model: file.model,
        base_url: file.base_url,
        server,
        context_window: positive(file.context_window)?,
        reserved_output: positive(file.reserved_output)?,
        approval: file.approval,
        compaction: CompactionConfig {
            threshold,
            compaction_model: file.compaction.compaction_model,
            retained_user_tokens: file.compaction.retained_user_tokens,
        },
    })
}

/// The 1-based line of byte `offset` and the dotted key defined on that line (with its table).
fn locate(text: &str, offset: usize) -> (usize, String) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or_default();
    let line_no = before.matches('\n').count() + 1;
    let line = text.lines().nth(line_no - 1).unwrap_or_default().trim();
    let table = before
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && l.ends_with(']'))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_owned());
    let key = match line.split_once('=') {
        Some((key, _)) => key.trim().to_owned(),
        None => line.trim_matches(|c| c == '[' || c == ']').trim().to_owned(),
    };
    let key = match table {
        Some(table) if !line.starts_with('[') => format!("{table}.{key}"),
        _ => key,
    };
    (line_no, key)
}

fn parse_provider(name: &str) -> Option<ProviderKind> {
    match name.trim().to_ascii_lowercase().as_str() {
        "openai" => Some(ProviderKind::OpenAi),
        "anthropic" => Some(ProviderKind::Anthropic),
        _ => None,
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
    }
}

impl Config {
    /// Lays `other` over `self`: every value `other` sets wins.
    pub fn merge(&mut self, other: Config) {
        fn over<T>(slot: &mut Option<T>, value: Option<T>) {
            if value.is_some() {
                *slot = value;
            }
        }
        over(&mut self.provider, other.provider);
        over(&mut self.model, other.model);
        over(&mut self.base_url, other.base_url);
        over(&mut self.server, other.server);
        over(&mut self.context_window, other.context_window);
        over(&mut self.reserved_output, other.reserved_output);
        over(&mut self.approval, other.approval);
        over(&mut self.compaction.threshold, other.compaction.threshold);
        over(&mut self.compaction.compaction_model, other.compaction.compaction_model);
        over(&mut self.compaction.retained_user_tokens, other.compaction.retained_user_tokens);
    }

    /// Applies command-line overrides.
    pub fn apply(&mut self, o: &Overrides) -> Result<(), ConfigError> {
        if let Some(name) = &o.provider {
            let kind =
                parse_provider(name).ok_or_else(|| ConfigError::UnknownProvider(name.clone()))?;
            self.provider = Some(kind);
        }
        self.merge(Config {
            model: o.model.clone(),
            base_url: o.base_url.clone(),
            context_window: o.context_window.filter(|w| *w > 0),
            approval: o.approval,
            ..Config::default()
        });
        Ok(())
    }

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
        let (key, env_base, key_name) = match kind {
            ProviderKind::OpenAi => (&env.openai_api_key, &env.openai_base_url, "OPENAI_API_KEY"),
            ProviderKind::Anthropic => {
                (&env.anthropic_api_key, &env.anthropic_base_url, "ANTHROPIC_API_KEY")
            }
        };
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

    /// The approval mode in effect (default `ask`).
    pub fn approval_mode(&self) -> ApprovalMode {
        self.approval.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse(Path::new("cfg.toml"), text).unwrap_err().to_string()
    }

    #[test]
    fn a_full_file_parses() {
        let c = parse(
            Path::new("c.toml"),
            "provider = \"anthropic\"\nmodel = \"m\"\ncontext_window = 1000\napproval = \"auto-edit\"\n[compaction]\nthreshold = 0.7\n",
        )
        .unwrap();
        assert_eq!(c.provider, Some(ProviderKind::Anthropic));
        assert_eq!(c.context_window, Some(1000));
        assert_eq!(c.approval, Some(ApprovalMode::AutoEdit));
        assert_eq!(c.compaction.threshold, Some(0.7));
    }

    #[test]
    fn unknown_keys_name_file_line_and_key() {
        let e = err("model = \"m\"\nmodle = \"x\"\n");
        assert!(e.starts_with("cfg.toml:2: bad `modle`"), "{e}");
        let e = err("[compaction]\nthreshhold = 0.5\n");
        assert!(e.starts_with("cfg.toml:2: bad `compaction.threshhold`"), "{e}");
    }

    #[test]
    fn bad_values_name_file_line_and_key() {
        let e = err("\napproval = \"sometimes\"\n");
        assert!(e.starts_with("cfg.toml:2: bad `approval`"), "{e}");
        let e = err("[compaction]\nthreshold = 1.5\n");
        assert!(e.contains(":2: bad `compaction.threshold`") && e.contains("(0, 1]"), "{e}");
        let e = err("provider = \"gemini\"\n");
        assert!(e.contains(":1: bad `provider`"), "{e}");
        let e = err("server = \"llama\"\n");
        assert!(e.contains(":1: bad `server`") && e.contains("llama.cpp"), "{e}");
        let e = err("context_window = 0\n");
        assert!(e.contains(":1: bad `context_window`"), "{e}");
    }

    #[test]
    fn workspace_overrides_user_and_flags_override_both() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(user_file(home.path()), "model = \"user\"\ncontext_window = 5\n").unwrap();
        std::fs::create_dir_all(ws.path().join(".codewhale")).unwrap();
        std::fs::write(workspace_file(ws.path()), "model = \"ws\"\n").unwrap();
        let c = load(home.path(), ws.path(), &Overrides::default()).unwrap();
        assert_eq!((c.model.as_deref(), c.context_window), (Some("ws"), Some(5)));
        let flags = Overrides { model: Some("flag".into()), ..Overrides::default() };
        let c = load(home.path(), ws.path(), &flags).unwrap();
        assert_eq!(c.model.as_deref(), Some("flag"));
    }

    #[test]
    fn provider_comes_from_the_environment_when_not_named() {
        let none = Config::default().resolve_provider(&Env::default()).unwrap();
        assert!(none.is_none());
        let env = Env { anthropic_api_key: Some("k".into()), ..Env::default() };
        let p = Config::default().resolve_provider(&env).unwrap().unwrap();
        assert_eq!((p.kind, p.model.as_str()), (ProviderKind::Anthropic, "claude-sonnet-4-5"));
        let env = Env { openai_base_url: Some("http://127.0.0.1:9/v1".into()), ..Env::default() };
        let p = Config::default().resolve_provider(&env).unwrap().unwrap();
        assert_eq!((p.kind, p.base_url.as_str()), (ProviderKind::OpenAi, "http://127.0.0.1:9/v1"));
        let named = Config { provider: Some(ProviderKind::OpenAi), ..Config::default() };
        assert!(matches!(
            named.resolve_provider(&Env::default()),
            Err(ConfigError::MissingKey { .. })
        ));
    }
}
