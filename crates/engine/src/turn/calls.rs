//! Running the tool calls of one model response: approval, scheduling, journaling results.
//!
//! Invariants: results are journaled in call order, as consecutive entries on the chain right
//! after the assistant entry; consecutive read-only calls run concurrently, anything that
//! writes or runs a command runs alone; every call gets exactly one result — a denial, the
//! tool's output, or "interrupted" when the user stopped the turn first. A shell command runs
//! without the sandbox only on the user's explicit word for that one call: a "yes" to the
//! question before a command that names Codewhale's own settings, or `u` when a confined run
//! was refused a write ([`offer_rerun`]); never in `full` mode, never in `plan` (whose commands
//! run with the workspace read-only, [`crate::plan_mode`]) and never without a terminal. A
//! `web_fetch` is asked about the addresses its host resolved to ([`super::fetch`]).
//! A command refused a write under a read-only `.git` is offered once more with `.git`
//! writable (`g`, [`offer_git_writable`]) in every mode with a terminal but `plan`. Each call
//! is judged when it runs, not when the reply arrived ([`assess_now`]); what the guard found
//! around a command is told to the model and the user ([`guarded`]).

use serde_json::Value;

use codewhale_journal::ToolResultPayload;

use super::ctx::TurnCtx;
use crate::approval::{
    denied_by_user, denied_protected, denied_without_terminal, ApprovalMode, Decision, Grant,
    Policy,
};
use crate::error::EngineError;
use crate::events::ApprovalReply;
use crate::session::INTERRUPTED_RESULT;
use crate::tools::{self, Assessment, ToolOutput};
use codewhale_protocol::{ApprovalOffer, ApprovalScope, CallEnd, Event};

/// One call of a response.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// What the approval step decided for a call.
enum Cleared {
    Run,
    /// The user allowed a command that names Codewhale's own settings: it runs without the
    /// sandbox (which would refuse those writes anyway), this once.
    RunUnconfined,
    /// The user allowed a write to a protected path, this once.
    RunProtected,
    /// Refused without asking (no one to ask); the model reads why.
    Refused(String),
    /// The user said no, and what they said with it.
    Denied {
        message: String,
        reason: Option<String>,
    },
    Interrupted,
}

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

/// How the approval policy sees `call` now, at the moment it would run: a link an earlier call
/// of the same reply made is followed (docs/security.md, *What git and Codewhale execute is out of the model's reach*). A `web_fetch` is
/// judged by the target its host resolved to.
fn assess_now(
    ctx: &TurnCtx<'_>,
    call: &ToolCall,
    fetch: Option<&Result<tools::web_fetch::Target, String>>,
) -> Assessment {
    match (ctx.session.mcp().resolve(&call.name), fetch) {
        (Some((server, tool, read_only)), _) => Assessment::mcp(server, tool, read_only),
        (None, Some(Ok(target))) => target.assessment(),
        // Unusable: running it reports why.
        (None, Some(Err(_))) => Assessment::session_state(),
        (None, None) if tools::is_session_tool(&call.name) => Assessment::session_state(),
        (None, None) if skill_read(ctx.session, &call.name, &call.input) => {
            Assessment::skill_read()
        }
        (None, None) => {
            let protected = ctx.session.protected();
            tools::assess(ctx.session.workspace(), &protected, &call.name, &call.input)
        }
    }
}

/// A `read_file` of a found skill's file (docs/extending.md, *Skills*): it runs without
/// asking in every mode, a home skill's outside the workspace included.
fn skill_read(session: &crate::session::Session, name: &str, input: &serde_json::Value) -> bool {
    if name != "read_file" {
        return false;
    }
    let Some(raw) = input.get("path").and_then(serde_json::Value::as_str) else { return false };
    let path = std::path::Path::new(raw);
    let path = if path.is_absolute() { path.to_owned() } else { session.workspace().join(path) };
    session.commands.skill_holding(&path).is_some()
}

/// Runs `calls` in order; returns false when the turn was interrupted.
async fn run_some(ctx: &mut TurnCtx<'_>, calls: &[ToolCall]) -> Result<bool, EngineError> {
    let tool_ctx = ctx.session.tool_context(ctx.cancel.clone());
    let plan_ctx = plan_context(ctx, &tool_ctx);
    let mcp = ctx.session.mcp().clone();
    let fetches = super::fetch::prepare(ctx.session, calls).await;
    let mut i = 0;
    let mut interrupted = false;
    while i < calls.len() {
        if ctx.cancel.is_cancelled() {
            interrupted = true;
            break;
        }
        // A child is offered only what its `task` call allowed; anything else is refused.
        if let Some(refusal) = crate::subagent::run::not_offered(ctx.session, &calls[i].name) {
            ctx.emit(Event::ToolCallStarted {
                call_id: calls[i].id.clone(),
                name: calls[i].name.clone(),
            });
            let end = Ending::of(CallEnd::NotApproved);
            finish(ctx, &calls[i], ToolOutput::error(refusal), end, None)?;
            i += 1;
            continue;
        }
        // `task` calls run without asking, the consecutive ones of a reply concurrently, each
        // a child session of its own (docs/subagents.md).
        if calls[i].name == crate::subagent::TOOL {
            let end = i + calls[i..].iter().take_while(|c| c.name == crate::subagent::TOOL).count();
            for call in &calls[i..end] {
                ctx.emit(Event::ToolCallStarted {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                });
            }
            let done = crate::subagent::run::run_tasks(ctx, &calls[i..end]).await;
            for (call, task) in calls[i..end].iter().zip(done) {
                ctx.stats.requests += task.replies.requests + task.summaries.requests;
                ctx.stats.input_tokens += task.replies.input_tokens;
                ctx.stats.output_tokens += task.replies.output_tokens;
                let end = if task.output.is_error { CallEnd::Failed } else { CallEnd::Completed };
                finish(ctx, call, task.output, Ending::of(end), None)?;
            }
            i = end;
            continue;
        }
        // The session's own tools read or set what the journal holds: run here, one at a time,
        // never asking.
        if tools::is_session_tool(&calls[i].name) {
            ctx.emit(Event::ToolCallStarted {
                call_id: calls[i].id.clone(),
                name: calls[i].name.clone(),
            });
            let (output, plan_set) = run_session_tool(ctx, &calls[i]);
            let end = if output.is_error { CallEnd::Failed } else { CallEnd::Completed };
            finish(ctx, &calls[i], output, Ending::of(end), None)?;
            if plan_set {
                ctx.emit(ctx.session.plan_event(true));
            }
            i += 1;
            continue;
        }
        // Judged now, not when the reply arrived: the calls before it have run.
        let assessment = assess_now(ctx, &calls[i], fetches[i].as_ref());
        let fetch = fetches[i].as_ref().and_then(|f| f.as_ref().ok());
        let cleared = match clear(ctx, &calls[i], &assessment, fetch, &plan_ctx).await {
            Cleared::Interrupted => {
                interrupted = true;
                break;
            }
            Cleared::Refused(message) => {
                let end = Ending::of(CallEnd::NotApproved);
                finish(ctx, &calls[i], ToolOutput::error(message), end, None)?;
                i += 1;
                continue;
            }
            Cleared::Denied { message, reason } => {
                let end = Ending { end: CallEnd::Denied, reason };
                finish(ctx, &calls[i], ToolOutput::error(message), end, None)?;
                i += 1;
                continue;
            }
            cleared => cleared,
        };
        let approved_protected = matches!(cleared, Cleared::RunProtected);
        let planning = ctx.session.policy.mode() == ApprovalMode::Plan;
        let run_ctx = match (&plan_ctx, cleared) {
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
        };
        // Extend a read-only call into a batch of the read-only calls after it that need no
        // approval; they run concurrently.
        let mut end = i + 1;
        if assessment.is_read_only() {
            while end < calls.len() && !tools::is_session_tool(&calls[end].name) {
                let next = assess_now(ctx, &calls[end], fetches[end].as_ref());
                if !next.is_read_only()
                    || !allowed_without_asking(ctx, &next)
                    || crate::hooks::has_tool_hooks(ctx.session, &calls[end].name)
                {
                    break;
                }
                end += 1;
            }
        }
        // The change a write or an edit makes, taken before it runs, for the transcript.
        let workspace = ctx.session.workspace().to_path_buf();
        let diffs: Vec<Option<String>> = calls[i..end]
            .iter()
            .map(|c| match c.name.as_str() {
                "write_file" | "edit_file" => {
                    crate::tools::diff::preview(&workspace, &c.name, &c.input)
                }
                _ => None,
            })
            .collect();
        for call in &calls[i..end] {
            ctx.emit(Event::ToolCallStarted { call_id: call.id.clone(), name: call.name.clone() });
        }
        let progress: Vec<_> = calls[i..end].iter().map(|c| live_output(ctx, &c.id)).collect();
        let policy = ctx.session.policy.clone();
        let mut outputs = futures::future::join_all(
            calls[i..end].iter().zip(&progress).zip(&fetches[i..end]).map(|((c, p), f)| {
                let fetch = f.as_ref().map(|f| (f, &policy));
                run_one(&run_ctx, &mcp, c, p.as_ref(), fetch, &ctx.session.config().tools)
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
            if !output.refused.is_empty() {
                let first = std::mem::replace(output, ToolOutput::error(String::new()));
                let unconfined = tools::ToolContext { sandbox: None, ..run_ctx.clone() };
                *output = offer_rerun(ctx, call, first, &unconfined, p.as_ref()).await;
            } else if output.git_refused && !planning {
                let first = std::mem::replace(output, ToolOutput::error(String::new()));
                let writable = tools::ToolContext { git_writable: true, ..run_ctx.clone() };
                *output = offer_git_writable(ctx, call, first, &writable, p.as_ref()).await;
            }
            guarded(ctx, call, output).await;
            if approved_protected && !output.is_error {
                // The user's yes: no check of a running background command puts it back.
                let written = call.input.get("path").and_then(Value::as_str).and_then(|p| {
                    crate::paths::resolve(ctx.session.workspace(), p).ok().map(|r| r.path)
                });
                ctx.session.guard().accept(&written.into_iter().collect::<Vec<_>>());
            }
        }
        for ((call, output), diff) in calls[i..end].iter().zip(outputs).zip(diffs) {
            let end = if ctx.cancel.is_cancelled() && output.is_error {
                CallEnd::Interrupted
            } else if output.timed_out {
                CallEnd::TimedOut
            } else if output.is_error {
                CallEnd::Failed
            } else {
                CallEnd::Completed
            };
            let diff = diff.filter(|_| end == CallEnd::Completed);
            if end != CallEnd::Interrupted {
                let (id, cancel) = (ctx.submission, ctx.cancel.clone());
                let (name, input, response) = (&call.name, &call.input, &output.content);
                crate::hooks::post_tool_use(ctx.session, id, name, input, response, &cancel).await;
            }
            finish(ctx, call, output, Ending::of(end), diff)?;
        }
        i = end;
    }
    for call in &calls[i..] {
        let end = Ending::of(CallEnd::Interrupted);
        finish(ctx, call, ToolOutput::error(INTERRUPTED_RESULT), end, None)?;
    }
    Ok(!interrupted && !ctx.cancel.is_cancelled())
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

/// Asks whether an instruction file a command created may be read into the system prompt;
/// false without a terminal (then it is withheld for the session).
async fn ask_instructions(
    ctx: &mut TurnCtx<'_>,
    call: &ToolCall,
    ws: &std::path::Path,
    path: &std::path::Path,
) -> bool {
    if !ctx.gate.is_interactive() {
        return false;
    }
    let name = crate::paths::display(ws, path);
    let answer = ask(
        ctx,
        call,
        Question {
            reason: format!(
                "the command created {name}, an instruction file; read it into the model's system \
                 prompt from now on?"
            ),
            offers: Vec::new(),
            diff: None,
        },
    )
    .await;
    matches!(answer, Some(ApprovalReply::Approve(_)))
}

/// What the user is asked about a call.
struct Question {
    reason: String,
    offers: Vec<ApprovalOffer>,
    diff: Option<String>,
}

/// Asks the user about `call` and waits for the answer; `None` when the turn was stopped
/// first (or the front end went away).
async fn ask(ctx: &mut TurnCtx<'_>, call: &ToolCall, q: Question) -> Option<ApprovalReply> {
    let reply = ctx.gate.wait_for(&call.id);
    ctx.emit(Event::ApprovalNeeded {
        call_id: call.id.clone(),
        name: call.name.clone(),
        input: call.input.clone(),
        reason: q.reason,
        offers: q.offers,
        diff: q.diff,
    });
    if ctx.gate.user_away() {
        let said = format!("{} waits for your approval", call.name);
        crate::hooks::notification(ctx.session, ctx.submission, &said).await;
    }
    tokio::select! {
        answer = reply => answer.ok(),
        () = ctx.cancel.cancelled() => None,
    }
}

/// `output` with `line` after what it says.
fn with_line(output: ToolOutput, line: &str) -> ToolOutput {
    ToolOutput { bytes: output.bytes + line.len() as u64, content: output.content + line, ..output }
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
    let scratch = match ctx.session.plan_scratch.path() {
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

/// Runs a call of one of the session's own tools; true with the output when it set the plan.
fn run_session_tool(ctx: &TurnCtx<'_>, call: &ToolCall) -> (ToolOutput, bool) {
    if call.name == crate::plan::TOOL {
        return match crate::plan::parse(&call.input) {
            Ok(plan) => (ToolOutput::capped(&crate::plan::confirmation(&plan)), true),
            Err(message) => (ToolOutput::error(message), false),
        };
    }
    let session = &*ctx.session;
    // A child's journal, named by its id or its `task` call's id (docs/subagents.md).
    let room = session.recall_room_chars();
    let max = call
        .input
        .get("max_chars")
        .and_then(serde_json::Value::as_u64)
        .map_or(crate::recall::DEFAULT_MAX_CHARS, |n| usize::try_from(n).unwrap_or(usize::MAX))
        .min(room);
    if let Some(found) = crate::children::entry(session, &call.input, max) {
        return match found {
            Ok(text) => {
                let bytes = text.len() as u64;
                (ToolOutput { bytes, is_error: false, ..ToolOutput::error(text) }, false)
            }
            Err(message) => (ToolOutput::error(message), false),
        };
    }
    let view = session.render();
    let recall = crate::recall::RecallContext {
        journal: session.journal(),
        view: &view,
        room_chars: session.recall_room_chars(),
        redactor: session.redactor(),
        trim: None,
    };
    let query = call.input.get("query").and_then(serde_json::Value::as_str).unwrap_or("");
    let in_children = crate::children::search(session, query);
    let found = match crate::recall::run(&recall, &call.input) {
        Err(_) if !in_children.is_empty() && max >= 200 => {
            Ok(crate::recall::cap(in_children.trim_start().to_owned(), max))
        }
        Ok(text) if !in_children.is_empty() => Ok(crate::recall::cap(text + &in_children, max)),
        other => other,
    };
    match found {
        // Already within its own cap and the room: not cut again.
        Ok(text) => {
            let bytes = text.len() as u64;
            (ToolOutput { bytes, is_error: false, ..ToolOutput::error(text) }, false)
        }
        Err(message) => (ToolOutput::error(message), false),
    }
}

fn allowed_without_asking(ctx: &mut TurnCtx<'_>, a: &Assessment) -> bool {
    decision(ctx, a) == Decision::Allow
}

/// The policy's decision, in the mode the user chose last (a mode chosen while this turn ran
/// applies from this call on).
fn decision(ctx: &mut TurnCtx<'_>, a: &Assessment) -> Decision {
    if let Some(mode) = ctx.gate.take_mode() {
        ctx.session.policy.set_mode(mode);
    }
    match a.summary() {
        Some(summary) => ctx.session.policy.decide(summary),
        None => Decision::Allow,
    }
}

async fn clear(
    ctx: &mut TurnCtx<'_>,
    call: &ToolCall,
    a: &Assessment,
    fetch: Option<&tools::web_fetch::Target>,
    plan_ctx: &Option<tools::ToolContext>,
) -> Cleared {
    let decided = decision(ctx, a);
    match decided {
        Decision::Refuse => return Cleared::Refused(crate::plan_mode::refused_write(&call.name)),
        Decision::Allow => {
            let planning = ctx.session.policy.mode() == ApprovalMode::Plan;
            if planning && a.effect == Some(crate::approval::Effect::Shell) && plan_ctx.is_none() {
                return Cleared::Refused(crate::plan_mode::refused_command());
            }
        }
        Decision::Ask => {}
    }
    // The user's `PreToolUse` hooks, for a call the mode would run or ask about, before any
    // question: exit 2 refuses it, and the hook's stderr is the result the model reads.
    let (id, cancel) = (ctx.submission, ctx.cancel.clone());
    let hooked = crate::hooks::pre_tool_use(ctx.session, id, &call.name, &call.input, &cancel);
    if let Some(why) = hooked.await {
        return Cleared::Refused(why);
    }
    if cancel.is_cancelled() {
        return Cleared::Interrupted;
    }
    if decided == Decision::Allow {
        return Cleared::Run;
    }
    let mode = ctx.session.policy.mode();
    if !ctx.gate.is_interactive() {
        if let Some(target) = fetch {
            return Cleared::Refused(super::fetch::denied_without_terminal(target));
        }
        if a.protected {
            return Cleared::Refused(denied_protected(&call.name, a.protection));
        }
        return Cleared::Refused(denied_without_terminal(&call.name, mode));
    }
    let reason = if let Some(target) = fetch {
        super::fetch::question(target)
    } else if let Some(why) = a.protection {
        format!("{}; only you may allow that", why.reason())
    } else if a.protected {
        "it changes Codewhale's own configuration; only you may allow that".to_owned()
    } else if a.leaves_workspace {
        "it touches a path outside the workspace".to_owned()
    } else {
        format!("approval mode `{mode}` asks before `{}`", call.name)
    };
    let grants = a.summary().map(|s| ctx.session.policy.offers(s)).unwrap_or_default();
    let offers = grants
        .iter()
        .map(|g| {
            let label = match g {
                Grant::Host(_) => "always for this host".to_owned(),
                other => format!("always for {other}"),
            };
            ApprovalOffer { scope: scope_of(g), label }
        })
        .collect();
    let diff = crate::tools::diff::preview(ctx.session.workspace(), &call.name, &call.input)
        .map(|d| ctx.session.redactor().redact(&d).into_owned());
    let answer = ask(ctx, call, Question { reason, offers, diff }).await;
    match answer {
        Some(ApprovalReply::Approve(scope)) => {
            // Only what was offered for this very call can be granted.
            if let Some(grant) = grants.into_iter().find(|g| scope_of(g) == scope) {
                ctx.session.policy.grant(grant);
            }
            let planning = ctx.session.policy.mode() == ApprovalMode::Plan;
            match (a.protected && !planning, a.command.is_some()) {
                (true, true) => Cleared::RunUnconfined,
                (true, false) => Cleared::RunProtected,
                _ => Cleared::Run,
            }
        }
        Some(ApprovalReply::Deny(why)) => {
            let reason = why.map(|w| w.trim().to_owned()).filter(|w| !w.is_empty());
            Cleared::Denied { message: denied_by_user(&call.name, reason.as_deref()), reason }
        }
        None => Cleared::Interrupted,
    }
}

/// After the sandbox refused a shell command a write: in `ask` and `auto-edit` with someone
/// to ask, offers to run it once more without the sandbox (`u`; anything else keeps the
/// refused result). The model reads what happened either way.
async fn offer_rerun(
    ctx: &mut TurnCtx<'_>,
    call: &ToolCall,
    first: ToolOutput,
    unconfined: &tools::ToolContext,
    progress: &(dyn Fn(&[u8]) + Send + Sync),
) -> ToolOutput {
    let mode = ctx.session.policy.mode();
    if matches!(mode, ApprovalMode::Full | ApprovalMode::Plan) || !ctx.gate.is_interactive() {
        return first;
    }
    let paths: Vec<String> = first.refused.iter().map(|p| p.display().to_string()).collect();
    let paths = paths.join(", ");
    let answer = ask(
        ctx,
        call,
        Question {
            reason: format!(
                "the sandbox refused writing to {paths}; run it once more without the sandbox?"
            ),
            offers: vec![ApprovalOffer {
                scope: ApprovalScope::Unconfined,
                label: "rerun once without the sandbox".to_owned(),
            }],
            diff: None,
        },
    )
    .await;
    match answer {
        Some(ApprovalReply::Approve(ApprovalScope::Unconfined)) => {
            let again = tools::execute(unconfined, &call.name, &call.input, progress).await;
            let note = format!(
                "[the sandbox refused writing to {paths}; the user allowed this one rerun \
                 without the sandbox, whose output follows]\n"
            );
            ToolOutput {
                bytes: again.bytes + note.len() as u64,
                content: note + &again.content,
                refused: Vec::new(),
                ..again
            }
        }
        Some(ApprovalReply::Deny(why)) => {
            let said = why.map(|w| format!(" and said: {}", w.trim())).unwrap_or_default();
            let line = format!("\n[the user kept the sandbox for this command{said}]");
            with_line(first, &line)
        }
        _ => first,
    }
}

/// After a write under a read-only `.git` was refused (`git commit`, `git add`): with someone
/// to ask, in every mode, offers to run the command once more with every `.git` writable,
/// under the guard (`g`; anything else keeps the refused result). Without anyone to ask, the
/// model reads how the user can allow it.
async fn offer_git_writable(
    ctx: &mut TurnCtx<'_>,
    call: &ToolCall,
    first: ToolOutput,
    writable: &tools::ToolContext,
    progress: &(dyn Fn(&[u8]) + Send + Sync),
) -> ToolOutput {
    if !ctx.gate.is_interactive() {
        let line = format!("\n[{}]", crate::approval::GIT_NEEDS_WRITABLE);
        return with_line(first, &line);
    }
    let answer = ask(
        ctx,
        call,
        Question {
            reason: "git could not write .git, which is read-only to the model's commands; run \
                     it once more with .git writable (what git runs from .git is still put back)?"
                .to_owned(),
            offers: vec![ApprovalOffer {
                scope: ApprovalScope::GitWritable,
                label: "run once with .git writable".to_owned(),
            }],
            diff: None,
        },
    )
    .await;
    match answer {
        Some(ApprovalReply::Approve(ApprovalScope::GitWritable)) => {
            // The first run's findings are told with the second's.
            let again = tools::execute(writable, &call.name, &call.input, progress).await;
            let note = "[.git was read-only to the first run; the user allowed this one run with \
                        .git writable, whose output follows]\n";
            let guard = match (first.guard, again.guard.clone()) {
                (Some(mut a), Some(b)) => {
                    a.changed.extend(b.changed);
                    a.scrubbed.extend(b.scrubbed);
                    a.new_instructions.extend(b.new_instructions);
                    Some(a)
                }
                (a, b) => a.or(b),
            };
            ToolOutput {
                bytes: again.bytes + note.len() as u64,
                content: note.to_owned() + &again.content,
                guard,
                ..again
            }
        }
        Some(ApprovalReply::Deny(why)) => {
            let said = why.map(|w| format!(" and said: {}", w.trim())).unwrap_or_default();
            let line = format!("\n[the user kept .git read-only for this command{said}]");
            with_line(first, &line)
        }
        _ => first,
    }
}

fn scope_of(grant: &Grant) -> ApprovalScope {
    match grant {
        Grant::Command(_) => ApprovalScope::Command,
        Grant::Prefix(_) => ApprovalScope::Prefix,
        Grant::Edits => ApprovalScope::Edits,
        Grant::Tool { .. } => ApprovalScope::Tool,
        Grant::Host(_) => ApprovalScope::Host,
    }
}

/// What a running call prints, as events (redacted like everything the UI shows).
fn live_output(ctx: &TurnCtx<'_>, call_id: &str) -> tools::Progress {
    let events = ctx.events.clone();
    let submission = ctx.submission;
    let redactor = ctx.session.redactor().clone();
    let call_id = call_id.to_owned();
    std::sync::Arc::new(move |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes);
        let text = redactor.redact(&text).into_owned();
        events.emit(submission, Event::ToolOutputDelta { call_id: call_id.clone(), text });
    })
}

/// How a call ended, with what the user said when they declined it.
struct Ending {
    end: CallEnd,
    reason: Option<String>,
}

impl Ending {
    fn of(end: CallEnd) -> Ending {
        Ending { end, reason: None }
    }
}

fn finish(
    ctx: &mut TurnCtx<'_>,
    call: &ToolCall,
    output: ToolOutput,
    Ending { end, reason }: Ending,
    diff: Option<String>,
) -> Result<(), EngineError> {
    let mut payload =
        ToolResultPayload::new(call.id.clone(), output.content.clone(), output.is_error);
    // The original size, so a pruned stub (and anyone reading the journal) knows how much the
    // tool produced even when `content` holds only a capped head and tail.
    payload.bytes = Some(output.bytes);
    if !output.files.is_empty() {
        payload.files = Some(output.files.clone());
    }
    // How it ended travels as data: no front end reads it back from the text.
    let exit_code = output.exit_code;
    payload.end = Some(crate::call_end::to_journal(end));
    payload.exit_code = exit_code.map(i64::from);
    payload.reason = reason;
    let id = ctx.session.append(payload)?;
    // Show what was journaled: the output and the user's words with their secrets redacted.
    let (shown, reason) = match ctx.session.journal().get(id.as_str()).map(|e| &e.payload) {
        Some(codewhale_journal::Payload::ToolResult(r)) => {
            (r.content.to_string(), r.reason.clone())
        }
        _ => (output.content, None),
    };
    ctx.emit(Event::ToolCallFinished {
        call_id: call.id.clone(),
        name: call.name.clone(),
        is_error: output.is_error,
        output: shown,
        end,
        exit_code,
        // The shell tool states the code as the output's last line.
        exit_code_in_output: exit_code.is_some(),
        reason,
        diff,
    });
    Ok(())
}
