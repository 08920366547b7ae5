//! Running a `shell` call around the command itself: the guard's survey of what git and
//! Codewhale execute (before, read-only binds, after), the worktree snapshots that record the
//! files the command changed, and the background start.
//!
//! Invariants: every step around the command fails open (no survey, no snapshot: the command
//! still runs, unrecorded); a background command is never snapshotted, as it has no "after".

use super::{shell, table, ToolContext, ToolOutput};

/// Runs a shell call: guarded (the places git and Codewhale execute surveyed before, bound
/// read-only in the command's namespace, put back and scrubbed after), checkpointed, bounded.
pub(super) async fn run_shell(
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
