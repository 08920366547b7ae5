//! Folding configurations: one laid over another (the user's file, then the workspace's, then
//! the command line), and the settings a workspace's file may set only once it is trusted.
//!
//! Invariant: [`Config::gated_keys`] and [`Config::clear_gated`] name the same settings, so
//! what an untrusted workspace is told was left out is exactly what was left out.

use super::file::parse_provider;
use super::{Config, ConfigError, Overrides};

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
}
