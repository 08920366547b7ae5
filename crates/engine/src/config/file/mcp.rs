//! One `[mcp_servers.NAME]` table → the MCP crate's server configuration: the transport it
//! names, its environment variables' names and its timeouts, each checked.
//!
//! Invariant: a server has exactly one transport, a stdio `command` or a `url`; a table with
//! both or neither is an error naming the table.

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

use codewhale_mcp::Transport;
use toml::Spanned;

use super::locate::{check, Invalid};
use super::shape::FileMcpServer;
use crate::config::values::{EnvName, Millis, Seconds};
use crate::config::ConfigError;

/// Checks one `[mcp_servers.NAME]` table: a stdio `command` or a `url`, never both; names of
/// environment variables; positive timeouts.
pub(super) fn mcp_server(
    name: String,
    t: FileMcpServer,
    span: Range<usize>,
    invalid: &Invalid<'_>,
) -> Result<codewhale_mcp::ServerConfig, ConfigError> {
    check_name(&name, &span, invalid)?;
    let transport =
        match (t.command, t.url) {
            (Some(command), None) => stdio(command, t.args, t.env, &t.env_vars, t.cwd, invalid)?,
            (None, Some(url)) => http(
                url,
                t.bearer_token_env_var.as_ref(),
                t.http_headers,
                &t.env_http_headers,
                invalid,
            )?,
            (Some(command), Some(_)) => return Err(invalid(
                Some(command.span()),
                "a server has either a `command` (stdio) or a `url` (streamable HTTP), not both"
                    .into(),
            )),
            (None, None) => {
                return Err(invalid(
                    Some(span),
                    format!(
                    "the server {name:?} needs a `command` (stdio) or a `url` (streamable HTTP)"
                ),
                ))
            }
        };
    let mut server = codewhale_mcp::ServerConfig::new(name, transport);
    server.enabled = t.enabled.unwrap_or(true);
    server.startup_timeout = duration(
        t.startup_timeout_sec,
        t.startup_timeout_ms,
        codewhale_mcp::DEFAULT_STARTUP_TIMEOUT,
        invalid,
    )?;
    server.tool_timeout = duration(
        t.tool_timeout_sec,
        t.tool_timeout_ms,
        codewhale_mcp::DEFAULT_TOOL_TIMEOUT,
        invalid,
    )?;
    server.enabled_tools = t.enabled_tools;
    server.disabled_tools = t.disabled_tools;
    server.read_only_tools = t.read_only_tools;
    server.sandbox = t.sandbox.unwrap_or(false);
    Ok(server)
}

/// A server's name becomes part of its tools' names: letters, digits, '_' and '-' only.
fn check_name(name: &str, span: &Range<usize>, invalid: &Invalid<'_>) -> Result<(), ConfigError> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(invalid(
            Some(span.clone()),
            format!(
                "the server name {name:?} may only hold letters, digits, '_' and '-' (it becomes \
                 part of its tools' names)"
            ),
        ));
    }
    Ok(())
}

/// A variable's name, checked as one.
fn env_name(v: &Spanned<String>, invalid: &Invalid<'_>) -> Result<String, ConfigError> {
    check::<EnvName>(v.clone(), invalid).map(EnvName::into_inner)
}

/// A stdio server: a command that is not blank, and the names of the variables it is given.
fn stdio(
    command: Spanned<String>,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    env_vars: &[Spanned<String>],
    cwd: Option<String>,
    invalid: &Invalid<'_>,
) -> Result<Transport, ConfigError> {
    if command.get_ref().trim().is_empty() {
        return Err(invalid(Some(command.span()), "the command is empty".into()));
    }
    Ok(Transport::Stdio {
        command: command.into_inner(),
        args,
        env: env.into_iter().collect(),
        env_vars: env_vars.iter().map(|v| env_name(v, invalid)).collect::<Result<_, _>>()?,
        cwd: cwd.map(Into::into),
    })
}

/// A streamable HTTP server: an http:// or https:// URL, and the names of the variables its
/// token and headers come from.
fn http(
    url: Spanned<String>,
    bearer_token_env_var: Option<&Spanned<String>>,
    http_headers: BTreeMap<String, String>,
    env_http_headers: &BTreeMap<String, Spanned<String>>,
    invalid: &Invalid<'_>,
) -> Result<Transport, ConfigError> {
    let text = url.get_ref();
    if !(text.starts_with("http://") || text.starts_with("https://")) {
        return Err(invalid(
            Some(url.span()),
            format!("{text:?} is not an http:// or https:// URL"),
        ));
    }
    Ok(Transport::Http {
        url: url.into_inner(),
        bearer_token_env_var: bearer_token_env_var.map(|v| env_name(v, invalid)).transpose()?,
        headers: http_headers.into_iter().collect(),
        env_headers: env_http_headers
            .iter()
            .map(|(h, v)| env_name(v, invalid).map(|v| (h.clone(), v)))
            .collect::<Result<_, _>>()?,
    })
}

/// A timeout given in seconds or (the `_ms` key) milliseconds, seconds winning; `default`
/// when neither is set.
fn duration(
    sec: Option<Spanned<f64>>,
    ms: Option<Spanned<u64>>,
    default: Duration,
    invalid: &Invalid<'_>,
) -> Result<Duration, ConfigError> {
    Ok(match (sec, ms) {
        (Some(s), _) => check::<Seconds>(s, invalid)?.get(),
        (None, Some(m)) => check::<Millis>(m, invalid)?.get(),
        (None, None) => default,
    })
}

/// Where the server table `name` is first written (its `[mcp_servers.NAME]` line or its first
/// dotted key), for errors about the table as a whole; the file's start when not found.
pub(super) fn table_span(text: &str, name: &str) -> Range<usize> {
    [format!("mcp_servers.{name}"), format!("mcp_servers.\"{name}\"")]
        .iter()
        .find_map(|needle| text.find(needle.as_str()))
        .map_or(0..0, |at| at..at)
}
