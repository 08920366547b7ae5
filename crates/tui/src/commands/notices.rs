//! One stderr line for every engine event a user of the command line should see: what the UI
//! shows as a notice (a torn tail moved aside, lines skipped, a request trimmed, an output
//! limit), one line per compaction pass — how it ended, with tokens before → after (a long
//! turn that compacts several times says so once per pass, not per request) — and one line per
//! tool call ([`ToolLines`]): its name, what it touches and how it ended, as Codex's `exec`
//! shows them. `exec` and `compact` print them as they arrive, so nothing the engine reports is
//! only in `--json` or the log.

use std::collections::HashMap;

use codewhale_protocol::{CallEnd, Event, NoticeLevel};

/// The longest target or reason shown on a tool call's line, in characters.
const SHOWN_CHARS: usize = 100;

/// Tool calls between their request and their end: a call's line is printed when it ends, and
/// names what the request said it touches.
#[derive(Debug, Default)]
pub struct ToolLines {
    targets: HashMap<String, String>,
}

impl ToolLines {
    /// The line for `event` if it ends a tool call (remembering what a request touches).
    pub fn line(&mut self, event: &Event) -> Option<String> {
        match event {
            Event::ToolCallRequested { call_id, name, input } => {
                self.targets.insert(call_id.clone(), target(name, input));
                None
            }
            Event::ToolCallFinished { call_id, name, end, exit_code, reason, output, .. } => {
                let target = self.targets.remove(call_id).unwrap_or_default();
                let outcome = match end {
                    CallEnd::Completed => "done".to_owned(),
                    CallEnd::Failed => match exit_code {
                        Some(code) => format!("failed (exit code {code})"),
                        None => format!("failed: {}", first_line(output)),
                    },
                    CallEnd::TimedOut => "timed out, stopped".to_owned(),
                    CallEnd::Denied => match reason.as_deref().map(str::trim) {
                        Some(said) if !said.is_empty() => {
                            format!("denied by you: {}", shorten(said))
                        }
                        _ => "denied by you".to_owned(),
                    },
                    CallEnd::NotApproved => "denied: it needs approval and nobody can answer \
                                             here; --approval auto-edit allows edits in the \
                                             workspace, --approval full commands too"
                        .to_owned(),
                    CallEnd::NotRun => "not run: too many calls in one reply".to_owned(),
                    CallEnd::Interrupted => "interrupted".to_owned(),
                };
                let target = if target.is_empty() { String::new() } else { format!(" {target}") };
                Some(format!("{name}{target} · {outcome}"))
            }
            _ => None,
        }
    }
}

/// What a call touches, from its arguments: a path, a command, a pattern.
fn target(name: &str, input: &serde_json::Value) -> String {
    let field = |key: &str| input.get(key).and_then(serde_json::Value::as_str);
    let shown = match name {
        "shell" => field("command").map(|c| format!("`{}`", first_line(c))),
        "search" => field("pattern").map(|p| match field("path") {
            Some(path) => format!("`{p}` in {path}"),
            None => format!("`{p}`"),
        }),
        "update_plan" => input
            .get("steps")
            .and_then(serde_json::Value::as_array)
            .map(|steps| format!("{} steps", steps.len())),
        "task" => field("description").map(|d| format!("\"{d}\"")),
        "recall" => field("query").or(field("entry")).map(|q| format!("`{q}`")),
        _ => field("path").map(str::to_owned).or_else(|| {
            // An MCP tool: its first string argument says the most.
            input.as_object()?.values().find_map(serde_json::Value::as_str).map(str::to_owned)
        }),
    };
    shown.map(|s| shorten(&s)).unwrap_or_default()
}

fn first_line(text: &str) -> String {
    shorten(text.lines().find(|l| !l.trim().is_empty()).unwrap_or_default().trim())
}

fn shorten(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// "summary 1 of 2 · 172k tokens": where a pass's summary requests are.
pub fn progress(request: u32, of: u32, tokens: u64) -> String {
    format!("summary {request} of {of} · {} tokens", crate::tui::cells::short_tokens(tokens))
}

/// The line for `event`, without the `codewhale: ` prefix, or `None` for events that are not
/// notices (streamed text, tool calls, usage, errors, which are printed once at the end).
pub fn line(event: &Event) -> Option<String> {
    Some(match event {
        Event::Notice { level: NoticeLevel::Info, message } => message.clone(),
        Event::Notice { level: NoticeLevel::Warning, message } => format!("warning: {message}"),
        Event::SubagentStarted { description, session_id, .. } => {
            format!("subagent started: \"{}\" (session {session_id})", shorten(description))
        }
        Event::SubagentFinished { session_id, status, calls, compactions, .. } => {
            let how = match status {
                codewhale_protocol::TurnStatus::Completed => "done",
                codewhale_protocol::TurnStatus::Interrupted => "stopped",
                _ => "failed",
            };
            let plural = |n: u32| if n == 1 { "" } else { "s" };
            format!(
                "subagent {how}: session {session_id} · {calls} tool call{} · {compactions} \
                 compaction{}",
                plural(*calls),
                plural(*compactions)
            )
        }
        Event::ImagesAttached { images } => {
            let shown: Vec<String> = images.iter().map(crate::figures::image).collect();
            format!("attached {}", shown.join("; "))
        }
        Event::CompactionFinished { path, tokens_before, tokens_after, covered, .. } => {
            // A prune-only or bounding pass summarizes nothing (its `covered` is the earlier
            // note's segment).
            let what = if *covered > 0 && *path != codewhale_protocol::CompactionKind::PruneOnly {
                format!("{covered} entries summarized")
            } else {
                "long outputs shortened".to_owned()
            };
            format!("compacted ({path}, {what}): {tokens_before} → {tokens_after} tokens")
        }
        Event::CompactionFailed { reason } => {
            format!("warning: compaction failed, nothing was changed: {reason}")
        }
        Event::CompactionRefused { reason } => format!("nothing to compact: {reason}"),
        Event::CompactionCancelled => "compaction cancelled; nothing was changed".to_owned(),
        // A pass of one request says nothing until it ends.
        Event::CompactionProgress { request, of, tokens } if *of > 1 => {
            progress(*request, *of, *tokens)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use codewhale_protocol::{CompactionKind, CompactionTrigger};

    use super::*;

    #[test]
    fn notices_and_compaction_steps_have_lines_and_deltas_do_not() {
        let warn = Event::Notice { level: NoticeLevel::Warning, message: "line 3: torn".into() };
        assert_eq!(line(&warn).unwrap(), "warning: line 3: torn");
        let done = Event::CompactionFinished {
            id: "c".into(),
            trigger: CompactionTrigger::Manual,
            path: CompactionKind::Summary,
            tokens_before: 9_000,
            tokens_after: 2_000,
            covered: 12,
            retained: 1,
            note: "Codewhale handoff note.".into(),
            background: false,
        };
        assert_eq!(
            line(&done).unwrap(),
            "compacted (summary, 12 entries summarized): 9000 → 2000 tokens"
        );
        // A prune-only pass that carries an earlier note forward summarized nothing itself.
        let pruned = Event::CompactionFinished {
            id: "p".into(),
            trigger: CompactionTrigger::Auto,
            path: CompactionKind::PruneOnly,
            tokens_before: 9_000,
            tokens_after: 2_000,
            covered: 12,
            retained: 1,
            note: "Codewhale handoff note.".into(),
            background: false,
        };
        assert_eq!(
            line(&pruned).unwrap(),
            "compacted (prune-only, long outputs shortened): 9000 → 2000 tokens"
        );
        let refused = Event::CompactionRefused { reason: "too few".into() };
        assert_eq!(line(&refused).unwrap(), "nothing to compact: too few");
        assert_eq!(line(&Event::TextDelta { text: "x".into() }), None);
        let started = Event::CompactionStarted { trigger: CompactionTrigger::Auto };
        assert_eq!(line(&started), None, "one line per pass: its end");
    }

    fn finished(id: &str, name: &str, end: CallEnd, exit_code: Option<i32>) -> Event {
        Event::ToolCallFinished {
            call_id: id.into(),
            name: name.into(),
            is_error: end != CallEnd::Completed,
            output: "error: no such file\nmore".into(),
            end,
            exit_code,
            exit_code_in_output: exit_code.is_some(),
            reason: None,
            diff: None,
        }
    }

    #[test]
    fn a_tool_call_has_one_line_when_it_ends_with_what_it_touched() {
        let mut lines = ToolLines::default();
        let shell = serde_json::json!({"command": "cargo test\n--quiet"});
        let requested =
            Event::ToolCallRequested { call_id: "1".into(), name: "shell".into(), input: shell };
        assert_eq!(lines.line(&requested), None);
        let failed = finished("1", "shell", CallEnd::Failed, Some(101));
        assert_eq!(lines.line(&failed).unwrap(), "shell `cargo test` · failed (exit code 101)");
        let write = serde_json::json!({"path": "src/a.rs", "content": "x"});
        lines.line(&Event::ToolCallRequested {
            call_id: "2".into(),
            name: "write_file".into(),
            input: write,
        });
        let line = lines.line(&finished("2", "write_file", CallEnd::NotApproved, None)).unwrap();
        assert!(line.starts_with("write_file src/a.rs · denied: it needs approval"), "{line}");
        let read = finished("3", "read_file", CallEnd::Failed, None);
        assert_eq!(lines.line(&read).unwrap(), "read_file · failed: error: no such file");
        let long = "x".repeat(300);
        assert_eq!(shorten(&long).chars().count(), SHOWN_CHARS + 1);
    }
}
