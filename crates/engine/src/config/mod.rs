//! Configuration: `$CODEWHALE_HOME/config.toml`, the workspace's `.codewhale/config.toml`,
//! the environment and command-line overrides, folded into one [`Config`].
//!
//! Precedence, lowest first: user file, workspace file, command-line flags. API keys and base
//! URLs also come from `OPENAI_API_KEY`/`ANTHROPIC_API_KEY` (or the variable `api_key_env`
//! names) and `OPENAI_BASE_URL`/`ANTHROPIC_BASE_URL`; a base URL in a file or flag beats the
//! environment. Invariants: an unknown key or a bad value is an error naming the file, the line
//! and the key (never silently ignored); keys are never read from files, so a config file can be
//! shared; a workspace file's settings that decide where keys go or how much is allowed count
//! only in a trusted workspace (see [`load`] and [`crate::trust`]).

mod file;
pub mod hooks;
mod values;

use std::path::{Path, PathBuf};

use codewhale_provider::{OpenAiServer, ProviderConfig, ProviderKind};

use file::parse_provider;
pub use file::{parse_scoped, Scope};

use crate::approval::ApprovalMode;

/// A configuration problem, phrased for the user.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("cannot read {path}: {source}; check its permissions or remove it")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}:{line}: bad `{key}`: {message}; fix or remove that line")]
    Invalid { path: PathBuf, line: usize, key: String, message: String },
    #[error(
        "unknown provider {0:?}; use `openai` (any OpenAI-compatible server), `anthropic` or \
         `openai-responses` (OpenAI's Responses API)"
    )]
    UnknownProvider(String),
    #[error(
        "no API key for {provider}: set {env}, or point --base-url at a server that needs none"
    )]
    MissingKey { provider: &'static str, env: String },
    #[error(
        "{path} is larger than 1 MiB, too large for a config file; check that it is the file \
         you meant, or shorten it"
    )]
    TooLarge { path: PathBuf },
    #[error("{path}:{line}: {reason}; fix or remove that pattern")]
    Pattern { path: PathBuf, line: usize, reason: String },
    #[error(transparent)]
    Redaction(#[from] crate::redact::BadPattern),
}

/// The largest config file read (docs/security.md, *A cloned repository cannot hang or exhaust
/// Codewhale*): a config is small, and a repository's file is read before anything is trusted.
pub const MAX_CONFIG_BYTES: usize = 1024 * 1024;

/// Settings of the compaction pipeline. Every field is optional; absent means the default of
/// docs/compaction.md, *Limits and configuration*.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompactionConfig {
    /// Auto-compaction threshold as a fraction of usable input (0 < t ≤ 1; default 0.8).
    pub threshold: Option<f64>,
    /// The model that writes summaries (default: the session's model).
    pub compaction_model: Option<String>,
    /// Token budget for retained user messages (default min(20,000, 10 % of usable input)).
    pub retained_user_tokens: Option<u64>,
    /// Whether a note is written in the background before the threshold (default true).
    pub background: Option<bool>,
    /// Where the background note starts, as a fraction of usable input (0 < f ≤ 1; default
    /// 0.6).
    pub background_at: Option<f64>,
    /// How long a summary of a branch HEAD left may take (docs/journal-format.md,
    /// *`branch_summary`*; default [`crate::branch_summary::DEFAULT_TIMEOUT`]): past it, no summary
    /// is written.
    pub branch_summary_timeout: Option<std::time::Duration>,
    /// Whether leaving a branch writes a summary of it (default true).
    pub branch_summaries: Option<bool>,
    /// Summary requests one pass may send (default
    /// [`crate::compaction::summary_input::DEFAULT_MAX_REQUESTS`]); what they cannot read is
    /// covered by an extract and stays reachable with `recall`.
    pub max_summary_requests: Option<u32>,
    /// Idle time after which a session past the early mark gets its note while the provider's
    /// cache is warm (default [`crate::compaction::background::idle::DEFAULT_IDLE_AFTER`]; zero: never).
    pub idle_after: Option<std::time::Duration>,
}

/// Settings of the shell tool.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShellConfig {
    /// Extra environment variables for every command (`[shell] env`).
    pub env: Vec<(String, String)>,
    /// Leave background commands running when the session closes (default: they are ended).
    pub keep_background: Option<bool>,
    /// How many processes (threads included) one shell command may have, where a pids cgroup
    /// can be made (default [`crate::tools::cgroup::DEFAULT_MAX_PROCESSES`]).
    pub max_processes: Option<u32>,
}

/// `[tools]`: which of the tools that reach beyond the workspace are offered, and where.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolsConfig {
    /// `web_fetch = false` removes the `web_fetch` tool (default: offered).
    pub web_fetch: Option<bool>,
    /// `web_fetch_allow`: hosts (`host`, any port) and `host:port`s `web_fetch` reaches without
    /// asking — a private address listed here is treated as a public host. Honoured from a
    /// workspace's file only once it is trusted.
    pub web_fetch_allow: Vec<String>,
    /// `subagent_model`: the model a `task` child runs on (default: the parent's).
    pub subagent_model: Option<String>,
    /// `max_subagents`: how many `task` children run at once in the process (default
    /// [`crate::tools::task::DEFAULT_MAX_SUBAGENTS`]). Honoured from a workspace's file only
    /// once it is trusted.
    pub max_subagents: Option<u32>,
}

impl ToolsConfig {
    /// Whether `web_fetch` is offered.
    pub fn web_fetch_enabled(&self) -> bool {
        self.web_fetch != Some(false)
    }

    /// Whether `web_fetch_allow` lists `host` (normalized as [`web_fetch_entry`] writes it) on
    /// `port`: an entry without a port lists every port.
    pub fn allows_fetch(&self, host: &str, port: u16) -> bool {
        let with_port = format!("{host}:{port}");
        self.web_fetch_allow.iter().any(|e| *e == host || *e == with_port)
    }
}

/// A `web_fetch_allow` entry (`host` or `host:port`; an IPv6 address in brackets, or bare
/// without a port) in the one spelling URLs are compared in: the host as a URL names it
/// (lowercase, punycode, IPv4 in dotted form, IPv6 compressed in brackets) and the port when
/// one is given.
pub fn web_fetch_entry(raw: &str) -> Result<String, String> {
    let raw = raw.trim();
    let bad = || {
        format!(
            "{raw:?} is not a host or host:port (for example \"docs.rs\", \"localhost:8080\" \
             or \"[::1]:3000\"); leave out the scheme and the path"
        )
    };
    if raw.is_empty() || raw.contains("://") || raw.contains(['/', '?', '#', '@', ' ']) {
        return Err(bad());
    }
    let (host, port) = if let Some(rest) = raw.strip_prefix('[') {
        let (inside, after) = rest.split_once(']').ok_or_else(bad)?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or_else(bad)?),
        };
        (format!("[{inside}]"), port)
    } else if raw.matches(':').count() > 1 {
        (format!("[{raw}]"), None)
    } else {
        match raw.split_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (raw.to_owned(), None),
        }
    };
    let host = url::Host::parse(&host).map_err(|_| bad())?.to_string();
    match port {
        None => Ok(host),
        Some(port) => {
            let port: u16 = port.parse().map_err(|_| bad())?;
            Ok(format!("{host}:{port}"))
        }
    }
}

/// Settings of redaction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RedactionConfig {
    /// More patterns (regular expressions) whose matches are redacted; both files' lists count.
    pub patterns: Vec<String>,
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
    /// The environment variable that holds the API key (instead of `OPENAI_API_KEY` or
    /// `ANTHROPIC_API_KEY`).
    /// How long a silent server is waited for before the request fails (`idle_timeout_sec`,
    /// default 300 s); a silence is said every 30 s meanwhile.
    pub idle_timeout: Option<std::time::Duration>,
    /// `[provider] hosted`: whether the server is a hosted API whatever its address.
    pub hosted: Option<bool>,
    /// `reasoning.effort` on the Responses API (`reasoning_effort`: minimal, low, medium,
    /// high); the server's default when unset.
    pub reasoning_effort: Option<String>,
    pub api_key_env: Option<String>,
    pub compaction: CompactionConfig,
    pub shell: ShellConfig,
    /// `[tools]`: `web_fetch` and the hosts it reaches without asking.
    pub tools: ToolsConfig,
    pub redaction: RedactionConfig,
    /// `[sandbox]`: how the commands the model runs are confined.
    pub sandbox: crate::sandbox::SandboxConfig,
    /// `[tui]`: what the terminal UI does beside the conversation.
    pub tui: TuiConfig,
    /// `[checkpoints] max_file_bytes`: a file larger than this is not kept for rewind (default
    /// [`crate::checkpoint::snapshot::MAX_FILE_BYTES`]).
    pub max_checkpoint_bytes: Option<u64>,
    /// `[pricing."MODEL"]`: prices that override or add to the catalog's (lower-case ids).
    pub pricing: Vec<(String, codewhale_provider::Price)>,
    /// Workspaces whose config is trusted whatever it says (user file only).
    pub trusted_workspaces: Vec<String>,
    /// Workspace settings ignored because the workspace is not trusted.
    pub untrusted: Option<Untrusted>,
    /// `[mcp_servers.NAME]` tables; a workspace's replace the user's of the same name.
    pub mcp_servers: Vec<codewhale_mcp::ServerConfig>,
    /// `[[hooks.EVENT]]` tables, the user's first, then a trusted workspace's.
    pub hooks: Vec<hooks::HookConfig>,
    /// Things to say once about the files read: a file skipped because it is not a regular
    /// file.
    pub notices: Vec<String>,
}

/// `[tui]` as configured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TuiConfig {
    /// How the user is called back while the terminal is not focused (default `auto`).
    pub notify: Option<codewhale_protocol::Notify>,
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

/// The user-level config file under `home`.
pub fn user_file(home: &Path) -> PathBuf {
    home.join("config.toml")
}

/// The workspace-level config file.
pub fn workspace_file(workspace: &Path) -> PathBuf {
    workspace.join(".codewhale").join("config.toml")
}

/// Loads and merges both files (a missing file is an empty one), then applies `overrides`.
///
/// Workspace trust (docs/configuration.md, *Workspace trust*): the settings that decide where keys
/// go or how much is allowed ([`Config::gated_keys`]) are taken from the workspace's file only when
/// the user has trusted that workspace — in the trust store for this exact file content, or by
/// listing it in `trusted_workspaces` of their own file. Otherwise they are left out and named in
/// [`Config::untrusted`], for one notice.
pub fn load(home: &Path, workspace: &Path, overrides: &Overrides) -> Result<Config, ConfigError> {
    let mut notices = Vec::new();
    let mut config = match read(&user_file(home), &mut notices)? {
        Some(text) => parse_scoped(&user_file(home), &text, Scope::User)?,
        None => Config::default(),
    };
    let ws_path = workspace_file(workspace);
    if let Some(text) = read(&ws_path, &mut notices)? {
        let mut ws = parse_scoped(&ws_path, &text, Scope::Workspace)?;
        let mut gated = ws.gated_keys();
        // A sandbox mode looser than the user's own is loosening too, whatever it is.
        let looser_mode = crate::sandbox::loosens_mode(ws.sandbox.mode, config.sandbox.mode);
        if looser_mode && !gated.iter().any(|k| k == "sandbox.mode") {
            gated.push("sandbox.mode".to_owned());
        }
        if !gated.is_empty()
            && !crate::trusted::is_trusted(home, workspace, &text, &config.trusted_workspaces)
        {
            ws.clear_gated();
            if looser_mode {
                ws.sandbox.mode = None;
            }
            let refused = crate::trusted::unshowable(&text).map(|u| u.to_string());
            config.untrusted = Some(Untrusted { file: ws_path, keys: gated, refused });
        } else {
            // Patterns of a workspace file are checked only once it is trusted: before that
            // they are never compiled, let alone run.
            file::check_patterns(&ws_path, &text, &ws.redaction.patterns)?;
        }
        config.merge(ws);
    }
    config.apply(overrides)?;
    config.notices.extend(notices);
    Ok(config)
}

/// The key variables (built-in and `api_key_env`) for a process about to open a session in
/// `workspace`: what Codewhale hides from its own environment at start. A config that does not
/// load counts only the built-in ones (the session reports its error later).
pub fn key_variables(home: &Path, workspace: &Path) -> Vec<String> {
    load(home, workspace, &Overrides::default())
        .map(|c| c.key_variables())
        .unwrap_or_else(|_| Config::default().key_variables())
}

/// A config file's text, or `None` when it does not exist or is not a regular file (then
/// `notices` says it was skipped). Read through [`MAX_CONFIG_BYTES`]: a larger file is an
/// error, never parsed cut.
pub(crate) fn read(path: &Path, notices: &mut Vec<String>) -> Result<Option<String>, ConfigError> {
    use crate::bounded::Bounded;
    match crate::bounded::read(path, MAX_CONFIG_BYTES) {
        Ok(Bounded::Missing) => Ok(None),
        Ok(Bounded::NotRegular(kind)) => {
            notices.push(crate::bounded::skipped_notice(path, kind));
            Ok(None)
        }
        Ok(Bounded::Read { cut: true, .. }) => Err(ConfigError::TooLarge { path: path.to_owned() }),
        Ok(Bounded::Read { bytes, cut: false }) => {
            String::from_utf8(bytes).map(Some).map_err(|_| ConfigError::Read {
                path: path.to_owned(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "it is not UTF-8 text",
                ),
            })
        }
        Err(source) => Err(ConfigError::Read { path: path.to_owned(), source }),
    }
}

/// Parses a config file's text as a user file (every key allowed); `path` only names it in
/// errors.
pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
    parse_scoped(path, text, Scope::User)
}

/// Workspace settings left out because the workspace is not trusted.
#[derive(Debug, Clone, PartialEq)]
pub struct Untrusted {
    pub file: PathBuf,
    /// The keys that were set there and ignored, in file order of [`Config::gated_keys`].
    pub keys: Vec<String>,
    /// Why trusting would not help: a setting the trust question cannot show plainly.
    pub refused: Option<String>,
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
        over(&mut self.api_key_env, other.api_key_env);
        over(&mut self.idle_timeout, other.idle_timeout);
        over(&mut self.hosted, other.hosted);
        over(&mut self.reasoning_effort, other.reasoning_effort);
        over(&mut self.compaction.threshold, other.compaction.threshold);
        over(&mut self.compaction.compaction_model, other.compaction.compaction_model);
        over(&mut self.compaction.retained_user_tokens, other.compaction.retained_user_tokens);
        over(&mut self.compaction.background, other.compaction.background);
        over(&mut self.compaction.background_at, other.compaction.background_at);
        over(&mut self.compaction.max_summary_requests, other.compaction.max_summary_requests);
        over(&mut self.compaction.idle_after, other.compaction.idle_after);
        over(&mut self.compaction.branch_summaries, other.compaction.branch_summaries);
        over(&mut self.compaction.branch_summary_timeout, other.compaction.branch_summary_timeout);
        over(&mut self.shell.keep_background, other.shell.keep_background);
        over(&mut self.shell.max_processes, other.shell.max_processes);
        over(&mut self.tools.web_fetch, other.tools.web_fetch);
        self.tools.web_fetch_allow.extend(other.tools.web_fetch_allow);
        over(&mut self.tools.subagent_model, other.tools.subagent_model);
        over(&mut self.tools.max_subagents, other.tools.max_subagents);
        over(&mut self.sandbox.mode, other.sandbox.mode);
        over(&mut self.sandbox.network, other.sandbox.network);
        over(&mut self.sandbox.namespaces, other.sandbox.namespaces);
        over(&mut self.sandbox.git_writable, other.sandbox.git_writable);
        over(&mut self.tui.notify, other.tui.notify);
        over(&mut self.max_checkpoint_bytes, other.max_checkpoint_bytes);
        for (model, price) in other.pricing {
            self.pricing.retain(|(m, _)| *m != model);
            self.pricing.push((model, price));
        }
        self.sandbox.writable.extend(other.sandbox.writable);
        for (name, value) in other.shell.env {
            self.shell.env.retain(|(n, _)| *n != name);
            self.shell.env.push((name, value));
        }
        self.redaction.patterns.extend(other.redaction.patterns);
        self.trusted_workspaces.extend(other.trusted_workspaces);
        over(&mut self.untrusted, other.untrusted);
        for server in other.mcp_servers {
            self.mcp_servers.retain(|s| s.name != server.name);
            self.mcp_servers.push(server);
        }
        self.hooks.extend(other.hooks);
        self.notices.extend(other.notices);
    }

    /// The settings that decide where keys go or how much is allowed, by key name, that this
    /// configuration sets: honoured from a workspace's file only when it is trusted.
    pub fn gated_keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        let mut set = |present: bool, key: &str| {
            if present {
                keys.push(key.to_owned());
            }
        };
        set(self.provider.is_some(), "provider");
        set(self.base_url.is_some(), "base_url");
        set(self.api_key_env.is_some(), "api_key_env");
        set(self.approval.is_some(), "approval");
        set(!self.shell.env.is_empty(), "shell.env");
        // A workspace must not lift the cap a fork bomb runs into.
        set(self.shell.max_processes.is_some(), "shell.max_processes");
        // A server is a program run (or a URL reached) at session start.
        set(!self.mcp_servers.is_empty(), "mcp_servers");
        // A hook is a command run on the user's behalf.
        set(!self.hooks.is_empty(), "hooks");
        // What loosens the sandbox; `read-only` and `network = false` only tighten it and
        // count before trust.
        set(self.sandbox.mode == Some(crate::sandbox::SandboxMode::Off), "sandbox.mode");
        set(!self.sandbox.writable.is_empty(), "sandbox.writable");
        set(self.sandbox.network == Some(true), "sandbox.network");
        // Both put .git within a command's reach; `namespaces = true` only tightens.
        set(self.sandbox.namespaces == Some(false), "sandbox.namespaces");
        set(self.sandbox.git_writable.is_some(), "sandbox.git_writable");
        // A pattern decides what is journaled: one matching everything destroys the record.
        set(!self.redaction.patterns.is_empty(), "redaction.patterns");
        // A listed host is fetched without asking, a private one included.
        set(!self.tools.web_fetch_allow.is_empty(), "tools.web_fetch_allow");
        // How many model sessions run at once on the user's key.
        set(self.tools.max_subagents.is_some(), "tools.max_subagents");
        keys
    }

    /// Leaves out every setting of [`Config::gated_keys`].
    pub fn clear_gated(&mut self) {
        self.provider = None;
        self.base_url = None;
        self.api_key_env = None;
        self.approval = None;
        self.shell.env.clear();
        self.shell.max_processes = None;
        self.mcp_servers.clear();
        self.hooks.clear();
        if self.sandbox.mode == Some(crate::sandbox::SandboxMode::Off) {
            self.sandbox.mode = None;
        }
        self.sandbox.writable.clear();
        if self.sandbox.network == Some(true) {
            self.sandbox.network = None;
        }
        if self.sandbox.namespaces == Some(false) {
            self.sandbox.namespaces = None;
        }
        self.sandbox.git_writable = None;
        self.redaction.patterns.clear();
        self.tools.web_fetch_allow.clear();
        self.tools.max_subagents = None;
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

    /// The price of `model`: a `[pricing]` entry for its id (or the id without its
    /// `vendor/` prefix and `:tag`), else the catalog's; `None` when neither knows one.
    pub fn price_of(&self, model: &str) -> Option<codewhale_provider::Price> {
        let lower = model.trim().to_ascii_lowercase();
        let after_vendor = lower.rsplit('/').next().unwrap_or(&lower);
        let bare = after_vendor.split(':').next().unwrap_or(after_vendor);
        let configured = [lower.as_str(), bare]
            .into_iter()
            .find_map(|id| self.pricing.iter().find(|(m, _)| m == id).map(|(_, p)| *p));
        configured.or_else(|| codewhale_provider::price_of(model))
    }

    /// The approval mode in effect (default `ask`).
    pub fn approval_mode(&self) -> ApprovalMode {
        self.approval.unwrap_or_default()
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

#[cfg(test)]
mod tests;
