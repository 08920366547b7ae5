//! The six tools the model sees (docs/tools.md): their JSON schemas, argument parsing, what each
//! call does for the approval policy, and running a call.
//!
//! Invariants: names and arguments are fixed by the design; a call never crashes the turn —
//! bad arguments, missing files and failed commands all come back as [`ToolOutput`] with
//! `is_error` set and a sentence the model can act on; paths resolve inside the workspace
//! (see [`path`]) and the approval policy decides about the rest before anything runs.

mod background;
pub mod cgroup;
pub mod diff;
pub mod files;
pub mod guard;
pub mod output;
pub mod process;
pub mod search;
pub mod shell;
mod table;
pub mod task;
pub mod web_fetch;

use std::path::PathBuf;
use std::sync::Arc;

use codewhale_provider::ToolSpec;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::approval::{CallSummary, Effect};
use crate::paths;
pub use background::BackgroundRegistry;
use table::{parse, Call};

/// What a tool call produced, as the model will read it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
    /// Size in bytes of the output before it was capped; equals `content.len()` when nothing
    /// was cut. Journaled as `tool_result.bytes`, so a pruned stub can say how much the tool
    /// really produced, not just how much the model was shown.
    pub bytes: u64,
    /// Paths the sandbox refused a failed shell command (the user may be offered a rerun
    /// without the sandbox).
    pub refused: Vec<PathBuf>,
    /// The files the call changed, checkpointed (journaled as `tool_result.files`).
    pub files: Vec<codewhale_journal::FileChange>,
    /// A shell command's exit code, when it exited by itself.
    pub exit_code: Option<i32>,
    /// Whether a shell command ran past its timeout and was killed.
    pub timed_out: bool,
    /// A failed shell command was refused a write under a read-only `.git` (the user may be
    /// offered to run it once with `.git` writable).
    pub git_refused: bool,
    /// What the guard found after a shell command ([`guard::Findings`]).
    pub guard: Option<guard::Findings>,
}

impl ToolOutput {
    pub fn error(content: impl Into<String>) -> ToolOutput {
        let content = content.into();
        ToolOutput {
            bytes: content.len() as u64,
            content,
            is_error: true,
            refused: Vec::new(),
            files: Vec::new(),
            exit_code: None,
            timed_out: false,
            git_refused: false,
            guard: None,
        }
    }

    /// A successful output cut to [`output::MAX_OUTPUT_BYTES`], remembering its full size.
    pub fn capped(text: &str) -> ToolOutput {
        ToolOutput {
            bytes: text.len() as u64,
            is_error: false,
            ..ToolOutput::error(output::cap(text, output::MAX_OUTPUT_BYTES))
        }
    }
}

/// What a tool needs from its surroundings.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The workspace root, absolute and canonical.
    pub workspace: PathBuf,
    pub background: Arc<BackgroundRegistry>,
    /// The process groups of shell calls still running (ended when the session closes).
    pub groups: Arc<process::ProcessGroups>,
    /// Extra environment variables for shell commands (`[shell] env`).
    pub shell_env: Arc<Vec<(String, String)>>,
    /// Confines shell commands; `None` runs them unconfined.
    pub sandbox: Option<Arc<crate::sandbox::Sandbox>>,
    /// Cancelled when the user interrupts the turn.
    pub cancel: CancellationToken,
    /// The session's file store: `write_file` and `edit_file` keep a checkpoint of what they
    /// change there. `None` runs them unrecorded.
    pub files: Option<Arc<crate::checkpoint::FileStore>>,
    /// Guards what git and Codewhale execute around every shell command; `None`: unguarded
    /// (a command the user approved as changing those places).
    pub guard: Option<Arc<guard::GitGuard>>,
    /// The key variables no command may see.
    pub hidden_env: Arc<Vec<String>>,
    /// Shell commands run with every `.git` writable (still guarded).
    pub git_writable: bool,
    /// The user approved this call's write to a protected path.
    pub allow_protected: bool,
}

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

impl Call {
    fn effect(&self) -> Effect {
        match self {
            Call::Read(_) | Call::List(_) | Call::Search(_) => Effect::Read,
            Call::Write(_) | Call::Edit(_) => Effect::Write,
            Call::Shell(_) => Effect::Shell,
        }
    }

    fn path(&self) -> Option<&str> {
        match self {
            Call::Read(a) => Some(&a.path),
            Call::List(a) => Some(&a.path),
            Call::Search(a) => a.path.as_deref(),
            Call::Write(a) => Some(&a.path),
            Call::Edit(a) => Some(&a.path),
            Call::Shell(_) => None,
        }
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

/// Where a running command's output goes as it arrives (the live view of a tool cell).
pub type Progress = std::sync::Arc<dyn Fn(&[u8]) + Send + Sync>;

/// Runs one call. Never fails: every problem is an error output. A shell command's output is
/// also handed to `progress` as it arrives.
pub async fn execute(
    ctx: &ToolContext,
    name: &str,
    input: &Value,
    progress: &(dyn Fn(&[u8]) + Send + Sync),
) -> ToolOutput {
    let call = match parse(name, input) {
        Ok(call) => call,
        Err(message) => return ToolOutput::error(message),
    };
    let ws = ctx.workspace.clone();
    let resolve = |raw: &str| -> Result<(PathBuf, String), String> {
        let r = paths::resolve(&ws, raw)?;
        let shown = paths::display(&ws, &r.path);
        Ok((r.path, shown))
    };
    // The file tools never reach a protected place without the user's yes, however the path
    // leads there now (a link made since the question, a hardlink).
    if let (Call::Write(_) | Call::Edit(_), false) = (&call, ctx.allow_protected) {
        if let Some(Ok((p, shown))) = call.path().map(&resolve) {
            if let Some(why) = crate::protected::is_protected(&ws, &p) {
                return ToolOutput::error(format!(
                    "refused: {shown} is protected ({}); only the user may allow writing it",
                    why.reason()
                ));
            }
        }
    }
    // One sandbox for every tool (docs/security.md): the file tools write only where a
    // confined command could.
    if let (Call::Write(_) | Call::Edit(_), Some(sandbox)) = (&call, ctx.sandbox.as_deref()) {
        if let Some(Ok((p, _))) = call.path().map(&resolve) {
            let real = paths::real_location(&p);
            if !sandbox.rules().allows_write(&real) {
                let refused = vec![real];
                let text = shell::refusal_line(&refused, "", sandbox).unwrap_or_default();
                return ToolOutput { refused, ..ToolOutput::error(text) };
            }
        }
    }
    let mut changed = Vec::new();
    let result = match call {
        Call::Read(a) => {
            resolve(&a.path).and_then(|(p, shown)| files::read_file(&p, &shown, a.offset, a.limit))
        }
        Call::List(a) => resolve(&a.path).and_then(|(p, shown)| files::list_dir(&p, &shown)),
        Call::Write(a) if crate::redact::holds_marker(&a.content) => Err(marker_refusal(&a.path)),
        Call::Edit(a) if crate::redact::holds_marker(&a.new_string) => Err(marker_refusal(&a.path)),
        Call::Write(a) => resolve(&a.path).and_then(|(p, shown)| {
            let store = ctx.files.as_deref();
            let run = || files::write_file(&p, &shown, &a.content);
            crate::checkpoint::capture(store, &p, &shown, run).map(|(text, c)| {
                changed.extend(c);
                text
            })
        }),
        Call::Edit(a) => resolve(&a.path).and_then(|(p, shown)| {
            let store = ctx.files.as_deref();
            let run = || files::edit_file(&p, &shown, &a.old_string, &a.new_string, a.replace_all);
            crate::checkpoint::capture(store, &p, &shown, run).map(|(text, c)| {
                changed.extend(c);
                text
            })
        }),
        Call::Search(a) => {
            let root = match a.path.as_deref() {
                Some(p) => resolve(p).map(|(p, _)| p),
                None => Ok(ws.clone()),
            };
            match root {
                Ok(root) => {
                    let ws2 = ws.clone();
                    tokio::task::spawn_blocking(move || {
                        search::search(&ws2, &root, &a.pattern, a.glob.as_deref())
                    })
                    .await
                    .unwrap_or_else(|e| Err(format!("the search stopped unexpectedly: {e}")))
                }
                Err(e) => Err(e),
            }
        }
        Call::Shell(a) => return run_shell(ctx, &a, progress).await,
    };
    match result {
        Ok(text) => ToolOutput { files: changed, ..ToolOutput::capped(&text) },
        Err(message) => ToolOutput::error(message),
    }
}

/// Runs a shell call: guarded (the places git and Codewhale execute surveyed before, bound
/// read-only in the command's namespace, put back and scrubbed after), checkpointed, bounded.
async fn run_shell(
    ctx: &ToolContext,
    a: &table::ShellArgs,
    progress: &(dyn Fn(&[u8]) + Send + Sync),
) -> ToolOutput {
    let ws = &ctx.workspace;
    let sandbox = ctx.sandbox.as_deref();
    let guard = ctx.guard.clone();
    let surveyed = match &guard {
        Some(g) => {
            let g = g.clone();
            let background = a.background;
            tokio::task::spawn_blocking(move || {
                if background {
                    g.background_started()
                } else {
                    g.before()
                }
            })
            .await
            .ok()
        }
        None => None,
    };
    let read_only = match (&guard, &surveyed) {
        (Some(g), Some(before)) => g.read_only(before, ctx.git_writable),
        _ => Vec::new(),
    };
    let env = shell::RunEnv {
        workspace: ws,
        vars: &ctx.shell_env,
        hidden: &ctx.hidden_env,
        groups: &ctx.groups,
        progress,
        sandbox,
        read_only: Some(&read_only),
    };
    if a.background {
        let max = ctx.groups.max_processes();
        let watch = guard.zip(surveyed).map(|(g, before)| shell::Watch { guard: g, before });
        let out = shell::spawn_background(env, &a.command, &ctx.background, max, watch).await;
        return ToolOutput::from_shell(out, Vec::new());
    }
    // A background command keeps running: there is no "after" to snapshot.
    let snapshots = before_shell(ctx).await;
    let out = shell::run(env, &a.command, a.timeout_ms, &ctx.cancel).await;
    let findings = match (guard, surveyed) {
        (Some(g), Some(before)) => tokio::task::spawn_blocking(move || g.after(&before)).await.ok(),
        _ => None,
    };
    let (files, unkept) = after_shell(snapshots).await;
    let mut output = ToolOutput::from_shell(out, files);
    for line in unkept {
        output.content.push_str(&format!("\n[{line}]"));
    }
    output.guard = findings.filter(|f| !f.is_empty());
    output
}

impl ToolOutput {
    fn from_shell(out: shell::ShellOutcome, files: Vec<codewhale_journal::FileChange>) -> Self {
        ToolOutput {
            content: out.text,
            is_error: out.is_error,
            bytes: out.bytes,
            refused: out.refused,
            files,
            exit_code: out.exit_code,
            timed_out: out.timed_out,
            git_refused: out.git_refused,
            guard: None,
        }
    }
}

/// What a shell call keeps from its "before" snapshot: where snapshots go, the store that
/// keeps the changed files, and the snapshot.
type ShellSnapshot = (
    crate::checkpoint::snapshot::Snapshots,
    crate::checkpoint::FileStore,
    crate::checkpoint::snapshot::WorktreeSnapshot,
);

/// The worktree snapshot before a shell command (docs/journal-format.md, *The file store*), when
/// the workspace is a git work tree and the session has a store. Fails open: no snapshot, no
/// record.
async fn before_shell(ctx: &ToolContext) -> Option<ShellSnapshot> {
    let store = ctx.files.as_deref()?.clone();
    let ws = ctx.workspace.clone();
    tokio::task::spawn_blocking(move || {
        let snapshots = crate::checkpoint::snapshot::Snapshots::find(&store, &ws)?;
        match snapshots.snapshot() {
            Ok(tree) => Some((snapshots, store, tree)),
            Err(e) => {
                tracing::warn!("no worktree snapshot before a shell command: {e}");
                None
            }
        }
    })
    .await
    .ok()
    .flatten()
}

/// The files a shell command changed: the snapshot after it, compared with the one before;
/// and, named once per run, the files too big to be kept for rewind.
async fn after_shell(
    before: Option<ShellSnapshot>,
) -> (Vec<codewhale_journal::FileChange>, Vec<String>) {
    let Some((snapshots, store, tree)) = before else { return (Vec::new(), Vec::new()) };
    let changed = tokio::task::spawn_blocking(move || {
        let after = snapshots.snapshot()?;
        let unkept = crate::checkpoint::unkept_once(&store, &after.skipped);
        snapshots.changes(&store, &tree, &after).map(|files| (files, unkept))
    })
    .await;
    match changed {
        Ok(Ok(done)) => done,
        Ok(Err(e)) => {
            tracing::warn!("no worktree snapshot after a shell command: {e}");
            (Vec::new(), Vec::new())
        }
        Err(_) => (Vec::new(), Vec::new()),
    }
}

/// What the model reads when it tries to write a redaction marker into a file.
fn marker_refusal(path: &str) -> String {
    format!(
        "refused: the content for {path} holds a redaction marker ([REDACTED:...]), which stands \
         for a secret Codewhale hid from you; writing it would replace the real secret with the \
         marker. Leave the lines that hold secrets unchanged (edit around them with edit_file), \
         or ask the user to make that change"
    )
}

/// Whether `name` is one of the tools that work on the session's own journal rather than the
/// workspace (the turn runs them itself, see `turn::calls`).
pub fn is_session_tool(name: &str) -> bool {
    name == crate::plan::TOOL || name == crate::recall::TOOL
}

/// The tool schemas sent with every request: the six workspace tools, then the session's own,
/// then `web_fetch` unless `[tools] web_fetch = false` (`web_fetch`).
pub fn specs(compact: bool, web_fetch: bool) -> Vec<ToolSpec> {
    let fetch = web_fetch.then(web_fetch::spec);
    let specs = table::specs().chain([crate::plan::spec(), crate::recall::spec()]).chain(fetch);
    if compact {
        specs.map(terse).collect()
    } else {
        specs.collect()
    }
}

/// A tool as a small window offers it (docs/compaction.md, *Small local models*): the same
/// name and arguments, its description cut to the first sentence and its arguments' own
/// descriptions left out.
pub fn terse(mut spec: ToolSpec) -> ToolSpec {
    if let Some(end) = spec.description.find(". ") {
        spec.description.truncate(end + 1);
    }
    strip_descriptions(&mut spec.input_schema);
    spec
}

/// Removes every `description` below the top of a JSON schema.
fn strip_descriptions(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get_mut("properties") {
                for property in properties.values_mut() {
                    if let Some(p) = property.as_object_mut() {
                        p.remove("description");
                    }
                    strip_descriptions(property);
                }
            }
            if let Some(items) = map.get_mut("items") {
                if let Some(i) = items.as_object_mut() {
                    i.remove("description");
                }
                strip_descriptions(items);
            }
        }
        Value::Array(list) => list.iter_mut().for_each(strip_descriptions),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
