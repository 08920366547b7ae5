//! A session as a `task` child ([`crate::subagent`]): what it takes from its parent when it
//! opens, and how it closes without ending what it shares. Invariant: a child never ends a
//! handle it shares with its parent (MCP servers, background commands, process groups); the
//! parent's [`Session::close`] does.

use super::mcp_tools::McpTools;
use super::Session;
use crate::error::EngineError;

impl Session {
    /// Makes this freshly opened session `parent`'s `task` child: it is offered what `link`
    /// allows, takes the parent's approval mode and grants, and shares its sandbox, MCP
    /// servers, background commands, process groups and guard — so what it starts is ended
    /// with the parent. The notices of its opening are the parent's to have shown.
    pub(crate) fn share_parent(&mut self, parent: &Session, link: crate::tools::task::Link) {
        self.settings.subagent = Some(link);
        self.settings.policy = parent.settings.policy.clone();
        self.services.sandbox = parent.services.sandbox.clone();
        self.services.mcp = McpTools::new(parent.mcp().clone());
        self.services.background = parent.services.background.clone();
        self.services.groups = parent.services.groups.clone();
        self.services.guard = parent.services.guard.clone();
        self.state.notices.clear();
    }

    /// Syncs and closes a `task` child's journal, keeping its counts. What it shares with the
    /// parent (MCP servers, background commands, process groups) stays for the parent.
    pub(crate) async fn close_child(self) -> Result<(), EngineError> {
        if let Some(counts) = self.state.counts.new_since_load() {
            super::counts::store_sidecar(self.state.journal.path(), counts);
        }
        let journal = self.state.journal;
        match tokio::task::spawn_blocking(move || journal.close()).await {
            Ok(result) => result.map_err(EngineError::from),
            Err(join) => Err(EngineError::Write(codewhale_journal::WriteError {
                path: String::new(),
                message: format!("the journal writer stopped unexpectedly: {join}"),
            })),
        }
    }
}
