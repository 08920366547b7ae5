//! What a note says of the covered messages no summary request read (docs/compaction.md, *The
//! summary request*): a pass sends at most `compaction.max_summary_requests` requests, and the
//! oldest part of a long covered segment is then summarized by Codewhale itself, without a model.
//!
//! Pure: messages and their estimates in, text out. The extract names the span (first and last
//! entry, time, count, tokens), the user's own words there (newest first, first line each), the
//! commands run with their exit codes (newest first) and says that everything stays reachable
//! with `recall`. Branch summaries and the user's messages within the retained budget are kept
//! verbatim by the cut anyway (they are in the view, not in the note). Invariant: the extract is
//! at most [`MAX_CHARS`] characters, whatever the size of the span.

use super::message::{Message, Part, Role};

/// The extract's cap, in characters.
pub const MAX_CHARS: usize = 3_000;
/// User messages and commands listed, each.
const LISTED: usize = 10;
/// Characters of one listed line.
const LINE_CHARS: usize = 120;

/// The span's ends, from the journal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ends {
    pub first: String,
    pub last: String,
    /// RFC 3339 times of the first and last entry, when known.
    pub first_time: Option<String>,
    pub last_time: Option<String>,
}

/// The extract of `messages` (the unread part, `tokens[i]` its estimates), or `None` when it is
/// empty.
pub fn extract(messages: &[Message], tokens: &[u64], ends: &Ends) -> Option<String> {
    if messages.is_empty() {
        return None;
    }
    let total: u64 = tokens.iter().sum();
    let when = match (&ends.first_time, &ends.last_time) {
        (Some(a), Some(b)) => format!(", {a} to {b}"),
        _ => String::new(),
    };
    let mut out = format!(
        "Not read for this note: the oldest {} messages (about {} tokens), entries {} to {}{when}. \
         They stay in the journal; `recall` finds them.",
        messages.len(),
        total,
        ends.first,
        ends.last
    );
    let users: Vec<String> = messages
        .iter()
        .rev()
        .filter(|m| m.role == Role::User && !m.anchor && !m.synthetic)
        .filter_map(first_text)
        .take(LISTED)
        .collect();
    if !users.is_empty() {
        out.push_str("\nThe user's messages there, newest first (first line each):");
        for line in users {
            out.push_str(&format!("\n- {line}"));
        }
    }
    let commands = commands(messages);
    if !commands.is_empty() {
        out.push_str("\nCommands run there, newest first:");
        for (command, code) in commands {
            let code =
                code.map_or_else(|| "exit code not stated".to_owned(), |c| format!("exit {c}"));
            out.push_str(&format!("\n- `{command}` ({code})"));
        }
    }
    if out.chars().count() > MAX_CHARS {
        out = out.chars().take(MAX_CHARS - 1).collect::<String>() + "…";
    }
    Some(out)
}

/// The first line of a message's first text, shortened.
fn first_text(message: &Message) -> Option<String> {
    message.content.iter().find_map(|part| match part {
        Part::Text { text } if !text.trim().is_empty() => Some(line(text)),
        _ => None,
    })
}

fn line(text: &str) -> String {
    let first = text.trim().lines().next().unwrap_or_default();
    if first.chars().count() > LINE_CHARS {
        first.chars().take(LINE_CHARS - 1).collect::<String>() + "…"
    } else {
        first.to_owned()
    }
}

/// The newest shell commands with their exit codes; only their own results are read.
fn commands(messages: &[Message]) -> Vec<(String, Option<i32>)> {
    let mut out = Vec::new();
    for (index, message) in messages.iter().enumerate().rev() {
        if message.role != Role::Assistant {
            continue;
        }
        for part in message.content.iter().rev() {
            let Part::ToolUse { id, name, input } = part else { continue };
            let Some(command) = input.get("command").and_then(|c| c.as_str()) else { continue };
            if name != "shell" {
                continue;
            }
            out.push((line(command), exit_code(&messages[index + 1..], id)));
            if out.len() == LISTED {
                return out;
            }
        }
    }
    out
}

/// The exit code the result of call `id` states, looking a few messages ahead.
fn exit_code(after: &[Message], id: &str) -> Option<i32> {
    after.iter().take(8).flat_map(|m| &m.content).find_map(|part| match part {
        Part::ToolResult { tool_use_id, content, .. } if tool_use_id == id => {
            let text = content.try_str().unwrap_or_default();
            let at = text.rfind("[exit code: ")?;
            let rest = &text[at + "[exit code: ".len()..];
            rest[..rest.find(']')?].trim().parse().ok()
        }
        _ => None,
    })
}

/// The summary a note carries: the model's text after caps and, when the request limit left
/// the oldest covered messages unread, the extract of them at the end of its `Reference`
/// section (the cap leaves room for it).
pub fn with_extract(
    journal: &codewhale_journal::Journal,
    view: &codewhale_journal::View,
    plain: &crate::plain::PlainView,
    text: &str,
    stats: &crate::summary::SummaryStats,
    note_chars: usize,
) -> String {
    let unread = stats.unread.min(view.items.len());
    let time = |index: usize| {
        let id = view.items.get(index)?.source.as_str();
        journal.get(id).map(|e| e.ts.to_string())
    };
    let ends = Ends {
        first: view.items.first().map(|i| i.source.to_string()).unwrap_or_default(),
        last: unread.checked_sub(1).map(|i| view.items[i].source.to_string()).unwrap_or_default(),
        first_time: time(0),
        last_time: unread.checked_sub(1).and_then(time),
    };
    let Some(extract) = extract(&plain.messages[..unread], &plain.tokens[..unread], &ends) else {
        return crate::summary::cap_to(text, note_chars);
    };
    let room = note_chars.saturating_sub(extract.chars().count() + 2);
    format!(
        "{}

{extract}",
        crate::summary::cap_to(text, room)
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn shell(id: &str, command: &str) -> Message {
        Message::new(
            Role::Assistant,
            vec![Part::tool_use(id, "shell", json!({"command": command}))],
        )
    }
    fn result(id: &str, text: &str) -> Message {
        Message::new(Role::User, vec![Part::tool_result(id, text)])
    }
    fn ends() -> Ends {
        Ends {
            first: "e1".into(),
            last: "e9".into(),
            first_time: Some("2026-12-01T10:00:00Z".into()),
            last_time: Some("2026-12-01T11:00:00Z".into()),
        }
    }

    #[test]
    fn names_the_span_the_users_words_and_the_commands_with_exit_codes() {
        let m = vec![
            Message::user("port the parser\nsecond line"),
            shell("c1", "cargo build"),
            result("c1", "ok\n[exit code: 0]"),
            Message::user("now the tests"),
            shell("c2", "cargo test"),
            result("c2", "1 failed\n[exit code: 101]"),
        ];
        let text = extract(&m, &[10; 6], &ends()).unwrap();
        assert!(
            text.contains("the oldest 6 messages (about 60 tokens), entries e1 to e9"),
            "{text}"
        );
        assert!(text.contains("2026-12-01T10:00:00Z to 2026-12-01T11:00:00Z"), "{text}");
        assert!(text.contains("`recall`"), "{text}");
        let users = text.find("- now the tests").unwrap();
        assert!(users < text.find("- port the parser").unwrap(), "newest first: {text}");
        assert!(!text.contains("second line"), "first line only: {text}");
        assert!(text.contains("- `cargo test` (exit 101)\n- `cargo build` (exit 0)"), "{text}");
    }

    #[test]
    fn stays_within_its_cap_whatever_the_span() {
        let mut m = Vec::new();
        for k in 0..5_000 {
            m.push(Message::user(format!("{k} {}", "word ".repeat(60))));
            m.push(shell(&format!("c{k}"), &"x".repeat(500)));
            m.push(result(&format!("c{k}"), "[exit code: 1]"));
        }
        let text = extract(&m, &vec![100; m.len()], &ends()).unwrap();
        assert!(text.chars().count() <= MAX_CHARS);
        assert_eq!(extract(&[], &[], &ends()), None);
    }
}
