//! Connecting to one server with rmcp: a child process over stdio or a streamable-HTTP
//! endpoint, the MCP handshake, and what the server tells us on its own (its tool list
//! changed).
//!
//! Invariants: a stdio server runs in its own process group with a cleared environment plus
//! [`PASSED_THROUGH`] and what its table sets — Codewhale's API keys never reach a server that
//! was not given them; its stderr is read into the log (never onto the terminal) and the last
//! lines are kept to explain a failure; its messages are bounded per line
//! ([`crate::stdio`]); the caller bounds the handshake with the server's startup timeout.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::AsyncBufReadExt;

use crate::config::{ServerConfig, Transport};
use crate::stdio::ChildTransport;

/// Variables of Codewhale's environment every stdio server gets: what programs need to find
/// themselves, their home, their locale and a proxy. Nothing that holds a secret.
pub const PASSED_THROUGH: &[&str] = &[
    "HOME",
    "PATH",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
];

/// How many of a server's last stderr lines explain its failure.
const STDERR_LINES: usize = 5;

/// A live connection.
pub type Service = RunningService<RoleClient, Handler>;

/// Why a server could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot start `{command}`: {source}")]
    Spawn { command: String, source: std::io::Error },
    #[error("the variable {0} (named by bearer_token_env_var or env_http_headers) is not set")]
    MissingVariable(String),
    #[error("{0:?} is not a valid HTTP header")]
    BadHeader(String),
    #[error("the MCP handshake failed: {0}")]
    Handshake(String),
}

/// Receives the server's notifications.
#[derive(Debug, Clone)]
pub struct Handler {
    pub(crate) tools_changed: tokio::sync::mpsc::UnboundedSender<()>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        let _ = self.tools_changed.send(());
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("codewhale", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// The last lines a stdio server wrote to stderr.
#[derive(Debug, Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        if let Ok(mut lines) = self.0.lock() {
            if lines.len() == STDERR_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }

    /// The last line, if the server wrote any.
    pub fn last(&self) -> Option<String> {
        self.0.lock().ok().and_then(|l| l.back().cloned())
    }
}

/// The process group of a stdio server (its leader's pid): ended as a whole when the server
/// stops, on its own or with the session, so children it started (a `sleep 300 &`) do not
/// outlive it even after the leader has exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group(u32);

impl Group {
    /// Whether the group's leader (the server itself) has exited, without reaping it. A child
    /// that inherited the server's stdout keeps the pipe open after the server exited, so the
    /// transport alone would never notice.
    pub fn leader_exited(self) -> bool {
        use rustix::process::{waitid, Pid, WaitId, WaitIdOptions};
        let Some(pid) = i32::try_from(self.0).ok().and_then(Pid::from_raw) else { return true };
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        match waitid(WaitId::Pid(pid), options) {
            Ok(status) => status.is_some(),
            // Already reaped: gone.
            Err(rustix::io::Errno::CHILD) => true,
            Err(_) => false,
        }
    }

    /// Ends every process still in the group as the shell tool's commands end (SIGTERM, a
    /// grace, SIGKILL). Called right after the server stopped: while any member lives the
    /// group id cannot be reused, and an empty group is a no-op.
    pub async fn end(self) {
        if codewhale_process::end_group(self.0).await {
            tracing::debug!(group = self.0, "ended what an MCP server left running");
        }
    }
}

/// Starts (or reaches) the server and performs the handshake. `var` reads Codewhale's
/// environment. A stdio server's process group is recorded in `group` as soon as it is
/// spawned, so it can be ended even if the handshake never completes.
pub async fn connect(
    config: &ServerConfig,
    workspace: &Path,
    var: &(dyn Fn(&str) -> Option<String> + Send + Sync),
    handler: Handler,
    stderr: &StderrTail,
    group: &std::sync::Mutex<Option<Group>>,
) -> Result<Service, ConnectError> {
    match &config.transport {
        Transport::Stdio { command, args, env, env_vars, cwd } => {
            let mut cmd = match config.launcher.split_first() {
                Some((program, leading)) => {
                    let mut cmd = tokio::process::Command::new(program);
                    cmd.args(leading).arg(command);
                    cmd
                }
                None => tokio::process::Command::new(command),
            };
            cmd.args(args).env_clear().kill_on_drop(true);
            for name in PASSED_THROUGH.iter().copied().chain(env_vars.iter().map(String::as_str)) {
                if let Some(value) = var(name) {
                    cmd.env(name, value);
                }
            }
            cmd.envs(env.iter().map(|(k, v)| (k, v)));
            let dir = cwd.as_ref().map_or_else(|| workspace.to_path_buf(), |c| workspace.join(c));
            cmd.current_dir(dir);
            let spawn_error = |source| ConnectError::Spawn { command: command.clone(), source };
            let (transport, pipe) = ChildTransport::spawn(cmd).map_err(spawn_error)?;
            if let (Some(id), Ok(mut slot)) = (transport.id(), group.lock()) {
                *slot = Some(Group(id));
            }
            if let Some(pipe) = pipe {
                let tail = stderr.clone();
                let server = config.name.clone();
                tokio::spawn(async move {
                    let mut lines = tokio::io::BufReader::new(pipe).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        tracing::debug!(server, "stderr: {line}");
                        tail.push(line);
                    }
                });
            }
            handler.serve(transport).await.map_err(|e| ConnectError::Handshake(e.to_string()))
        }
        Transport::Http { url, bearer_token_env_var, headers, env_headers } => {
            install_crypto();
            let mut transport_config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .max_sse_event_size(MAX_HTTP_EVENT)
                .max_json_response_size(MAX_HTTP_EVENT)
                .max_error_response_size(MAX_HTTP_ERROR);
            if let Some(name) = bearer_token_env_var {
                let token = var(name).ok_or_else(|| ConnectError::MissingVariable(name.clone()))?;
                transport_config = transport_config.auth_header(token);
            }
            let mut map = HashMap::new();
            let named = env_headers.iter().map(|(header, name)| {
                var(name)
                    .map(|value| (header.clone(), value))
                    .ok_or_else(|| ConnectError::MissingVariable(name.clone()))
            });
            for pair in headers.iter().cloned().map(Ok).chain(named) {
                let (name, value) = pair?;
                let header = http::HeaderName::try_from(name.as_str())
                    .map_err(|_| ConnectError::BadHeader(name.clone()))?;
                let value = http::HeaderValue::try_from(value.as_str())
                    .map_err(|_| ConnectError::BadHeader(name.clone()))?;
                map.insert(header, value);
            }
            if !map.is_empty() {
                transport_config = transport_config.custom_headers(map);
            }
            let transport = StreamableHttpClientTransport::from_config(transport_config);
            handler.serve(transport).await.map_err(|e| ConnectError::Handshake(e.to_string()))
        }
    }
}

/// The most an HTTP server's one message may hold, streamed as an SSE event or sent as a JSON
/// body (docs/security.md, *Network reads*): rmcp reads each through this bound and refuses
/// the rest, so a server that sends forever costs bounded memory and a failed call.
pub const MAX_HTTP_EVENT: usize = 32 * 1024 * 1024;
/// The most of a failed HTTP answer's body kept for its error message.
pub const MAX_HTTP_ERROR: usize = 64 * 1024;

/// rmcp's HTTP client needs a process-wide TLS crypto provider; ring is the one the rest of
/// Codewhale uses. Installing twice is harmless.
fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
