//! `[[hooks.EVENT]]` tables (docs/extending.md, *Hooks*): read leniently, so a broken table is
//! one sentence naming the file and the line, never a config that refuses to load.
//!
//! Owns the shape of a hook as configured: its event (one of [`EVENTS`]), `command`, optional
//! `matcher` (a regular expression matched against the whole tool name, for `PreToolUse` and
//! `PostToolUse` only) and `timeout_sec` (default [`DEFAULT_TIMEOUT_SEC`]). Invariant: a table
//! that is kept is valid (its matcher compiles, its timeout is positive); one that is not is
//! left out and named.

use std::path::{Path, PathBuf};

/// The events a hook can be attached to, in the order they are documented.
pub const EVENTS: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "Stop",
    "Notification",
];

/// A hook's time limit when the table sets none.
pub const DEFAULT_TIMEOUT_SEC: f64 = 60.0;

/// One hook as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct HookConfig {
    pub event: String,
    pub command: String,
    /// Matched against the whole tool name (`^(?:matcher)$`).
    pub matcher: Option<String>,
    pub timeout_sec: f64,
    /// The config file and line it came from, to name it.
    pub file: PathBuf,
    pub line: usize,
}

/// What a session remembers of its hooks between runs (the runs themselves are
/// `crate::hooks`'): the hooks whose failure was already shown (a warning is shown once per
/// hook), and the latest `PostCompact` output once it is known (restated in every later note).
#[derive(Debug, Default)]
pub struct HookState {
    /// `(event, command)` of the hooks whose failure the user has been shown.
    pub warned: std::collections::HashSet<(String, String)>,
    /// What a `PostCompact` hook printed in this run, the latest.
    pub post_compact: Option<String>,
    /// The latest `PostCompact` output the journal held when first looked up (once).
    pub journaled_post_compact: std::sync::OnceLock<Option<String>>,
    /// Where the hooks' warnings are told (set when the engine starts driving the session).
    pub sink: Option<crate::events::EventSink>,
    /// The `system` entries of runs not journaled yet (while a reply's tool calls run).
    pub unjournaled: Vec<codewhale_journal::SystemPayload>,
    /// Entries wait in [`HookState::unjournaled`] until they are flushed.
    pub deferring: bool,
    /// What `SessionStart` and `UserPromptSubmit` hooks printed, by event, to join the next
    /// prompt.
    pub for_prompt: Vec<(String, String)>,
}

/// The hooks of one file's `hooks` value; what cannot be used is said in `notices`.
pub(super) fn parse(
    path: &Path,
    text: &str,
    value: Option<toml::Value>,
    notices: &mut Vec<String>,
) -> Vec<HookConfig> {
    let Some(value) = value else { return Vec::new() };
    let mut bad = |line: usize, why: String| {
        notices.push(format!(
            "{}:{line}: {why}; this hook is not used until that is fixed (docs/extending.md)",
            path.display()
        ));
    };
    let Some(events) = value.as_table() else {
        bad(line_of(text, "hooks", 0), "`hooks` must be tables written `[[hooks.EVENT]]`".into());
        return Vec::new();
    };
    let mut hooks = Vec::new();
    for (event, tables) in events {
        if !EVENTS.contains(&event.as_str()) {
            bad(
                line_of(text, event, 0),
                format!("`hooks.{event}` is not an event; use one of {}", EVENTS.join(", ")),
            );
            continue;
        }
        let Some(tables) = tables.as_array() else {
            bad(line_of(text, event, 0), format!("write each hook as a `[[hooks.{event}]]` table"));
            continue;
        };
        for (i, table) in tables.iter().enumerate() {
            let line = line_of(text, event, i);
            match hook(path, event, table, line) {
                Ok(hook) => hooks.push(hook),
                Err(why) => bad(line, why),
            }
        }
    }
    hooks
}

/// One `[[hooks.EVENT]]` table, written on `line` of `path`, as a hook; or why it cannot be
/// used.
fn hook(path: &Path, event: &str, table: &toml::Value, line: usize) -> Result<HookConfig, String> {
    let Some(table) = table.as_table() else {
        return Err(format!("write each hook as a `[[hooks.{event}]]` table"));
    };
    if let Some(key) =
        table.keys().find(|k| !["command", "matcher", "timeout_sec"].contains(&k.as_str()))
    {
        return Err(format!("`{key}` is not a hook setting (use command, matcher, timeout_sec)"));
    }
    let Some(command) =
        table.get("command").and_then(toml::Value::as_str).filter(|c| !c.trim().is_empty())
    else {
        return Err("the hook has no `command` (a shell command line)".into());
    };
    let matcher = matcher(event, table.get("matcher"))?;
    let timeout_sec = timeout_sec(table.get("timeout_sec"))?;
    Ok(HookConfig {
        event: event.to_owned(),
        command: command.to_owned(),
        matcher,
        timeout_sec,
        file: path.to_owned(),
        line,
    })
}

/// A hook's `matcher`: a regular expression over the tool's name, for the tool events only.
fn matcher(event: &str, matcher: Option<&toml::Value>) -> Result<Option<String>, String> {
    match matcher {
        None => Ok(None),
        Some(m) => match m.as_str() {
            Some(_) if !matches!(event, "PreToolUse" | "PostToolUse") => {
                Err(format!("`matcher` applies to PreToolUse and PostToolUse only, not {event}"))
            }
            Some(m) => match regex::Regex::new(&format!("^(?:{m})$")) {
                Ok(_) => Ok(Some(m.to_owned())),
                Err(e) => {
                    let why = e.to_string();
                    let why = why.lines().last().unwrap_or_default().trim().to_owned();
                    Err(format!("`matcher` is not a regular expression: {why}"))
                }
            },
            None => Err("`matcher` must be a string (a regular expression)".into()),
        },
    }
}

/// A hook's `timeout_sec`: a positive number of seconds, [`DEFAULT_TIMEOUT_SEC`] when unset.
fn timeout_sec(timeout: Option<&toml::Value>) -> Result<f64, String> {
    match timeout {
        None => Ok(DEFAULT_TIMEOUT_SEC),
        Some(t) => match t.as_float().or_else(|| t.as_integer().map(|i| i as f64)) {
            Some(t) if t > 0.0 && t.is_finite() => Ok(t),
            _ => Err("`timeout_sec` must be a positive number of seconds".into()),
        },
    }
}

/// The line (1-based) of the `n`-th `[[hooks.EVENT]]` header in `text`, else of the first
/// line naming `event`, else 1.
fn line_of(text: &str, event: &str, n: usize) -> usize {
    let header = |l: &str| {
        let l: String = l.chars().filter(|c| !c.is_whitespace()).collect();
        l == format!("[[hooks.{event}]]") || l == format!("[[hooks.\"{event}\"]]")
    };
    let headers: Vec<usize> =
        text.lines().enumerate().filter(|(_, l)| header(l)).map(|(i, _)| i + 1).collect();
    if let Some(line) = headers.get(n) {
        return *line;
    }
    text.lines().position(|l| l.contains(event)).map_or(1, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks_of(text: &str) -> (Vec<HookConfig>, Vec<String>) {
        let value: toml::Table = toml::from_str(text).unwrap();
        let mut notices = Vec::new();
        let hooks =
            parse(Path::new("/h/config.toml"), text, value.get("hooks").cloned(), &mut notices);
        (hooks, notices)
    }

    #[test]
    fn hook_tables_are_read_in_order_with_their_lines() {
        let text = "model = \"m\"\n\n[[hooks.PreToolUse]]\ncommand = \"./no-rm.sh\"\nmatcher = \"shell|mcp__.*\"\n\n[[hooks.PreToolUse]]\ncommand = \"./log.sh\"\ntimeout_sec = 5\n\n[[hooks.PostCompact]]\ncommand = \"cat RULES.md\"\n";
        let (hooks, notices) = hooks_of(text);
        assert!(notices.is_empty(), "{notices:?}");
        assert_eq!(hooks.len(), 3);
        assert_eq!(hooks[0].event, "PostCompact");
        assert_eq!((hooks[0].line, hooks[0].timeout_sec), (11, 60.0));
        assert_eq!(hooks[1].matcher.as_deref(), Some("shell|mcp__.*"));
        assert_eq!((hooks[1].line, hooks[2].line, hooks[2].timeout_sec), (3, 7, 5.0));
    }

    #[test]
    fn a_broken_hook_is_one_sentence_naming_its_line_and_the_rest_stay() {
        let text = "[[hooks.PreToolUse]]\ncommand = \"ok\"\nmatcher = \"(\"\n\n[[hooks.Stop]]\nmatcher = \"x\"\ncommand = \"y\"\n\n[[hooks.Bogus]]\ncommand = \"z\"\n\n[[hooks.Stop]]\ntimeout_sec = 0\ncommand = \"z\"\n\n[[hooks.Stop]]\ncommand = \"fine\"\n";
        let (hooks, notices) = hooks_of(text);
        assert_eq!(hooks.len(), 1, "{notices:?}");
        assert_eq!((hooks[0].command.as_str(), hooks[0].line), ("fine", 16));
        assert_eq!(notices.len(), 4, "{notices:?}");
        assert!(
            notices[0].starts_with("/h/config.toml:9: `hooks.Bogus` is not an event"),
            "{notices:?}"
        );
        assert!(
            notices
                .iter()
                .any(|n| n.starts_with("/h/config.toml:1: `matcher` is not a regular expression")),
            "{notices:?}"
        );
        assert!(
            notices
                .iter()
                .any(|n| n.starts_with("/h/config.toml:5: `matcher` applies to PreToolUse")),
            "{notices:?}"
        );
        assert!(
            notices
                .iter()
                .any(|n| n.starts_with("/h/config.toml:12: `timeout_sec` must be positive")
                    || n.contains(":12: `timeout_sec` must be a positive")),
            "{notices:?}"
        );
    }
}
