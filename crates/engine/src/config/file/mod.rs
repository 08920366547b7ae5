//! One config file's text → a [`Config`]: the checks on each value, table by table, and errors
//! that name the file, the line and the key. The TOML shape is in [`shape`], where an error
//! points in [`locate`], and an `[mcp_servers.NAME]` table's own checks in [`mcp`].
//!
//! Invariants: an unknown key or a bad value is an error (never silently ignored); a key that is
//! only meaningful in the user's own file (`trusted_workspaces`) is an error in a workspace file,
//! so a repository can never declare itself trusted.

mod locate;
mod mcp;
mod shape;

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use codewhale_provider::{OpenAiServer, ProviderKind};
use serde::Deserialize;
use toml::Spanned;

use super::values::{ConfigValue, EnvName, Fraction, Seconds, SecondsOrOff, Tokens};
use super::TuiConfig;
use super::{CompactionConfig, Config, ConfigError, RedactionConfig, ShellConfig, ToolsConfig};
use crate::sandbox::{SandboxConfig, SandboxMode};
use locate::{checked, locate, Invalid};
use mcp::{mcp_server, table_span};
use shape::{
    FileCompaction, FileConfig, FileMcpServer, FileProvider, FileRedaction, FileSandbox, FileShell,
    FileTools,
};

/// Which file is being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `$CODEWHALE_HOME/config.toml`.
    User,
    /// A workspace's `.codewhale/config.toml`.
    Workspace,
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
    let provider = provider_keys(file.provider.as_ref(), &invalid)?;
    let server = server(file.server, &invalid)?;
    let compaction = compaction_table(file.compaction, &invalid)?;
    let idle_timeout = idle_timeout(file.idle_timeout_sec, &provider, &invalid)?;
    let reasoning_effort = reasoning_effort(file.reasoning_effort, &invalid)?;
    let api_key_env = checked::<EnvName>(file.api_key_env, &invalid)?.map(EnvName::into_inner);
    let trusted_workspaces = trusted_workspaces(file.trusted_workspaces, scope, &invalid)?;
    // A workspace's patterns are not even compiled here: until the workspace is trusted they
    // are ignored, and [`check_patterns`] checks them once it is.
    if scope == Scope::User {
        check_spanned(path, text, &file.redaction.patterns)?;
    }
    let sandbox = sandbox_table(file.sandbox, &invalid)?;
    let patterns = file.redaction.patterns.into_iter().map(Spanned::into_inner).collect();
    let shell = shell_table(file.shell, &invalid)?;
    let tools = tools_table(file.tools, &invalid)?;
    let mcp_servers = mcp_servers(text, file.mcp_servers, &invalid)?;
    let pricing = pricing(file.pricing, &invalid)?;
    Ok(Config {
        provider: provider.kind,
        model: file.model,
        base_url: file.base_url,
        server,
        context_window: checked::<Tokens>(file.context_window, &invalid)?.map(Tokens::get),
        reserved_output: checked::<Tokens>(file.reserved_output, &invalid)?.map(Tokens::get),
        approval: file.approval,
        api_key_env,
        idle_timeout,
        hosted: provider.hosted,
        reasoning_effort,
        compaction,
        shell,
        tools,
        redaction: RedactionConfig { patterns },
        sandbox,
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

/// What `provider = "…"` or a `[provider]` table sets, and where it was written (the
/// table's keys have no span of their own, so their errors name the table).
struct ProviderKeys {
    kind: Option<ProviderKind>,
    idle_timeout_sec: Option<f64>,
    hosted: Option<bool>,
    span: Option<Range<usize>>,
}

/// The `provider` key or table: its name checked, its other keys passed on.
fn provider_keys(
    provider: Option<&Spanned<FileProvider>>,
    invalid: &Invalid<'_>,
) -> Result<ProviderKeys, ConfigError> {
    let (provider_name, table_idle, hosted, provider_span) = match provider {
        Some(p) => match p.get_ref() {
            FileProvider::Name(name) => (Some(name.clone()), None, None, Some(p.span())),
            FileProvider::Table(t) => {
                (t.name.clone(), t.idle_timeout_sec, t.hosted, Some(p.span()))
            }
        },
        None => (None, None, None, None),
    };
    let kind = match provider_name {
        Some(name) => Some(parse_provider(&name).ok_or_else(|| {
            invalid(
                provider_span.clone(),
                format!("{name:?} is not `openai`, `anthropic` or `openai-responses`"),
            )
        })?),
        None => None,
    };
    Ok(ProviderKeys { kind, idle_timeout_sec: table_idle, hosted, span: provider_span })
}

/// The `server` key: one of the OpenAI-compatible dialects Codewhale knows.
fn server(
    server: Option<Spanned<String>>,
    invalid: &Invalid<'_>,
) -> Result<Option<OpenAiServer>, ConfigError> {
    Ok(match server {
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
    })
}

/// The `idle_timeout_sec` key, at the top level or (without a span of its own) in the
/// `[provider]` table.
fn idle_timeout(
    top_level: Option<Spanned<f64>>,
    provider: &ProviderKeys,
    invalid: &Invalid<'_>,
) -> Result<Option<Duration>, ConfigError> {
    let idle_timeout = match top_level {
        Some(t) => checked::<Seconds>(Some(t), invalid)?,
        // The table's key has no span of its own: the error names the `[provider]` table.
        None => provider
            .idle_timeout_sec
            .map(Seconds::check)
            .transpose()
            .map_err(|m| invalid(provider.span.clone(), m))?,
    }
    .map(Seconds::get);
    Ok(idle_timeout)
}

/// The `reasoning_effort` key: one of the four efforts the providers take.
fn reasoning_effort(
    effort: Option<Spanned<String>>,
    invalid: &Invalid<'_>,
) -> Result<Option<String>, ConfigError> {
    Ok(match effort {
        Some(e) if !matches!(e.get_ref().as_str(), "minimal" | "low" | "medium" | "high") => {
            return Err(invalid(
                Some(e.span()),
                "must be one of \"minimal\", \"low\", \"medium\" or \"high\"".into(),
            ))
        }
        e => e.map(Spanned::into_inner),
    })
}

/// The `[compaction]` table: its marks are fractions, its timeouts seconds.
fn compaction_table(
    c: FileCompaction,
    invalid: &Invalid<'_>,
) -> Result<CompactionConfig, ConfigError> {
    // The fractions' errors end with an example: the key's default.
    let fraction = |v, example: &str| {
        checked::<Fraction>(v, &|span, m| invalid(span, format!("{m}, e.g. {example}")))
    };
    let threshold = fraction(c.threshold, "0.8")?.map(Fraction::get);
    let background_at = fraction(c.background_at, "0.6")?.map(Fraction::get);
    let branch_summary_timeout =
        checked::<Seconds>(c.branch_summary_timeout_sec, invalid)?.map(Seconds::get);
    let max_summary_requests = match c.max_summary_requests {
        Some(n) if *n.get_ref() == 0 => {
            return Err(invalid(
                Some(n.span()),
                "must be at least 1: a summary pass sends at least one request".into(),
            ))
        }
        n => n.map(Spanned::into_inner),
    };
    let idle_after = checked::<SecondsOrOff>(c.idle_after_sec, invalid)?.map(SecondsOrOff::get);
    Ok(CompactionConfig {
        threshold,
        compaction_model: c.compaction_model,
        retained_user_tokens: c.retained_user_tokens,
        background: c.background,
        background_at,
        branch_summary_timeout,
        branch_summaries: c.branch_summaries,
        max_summary_requests,
        idle_after,
    })
}

/// The `trusted_workspaces` list: read from the user's own file only.
fn trusted_workspaces(
    list: Option<Spanned<Vec<String>>>,
    scope: Scope,
    invalid: &Invalid<'_>,
) -> Result<Vec<String>, ConfigError> {
    Ok(match list {
        Some(list) if scope == Scope::Workspace => {
            return Err(invalid(
                Some(list.span()),
                "is only read from your own config.toml in the Codewhale home; a workspace \
                 cannot trust itself"
                    .into(),
            ))
        }
        list => list.map(Spanned::into_inner).unwrap_or_default(),
    })
}

/// The `[sandbox]` table: its mode is one of the modes the sandbox knows.
fn sandbox_table(s: FileSandbox, invalid: &Invalid<'_>) -> Result<SandboxConfig, ConfigError> {
    let sandbox_mode = match s.mode {
        Some(mode) => {
            Some(mode.get_ref().parse::<SandboxMode>().map_err(|e| invalid(Some(mode.span()), e))?)
        }
        None => None,
    };
    Ok(SandboxConfig {
        mode: sandbox_mode,
        writable: s.writable,
        network: s.network,
        namespaces: s.namespaces,
        git_writable: s.git_writable,
    })
}

/// The `[shell]` table: a process cap no lower than [`MIN_PROCESSES`].
fn shell_table(s: FileShell, invalid: &Invalid<'_>) -> Result<ShellConfig, ConfigError> {
    let max_processes = match s.max_processes {
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
    Ok(ShellConfig {
        env: s.env.into_iter().collect(),
        keep_background: s.keep_background,
        max_processes,
    })
}

/// The `[tools]` table: each `web_fetch_allow` entry a host (normalized), at least one
/// subagent, a blank subagent model read as none.
fn tools_table(t: FileTools, invalid: &Invalid<'_>) -> Result<ToolsConfig, ConfigError> {
    let mut web_fetch_allow = Vec::with_capacity(t.web_fetch_allow.len());
    for host in t.web_fetch_allow {
        let normal =
            super::web_fetch_entry(host.get_ref()).map_err(|e| invalid(Some(host.span()), e))?;
        web_fetch_allow.push(normal);
    }
    let max_subagents = match t.max_subagents {
        Some(n) if *n.get_ref() == 0 => {
            let message = "max_subagents must be at least 1 (subagents run one at a time then)";
            return Err(invalid(Some(n.span()), message.to_owned()));
        }
        n => n.map(Spanned::into_inner),
    };
    let subagent_model = t.subagent_model.filter(|m| !m.trim().is_empty());
    Ok(ToolsConfig { web_fetch: t.web_fetch, web_fetch_allow, subagent_model, max_subagents })
}

/// Every `[mcp_servers.NAME]` table, checked one by one ([`mcp_server`]).
fn mcp_servers(
    text: &str,
    tables: BTreeMap<String, FileMcpServer>,
    invalid: &Invalid<'_>,
) -> Result<Vec<codewhale_mcp::ServerConfig>, ConfigError> {
    let mut mcp_servers = Vec::with_capacity(tables.len());
    for (name, table) in tables {
        let span = table_span(text, &name);
        mcp_servers.push(mcp_server(name, table, span, invalid)?);
    }
    Ok(mcp_servers)
}

/// The `[pricing]` table: each model's prices in US dollars per million tokens, 0 or more;
/// model ids lowercased.
fn pricing(
    prices: BTreeMap<String, Spanned<codewhale_provider::Price>>,
    invalid: &Invalid<'_>,
) -> Result<Vec<(String, codewhale_provider::Price)>, ConfigError> {
    let mut pricing = Vec::new();
    for (model, price) in prices {
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
    Ok(pricing)
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
