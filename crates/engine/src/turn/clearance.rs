//! Clearing a call before it runs: how the approval policy sees it at that moment
//! ([`assess_now`]), whether it runs, is refused or asks ([`clear`]), and the questions asked
//! after a run — a confined command refused a write ([`offer_rerun`]), a git write refused
//! under a read-only `.git` ([`offer_git_writable`]), an instruction file a command created
//! ([`ask_instructions`]).
//!
//! Invariants: a question is asked only with a terminal and never in `full` for what `full`
//! allows; a command runs without the sandbox only on the user's word for that one call, never
//! in `full` or `plan`; every question ends in an answer or in [`Cleared::Interrupted`] when the
//! turn stops first. Running the calls and journaling their results is [`super::calls`]'s.

use super::ctx::TurnCtx;
use super::tool_call::ToolCall;
use crate::approval::{
    denied_by_user, denied_protected, denied_without_terminal, ApprovalMode, Decision, Grant,
};
use crate::events::ApprovalReply;
use crate::tools::{self, Assessment, ToolOutput};
use codewhale_protocol::{ApprovalOffer, ApprovalScope, Event};

/// What the approval step decided for a call.
pub(super) enum Cleared {
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

/// How the approval policy sees `call` now, at the moment it would run: a link an earlier call
/// of the same reply made is followed (docs/security.md, *What git and Codewhale execute is out of the model's reach*). A `web_fetch` is
/// judged by the target its host resolved to.
pub(super) fn assess_now(
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
    session.commands().skill_holding(&path).is_some()
}

/// Asks whether an instruction file a command created may be read into the system prompt;
/// false without a terminal (then it is withheld for the session).
pub(super) async fn ask_instructions(
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

pub(super) fn allowed_without_asking(ctx: &mut TurnCtx<'_>, a: &Assessment) -> bool {
    decision(ctx, a) == Decision::Allow
}

/// The policy's decision, in the mode the user chose last (a mode chosen while this turn ran
/// applies from this call on).
fn decision(ctx: &mut TurnCtx<'_>, a: &Assessment) -> Decision {
    if let Some(mode) = ctx.gate.take_mode() {
        ctx.session.set_approval_mode(mode);
    }
    match a.summary() {
        Some(summary) => ctx.session.policy().decide(summary),
        None => Decision::Allow,
    }
}

/// Whether `call` runs, is refused or asks (module docs): the mode's decision, then the user's
/// `PreToolUse` hooks, then — for a call the mode asks about — the question, or a refusal
/// when no one can answer it.
pub(super) async fn clear(
    ctx: &mut TurnCtx<'_>,
    call: &ToolCall,
    a: &Assessment,
    fetch: Option<&tools::web_fetch::Target>,
    plan_ctx: &Option<tools::ToolContext>,
) -> Cleared {
    let decided = decision(ctx, a);
    if let Some(refused) = refused_by_mode(ctx, call, a, decided, plan_ctx) {
        return refused;
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
    if !ctx.gate.is_interactive() {
        return Cleared::Refused(refused_without_terminal(ctx, call, a, fetch));
    }
    let grants = a.summary().map(|s| ctx.session.policy().offers(s)).unwrap_or_default();
    let question = question(ctx, call, a, fetch, &grants);
    let answer = ask(ctx, call, question).await;
    answered(ctx, call, a, grants, answer)
}

/// What the mode refuses outright: a write in `plan`, and a command in `plan` with no
/// read-only context to run it in.
fn refused_by_mode(
    ctx: &TurnCtx<'_>,
    call: &ToolCall,
    a: &Assessment,
    decided: Decision,
    plan_ctx: &Option<tools::ToolContext>,
) -> Option<Cleared> {
    match decided {
        Decision::Refuse => {
            return Some(Cleared::Refused(crate::plan_mode::refused_write(&call.name)))
        }
        Decision::Allow => {
            let planning = ctx.session.policy().mode() == ApprovalMode::Plan;
            if planning && a.effect == Some(crate::approval::Effect::Shell) && plan_ctx.is_none() {
                return Some(Cleared::Refused(crate::plan_mode::refused_command()));
            }
        }
        Decision::Ask => {}
    }
    None
}

/// Why a call the mode asks about is refused when there is no terminal to ask.
fn refused_without_terminal(
    ctx: &TurnCtx<'_>,
    call: &ToolCall,
    a: &Assessment,
    fetch: Option<&tools::web_fetch::Target>,
) -> String {
    let mode = ctx.session.policy().mode();
    if let Some(target) = fetch {
        return super::fetch::denied_without_terminal(target);
    }
    if a.protected {
        return denied_protected(&call.name, a.protection);
    }
    denied_without_terminal(&call.name, mode)
}

/// The question asked about `call`: why it asks, the grants offered ("always for …"), the
/// change a write or an edit would make (redacted).
fn question(
    ctx: &TurnCtx<'_>,
    call: &ToolCall,
    a: &Assessment,
    fetch: Option<&tools::web_fetch::Target>,
    grants: &[Grant],
) -> Question {
    let mode = ctx.session.policy().mode();
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
    Question { reason, offers, diff }
}

/// What the user's answer clears: a yes runs the call (without the sandbox or with a protected
/// write allowed, when that is what was asked) and grants what was offered for it; a no is a
/// denial with the user's words; no answer, an interrupt.
fn answered(
    ctx: &mut TurnCtx<'_>,
    call: &ToolCall,
    a: &Assessment,
    grants: Vec<Grant>,
    answer: Option<ApprovalReply>,
) -> Cleared {
    match answer {
        Some(ApprovalReply::Approve(scope)) => {
            // Only what was offered for this very call can be granted.
            if let Some(grant) = grants.into_iter().find(|g| scope_of(g) == scope) {
                ctx.session.grant(grant);
            }
            let planning = ctx.session.policy().mode() == ApprovalMode::Plan;
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
pub(super) async fn offer_rerun(
    ctx: &mut TurnCtx<'_>,
    call: &ToolCall,
    first: ToolOutput,
    unconfined: &tools::ToolContext,
    progress: &(dyn Fn(&[u8]) + Send + Sync),
) -> ToolOutput {
    let mode = ctx.session.policy().mode();
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
pub(super) async fn offer_git_writable(
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
