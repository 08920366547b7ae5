//! What the parent's model reads from a `task` call: the child's last assistant text cut to
//! [`super::RESULT_TOKENS`] (head kept, a marker naming the child's journal for the rest), and
//! for a child stopped or failed "[stopped: REASON]" / "[failed: REASON]", its last text and
//! the tool calls it made.
//!
//! Pure over the child's journal: what the child did is read back from the file it wrote, so
//! the result says exactly what a later `recall` would find.

use std::path::Path;

use codewhale_journal::{Journal, Payload};
use codewhale_protocol::TurnStatus;

use super::RESULT_TOKENS;

/// How a child's run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    pub status: TurnStatus,
    /// Why it stopped or failed, in one sentence.
    pub reason: Option<String>,
}

/// One tool call the child made, as listed in a stopped or failed result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallMade {
    pub name: String,
    /// The argument that says what it touches (a path, a pattern, a command, a URL).
    pub target: String,
    /// `done`, `failed`, or `no result` when it never finished.
    pub outcome: &'static str,
}

/// The child's last assistant text on its HEAD's spine (empty when it never answered).
pub fn last_text(journal: &Journal) -> String {
    let spine = journal.spine(journal.head_id().as_str());
    spine
        .iter()
        .rev()
        .filter_map(|e| match &e.payload {
            Payload::Assistant(a) => {
                let text: String = a.content.iter().filter_map(|b| b.as_text()).collect();
                (!text.trim().is_empty()).then_some(text)
            }
            _ => None,
        })
        .next()
        .unwrap_or_default()
}

/// The tool calls on the child's spine, in order, with how each ended.
pub fn calls_made(journal: &Journal) -> Vec<CallMade> {
    let spine = journal.spine(journal.head_id().as_str());
    let mut calls: Vec<(String, CallMade)> = Vec::new();
    for entry in &spine {
        match &entry.payload {
            Payload::Assistant(a) => {
                for call in a.tool_uses() {
                    let made = CallMade {
                        name: call.name.clone(),
                        target: target(&call.input),
                        outcome: "no result",
                    };
                    calls.push((call.id.clone(), made));
                }
            }
            Payload::ToolResult(r) => {
                if let Some((_, made)) = calls.iter_mut().find(|(id, _)| *id == r.tool_use_id) {
                    made.outcome = if r.is_error { "failed" } else { "done" };
                }
            }
            _ => {}
        }
    }
    calls.into_iter().map(|(_, made)| made).collect()
}

/// The argument of a call that says what it touches, cut to one short line.
pub fn target(input: &serde_json::Value) -> String {
    let found = ["path", "pattern", "command", "url", "query", "entry", "description"]
        .iter()
        .find_map(|k| input.get(*k).and_then(serde_json::Value::as_str))
        .unwrap_or("");
    let line = found.lines().next().unwrap_or("");
    if line.chars().count() > 80 {
        let cut: String = line.chars().take(79).collect();
        format!("{cut}…")
    } else {
        line.to_owned()
    }
}

/// `text` cut to [`RESULT_TOKENS`]: the head kept, then a marker naming the child's journal,
/// where the whole answer stays.
pub fn cut(text: &str, child_id: &str, child_path: &Path) -> String {
    let limit = u64::from(RESULT_TOKENS);
    if crate::tokens::upper_bound_bytes(text.len() as u64) <= limit {
        return text.to_owned();
    }
    let total = crate::tokens::count(text);
    if total <= RESULT_TOKENS {
        return text.to_owned();
    }
    // A first guess from the ratio, then smaller until it fits.
    let mut keep = (text.len() as u64 * limit / u64::from(total.max(1))) as usize;
    let head = loop {
        let mut end = keep.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let head = &text[..end];
        if crate::tokens::count(head) <= RESULT_TOKENS || end == 0 {
            break head;
        }
        keep = end * 9 / 10;
    };
    format!(
        "{head}\n[… cut at {RESULT_TOKENS} of {total} tokens: the subagent's whole answer is in \
         its journal, session {child_id} ({}); recall{{\"entry\": \"{child_id}\"}} reads it]",
        child_path.display()
    )
}

/// The result the parent's model reads.
pub fn result_text(
    journal: &Journal,
    child_path: &Path,
    ended: &Ended,
    left_out: &[String],
) -> String {
    let child_id = journal.session_id();
    let text = cut(&last_text(journal), child_id, child_path);
    let mut out = String::new();
    let word = match ended.status {
        TurnStatus::Completed => None,
        TurnStatus::Interrupted => Some("stopped"),
        _ => Some("failed"),
    };
    if let Some(word) = word {
        let reason = ended.reason.as_deref().unwrap_or("no reason was given");
        out.push_str(&format!("[{word}: {reason}]\n"));
        if !text.trim().is_empty() {
            out.push_str("Its last text:\n");
            out.push_str(&text);
            out.push('\n');
        }
        let calls = calls_made(journal);
        if calls.is_empty() {
            out.push_str("It made no tool calls.\n");
        } else {
            out.push_str(&format!("The tool calls it made ({}):\n", calls.len()));
            for call in &calls {
                out.push_str(&format!("- {} {} ({})\n", call.name, call.target, call.outcome));
            }
        }
    } else if text.trim().is_empty() {
        out.push_str("[the subagent ended without a final answer]\n");
    } else {
        out.push_str(&text);
        out.push('\n');
    }
    if !left_out.is_empty() {
        out.push_str(&format!("[tools left out: {}]\n", left_out.join("; ")));
    }
    out.push_str(&format!(
        "[subagent session {child_id}; recall{{\"entry\": \"{child_id}\"}} reads its transcript]"
    ));
    out
}
