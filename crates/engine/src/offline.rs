//! One entry point per subcommand that works on files alone: no engine task, no provider, no
//! API key (docs/cli.md). A front end calls these instead of reading journals itself, so every
//! figure it prints comes from the same code the live engine runs.
//!
//! - [`context`]: the context report of a session's HEAD, with the budget replayed from the
//!   journal (`codewhale context`), the same report [`codewhale_protocol::Op::GetContext`] answers
//!   for a live session;
//! - [`check_journal`]: audits a journal file without modifying it (`codewhale journal check`);
//! - [`survival_check`]: runs a survival fixture matrix (`codewhale survival-check`);
//! - [`sessions`]: the sessions of a directory, newest first (`codewhale sessions`, the
//!   session picker);
//! - [`anchors`]: the workspace's pinned notes (`codewhale anchor`);
//! - [`import`]: another tool's session as a new session (`codewhale import`);
//! - [`extensions`]: the custom commands, skills, hooks and instruction files found for a
//!   workspace (`codewhale commands`);
//! - [`local_servers`]: the model servers running on this machine, for a first run with no
//!   provider (the one probe of local servers, [`codewhale_provider::Client::probe`]'s round);
//! - [`transcript`]: a session's conversation as the user saw it (`codewhale export`).

use std::path::Path;

pub use codewhale_journal::{CheckReport, LoadError, Problem, SessionInfo};

pub use crate::compaction::matrix::{MatrixError, Mismatch, Report as SurvivalReport};
pub use crate::context_report::ReportParams;
use crate::error::EngineError;
pub use crate::session::sessions_dir;
use codewhale_protocol::ContextReport;

/// The context report of the session `params` names (`codewhale context`).
pub fn context(params: &ReportParams<'_>) -> Result<ContextReport, EngineError> {
    crate::context_report::context_report(params)
}

/// The whole conversation at HEAD of the session `resume` names, as the user saw it
/// (`codewhale export`): `--session ID` wherever its workspace is, otherwise the newest session
/// of `cwd`. Reads the file without taking its lock, so a session open in another codewhale
/// can be exported too.
pub fn transcript(
    home: &Path,
    cwd: &Path,
    resume: crate::session::Resume,
) -> Result<codewhale_protocol::Transcript, EngineError> {
    let path = match resume {
        crate::session::Resume::Id(id) => crate::session::find_by_id(home, &id)?,
        crate::session::Resume::Last | crate::session::Resume::New => {
            crate::session::find_last(home, cwd)?
        }
    };
    let journal =
        codewhale_journal::load_read_only(&path).map_err(|e| EngineError::Open(e.into()))?.journal;
    let model = crate::session::replay::journal_limits(&journal)
        .model
        .unwrap_or_else(|| journal.header().model.clone());
    Ok(crate::history_pages::transcript(&journal, &model))
}

/// Audits the journal at `path` without modifying it (`codewhale journal check`).
pub fn check_journal(path: &Path) -> Result<CheckReport, LoadError> {
    codewhale_journal::check_file(path)
}

/// Loads the survival fixture matrix at `path` and runs every case through the validator the
/// engine uses before it writes a compaction record (`codewhale survival-check`).
pub fn survival_check(path: &Path) -> Result<SurvivalReport, MatrixError> {
    Ok(crate::compaction::matrix::Matrix::load(path)?.run())
}

/// The sessions of `dir`, newest first, and the files that are not readable journals.
#[derive(Clone, Debug, Default)]
pub struct Sessions {
    pub sessions: Vec<SessionInfo>,
    /// Each `*.jsonl` file that could not be listed, with the reason.
    pub skipped: Vec<(std::path::PathBuf, String)>,
}

/// Lists the sessions in `dir` (a missing directory has none), newest first; reads only each
/// file's head, so listing a directory of huge sessions stays fast.
///
/// A `task` child (docs/subagents.md) is listed right under its parent, its children in the
/// order they were started; its parent's `cost_usd` includes what its children cost (a child's
/// row keeps its own figure, so summing the rows without a `parent` gives the total once). A
/// child whose parent is not in `dir` is listed among the others.
pub fn sessions(dir: &Path) -> std::io::Result<Sessions> {
    let listing = codewhale_journal::list_sessions(dir)?;
    Ok(Sessions { sessions: under_parents(listing.sessions), skipped: listing.skipped })
}

/// `sessions` (newest first) with every child moved right under its parent, oldest first, and
/// each parent's cost including its children's.
fn under_parents(sessions: Vec<SessionInfo>) -> Vec<SessionInfo> {
    let ids: std::collections::HashSet<String> = sessions.iter().map(|s| s.id.clone()).collect();
    let (children, mut top): (Vec<SessionInfo>, Vec<SessionInfo>) = sessions
        .into_iter()
        .partition(|s| s.parent.as_ref().is_some_and(|p| ids.contains(p) && *p != s.id));
    let mut out = Vec::with_capacity(top.len() + children.len());
    for mut parent in top.drain(..) {
        let mut mine: Vec<&SessionInfo> =
            children.iter().filter(|c| c.parent.as_deref() == Some(parent.id.as_str())).collect();
        mine.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
        parent.cost_usd += mine.iter().map(|c| c.cost_usd).sum::<f64>();
        out.push(parent);
        out.extend(mine.into_iter().cloned());
    }
    out
}

/// The sessions of `home`'s session directory whose workspace is `workspace`, newest first.
pub fn sessions_for(home: &Path, workspace: &Path) -> std::io::Result<Vec<SessionInfo>> {
    let dir = sessions_dir(home);
    // Headers hold the canonical workspace path; what the user typed may be a symlink.
    let cwd = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    Ok(sessions(&dir)?
        .sessions
        .into_iter()
        .filter(|s| Path::new(&s.cwd) == cwd.as_path())
        .collect())
}

/// Whether session `id` is kept in `home` (a session nothing was written to is removed when
/// it closes, so there is nothing to resume).
pub fn session_exists(home: &Path, id: &str) -> bool {
    crate::session::find_by_id(home, id).is_ok()
}

/// The shortest prefix of session `id` that `/resume` and `--session` resolve to it alone,
/// counting `others` (sessions not on disk yet) too; `None` when `id` is not a kept session.
pub fn unique_prefix(home: &Path, id: &str, others: &[&str]) -> Option<String> {
    crate::session::unique_prefix(home, id, others)
}

/// The workspace's pinned notes (`.codewhale/anchors.md`).
pub mod anchors {
    use std::path::Path;

    use crate::anchors::AnchorStore;
    pub use crate::anchors::{AnchorError, ANCHORS_FILE};

    /// Pins `text` (redacted, as every checkpoint restates it) and returns its 1-based number.
    /// A live session learns about it from the next checkpoint; the `AddAnchor` op journals it
    /// at once instead.
    pub fn add(workspace: &Path, text: &str) -> Result<usize, AnchorError> {
        let text = crate::redact::Redactor::default().redact(text).into_owned();
        AnchorStore::new(workspace).add(&text)
    }

    /// The pinned notes, in file order.
    pub fn list(workspace: &Path) -> Result<Vec<String>, AnchorError> {
        AnchorStore::new(workspace).list()
    }

    /// Unpins note `index` (1-based) and returns its text.
    pub fn remove(workspace: &Path, index: usize) -> Result<String, AnchorError> {
        AnchorStore::new(workspace).remove(index)
    }
}

/// The workspace's MCP servers, each started and given its startup timeout, with its status
/// and tools (`codewhale mcp list`); every server is stopped again before this returns. The
/// second value lists workspace settings ignored because the workspace is not trusted. A
/// server with `sandbox = true` starts confined through `sandbox_helper`, as in a session.
pub async fn mcp_servers(
    home: &Path,
    workspace: &Path,
    overrides: &crate::config::Overrides,
    sandbox_helper: Option<&Path>,
) -> Result<(Vec<codewhale_protocol::McpServerInfo>, Option<crate::config::Untrusted>), EngineError>
{
    let mut config = crate::config::load(home, workspace, overrides)?;
    let at = crate::sandbox::Surroundings {
        workspace,
        home,
        helper: sandbox_helper,
        abi: crate::sandbox::confine::abi(),
        // MCP servers are confined by Landlock alone.
        namespaces: Err("not used for MCP servers".to_owned()),
        forced_fallback: false,
    };
    let sandbox = crate::sandbox::resolve(&config.sandbox, at);
    crate::sandbox::confine_servers(&mut config.mcp_servers, &sandbox);
    let servers = crate::session::mcp_servers(&config, workspace, home);
    servers.start(std::sync::Arc::new(|_| {}));
    servers.settle().await;
    // Names as a session would offer them.
    servers.offered().await;
    let reports = servers.reports();
    servers.shutdown().await;
    let infos = reports.into_iter().map(crate::session::mcp_tools::server_info).collect();
    Ok((infos, config.untrusted))
}

/// What the user brought to a workspace (docs/extending.md), as `codewhale commands` lists it.
pub mod extensions {
    use std::path::Path;

    use crate::config::ConfigError;
    pub use crate::extensions::{Catalog, CustomCommand, Standing};

    /// Everything found for one workspace.
    #[derive(Debug, Clone)]
    pub struct Found {
        /// Whether the workspace is trusted (its own commands count only then).
        pub trusted: bool,
        pub catalog: Catalog,
        /// The project instruction files a session reads, as named to the model.
        pub instructions: Vec<String>,
        /// The `[[hooks.EVENT]]` tables configured (the user's, then a trusted workspace's).
        pub hooks: Vec<crate::config::hooks::HookConfig>,
        /// Whether the workspace's config sets hooks that are ignored because it is not
        /// trusted.
        pub hooks_untrusted: bool,
    }

    /// Finds them for `workspace`: reads files only, contacts nothing, needs no key. The
    /// user's `config.toml` is read for `trusted_workspaces` (a broken one is its error).
    pub fn found(home: &Path, workspace: &Path) -> Result<Found, ConfigError> {
        let workspace = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_owned());
        let config = crate::config::load(home, &workspace, &Default::default())?;
        let trusted =
            crate::extensions::workspace_trusted(home, &workspace, &config.trusted_workspaces);
        let mut catalog = Catalog::discover(home, &workspace, trusted);
        // A hook table that could not be used is one more file problem to name.
        catalog.problems.extend(config.notices.iter().cloned());
        let hooks_untrusted =
            config.untrusted.as_ref().is_some_and(|u| u.keys.iter().any(|k| k == "hooks"));
        let prompt = crate::prompt::SystemPrompt::load(&workspace, false);
        let instructions = prompt.instructions.into_iter().map(|i| i.name).collect();
        Ok(Found { trusted, catalog, instructions, hooks: config.hooks, hooks_untrusted })
    }
}

/// Where a first run looks for a model server on this machine: the ports Ollama, llama.cpp,
/// LM Studio and vLLM listen on by default. A server found there is named by what it answers,
/// not by the port.
pub const LOCAL_SERVER_PORTS: &[u16] = &[11434, 8080, 1234, 8000];

/// How long a first run looks for local servers, all asked at once.
pub const LOCAL_SERVERS_WITHIN: std::time::Duration = std::time::Duration::from_millis(300);

/// A model server found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalServer {
    /// What it answered as ("Ollama", "llama.cpp", "LM Studio"); `None` for another
    /// OpenAI-compatible server.
    pub name: Option<String>,
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    /// The model ids it lists.
    pub models: Vec<String>,
}

/// The OpenAI-compatible servers answering on `ports` of 127.0.0.1 within
/// [`LOCAL_SERVERS_WITHIN`], in the order of `ports` (a first run with no provider configured
/// offers them).
pub async fn local_servers(ports: &[u16]) -> Vec<LocalServer> {
    codewhale_provider::find_local_servers(ports, LOCAL_SERVERS_WITHIN)
        .await
        .into_iter()
        .map(|f| LocalServer {
            name: f.server.map(|s| s.name().to_owned()),
            base_url: f.base_url,
            models: f.models,
        })
        .collect()
}

/// Another tool's session (Claude Code, Codex CLI) written as a new session
/// (`codewhale import`), and the sessions those tools stored for a workspace.
pub mod import {
    pub use crate::importing::{
        candidates, import, Candidate, ImportError, ImportFailed, ImportParams, Imported, Report,
        Roots, Sniffed, Tool, EXACT_TOKENS_UP_TO,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: &str, parent: Option<&str>, cost: f64, age_s: i64) -> SessionInfo {
        let at = codewhale_journal::Timestamp::from_datetime(
            chrono::Utc::now() - chrono::Duration::seconds(age_s),
        );
        SessionInfo {
            id: id.into(),
            path: format!("/s/{id}.jsonl").into(),
            cwd: "/w".into(),
            title: None,
            entries: 1,
            cost_usd: cost,
            created_at: at,
            updated: at,
            provider: "openai".into(),
            model: "m".into(),
            imported_from: None,
            parent: parent.map(str::to_owned),
            parent_call: None,
        }
    }

    #[test]
    fn children_sit_under_their_parent_whose_cost_includes_theirs() {
        // Newest first, as listed: a child written after its parent comes first.
        let listed = vec![
            info("c2", Some("p1"), 0.25, 1),
            info("c1", Some("p1"), 0.5, 2),
            info("p2", None, 1.0, 3),
            info("orphan", Some("gone"), 0.1, 4),
            info("p1", None, 2.0, 5),
        ];
        let ordered = under_parents(listed);
        let ids: Vec<&str> = ordered.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["p2", "orphan", "p1", "c1", "c2"]);
        assert!((ordered[2].cost_usd - 2.75).abs() < 1e-9, "{}", ordered[2].cost_usd);
        assert!((ordered[3].cost_usd - 0.5).abs() < 1e-9);
    }
}
