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
//!
//! Here: the settings' types and loading. One file's text is read in `file`, configs are laid
//! over each other in `fold`, the provider is resolved from a config and the environment in
//! `provider`, and the kinds of values keys hold are in `values`.

mod file;
mod fold;
pub mod hooks;
mod provider;
mod values;

use std::path::{Path, PathBuf};

use codewhale_provider::{OpenAiServer, ProviderKind};

pub use file::{parse_scoped, Scope};
pub use provider::{Env, ResolvedProvider};

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

impl Config {
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
}

#[cfg(test)]
mod tests;
