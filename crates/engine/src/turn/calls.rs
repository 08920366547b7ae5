//! Running the tool calls of one model response: approval, scheduling, and the result each
//! call gets (journaled by `results.rs`).
//!
//! Invariants: results are journaled in call order, as consecutive entries on the chain right
//! after the assistant entry; consecutive read-only calls run concurrently, anything that
//! writes or runs a command runs alone; every call gets exactly one result — a denial, the
//! tool's output, or "interrupted" when the user stopped the turn first. A shell command runs
//! without the sandbox only on the user's explicit word for that one call: a "yes" to the
//! question before a command that names Codewhale's own settings, or `u` when a confined run
//! was refused a write (`clearance::offer_rerun`); never in `full` mode, never in `plan` (whose commands
//! run with the workspace read-only, [`crate::plan_mode`]) and never without a terminal. A
//! `web_fetch` is asked about the addresses its host resolved to ([`super::fetch`]).
//! A command refused a write under a read-only `.git` is offered once more with `.git`
//! writable (`g`, `clearance::offer_git_writable`) in every mode with a terminal but `plan`. Each call
//! is judged when it runs, not when the reply arrived (`clearance::assess_now`); what the guard found
//! around a command is told to the model and the user ([`guarded`]).

use serde_json::Value;

use super::clearance::{
    allowed_without_asking, ask_instructions, assess_now, clear, offer_git_writable, offer_rerun,
    Cleared,
};
use super::ctx::TurnCtx;
use super::results::{finish, journal_result, live_output, Ending};
use super::tool_call::ToolCall;
use crate::approval::{ApprovalMode, Policy};
use crate::error::EngineError;
use crate::session::INTERRUPTED_RESULT;
use crate::tools::{self, Assessment, ToolOutput};
use codewhale_protocol::{CallEnd, Event};

/// The most tool calls one reply may have run (docs/security.md); the rest are
/// answered without running.
pub(crate) const MAX_CALLS_PER_REPLY: usize = 64;

/// Runs `calls` in order — at most [`MAX_CALLS_PER_REPLY`] of them, the rest answered "not
/// run" — and returns false when the turn was interrupted.
pub(crate) async fn run_calls(
    ctx: &mut TurnCtx<'_>,
    all: &[ToolCall],
) -> Result<bool, EngineError> {
    let (calls, excess) = all.split_at(all.len().min(MAX_CALLS_PER_REPLY));
    // The tool hooks' entries follow the reply's last result.
    crate::hooks::defer(ctx.session);
    let ran = run_some(ctx, calls).await?;
    if !excess.is_empty() {
        tracing::warn!(calls = all.len(), "too many tool calls in one reply; the rest not run");
        ctx.emit(Event::Notice {
            level: codewhale_protocol::NoticeLevel::Warning,
            message: format!(
                "the model asked for {} tool calls in one reply; the first {MAX_CALLS_PER_REPLY} \
                 ran, the other {} were not run",
                all.len(),
                excess.len()
            ),
        });
    }
    for call in excess {
        let text = format!(
            "not run: too many calls in one reply (at most {MAX_CALLS_PER_REPLY} run); ask for \
             what is still needed in the next reply"
        );
        finish(ctx, call, ToolOutput::error(text), Ending::of(CallEnd::NotRun), None)?;
    }
    crate::hooks::flush(ctx.session);
    Ok(ran)
}

/// Runs `calls` in order; returns false when the turn was interrupted.
async fn run_some(ctx: &mut TurnCtx<'_>, calls: &[ToolCall]) -> Result<bool, EngineError> {
    let reply = ReplyCalls::prepare(ctx, calls).await;
    let mut i = 0;
    let mut interrupted = false;
    while i < calls.len() {
        if ctx.cancel.is_cancelled() {
            interrupted = true;
            break;
        }
        i = if let Some(refusal) = super::tasks::not_offered(ctx.session, &calls[i].name) {
            // A child is offered only what its `task` call allowed; anything else is refused.
            reply.not_offered(ctx, i, refusal)?
        } else if calls[i].name == crate::subagent::TOOL {
            // `task` calls run without asking, the consecutive ones of a reply concurrently,
            // each a child session of its own (docs/subagents.md).
            reply.run_tasks(ctx, i).await?
        } else if tools::is_session_tool(&calls[i].name) {
            // The session's own tools read or set what the journal holds: run here, one at a
            // time, never asking.
            reply.run_session_tool(ctx, i)?
        } else {
            match reply.run_cleared(ctx, i).await? {
                Some(next) => next,
                None => {
                    interrupted = true;
                    break;
                }
            }
        };
    }
    for call in &calls[i..] {
        let end = Ending::of(CallEnd::Interrupted);
        finish(ctx, call, ToolOutput::error(INTERRUPTED_RESULT), end, None)?;
    }
    Ok(!interrupted && !ctx.cancel.is_cancelled())
}

/// The calls of one reply and what running them shares: the session's tool context (and the
/// read-only one of plan mode), the MCP servers, the `web_fetch` targets resolved up front.
/// Each step runs the call at an index (and those it batches with) and returns the next index.
struct ReplyCalls<'c> {
    calls: &'c [ToolCall],
    tool_ctx: tools::ToolContext,
    plan_ctx: Option<tools::ToolContext>,
    mcp: codewhale_mcp::Servers,
    fetches: super::fetch::Prepared,
}

impl<'c> ReplyCalls<'c> {
    async fn prepare(ctx: &mut TurnCtx<'_>, calls: &'c [ToolCall]) -> ReplyCalls<'c> {
        let tool_ctx = ctx.session.tool_context(ctx.cancel.clone());
        let plan_ctx = plan_context(ctx, &tool_ctx);
        let mcp = ctx.session.mcp().clone();
        let fetches = super::fetch::prepare(ctx.session, calls).await;
        ReplyCalls { calls, tool_ctx, plan_ctx, mcp, fetches }
    }

    /// A call of a tool this child was not offered: refused without running.
    fn not_offered(
        &self,
        ctx: &mut TurnCtx<'_>,
        i: usize,
        refusal: String,
    ) -> Result<usize, EngineError> {
        let calls = self.calls;
        ctx.emit(Event::ToolCallStarted {
            call_id: calls[i].id.clone(),
            name: calls[i].name.clone(),
        });
        let end = Ending::of(CallEnd::NotApproved);
        finish(ctx, &calls[i], ToolOutput::error(refusal), end, None)?;
        Ok(i + 1)
    }

    /// The `task` calls from `i` on, run together; what each child spent joins the turn.
    async fn run_tasks(&self, ctx: &mut TurnCtx<'_>, i: usize) -> Result<usize, EngineError> {
        let calls = self.calls;
        let end = i + calls[i..].iter().take_while(|c| c.name == crate::subagent::TOOL).count();
        for call in &calls[i..end] {
            ctx.emit(Event::ToolCallStarted { call_id: call.id.clone(), name: call.name.clone() });
        }
        let done = super::tasks::run_tasks(ctx, &calls[i..end]).await;
        for (call, task) in calls[i..end].iter().zip(done) {
            ctx.stats.requests += task.replies.requests + task.summaries.requests;
            ctx.stats.input_tokens += task.replies.input_tokens;
            ctx.stats.output_tokens += task.replies.output_tokens;
            let end = if task.output.is_error { CallEnd::Failed } else { CallEnd::Completed };
            finish(ctx, call, task.output, Ending::of(end), None)?;
        }
        Ok(end)
    }

    /// A call of one of the session's own tools; a plan it set is shown.
    fn run_session_tool(&self, ctx: &mut TurnCtx<'_>, i: usize) -> Result<usize, EngineError> {
        let calls = self.calls;
        ctx.emit(Event::ToolCallStarted {
            call_id: calls[i].id.clone(),
            name: calls[i].name.clone(),
        });
        let (output, plan_set) = super::session_tools::run_session_tool(ctx, &calls[i]);
        let end = if output.is_error { CallEnd::Failed } else { CallEnd::Completed };
        finish(ctx, &calls[i], output, Ending::of(end), None)?;
        if plan_set {
            ctx.emit(ctx.session.plan_event(true));
        }
        Ok(i + 1)
    }

    /// A call the approval step clears (or refuses, or the user denies), run with the read-only
    /// calls after it that need no approval; `None` when the turn was interrupted first.
    async fn run_cleared(
        &self,
        ctx: &mut TurnCtx<'_>,
        i: usize,
    ) -> Result<Option<usize>, EngineError> {
        let calls = self.calls;
        // Judged now, not when the reply arrived: the calls before it have run.
        let assessment = assess_now(ctx, &calls[i], self.fetches[i].as_ref());
        let fetch = self.fetches[i].as_ref().and_then(|f| f.as_ref().ok());
        let cleared = match clear(ctx, &calls[i], &assessment, fetch, &self.plan_ctx).await {
            Cleared::Interrupted => return Ok(None),
            Cleared::Refused(message) => {
                let end = Ending::of(CallEnd::NotApproved);
                finish(ctx, &calls[i], ToolOutput::error(message), end, None)?;
                return Ok(Some(i + 1));
            }
            Cleared::Denied { message, reason } => {
                let end = Ending { end: CallEnd::Denied, reason };
                finish(ctx, &calls[i], ToolOutput::error(message), end, None)?;
                return Ok(Some(i + 1));
            }
            cleared => cleared,
        };
        let approved_protected = matches!(cleared, Cleared::RunProtected);
        let planning = ctx.session.policy().mode() == ApprovalMode::Plan;
        let run_ctx = self.context_for(planning, cleared);
        let end = self.batch_end(ctx, i, &assessment);
        let batch = Batch { at: i, end, run_ctx: &run_ctx, planning, approved_protected };
        self.run_batch(ctx, batch).await?;
        Ok(Some(end))
    }

    /// What a cleared call runs with.
    fn context_for(&self, planning: bool, cleared: Cleared) -> tools::ToolContext {
        let tool_ctx = &self.tool_ctx;
        match (&self.plan_ctx, cleared) {
            // Cleared in plan mode only with a read-only context to run in.
            (Some(plan), _) if planning => plan.clone(),
            // The user's yes to a command naming Codewhale's own settings: it runs without the
            // sandbox, which would refuse exactly those writes, and unguarded.
            (_, Cleared::RunUnconfined) => {
                tools::ToolContext { sandbox: None, guard: None, ..tool_ctx.clone() }
            }
            // The user's yes to a write of a protected path.
            (_, Cleared::RunProtected) => {
                tools::ToolContext { allow_protected: true, ..tool_ctx.clone() }
            }
            _ => tool_ctx.clone(),
        }
    }

    /// The end of the batch the call at `i` starts: a read-only call is extended into a batch of
    /// the read-only calls after it that need no approval; they run concurrently.
    fn batch_end(&self, ctx: &mut TurnCtx<'_>, i: usize, assessment: &Assessment) -> usize {
        let calls = self.calls;
        let mut end = i + 1;
        if assessment.is_read_only() {
            while end < calls.len() && !tools::is_session_tool(&calls[end].name) {
                let next = assess_now(ctx, &calls[end], self.fetches[end].as_ref());
                if !next.is_read_only()
                    || !allowed_without_asking(ctx, &next)
                    || crate::hooks::has_tool_hooks(ctx.session, &calls[end].name)
                {
                    break;
                }
                end += 1;
            }
        }
        end
    }

    /// Runs the calls of `batch` concurrently and journals their results in call order.
    async fn run_batch(&self, ctx: &mut TurnCtx<'_>, batch: Batch<'_>) -> Result<(), EngineError> {
        let Batch { at: i, end, run_ctx, planning, .. } = batch;
        let calls = self.calls;
        // The change a write or an edit makes, taken before it runs, for the transcript.
        let diffs = previews(ctx.session.workspace(), &calls[i..end]);
        for call in &calls[i..end] {
            ctx.emit(Event::ToolCallStarted { call_id: call.id.clone(), name: call.name.clone() });
        }
        let progress: Vec<_> = calls[i..end].iter().map(|c| live_output(ctx, &c.id)).collect();
        let policy = ctx.session.policy().clone();
        let (mcp, fetches) = (&self.mcp, &self.fetches);
        let mut outputs = futures::future::join_all(
            calls[i..end].iter().zip(&progress).zip(&fetches[i..end]).map(|((c, p), f)| {
                let fetch = f.as_ref().map(|f| (f, &policy));
                run_one(run_ctx, mcp, c, p.as_ref(), fetch, &ctx.session.config().tools)
            }),
        )
        .await;
        if planning {
            for output in outputs.iter_mut() {
                read_only_in_plan(output);
            }
        }
        // A call that writes runs alone, so a refused write is always the batch's only call.
        if let ([output], [call], [p]) = (outputs.as_mut_slice(), &calls[i..end], &progress[..]) {
            after_alone(ctx, call, output, p.as_ref(), batch).await;
        }
        for ((call, output), diff) in calls[i..end].iter().zip(outputs).zip(diffs) {
            journal_result(ctx, call, output, diff).await?;
        }
        Ok(())
    }
}

/// A batch of calls run together: the calls `at..end` of the reply, what they run with, and
/// how they were cleared.
#[derive(Clone, Copy)]
struct Batch<'r> {
    at: usize,
    end: usize,
    run_ctx: &'r tools::ToolContext,
    planning: bool,
    /// The user allowed a write of a protected path for this call.
    approved_protected: bool,
}

/// The change each write or edit of `calls` makes, taken before it runs, for the transcript.
fn previews(workspace: &std::path::Path, calls: &[ToolCall]) -> Vec<Option<String>> {
    calls
        .iter()
        .map(|c| match c.name.as_str() {
            "write_file" | "edit_file" => crate::tools::diff::preview(workspace, &c.name, &c.input),
            _ => None,
        })
        .collect()
}

/// What follows a call that ran alone: the offers after a refused write (without the sandbox,
/// or with `.git` writable), what the guard found, and the user's yes to a protected write
/// kept from being put back.
async fn after_alone(
    ctx: &mut TurnCtx<'_>,
    call: &ToolCall,
    output: &mut ToolOutput,
    progress: &(dyn Fn(&[u8]) + Send + Sync),
    batch: Batch<'_>,
) {
    let Batch { run_ctx, planning, approved_protected, .. } = batch;
    if !output.refused.is_empty() {
        let first = std::mem::replace(output, ToolOutput::error(String::new()));
        let unconfined = tools::ToolContext { sandbox: None, ..run_ctx.clone() };
        *output = offer_rerun(ctx, call, first, &unconfined, progress).await;
    } else if output.git_refused && !planning {
        let first = std::mem::replace(output, ToolOutput::error(String::new()));
        let writable = tools::ToolContext { git_writable: true, ..run_ctx.clone() };
        *output = offer_git_writable(ctx, call, first, &writable, progress).await;
    }
    guarded(ctx, call, output).await;
    if approved_protected && !output.is_error {
        // The user's yes: no check of a running background command puts it back.
        let written =
            call.input.get("path").and_then(Value::as_str).and_then(|p| {
                crate::paths::resolve(ctx.session.workspace(), p).ok().map(|r| r.path)
            });
        ctx.session.guard().accept(&written.into_iter().collect::<Vec<_>>());
    }
}

/// What the guard found around a command (docs/security.md, *What git and Codewhale execute is out of the model's reach*), told to the
/// model in its result and to the user as a warning; an instruction file the command created
/// is kept out of the system prompt until the user says yes. What the end of a background
/// command found since the last result is told here too.
async fn guarded(ctx: &mut TurnCtx<'_>, call: &ToolCall, output: &mut ToolOutput) {
    let ws = ctx.session.workspace().to_path_buf();
    let mut said = Vec::new();
    if let Some(findings) = output.guard.take() {
        said.extend(findings.for_model(&ws));
        if let Some(message) = findings.for_user(&ws, "a command") {
            tracing::warn!(%message, "a command changed protected places");
            ctx.emit(Event::Notice { level: codewhale_protocol::NoticeLevel::Warning, message });
        }
        for path in &findings.new_instructions {
            ctx.session.withhold_instructions(path);
            if ask_instructions(ctx, call, &ws, path).await {
                ctx.session.accept_instructions(path);
                said.push(format!(
                    "[the user accepted {}: it is read into your instructions from now on]",
                    crate::paths::display(&ws, path)
                ));
            }
        }
    }
    said.extend(ctx.session.guard().take_for_model());
    for line in said {
        output.content.push('\n');
        output.content.push_str(&line);
        output.bytes += line.len() as u64 + 1;
    }
}
/// Runs one call: an MCP server's tool (any `mcp__` name, offered or not — a name that was not
/// offered gets an error result saying its server is not available), a `web_fetch` of its
/// prepared target (with the policy that decides its redirects), or a built-in tool.
async fn run_one(
    tool_ctx: &tools::ToolContext,
    mcp: &codewhale_mcp::Servers,
    call: &ToolCall,
    progress: &(dyn Fn(&[u8]) + Send + Sync),
    fetch: Option<(&Result<tools::web_fetch::Target, String>, &Policy)>,
    tools_config: &crate::config::ToolsConfig,
) -> ToolOutput {
    if call.name.starts_with(codewhale_mcp::PREFIX) {
        let out = mcp.call(&call.name, &call.input, &tool_ctx.cancel).await;
        return ToolOutput { is_error: out.is_error, ..ToolOutput::capped(&out.text) };
    }
    match fetch {
        Some((Err(message), _)) => ToolOutput::error(message.clone()),
        Some((Ok(target), policy)) => {
            let first = target.clone();
            let follows =
                move |next: &tools::web_fetch::Target| super::fetch::follows(policy, &first, next);
            let input = &call.input;
            tools::web_fetch::run(input, target.clone(), &follows, tools_config, &tool_ctx.cancel)
                .await
        }
        None => tools::execute(tool_ctx, &call.name, &call.input, progress).await,
    }
}

/// What a command runs with in plan mode: the session's sandbox writable only in the private
/// temp dir (also its `TMPDIR`), and no worktree snapshots (it changes nothing). `None` when
/// there is no sandbox, or the temp dir cannot be made: commands are then refused in plan mode.
fn plan_context(ctx: &TurnCtx<'_>, base: &tools::ToolContext) -> Option<tools::ToolContext> {
    let sandbox = base.sandbox.as_deref()?;
    let scratch = match ctx.session.plan_scratch().path() {
        Ok(dir) => dir,
        Err(e) => {
            tracing::warn!(error = %e, "no temp dir for plan mode's commands");
            return None;
        }
    };
    let mut env = (*base.shell_env).clone();
    for name in ["TMPDIR", "TMP", "TEMP"] {
        env.retain(|(n, _)| n != name);
        env.push((name.to_owned(), scratch.display().to_string()));
    }
    Some(tools::ToolContext {
        sandbox: Some(std::sync::Arc::new(crate::plan_mode::sandbox(sandbox, &scratch))),
        shell_env: std::sync::Arc::new(env),
        files: None,
        ..base.clone()
    })
}

/// In plan mode, a command that failed on a write the sandbox refused says so in the words
/// the model is told, and is never offered a rerun without the sandbox.
fn read_only_in_plan(output: &mut ToolOutput) {
    let refused = !output.refused.is_empty()
        || (output.is_error && crate::sandbox::refusal::mentions_refusal(&output.content));
    if refused {
        output.refused.clear();
        let line = crate::plan_mode::read_only_line();
        output.bytes += line.len() as u64 + 1;
        output.content.push('\n');
        output.content.push_str(&line);
    }
}
