//! One `[mcp_servers.NAME]` table → the MCP crate's server configuration: the transport it
//! names, its environment variables' names and its timeouts, each checked.
//!
//! Invariant: a server has exactly one transport, a stdio `command` or a `url`; a table with
//! both or neither is an error naming the table.

use std::ops::Range;

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

/// Where the server table `name` is first written (its `[mcp_servers.NAME]` line or its first
/// dotted key), for errors about the table as a whole; the file's start when not found.
pub(super) fn table_span(text: &str, name: &str) -> Range<usize> {
    [format!("mcp_servers.{name}"), format!("mcp_servers.\"{name}\"")]
        .iter()
        .find_map(|needle| text.find(needle.as_str()))
        .map_or(0..0, |at| at..at)
}
