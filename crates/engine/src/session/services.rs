//! The handles a session acts through: the provider client, the background-command registry
//! and the process groups of running shell calls, the MCP servers and their tools, the
//! sandbox, the guard of protected places, the redactor, the key variables hidden from
//! commands, and plan mode's scratch directory.
//!
//! Owned by [`super::Session`] and reached only through its methods. Invariants: each handle
//! is made once, when the session opens (the scratch directory when a command first needs
//! it), and never replaced afterwards — except that a `task` child takes its parent's shared
//! handles ([`super::Session::share_parent`]) before it runs, so that what it starts is ended
//! with the parent's. Whatever is shared (`Arc`s, the MCP servers) is ended by the session
//! that opened it: [`super::Session::close`], never a child's close.
//!
//! Borderline: the sandbox is resolved from settings at open, but it is what confines every
//! command (a running confinement, with the helper and namespaces it found), so it is a
//! service; so is the redactor, which acts on every entry before it is journaled.

use std::sync::Arc;

use codewhale_provider::Client;

use super::mcp_tools::McpTools;
use crate::redact::Redactor;
use crate::tools::process::ProcessGroups;
use crate::tools::{self, BackgroundRegistry};

/// Handles to what acts for the session.
#[derive(Debug)]
pub(crate) struct SessionServices {
    /// The provider client (shared connections).
    pub(super) client: Client,
    /// Background commands started by the shell tool.
    pub(super) background: Arc<BackgroundRegistry>,
    /// Process groups of shell calls still running; ended when the session closes.
    pub(super) groups: Arc<ProcessGroups>,
    /// The configured MCP servers (started by the engine task, stopped on close) and the
    /// tools of theirs requests offer ([`super::Session::refresh_mcp_tools`]).
    pub(super) mcp: McpTools,
    /// How shell commands are confined ([`crate::sandbox`]).
    pub(super) sandbox: crate::sandbox::SandboxState,
    /// What git and Codewhale execute, guarded around every command ([`tools::guard`]).
    pub(super) guard: Arc<tools::guard::GitGuard>,
    /// Replaces secrets before anything is journaled or logged.
    pub(super) redactor: Redactor,
    /// The key variables no command may see: the built-in ones and `api_key_env`.
    pub(super) hidden_env: Arc<Vec<String>>,
    /// Plan mode's private temp dir, the only place its commands may write
    /// ([`crate::plan_mode`]); made when a command first needs it, removed with the session.
    pub(super) plan_scratch: crate::plan_mode::Scratch,
}

impl super::Session {
    /// Plan mode's scratch directory.
    pub(crate) fn plan_scratch(&self) -> &crate::plan_mode::Scratch {
        &self.services.plan_scratch
    }

    /// The provider client (shared connections; cheap to clone).
    pub fn client(&self) -> &Client {
        &self.services.client
    }

    /// Background commands started by the shell tool.
    pub fn background(&self) -> &Arc<BackgroundRegistry> {
        &self.services.background
    }

    /// What the tools of a call in this session need.
    pub fn tool_context(&self, cancel: tokio_util::sync::CancellationToken) -> tools::ToolContext {
        tools::ToolContext {
            workspace: self.settings.workspace.clone(),
            background: self.services.background.clone(),
            groups: self.services.groups.clone(),
            shell_env: Arc::new(self.settings.config.shell.env.clone()),
            sandbox: self.services.sandbox.sandbox.clone(),
            cancel,
            files: Some(Arc::new(self.file_store())),
            guard: Some(self.services.guard.clone()),
            hidden_env: self.services.hidden_env.clone(),
            git_writable: self.settings.config.sandbox.git_writable.unwrap_or(false),
            allow_protected: false,
        }
    }

    /// The guard of the workspace's protected places.
    pub fn guard(&self) -> &Arc<tools::guard::GitGuard> {
        &self.services.guard
    }

    /// How shell commands are confined, for `/approval`.
    pub fn sandbox_report(&self) -> codewhale_protocol::SandboxReport {
        codewhale_protocol::SandboxReport {
            mode: self.services.sandbox.mode,
            detail: self.services.sandbox.detail.clone(),
            structure: self.services.sandbox.structure.clone(),
            keys: self.keys_report(),
        }
    }

    /// Whether a command could read the session's keys, in words (`/status`).
    fn keys_report(&self) -> String {
        if self.services.sandbox.namespaces() {
            "keys: hidden from commands (PID namespace: no ancestor is visible)".to_owned()
        } else if crate::sandbox::keys::readable_without_pid_namespace(&self.services.hidden_env) {
            "keys: readable by commands (no PID namespace)".to_owned()
        } else {
            "keys: not readable by commands (Codewhale runs without them in its environment \
             and is not dumpable)"
                .to_owned()
        }
    }

    /// The session's redactor (built-in rules, the configured patterns, its own API key).
    pub fn redactor(&self) -> &Redactor {
        &self.services.redactor
    }

    /// The session's MCP servers.
    pub fn mcp(&self) -> &codewhale_mcp::Servers {
        self.services.mcp.servers()
    }

    /// Fixes (on the first call, possibly waiting for a server without a cached list) or
    /// refreshes (after a server announced a change) the MCP tools the next request offers,
    /// and recounts the schemas when they changed. `cancel` ends a wait.
    pub async fn refresh_mcp_tools(&mut self, cancel: &tokio_util::sync::CancellationToken) {
        if self.services.mcp.refresh(cancel).await {
            self.refresh_system_prompt();
        }
    }
}
