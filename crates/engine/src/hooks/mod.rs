//! Running the user's hooks (`[[hooks.EVENT]]`, docs/extending.md, *Hooks*): the one place
//! the engine, the turn and compaction call when an event happens. Each caller makes one
//! call ([`fire`], or [`pre_compact`] / [`post_compact`] for compaction) and reads the
//! [`Outcome`]: whether a hook blocked, and the text the hooks printed for the model.
//!
//! Owns: which hooks an event runs (config order — the user's, then a trusted workspace's —
//! a `matcher` against the whole tool name), the JSON object on their stdin, the `system`
//! entry of every run (`hook{event, command, exit, duration_ms}`), the warning shown once per
//! failing hook, the stdout of `SessionStart` kept for the next prompt, and the latest
//! `PostCompact` output restated in every note. Invariants: hooks run one after another, each
//! bounded ([`run`]); a blocking exit (2) stops the event's later hooks; no entry is journaled
//! between a reply's tool calls and their results (the tool hooks' entries wait for the last
//! result, [`defer`] / [`flush`]); a hook never fails the turn it runs in.

mod run;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use codewhale_journal::{Entry, HookRun, Level, Payload, SystemPayload, Trigger, UserPayload};
use codewhale_protocol::{Event, NoticeLevel, SubmissionId};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use crate::config::hooks::HookConfig;
use crate::session::Session;
use crate::tools::shell::RunEnv;

pub(crate) use run::{OUTPUT_KILLED, STDERR_KEPT, STDOUT_KEPT};

/// The events whose exit 2 blocks what they run before.
const BLOCKING: [&str; 3] = ["UserPromptSubmit", "PreToolUse", "PreCompact"];

/// What the hooks of one event came to.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// A hook exited 2 on an event that can block: its stderr (or, when it said nothing, a
    /// sentence naming it).
    pub blocked: Option<String>,
    /// What the hooks that exited 0 printed on stdout, joined (empty: nothing).
    pub said: String,
}

/// Runs the hooks of `event` (for a tool event, those whose matcher takes `tool`) with
/// `fields` added to the stdin object; `id` is the submission their warnings are told under.
pub(crate) async fn fire(
    session: &mut Session,
    id: SubmissionId,
    event: &str,
    tool: Option<&str>,
    fields: Map<String, Value>,
    cancel: &CancellationToken,
) -> Outcome {
    let hooks: Vec<HookConfig> = session
        .config()
        .hooks
        .iter()
        .filter(|h| h.event == event && matches(h, tool))
        .cloned()
        .collect();
    let mut outcome = Outcome::default();
    if hooks.is_empty() {
        return outcome;
    }
    let mut input = Map::new();
    input.insert("session_id".into(), json!(session.id()));
    input.insert("cwd".into(), json!(session.workspace().display().to_string()));
    input.insert("hook_event_name".into(), json!(event));
    input.extend(fields);
    let stdin = serde_json::to_vec(&Value::Object(input)).unwrap_or_default();
    let mut said = Vec::new();
    for hook in &hooks {
        let ran = run_hook(session, id, hook, stdin.clone(), cancel).await;
        let blocks = ran.exit == Some(2) && BLOCKING.contains(&event);
        journal(session, hook, &ran, blocks);
        if blocks {
            let stderr = session.redactor().redact(ran.stderr.trim_end()).into_owned();
            outcome.blocked = Some(if stderr.trim().is_empty() {
                format!(
                    "refused by the {event} hook `{}` (exit 2), which gave no reason",
                    hook.command
                )
            } else {
                stderr
            });
            break;
        }
        if ran.exit == Some(0) {
            let out = ran.stdout.trim_end();
            if !out.trim().is_empty() {
                said.push(session.redactor().redact(out).into_owned());
            }
        } else if ran.stopped != Some(run::Stopped::Interrupted) {
            warn_once(session, id, hook, &ran);
        }
    }
    outcome.said = said.join("\n\n");
    outcome
}

/// Whether `hook` runs for `tool`: a matcher is a regular expression the whole name must match.
fn matches(hook: &HookConfig, tool: Option<&str>) -> bool {
    match (&hook.matcher, tool) {
        (None, _) => true,
        (Some(m), Some(tool)) => {
            regex::Regex::new(&format!("^(?:{m})$")).is_ok_and(|re| re.is_match(tool))
        }
        (Some(_), None) => false,
    }
}

/// Runs one hook as the user's own `!CMD` runs: in the sandbox with nothing read-only, without
/// the keys, guarded (what it changes in git's executable places is named, never put back).
async fn run_hook(
    session: &mut Session,
    id: SubmissionId,
    hook: &HookConfig,
    stdin: Vec<u8>,
    cancel: &CancellationToken,
) -> run::Ran {
    let ctx = session.tool_context(cancel.clone());
    let guard = session.guard().clone();
    let g = guard.clone();
    let before = tokio::task::spawn_blocking(move || g.before()).await.ok();
    let progress = |_: &[u8]| {};
    let env = RunEnv {
        workspace: &ctx.workspace,
        vars: &ctx.shell_env,
        hidden: &ctx.hidden_env,
        groups: &ctx.groups,
        progress: &progress,
        sandbox: ctx.sandbox.as_deref(),
        read_only: Some(&[]),
    };
    let timeout = Duration::from_secs_f64(hook.timeout_sec.min(86_400.0));
    let ran = run::run(env, &hook.command, stdin, timeout, cancel).await;
    if let Some(before) = before {
        let changed = tokio::task::spawn_blocking(move || guard.after_user(&before))
            .await
            .unwrap_or_default();
        if !changed.is_empty() {
            let message = format!(
                "the {} hook `{}` changed {}: what git or Codewhale runs from there is yours to \
                 check (kept as it is)",
                hook.event,
                hook.command,
                changed.join(", ")
            );
            emit(session, id, NoticeLevel::Info, message);
        }
    }
    ran
}

/// What came of a run, in words: the `system` entry's text and the warning's core.
fn describe(hook: &HookConfig, ran: &run::Ran, blocks: bool) -> String {
    let ms = ran.duration.as_millis();
    let what = format!("{} hook `{}`", hook.event, hook.command);
    let stderr = ran.stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or_default().trim();
    let said = if stderr.is_empty() { String::new() } else { format!(": {stderr}") };
    if let Some(why) = &ran.cannot_start {
        return format!("{what} did not run: {why}");
    }
    match (ran.stopped, ran.exit) {
        (Some(run::Stopped::TimedOut), _) => format!(
            "{what} ran past its timeout of {} s and was killed (raise `timeout_sec` in {}:{} if \
             it needs longer)",
            hook.timeout_sec,
            hook.file.display(),
            hook.line
        ),
        (Some(run::Stopped::TooMuchOutput), _) => format!(
            "{what} printed more than {} MiB and was killed (a hook's output is kept to {} KiB \
             of stdout and {} KiB of stderr)",
            OUTPUT_KILLED / (1024 * 1024),
            STDOUT_KEPT / 1024,
            STDERR_KEPT / 1024
        ),
        (Some(run::Stopped::Interrupted), _) => format!("{what} was interrupted ({ms} ms)"),
        (None, Some(0)) => format!("{what} ran ({ms} ms)"),
        (None, Some(2)) if blocks => format!("{what} blocked it (exit 2){said}"),
        (None, Some(code)) => format!("{what} failed (exit {code}){said}"),
        (None, None) => format!("{what} was killed by a signal{said}"),
    }
}

/// The `system` entry of one run (written now, or after the reply's last tool result).
fn journal(session: &mut Session, hook: &HookConfig, ran: &run::Ran, blocks: bool) {
    let ok = ran.exit == Some(0) && ran.stopped.is_none();
    let level = if ok { Level::Info } else { Level::Warning };
    let text = session.redactor().redact(&describe(hook, ran, blocks)).into_owned();
    let mut payload = SystemPayload::new(level, text);
    payload.hook = Some(HookRun {
        event: hook.event.clone(),
        command: hook.command.clone(),
        exit: ran.exit.map(i64::from),
        duration_ms: u64::try_from(ran.duration.as_millis()).unwrap_or(u64::MAX),
        extra: Map::new(),
    });
    session.hook_state_mut().unjournaled.push(payload);
    if !session.hook_state().deferring {
        flush(session);
    }
}

/// A hook that failed is said once per session (every run is in the journal).
fn warn_once(session: &mut Session, id: SubmissionId, hook: &HookConfig, ran: &run::Ran) {
    let key = (hook.event.clone(), hook.command.clone());
    if !session.hook_state_mut().warned.insert(key) {
        return;
    }
    let what = describe(hook, ran, false);
    let message = format!(
        "{what} — {}:{}; it goes on without it (this is said once; every run is journaled)",
        hook.file.display(),
        hook.line
    );
    emit(session, id, NoticeLevel::Warning, message);
}

fn emit(session: &Session, id: SubmissionId, level: NoticeLevel, message: String) {
    let message = session.redactor().redact(&message).into_owned();
    tracing::warn!(%message, "hook");
    if let Some(sink) = &session.hook_state().sink {
        sink.emit(id, Event::Notice { level, message });
    }
}

/// From here until [`flush`], the hooks' entries wait: a reply's tool results are consecutive
/// on the chain right after it.
pub(crate) fn defer(session: &mut Session) {
    session.hook_state_mut().deferring = true;
}

/// Journals the entries of the runs that waited.
pub(crate) fn flush(session: &mut Session) {
    session.hook_state_mut().deferring = false;
    for payload in std::mem::take(&mut session.hook_state_mut().unjournaled) {
        let parent = session.journal().head_id().clone();
        if let Err(err) = session.append_entry(Entry::new(Some(parent), payload)) {
            tracing::error!("cannot journal a hook's run: {err}");
        }
    }
}

/// Journals what hooks printed for the model as one synthetic user text after HEAD (the
/// prompt, or a compaction record), marked with the event.
fn append_said(session: &mut Session, event: &str, text: &str) {
    let payload = UserPayload {
        synthetic: true,
        content: vec![codewhale_journal::Block::text(text)],
        hook: Some(event.to_owned()),
        ..UserPayload::default()
    };
    if let Err(err) = session.append(payload) {
        tracing::error!("cannot journal what a {event} hook printed: {err}");
    }
}

/// Homes whose `SessionStart` hooks this process has run (once per process).
static STARTED: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// `SessionStart`, once per process when a session is opened (`source` new|resume); what it
/// prints joins the next prompt.
pub(crate) async fn session_start(session: &mut Session, id: SubmissionId) {
    if !session.config().hooks.iter().any(|h| h.event == "SessionStart") {
        return;
    }
    let first = match STARTED.lock() {
        Ok(mut started) => {
            started.get_or_insert_with(HashSet::new).insert(session.home().to_path_buf())
        }
        Err(_) => false,
    };
    if !first {
        return;
    }
    let source = if session.resumed() { "resume" } else { "new" };
    let mut fields = Map::new();
    fields.insert("source".into(), json!(source));
    let cancel = CancellationToken::new();
    let outcome = fire(session, id, "SessionStart", None, fields, &cancel).await;
    if !outcome.said.is_empty() {
        session.hook_state_mut().for_prompt.push(("SessionStart".to_owned(), outcome.said));
    }
}

/// `UserPromptSubmit`, before the prompt is journaled: `Err` with the reason when a hook
/// blocked it (the prompt is not sent).
pub(crate) async fn prompt_submitted(
    session: &mut Session,
    id: SubmissionId,
    prompt: &str,
    cancel: &CancellationToken,
) -> Result<(), String> {
    let mut fields = Map::new();
    fields.insert("prompt".into(), json!(prompt));
    let outcome = fire(session, id, "UserPromptSubmit", None, fields, cancel).await;
    if let Some(why) = outcome.blocked {
        return Err(why);
    }
    if !outcome.said.is_empty() {
        session.hook_state_mut().for_prompt.push(("UserPromptSubmit".to_owned(), outcome.said));
    }
    Ok(())
}

/// Once the prompt is journaled: what `SessionStart` and `UserPromptSubmit` printed joins it,
/// each as a synthetic user text after it.
pub(crate) fn after_prompt(session: &mut Session) {
    for (event, text) in std::mem::take(&mut session.hook_state_mut().for_prompt) {
        append_said(session, &event, &text);
    }
}

/// `PreToolUse` for a call the mode would run or ask about: `Some(result)` when a hook refused
/// it, the text the model reads as the call's result.
pub(crate) async fn pre_tool_use(
    session: &mut Session,
    id: SubmissionId,
    name: &str,
    input: &Value,
    cancel: &CancellationToken,
) -> Option<String> {
    let mut fields = Map::new();
    fields.insert("tool_name".into(), json!(name));
    fields.insert("tool_input".into(), input.clone());
    fire(session, id, "PreToolUse", Some(name), fields, cancel).await.blocked
}

/// `PostToolUse` after a call ran, with what it returned.
pub(crate) async fn post_tool_use(
    session: &mut Session,
    id: SubmissionId,
    name: &str,
    input: &Value,
    response: &str,
    cancel: &CancellationToken,
) {
    let mut fields = Map::new();
    fields.insert("tool_name".into(), json!(name));
    fields.insert("tool_input".into(), input.clone());
    fields.insert("tool_response".into(), json!(response));
    fire(session, id, "PostToolUse", Some(name), fields, cancel).await;
}

/// Whether a tool hook would run for `name` (such a call is never batched unasked).
pub(crate) fn has_tool_hooks(session: &Session, name: &str) -> bool {
    session
        .config()
        .hooks
        .iter()
        .any(|h| matches!(h.event.as_str(), "PreToolUse" | "PostToolUse") && matches(h, Some(name)))
}

/// `PreCompact`, before a pass sends anything (a background pass: when it starts): `Some`
/// with the reason when a hook skipped the pass.
pub(crate) async fn pre_compact(session: &mut Session, trigger: &Trigger) -> Option<String> {
    let mut fields = Map::new();
    fields.insert("trigger".into(), json!(trigger.as_str()));
    let cancel = CancellationToken::new();
    let blocked = fire(session, SubmissionId(0), "PreCompact", None, fields, &cancel).await.blocked;
    blocked.map(|why| format!("a PreCompact hook skipped the pass: {}", one_line(&why)))
}

/// `PostCompact`, once a record is committed, with its note on stdin: what the hooks print is
/// a synthetic user text after the record, and is restated in every later note.
pub(crate) async fn post_compact(session: &mut Session, note: &str, trigger: &Trigger) {
    if !session.config().hooks.iter().any(|h| h.event == "PostCompact") {
        return;
    }
    let mut fields = Map::new();
    fields.insert("trigger".into(), json!(trigger.as_str()));
    fields.insert("note".into(), json!(note));
    let cancel = CancellationToken::new();
    let said = fire(session, SubmissionId(0), "PostCompact", None, fields, &cancel).await.said;
    if !said.is_empty() {
        append_said(session, "PostCompact", &said);
        session.hook_state_mut().post_compact = Some(said);
    }
}

/// The latest text a `PostCompact` hook printed in this session (the file's newest), to
/// restate verbatim in a note.
pub(crate) fn latest_post_compact(session: &Session) -> Option<String> {
    if let Some(said) = &session.hook_state().post_compact {
        return Some(said.clone());
    }
    // Looked up in the journal once per session (a resumed one's earlier runs).
    let journaled = session.hook_state().journaled_post_compact.get_or_init(|| {
        let journal = session.journal();
        let users: Vec<u32> = journal.positions_of_kind("user").collect();
        users.into_iter().rev().find_map(|pos| match &journal.read_entry(pos).payload {
            Payload::User(u) if u.hook.as_deref() == Some("PostCompact") => {
                Some(u.content.iter().filter_map(|b| b.as_text()).collect::<String>())
            }
            _ => None,
        })
    });
    journaled.clone()
}

/// `Stop`, when a user's (or `exec`'s) turn ends.
pub(crate) async fn stop(session: &mut Session, id: SubmissionId, status: &str) {
    let mut fields = Map::new();
    fields.insert("status".into(), json!(status));
    fire(session, id, "Stop", None, fields, &CancellationToken::new()).await;
}

/// `Notification`, when the front end would notify the user: `message` says why.
pub(crate) async fn notification(session: &mut Session, id: SubmissionId, message: &str) {
    let mut fields = Map::new();
    fields.insert("message".into(), json!(message));
    fire(session, id, "Notification", None, fields, &CancellationToken::new()).await;
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(matcher: Option<&str>) -> HookConfig {
        HookConfig {
            event: "PreToolUse".into(),
            command: "x".into(),
            matcher: matcher.map(str::to_owned),
            timeout_sec: 60.0,
            file: PathBuf::from("/h/config.toml"),
            line: 1,
        }
    }

    #[test]
    fn a_matcher_must_match_the_whole_tool_name() {
        assert!(matches(&hook(None), Some("shell")));
        assert!(matches(&hook(Some("shell|mcp__.*")), Some("shell")));
        assert!(matches(&hook(Some("shell|mcp__.*")), Some("mcp__gh__issue")));
        assert!(!matches(&hook(Some("shell")), Some("shell_extra")));
        assert!(!matches(&hook(Some("write")), Some("write_file")));
        assert!(matches(&hook(Some("write_file|edit_file")), Some("edit_file")));
    }
}
