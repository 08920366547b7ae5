//! The six tools the model sees (docs/tools.md): their JSON schemas, argument parsing, what each
//! call does for the approval policy, and running a call.
//!
//! Invariants: names and arguments are fixed by the design; a call never crashes the turn —
//! bad arguments, missing files and failed commands all come back as [`ToolOutput`] with
//! `is_error` set and a sentence the model can act on; paths resolve inside the workspace
//! (see [`path`]) and the approval policy decides about the rest before anything runs.
//!
//! Here: the tool context and output, and running a call; how a call is judged before it runs
//! is in `assessment`, what surrounds a shell command in `shell_call`.

mod assessment;
mod background;
pub mod cgroup;
pub mod diff;
pub mod files;
pub mod guard;
pub mod output;
pub mod process;
pub mod search;
pub mod shell;
mod shell_call;
mod table;
pub mod task;
pub mod web_fetch;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codewhale_provider::ToolSpec;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::approval::Effect;
use crate::paths;
pub use assessment::{assess, Assessment, Protected};
pub use background::BackgroundRegistry;
use shell_call::run_shell;
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
    if let Some(refused) = refuse_write(ctx, &call) {
        return refused;
    }
    let ws = &ctx.workspace;
    let resolve = |raw: &str| resolve_in(ws, raw);
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
        Call::Search(a) => search_in(ws, a).await,
        Call::Shell(a) => return run_shell(ctx, &a, progress).await,
    };
    match result {
        Ok(text) => ToolOutput { files: changed, ..ToolOutput::capped(&text) },
        Err(message) => ToolOutput::error(message),
    }
}

/// `raw` resolved in the workspace `ws`: the path, and how the model is shown it.
fn resolve_in(ws: &Path, raw: &str) -> Result<(PathBuf, String), String> {
    let r = paths::resolve(ws, raw)?;
    let shown = paths::display(ws, &r.path);
    Ok((r.path, shown))
}

/// The refusal of a `write_file` or `edit_file` that reaches, by the path as it leads now, a
/// protected place the user did not allow or a place the sandbox does not let commands write.
fn refuse_write(ctx: &ToolContext, call: &Call) -> Option<ToolOutput> {
    let ws = &ctx.workspace;
    let resolve = |raw: &str| resolve_in(ws, raw);
    // The file tools never reach a protected place without the user's yes, however the path
    // leads there now (a link made since the question, a hardlink).
    if let (Call::Write(_) | Call::Edit(_), false) = (call, ctx.allow_protected) {
        if let Some(Ok((p, shown))) = call.path().map(resolve) {
            if let Some(why) = crate::protected::is_protected(ws, &p) {
                return Some(ToolOutput::error(format!(
                    "refused: {shown} is protected ({}); only the user may allow writing it",
                    why.reason()
                )));
            }
        }
    }
    // One sandbox for every tool (docs/security.md): the file tools write only where a
    // confined command could.
    if let (Call::Write(_) | Call::Edit(_), Some(sandbox)) = (call, ctx.sandbox.as_deref()) {
        if let Some(Ok((p, _))) = call.path().map(resolve) {
            let real = paths::real_location(&p);
            if !sandbox.rules().allows_write(&real) {
                let refused = vec![real];
                let text = shell::refusal_line(&refused, "", sandbox).unwrap_or_default();
                return Some(ToolOutput { refused, ..ToolOutput::error(text) });
            }
        }
    }
    None
}

/// A `search` call: under its path (resolved in the workspace `ws`), else the whole
/// workspace, on a blocking thread.
async fn search_in(ws: &Path, a: table::SearchArgs) -> Result<String, String> {
    let root = match a.path.as_deref() {
        Some(p) => resolve_in(ws, p).map(|(p, _)| p),
        None => Ok(ws.to_path_buf()),
    };
    match root {
        Ok(root) => {
            let ws2 = ws.to_path_buf();
            tokio::task::spawn_blocking(move || {
                search::search(&ws2, &root, &a.pattern, a.glob.as_deref())
            })
            .await
            .unwrap_or_else(|e| Err(format!("the search stopped unexpectedly: {e}")))
        }
        Err(e) => Err(e),
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
