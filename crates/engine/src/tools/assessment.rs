//! How the approval policy and the scheduler see a call before it runs: its effect, whether it
//! leaves the workspace, whether it touches a protected file, and what it would run or reach.
//!
//! Invariants: assessing never runs anything and never fails (arguments that do not parse
//! assess as touching nothing, and running them reports the error); a write to one of the
//! [`Protected`] files is always marked protected, so it always asks.

use std::path::PathBuf;

use serde_json::Value;

use super::table::{parse, Call};
use crate::approval::{CallSummary, Effect};
use crate::paths;

/// Files the model may never change without asking, whatever the approval mode and grants:
/// Codewhale's own configuration and trust store, and what git and Codewhale execute in the
/// workspace ([`crate::protected::is_protected`]: every `.git`, `.codewhale/`, instruction
/// files, `core.hooksPath`).
#[derive(Debug, Clone, Default)]
pub struct Protected {
    /// Codewhale's home (its config, trust store, sessions and logs), when known.
    pub home: Option<PathBuf>,
}

impl Protected {
    /// Why `path` (absolute, as resolved for a tool) is protected, if it is.
    pub fn protection(
        &self,
        workspace: &std::path::Path,
        path: &std::path::Path,
    ) -> Option<crate::protected::Protection> {
        crate::protected::is_protected(workspace, path)
    }

    /// Whether `path` (absolute, as resolved for a tool) is one of them: anything under the
    /// home, or a protected place of the workspace. Symlinks are followed, and a hardlink
    /// to the user's config, the trust store or a protected file of the workspace is that file.
    pub fn covers(&self, workspace: &std::path::Path, path: &std::path::Path) -> bool {
        if self.protection(workspace, path).is_some() {
            return true;
        }
        let real = paths::real_location(path);
        let workspace_config = paths::real_location(&crate::config::workspace_file(workspace));
        if real == workspace_config || path == crate::config::workspace_file(workspace) {
            return true;
        }
        if paths::hardlinked(path) {
            let mut own = vec![crate::config::workspace_file(workspace)];
            if let Some(home) = &self.home {
                own.push(crate::config::user_file(home));
                own.push(crate::trust::store_path(home));
            }
            if own.iter().any(|f| paths::same_file(path, f)) {
                return true;
            }
        }
        self.home.as_ref().is_some_and(|home| {
            let home = paths::real_location(home);
            real.starts_with(&home)
        })
    }
}

/// How the approval policy and the scheduler see a call before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    /// `None` when the arguments are unusable; running it then just reports the error.
    pub effect: Option<Effect>,
    pub leaves_workspace: bool,
    /// It writes one of the [`Protected`] files (or, a shell command, names one): always asks.
    pub protected: bool,
    /// Why, when the path is a protected place of the workspace.
    pub protection: Option<crate::protected::Protection>,
    /// The command of a shell call.
    pub command: Option<String>,
    /// The server and tool of an MCP call.
    pub mcp: Option<(String, String)>,
    /// What a `web_fetch` call reaches: its host (as grants name it), whether it resolved to a
    /// private address, whether `[tools] web_fetch_allow` lists it.
    pub fetch: Option<(String, bool, bool)>,
}

impl Assessment {
    /// The summary the approval policy decides on.
    pub fn summary(&self) -> Option<CallSummary<'_>> {
        self.effect.map(|effect| CallSummary {
            effect,
            leaves_workspace: self.leaves_workspace,
            protected: self.protected,
            command: self.command.as_deref(),
            tool: self.mcp.as_ref().map(|(s, t)| (s.as_str(), t.as_str())),
            fetch: self.fetch.as_ref().map(|(host, private, allowed)| {
                crate::approval::FetchTarget { host, private: *private, allowed: *allowed }
            }),
        })
    }

    /// An MCP call of `server`'s `tool`: it runs without asking (and alongside other reads)
    /// when the tool is one of the server's `read_only_tools`.
    pub fn mcp(server: String, tool: String, read_only: bool) -> Assessment {
        Assessment {
            effect: Some(if read_only { Effect::Read } else { Effect::Tool }),
            leaves_workspace: false,
            protected: false,
            protection: None,
            command: None,
            mcp: Some((server, tool)),
            fetch: None,
        }
    }

    /// A call of a tool that works on the session's own journal (`update_plan`, `recall`): it
    /// touches nothing outside the journal, so it runs in every approval mode without asking.
    pub fn session_state() -> Assessment {
        Assessment {
            effect: None,
            leaves_workspace: false,
            protected: false,
            protection: None,
            command: None,
            mcp: None,
            fetch: None,
        }
    }

    /// A `read_file` of a found skill's file: a read that stays inside what the user chose to
    /// give the model, so it never asks (docs/extending.md, *Skills*).
    pub fn skill_read() -> Assessment {
        Assessment { effect: Some(Effect::Read), ..Assessment::session_state() }
    }

    /// Read-only calls may run concurrently with each other.
    pub fn is_read_only(&self) -> bool {
        matches!(self.effect, Some(Effect::Read) | None)
    }
}

/// Classifies a call without running it.
pub fn assess(
    workspace: &std::path::Path,
    protected: &Protected,
    name: &str,
    input: &Value,
) -> Assessment {
    match parse(name, input) {
        Ok(call) => {
            let resolved = call.path().and_then(|p| paths::resolve(workspace, p).ok());
            // A file with other hardlinks may be anyone's file: it asks like an outside path.
            let file_tool = matches!(call, Call::Read(_) | Call::Write(_) | Call::Edit(_));
            let linked = file_tool && resolved.as_ref().is_some_and(|r| paths::hardlinked(&r.path));
            let leaves = resolved.as_ref().is_some_and(|r| !r.inside) || linked;
            let writes = call.effect() == Effect::Write;
            let command = match &call {
                Call::Shell(a) => Some(a.command.clone()),
                _ => None,
            };
            let names_protected = command.as_deref().is_some_and(|c| {
                crate::approval::grants::names_protected(c, protected.home.as_deref())
            });
            let protection = resolved
                .as_ref()
                .filter(|_| writes)
                .and_then(|r| protected.protection(workspace, &r.path));
            let protected = names_protected
                || writes
                    && resolved.as_ref().is_some_and(|r| protected.covers(workspace, &r.path));
            Assessment {
                effect: Some(call.effect()),
                leaves_workspace: leaves,
                protected,
                protection,
                command,
                mcp: None,
                fetch: None,
            }
        }
        Err(_) => Assessment::session_state(),
    }
}
