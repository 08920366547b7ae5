//! What one configured server is: how to reach it, how long to wait for it, and which of its
//! tools the model may see and call without asking. Parsing the TOML (and errors that name the
//! file, line and key) belongs to the engine's config module; this is the checked result.

use std::path::PathBuf;
use std::time::Duration;

/// How long a server may take to start and list its tools, unless configured.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one tool call may take, unless configured.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// One `[mcp_servers.NAME]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The table's name: the `<server>` of `mcp__<server>__<tool>`.
    pub name: String,
    pub transport: Transport,
    /// `enabled = false` keeps the table but starts nothing.
    pub enabled: bool,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// When set, only these tools are offered.
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered.
    pub disabled_tools: Vec<String>,
    /// Tools that run without asking in the `ask` and `auto-edit` approval modes.
    pub read_only_tools: Vec<String>,
    /// `sandbox = true`: the stdio server is to run confined like shell commands (the engine
    /// fills [`ServerConfig::launcher`] accordingly).
    pub sandbox: bool,
    /// A program and its leading arguments that a stdio server's command line is appended to
    /// (the engine's sandbox helper and its rules); empty: the command is started as is.
    pub launcher: Vec<String>,
}

impl ServerConfig {
    /// A server reached by `transport`, with the defaults for everything else.
    pub fn new(name: impl Into<String>, transport: Transport) -> ServerConfig {
        ServerConfig {
            name: name.into(),
            transport,
            enabled: true,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            read_only_tools: Vec::new(),
            sandbox: false,
            launcher: Vec::new(),
        }
    }

    /// Whether the filters let the model see `tool`.
    pub fn offers(&self, tool: &str) -> bool {
        let listed = self.enabled_tools.as_ref().is_none_or(|only| only.iter().any(|t| t == tool));
        listed && !self.disabled_tools.iter().any(|t| t == tool)
    }

    /// Whether `tool` runs without asking (it is in `read_only_tools`).
    pub fn is_read_only(&self, tool: &str) -> bool {
        self.read_only_tools.iter().any(|t| t == tool)
    }

    /// Where the server is, in words, for `/mcp` and `mcp list`.
    pub fn describe(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => {
                let mut words = vec![command.clone()];
                words.extend(args.iter().cloned());
                words.join(" ")
            }
            Transport::Http { url, .. } => url.clone(),
        }
    }

    /// What identifies the server for the tool-list cache: a cached list is used only for
    /// the same command (or URL) under the same name.
    pub fn fingerprint(&self) -> String {
        use sha2::Digest as _;
        let mut hash = sha2::Sha256::new();
        hash.update(self.name.as_bytes());
        hash.update([0]);
        match &self.transport {
            Transport::Stdio { command, args, cwd, .. } => {
                hash.update(command.as_bytes());
                for arg in args {
                    hash.update([0]);
                    hash.update(arg.as_bytes());
                }
                if let Some(cwd) = cwd {
                    hash.update([1]);
                    hash.update(cwd.display().to_string().as_bytes());
                }
            }
            Transport::Http { url, .. } => hash.update(url.as_bytes()),
        }
        hash.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
    }
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Variables set for the server (on top of the few passed through, see
        /// [`crate::client::PASSED_THROUGH`]).
        env: Vec<(String, String)>,
        /// Names of further variables of Codewhale's own environment to pass through.
        env_vars: Vec<String>,
        /// The server's working directory (default: the workspace).
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        url: String,
        /// The variable holding a bearer token sent as `Authorization: Bearer …`.
        bearer_token_env_var: Option<String>,
        /// Headers sent as given.
        headers: Vec<(String, String)>,
        /// Headers whose values come from these environment variables.
        env_headers: Vec<(String, String)>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio() -> Transport {
        Transport::Stdio {
            command: "node".into(),
            args: vec!["server.js".into()],
            env: Vec::new(),
            env_vars: Vec::new(),
            cwd: None,
        }
    }

    #[test]
    fn filters_decide_what_is_offered() {
        let mut server = ServerConfig::new("s", stdio());
        assert!(server.offers("echo"));
        server.disabled_tools = vec!["echo".into()];
        assert!(!server.offers("echo"));
        server.enabled_tools = Some(vec!["sum".into()]);
        assert!(server.offers("sum") && !server.offers("other"));
    }

    #[test]
    fn the_fingerprint_follows_the_command_not_the_timeouts() {
        let a = ServerConfig::new("s", stdio());
        let mut b = a.clone();
        b.tool_timeout = Duration::from_secs(1);
        assert_eq!(a.fingerprint(), b.fingerprint());
        let c = ServerConfig::new("t", stdio());
        assert_ne!(a.fingerprint(), c.fingerprint());
        assert_eq!(a.describe(), "node server.js");
    }
}
