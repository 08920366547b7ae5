//! `!CMD`: a shell command the user runs themselves from the composer, as Claude Code's `!`
//! does. It needs no approval (the user typed it) but runs in the session's sandbox like the
//! model's commands, streams its output to the front end, and is journaled as a synthetic user
//! entry (`user_shell`) the model reads with the next message, so "I just ran the tests, look"
//! works without pasting.
//!
//! Invariants: the entry is written only after the command ended (interrupted or not), with its
//! output redacted and bounded like a tool result; it is never a plain user message, so it is
//! never set aside as unanswered and never starts a turn; `user_shell_finished` is the last
//! event, sent once the entry is durable, so the next op finds the engine idle.

use codewhale_journal::{Block, UserPayload, UserShell};
use tokio_util::sync::CancellationToken;

use crate::events::EventSink;
use crate::session::Session;
use crate::tools::shell::{self, RunEnv, ShellOutcome};
use codewhale_protocol::{CallEnd, Event, NoticeLevel, SubmissionId};

/// What the model reads of a user's command: who ran it, the command and its output.
pub(crate) fn model_text(command: &str, output: &str) -> String {
    format!(
        "The user ran this shell command in the workspace themselves (it is not a call of \
         yours); its output follows.\n$ {command}\n{output}"
    )
}

/// Runs `command` for the user and journals it; `cancel` stops it (Ctrl+C).
pub(crate) async fn run(
    session: &mut Session,
    sink: &EventSink,
    id: SubmissionId,
    command: String,
    cancel: CancellationToken,
) {
    let command = command.trim().to_owned();
    if command.is_empty() {
        sink.emit(
            id,
            Event::Notice {
                level: NoticeLevel::Warning,
                message: "nothing to run: type a command after `!`, e.g. `!git status`".into(),
            },
        );
        return;
    }
    let call_id = format!("user-shell-{}", id.0);
    sink.emit(id, Event::UserShellStarted { call_id: call_id.clone(), command: command.clone() });
    let outcome = run_guarded(session, sink, id, &call_id, &command, &cancel).await;
    let output = session.redactor().redact(&outcome.text).into_owned();
    let end = if cancel.is_cancelled() {
        CallEnd::Interrupted
    } else if outcome.timed_out {
        CallEnd::TimedOut
    } else if outcome.is_error {
        CallEnd::Failed
    } else {
        CallEnd::Completed
    };
    journal(session, sink, id, &command, &output, outcome.exit_code, end).await;
    // Last: a front end sends its next message on this, and the engine takes it at once.
    let exit_code = outcome.exit_code;
    sink.emit(id, Event::UserShellFinished { call_id, command, output, end, exit_code });
}

/// Runs `command` in the session's sandbox, its output streamed as `call_id`'s; what it
/// changed in git's executable places is named to the user.
async fn run_guarded(
    session: &Session,
    sink: &EventSink,
    id: SubmissionId,
    call_id: &str,
    command: &str,
    cancel: &CancellationToken,
) -> ShellOutcome {
    let ctx = session.tool_context(cancel.clone());
    let progress_sink = sink.clone();
    let progress_id = call_id.to_owned();
    let progress = move |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes).into_owned();
        progress_sink.emit(id, Event::ToolOutputDelta { call_id: progress_id.clone(), text });
    };
    // The user's own command: `.git` and `.codewhale/` stay writable (nothing is bound
    // read-only), but it runs without the keys, in a namespace of its own where there is one;
    // what it changes in git's executable places is named, never put back.
    let guard = session.guard().clone();
    let g = guard.clone();
    let before = tokio::task::spawn_blocking(move || g.before()).await.ok();
    let env = RunEnv {
        workspace: &ctx.workspace,
        vars: &ctx.shell_env,
        hidden: &ctx.hidden_env,
        groups: &ctx.groups,
        progress: &progress,
        sandbox: ctx.sandbox.as_deref(),
        read_only: Some(&[]),
    };
    let outcome = shell::run(env, command, None, cancel).await;
    if let Some(before) = before {
        let changed = tokio::task::spawn_blocking(move || guard.after_user(&before))
            .await
            .unwrap_or_default();
        if !changed.is_empty() {
            sink.emit(
                id,
                Event::Notice {
                    level: NoticeLevel::Info,
                    message: format!(
                        "your command changed {}: what git or Codewhale runs from there is \
                         yours to check (kept as it is)",
                        changed.join(", ")
                    ),
                },
            );
        }
    }
    outcome
}

/// Journals the command and its (redacted) output as a synthetic `user_shell` entry, durable
/// before the figures are told; an error writing it is told, never fatal.
async fn journal(
    session: &mut Session,
    sink: &EventSink,
    id: SubmissionId,
    command: &str,
    output: &str,
    exit_code: Option<i32>,
    end: CallEnd,
) {
    let payload = UserPayload {
        synthetic: true,
        content: vec![Block::text(model_text(command, output))],
        user_shell: Some(UserShell {
            command: command.to_owned(),
            exit_code: exit_code.map(i64::from),
            end: Some(crate::call_end::to_journal(end)),
            ..UserShell::default()
        }),
        ..UserPayload::default()
    };
    match session.append(payload) {
        Ok(_) => {
            if let Err(err) = session.sync().await {
                sink.emit(id, err.event());
            }
            sink.emit(id, session.usage_event(None, None));
        }
        Err(err) => sink.emit(id, err.event()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_told_the_user_ran_it() {
        let text = model_text("cargo test", "ok\n[exit code: 0]");
        assert!(text.starts_with("The user ran this shell command"), "{text}");
        assert!(text.contains("\n$ cargo test\nok\n"), "{text}");
    }
}
