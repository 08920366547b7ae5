//! One config file's text → a [`Config`]: the TOML shape, the checks on each value, and errors
//! that name the file, the line and the key.
//!
//! Invariants: an unknown key or a bad value is an error (never silently ignored); a key that is
//! only meaningful in the user's own file (`trusted_workspaces`) is an error in a workspace file,
//! so a repository can never declare itself trusted.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use codewhale_provider::{OpenAiServer, ProviderKind};
use serde::Deserialize;
use toml::Spanned;

use super::values::{ConfigValue, EnvName, Fraction, Millis, Seconds, SecondsOrOff, Tokens};
use super::TuiConfig;
use super::{CompactionConfig, Config, ConfigError, RedactionConfig, ShellConfig, ToolsConfig};
use crate::approval::ApprovalMode;
use crate::sandbox::{SandboxConfig, SandboxMode};

/// Which file is being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `$CODEWHALE_HOME/config.toml`.
    User,
    /// A workspace's `.codewhale/config.toml`.
    Workspace,
}

/// `provider = "openai"`, or a `[provider]` table: `name` (the same value),
/// `idle_timeout_sec` (the top-level key means the same) and `hosted` (the server is a hosted
/// API whatever its address: never probed, never suspected of silent truncation).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum FileProvider {
    Name(String),
    Table(FileProviderTable),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileProviderTable {
    name: Option<String>,
    idle_timeout_sec: Option<f64>,
    hosted: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    provider: Option<Spanned<FileProvider>>,
    model: Option<String>,
    base_url: Option<String>,
    server: Option<Spanned<String>>,
    context_window: Option<Spanned<u64>>,
    reserved_output: Option<Spanned<u64>>,
    approval: Option<ApprovalMode>,
    api_key_env: Option<Spanned<String>>,
    idle_timeout_sec: Option<Spanned<f64>>,
    reasoning_effort: Option<Spanned<String>>,
    #[serde(default)]
    compaction: FileCompaction,
    #[serde(default)]
    shell: FileShell,
    #[serde(default)]
    tools: FileTools,
    #[serde(default)]
    redaction: FileRedaction,
    #[serde(default)]
    sandbox: FileSandbox,
    #[serde(default)]
    tui: FileTui,
    #[serde(default)]
    checkpoints: FileCheckpoints,
    #[serde(default)]
    pricing: BTreeMap<String, Spanned<codewhale_provider::Price>>,
    trusted_workspaces: Option<Spanned<Vec<String>>>,
    // Not `Spanned`: a table written with dotted keys (`mcp_servers.x.command = "sh"`) has no
    // span of its own, and `Spanned` refuses it; errors find the table in the text instead.
    #[serde(default)]
    mcp_servers: BTreeMap<String, FileMcpServer>,
    // Any shape: a broken hook table is a notice, never a refused file (`super::hooks`).
    hooks: Option<toml::Value>,
}

/// One `[mcp_servers.NAME]` table, in the shape Codex CLI uses (its key names, so a pasted
/// block works), with `_ms` variants of the timeouts and `read_only_tools`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMcpServer {
    command: Option<Spanned<String>>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    env_vars: Vec<Spanned<String>>,
    cwd: Option<String>,
    url: Option<Spanned<String>>,
    bearer_token_env_var: Option<Spanned<String>>,
    #[serde(default, alias = "headers")]
    http_headers: BTreeMap<String, String>,
    #[serde(default)]
    env_http_headers: BTreeMap<String, Spanned<String>>,
    enabled: Option<bool>,
    startup_timeout_sec: Option<Spanned<f64>>,
    startup_timeout_ms: Option<Spanned<u64>>,
    tool_timeout_sec: Option<Spanned<f64>>,
    tool_timeout_ms: Option<Spanned<u64>>,
    enabled_tools: Option<Vec<String>>,
    #[serde(default)]
    disabled_tools: Vec<String>,
    #[serde(default)]
    read_only_tools: Vec<String>,
    sandbox: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCompaction {
    threshold: Option<Spanned<f64>>,
    compaction_model: Option<String>,
    retained_user_tokens: Option<u64>,
    background: Option<bool>,
    background_at: Option<Spanned<f64>>,
    branch_summary_timeout_sec: Option<Spanned<f64>>,
    branch_summaries: Option<bool>,
    max_summary_requests: Option<Spanned<u32>>,
    idle_after_sec: Option<Spanned<f64>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileShell {
    #[serde(default)]
    env: BTreeMap<String, String>,
    keep_background: Option<bool>,
    max_processes: Option<Spanned<u32>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTools {
    web_fetch: Option<bool>,
    #[serde(default)]
    web_fetch_allow: Vec<Spanned<String>>,
    subagent_model: Option<String>,
    max_subagents: Option<Spanned<u32>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSandbox {
    mode: Option<Spanned<String>>,
    #[serde(default)]
    writable: Vec<String>,
    network: Option<bool>,
    namespaces: Option<bool>,
    git_writable: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTui {
    notify: Option<codewhale_protocol::Notify>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCheckpoints {
    max_file_bytes: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRedaction {
    #[serde(default)]
    patterns: Vec<Spanned<String>>,
}

/// The smallest `[shell] max_processes`: a pipeline of a few commands must still run.
const MIN_PROCESSES: u32 = 8;

/// Parses one config file's text, read as a `scope` file; `path` only names it in errors.
pub fn parse_scoped(path: &Path, text: &str, scope: Scope) -> Result<Config, ConfigError> {
    let invalid = |span: Option<Range<usize>>, message: String| {
        let (line, key) = locate(text, span.map_or(0, |s| s.start));
        ConfigError::Invalid { path: path.to_owned(), line, key, message }
    };
    let mut file: FileConfig =
        toml::from_str(text).map_err(|e| invalid(e.span(), e.message().trim().to_owned()))?;
    let mut notices = Vec::new();
    let hooks = super::hooks::parse(path, text, file.hooks.take(), &mut notices);
    let (provider_name, table_idle, hosted, provider_span) = match &file.provider {
        Some(p) => match p.get_ref() {
            FileProvider::Name(name) => (Some(name.clone()), None, None, Some(p.span())),
            FileProvider::Table(t) => {
                (t.name.clone(), t.idle_timeout_sec, t.hosted, Some(p.span()))
            }
        },
        None => (None, None, None, None),
    };
    let provider = match provider_name {
        Some(name) => Some(parse_provider(&name).ok_or_else(|| {
            invalid(
                provider_span.clone(),
                format!("{name:?} is not `openai`, `anthropic` or `openai-responses`"),
            )
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
    // The fractions' errors end with an example: the key's default.
    let fraction = |v, example: &str| {
        checked::<Fraction>(v, &|span, m| invalid(span, format!("{m}, e.g. {example}")))
    };
    let threshold = fraction(file.compaction.threshold, "0.8")?.map(Fraction::get);
    let background_at = fraction(file.compaction.background_at, "0.6")?.map(Fraction::get);
    let branch_summary_timeout =
        checked::<Seconds>(file.compaction.branch_summary_timeout_sec, &invalid)?.map(Seconds::get);
    let idle_timeout = match file.idle_timeout_sec {
        Some(t) => checked::<Seconds>(Some(t), &invalid)?,
        // The table's key has no span of its own: the error names the `[provider]` table.
        None => {
            table_idle.map(Seconds::check).transpose().map_err(|m| invalid(provider_span, m))?
        }
    }
    .map(Seconds::get);
    let reasoning_effort = match file.reasoning_effort {
        Some(e) if !matches!(e.get_ref().as_str(), "minimal" | "low" | "medium" | "high") => {
            return Err(invalid(
                Some(e.span()),
                "must be one of \"minimal\", \"low\", \"medium\" or \"high\"".into(),
            ))
        }
        e => e.map(Spanned::into_inner),
    };
    let max_summary_requests = match file.compaction.max_summary_requests {
        Some(n) if *n.get_ref() == 0 => {
            return Err(invalid(
                Some(n.span()),
                "must be at least 1: a summary pass sends at least one request".into(),
            ))
        }
        n => n.map(Spanned::into_inner),
    };
    let idle_after =
        checked::<SecondsOrOff>(file.compaction.idle_after_sec, &invalid)?.map(SecondsOrOff::get);
    let api_key_env = checked::<EnvName>(file.api_key_env, &invalid)?.map(EnvName::into_inner);
    let trusted_workspaces = match file.trusted_workspaces {
        Some(list) if scope == Scope::Workspace => {
            return Err(invalid(
                Some(list.span()),
                "is only read from your own config.toml in the Codewhale home; a workspace \
                 cannot trust itself"
                    .into(),
            ))
        }
        list => list.map(Spanned::into_inner).unwrap_or_default(),
    };
    // A workspace's patterns are not even compiled here: until the workspace is trusted they
    // are ignored, and [`check_patterns`] checks them once it is.
    if scope == Scope::User {
        check_spanned(path, text, &file.redaction.patterns)?;
    }
    let sandbox_mode = match file.sandbox.mode {
        Some(mode) => {
            Some(mode.get_ref().parse::<SandboxMode>().map_err(|e| invalid(Some(mode.span()), e))?)
        }
        None => None,
    };
    let patterns = file.redaction.patterns.into_iter().map(Spanned::into_inner).collect();
    let max_processes = match file.shell.max_processes {
        Some(n) if *n.get_ref() < MIN_PROCESSES => {
            return Err(invalid(
                Some(n.span()),
                format!(
                    "{} is too few processes for a shell command (bash alone needs a few); use at \
                     least {MIN_PROCESSES}",
                    n.get_ref()
                ),
            ))
        }
        n => n.map(Spanned::into_inner),
    };
    let mut web_fetch_allow = Vec::with_capacity(file.tools.web_fetch_allow.len());
    for host in file.tools.web_fetch_allow {
        let normal =
            super::web_fetch_entry(host.get_ref()).map_err(|e| invalid(Some(host.span()), e))?;
        web_fetch_allow.push(normal);
    }
    let max_subagents = match file.tools.max_subagents {
        Some(n) if *n.get_ref() == 0 => {
            let message = "max_subagents must be at least 1 (subagents run one at a time then)";
            return Err(invalid(Some(n.span()), message.to_owned()));
        }
        n => n.map(Spanned::into_inner),
    };
    let subagent_model = file.tools.subagent_model.filter(|m| !m.trim().is_empty());
    let mut mcp_servers = Vec::with_capacity(file.mcp_servers.len());
    for (name, table) in file.mcp_servers {
        let span = table_span(text, &name);
        mcp_servers.push(mcp_server(name, table, span, &invalid)?);
    }
    let mut pricing = Vec::new();
    for (model, price) in file.pricing {
        let span = price.span();
        let price = price.into_inner();
        let figures =
            [Some(price.input), price.cached_input, Some(price.output), price.cache_write];
        if figures.into_iter().flatten().any(|f| !f.is_finite() || f < 0.0) {
            return Err(invalid(
                Some(span),
                format!(
                    "the price of {model:?} must be US dollars per million tokens, 0 or more \
                     (e.g. {{ input = 3.0, output = 15.0 }})"
                ),
            ));
        }
        pricing.push((model.to_ascii_lowercase(), price));
    }
    Ok(Config {
        provider,
        model: file.model,
        base_url: file.base_url,
        server,
        context_window: checked::<Tokens>(file.context_window, &invalid)?.map(Tokens::get),
        reserved_output: checked::<Tokens>(file.reserved_output, &invalid)?.map(Tokens::get),
        approval: file.approval,
        api_key_env,
        idle_timeout,
        hosted,
        reasoning_effort,
        compaction: CompactionConfig {
            threshold,
            compaction_model: file.compaction.compaction_model,
            retained_user_tokens: file.compaction.retained_user_tokens,
            background: file.compaction.background,
            background_at,
            branch_summary_timeout,
            branch_summaries: file.compaction.branch_summaries,
            max_summary_requests,
            idle_after,
        },
        shell: ShellConfig {
            env: file.shell.env.into_iter().collect(),
            keep_background: file.shell.keep_background,
            max_processes,
        },
        tools: ToolsConfig {
            web_fetch: file.tools.web_fetch,
            web_fetch_allow,
            subagent_model,
            max_subagents,
        },
        redaction: RedactionConfig { patterns },
        sandbox: SandboxConfig {
            mode: sandbox_mode,
            writable: file.sandbox.writable,
            network: file.sandbox.network,
            namespaces: file.sandbox.namespaces,
            git_writable: file.sandbox.git_writable,
        },
        tui: TuiConfig { notify: file.tui.notify },
        max_checkpoint_bytes: file.checkpoints.max_file_bytes,
        pricing,
        trusted_workspaces,
        untrusted: None,
        mcp_servers,
        hooks,
        notices,
    })
}

/// Checks one `[mcp_servers.NAME]` table: a stdio `command` or a `url`, never both; names of
/// environment variables; positive timeouts.
fn mcp_server(
    name: String,
    t: FileMcpServer,
    span: Range<usize>,
    invalid: &Invalid<'_>,
) -> Result<codewhale_mcp::ServerConfig, ConfigError> {
    use codewhale_mcp::Transport;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(invalid(
            Some(span),
            format!(
                "the server name {name:?} may only hold letters, digits, '_' and '-' (it becomes \
                 part of its tools' names)"
            ),
        ));
    }
    let env_name =
        |v: &Spanned<String>| check::<EnvName>(v.clone(), invalid).map(EnvName::into_inner);
    let transport = match (t.command, t.url) {
        (Some(command), None) => {
            if command.get_ref().trim().is_empty() {
                return Err(invalid(Some(command.span()), "the command is empty".into()));
            }
            Transport::Stdio {
                command: command.into_inner(),
                args: t.args,
                env: t.env.into_iter().collect(),
                env_vars: t.env_vars.iter().map(env_name).collect::<Result<_, _>>()?,
                cwd: t.cwd.map(Into::into),
            }
        }
        (None, Some(url)) => {
            let text = url.get_ref();
            if !(text.starts_with("http://") || text.starts_with("https://")) {
                return Err(invalid(
                    Some(url.span()),
                    format!("{text:?} is not an http:// or https:// URL"),
                ));
            }
            Transport::Http {
                url: url.into_inner(),
                bearer_token_env_var: t.bearer_token_env_var.as_ref().map(env_name).transpose()?,
                headers: t.http_headers.into_iter().collect(),
                env_headers: t
                    .env_http_headers
                    .iter()
                    .map(|(h, v)| env_name(v).map(|v| (h.clone(), v)))
                    .collect::<Result<_, _>>()?,
            }
        }
        (Some(command), Some(_)) => {
            return Err(invalid(
                Some(command.span()),
                "a server has either a `command` (stdio) or a `url` (streamable HTTP), not both"
                    .into(),
            ))
        }
        (None, None) => {
            return Err(invalid(
                Some(span),
                format!(
                    "the server {name:?} needs a `command` (stdio) or a `url` (streamable HTTP)"
                ),
            ))
        }
    };
    let duration = |sec: Option<Spanned<f64>>,
                    ms: Option<Spanned<u64>>,
                    default|
     -> Result<std::time::Duration, ConfigError> {
        Ok(match (sec, ms) {
            (Some(s), _) => check::<Seconds>(s, invalid)?.get(),
            (None, Some(m)) => check::<Millis>(m, invalid)?.get(),
            (None, None) => default,
        })
    };
    let mut server = codewhale_mcp::ServerConfig::new(name, transport);
    server.enabled = t.enabled.unwrap_or(true);
    server.startup_timeout = duration(
        t.startup_timeout_sec,
        t.startup_timeout_ms,
        codewhale_mcp::DEFAULT_STARTUP_TIMEOUT,
    )?;
    server.tool_timeout =
        duration(t.tool_timeout_sec, t.tool_timeout_ms, codewhale_mcp::DEFAULT_TOOL_TIMEOUT)?;
    server.enabled_tools = t.enabled_tools;
    server.disabled_tools = t.disabled_tools;
    server.read_only_tools = t.read_only_tools;
    server.sandbox = t.sandbox.unwrap_or(false);
    Ok(server)
}

/// Refuses a redaction pattern that is not a regular expression or that would redact ordinary
/// text ([`crate::redact::check_pattern`]), naming the file and the line.
fn check_spanned(path: &Path, text: &str, patterns: &[Spanned<String>]) -> Result<(), ConfigError> {
    for pattern in patterns {
        if let Err(reason) = crate::redact::check_pattern(pattern.get_ref()) {
            let (line, _) = locate(text, pattern.span().start);
            return Err(ConfigError::Pattern { path: path.to_owned(), line, reason });
        }
    }
    Ok(())
}

/// Checks the `[redaction] patterns` of a config file's `text` (already parsed once, so it is
/// valid): what a trusted workspace's file must pass before its patterns are used.
pub(crate) fn check_patterns(
    path: &Path,
    text: &str,
    patterns: &[String],
) -> Result<(), ConfigError> {
    #[derive(Deserialize)]
    struct Only {
        #[serde(default)]
        redaction: FileRedaction,
    }
    if patterns.is_empty() {
        return Ok(());
    }
    let only: Only = toml::from_str(text).map_err(|e| ConfigError::Invalid {
        path: path.to_owned(),
        line: 1,
        key: "redaction.patterns".into(),
        message: e.message().trim().to_owned(),
    })?;
    check_spanned(path, text, &only.redaction.patterns)
}

/// Where the server table `name` is first written (its `[mcp_servers.NAME]` line or its first
/// dotted key), for errors about the table as a whole; the file's start when not found.
fn table_span(text: &str, name: &str) -> Range<usize> {
    [format!("mcp_servers.{name}"), format!("mcp_servers.\"{name}\"")]
        .iter()
        .find_map(|needle| text.find(needle.as_str()))
        .map_or(0..0, |at| at..at)
}

/// How an error names the file, the line (of a span) and the key.
type Invalid<'a> = dyn Fn(Option<Range<usize>>, String) -> ConfigError + 'a;

/// `v` checked as a `T`; a failure names `v`'s line and key.
fn check<T: ConfigValue>(v: Spanned<T::Raw>, invalid: &Invalid<'_>) -> Result<T, ConfigError> {
    let span = v.span();
    T::check(v.into_inner()).map_err(|reason| invalid(Some(span), reason))
}

/// [`check`] for a key that may be absent.
fn checked<T: ConfigValue>(
    v: Option<Spanned<T::Raw>>,
    invalid: &Invalid<'_>,
) -> Result<Option<T>, ConfigError> {
    v.map(|v| check(v, invalid)).transpose()
}

/// The 1-based line of byte `offset` and the dotted key defined on that line (with its table).
fn locate(text: &str, offset: usize) -> (usize, String) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or_default();
    // An error at the very end (after a final newline) is on the last line, not past it.
    let line_no = (before.matches('\n').count() + 1).min(text.lines().count().max(1));
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

pub(super) fn parse_provider(name: &str) -> Option<ProviderKind> {
    match name.trim().to_ascii_lowercase().as_str() {
        "openai" => Some(ProviderKind::OpenAi),
        "anthropic" => Some(ProviderKind::Anthropic),
        "openai-responses" | "responses" => Some(ProviderKind::OpenAiResponses),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_cap_is_read_bounded_and_never_taken_from_an_untrusted_workspace() {
        let path = Path::new("config.toml");
        let c = parse_scoped(path, "[shell]\nmax_processes = 64\n", Scope::User).unwrap();
        assert_eq!(c.shell.max_processes, Some(64));
        let e = parse_scoped(path, "[shell]\nmax_processes = 2\n", Scope::User).unwrap_err();
        assert!(e.to_string().contains("use at least 8"), "{e}");
        // A workspace must not lift the cap: it is one of the keys trust decides.
        let mut ws =
            parse_scoped(path, "[shell]\nmax_processes = 99999\n", Scope::Workspace).unwrap();
        assert_eq!(ws.gated_keys(), ["shell.max_processes"]);
        ws.clear_gated();
        assert_eq!(ws.shell.max_processes, None);
    }
}
