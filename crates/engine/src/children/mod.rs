//! The `task` children of a session, found from its journal and the session files beside it
//! (docs/subagents.md), and the parent's `recall` reaching them: `recall{entry}` with a child's session id (or
//! a unique prefix of it) or its `task` call's id returns the child's transcript, and an entry
//! id of a child's journal returns that entry; `recall{query}` also searches the journals of
//! the children whose `task` calls lie on HEAD's spine. So a compaction of the parent loses
//! nothing a child found.
//!
//! Read-only: a child's journal is loaded from its file (it is closed once its call returned);
//! what is returned passes through the parent's redactor, and is capped like any recall.

use std::path::PathBuf;

use codewhale_journal::{list_sessions, load_read_only, Journal, Payload};
use serde_json::Value;

use crate::session::Session;

/// A child of the session whose `task` call lies on HEAD's spine.
#[derive(Debug, Clone)]
pub struct Child {
    pub id: String,
    pub description: String,
    pub call_id: String,
    pub path: PathBuf,
}

/// The children whose `task` calls lie on HEAD's spine, in call order.
pub fn children_on_spine(session: &Session) -> Vec<Child> {
    let journal = session.journal();
    let calls: Vec<String> = journal
        .spine(journal.head_id().as_str())
        .iter()
        .filter_map(|e| match &e.payload {
            Payload::Assistant(a) => {
                Some(a.tool_uses().filter(|c| c.name == crate::tools::task::TOOL))
            }
            _ => None,
        })
        .flatten()
        .map(|c| c.id.clone())
        .collect();
    if calls.is_empty() {
        return Vec::new();
    }
    let Some(dir) = session.path().parent() else { return Vec::new() };
    let Ok(listing) = list_sessions(dir) else { return Vec::new() };
    let mine: Vec<_> = listing
        .sessions
        .into_iter()
        .filter(|s| s.parent.as_deref() == Some(session.id()))
        .collect();
    calls
        .iter()
        .filter_map(|call| {
            let info = mine.iter().find(|s| s.parent_call.as_deref() == Some(call.as_str()))?;
            Some(Child {
                id: info.id.clone(),
                description: info.title.clone().unwrap_or_default(),
                call_id: call.clone(),
                path: info.path.clone(),
            })
        })
        .collect()
}

fn load(child: &Child) -> Result<Journal, String> {
    load_read_only(&child.path)
        .map(|l| l.journal)
        .map_err(|e| format!("the journal of subagent session {} cannot be read: {e}", child.id))
}

/// The whole conversation of a child, oldest first.
fn transcript(child: &Child, journal: &Journal) -> String {
    let mut out = format!(
        "subagent session {} · \"{}\" (task call {})\n",
        child.id, child.description, child.call_id
    );
    for entry in journal.spine(journal.head_id().as_str()) {
        if let Some((kind, text)) = crate::recall::entry_text(&entry.payload) {
            out.push_str(&format!("\n[{kind} {}]\n{text}\n", entry.id.as_str()));
        }
    }
    out
}

/// `recall{entry}` naming a child (its id, a unique prefix of it, or its `task` call's id) or
/// an entry of a child's journal that the parent's journal does not hold: the text, capped to
/// `max` characters. `None` when the entry is not about a child (the ordinary recall answers).
pub fn entry(session: &Session, input: &Value, max: usize) -> Option<Result<String, String>> {
    let wanted = input.get("entry").and_then(Value::as_str)?.trim();
    if wanted.is_empty() {
        return None;
    }
    let children = children_on_spine(session);
    if children.is_empty() {
        return None;
    }
    let named = children.iter().find(|c| {
        c.call_id == wanted || c.id == wanted || (wanted.len() >= 8 && c.id.starts_with(wanted))
    });
    if let Some(child) = named {
        let text = load(child).map(|j| transcript(child, &j));
        return Some(text.map(|t| finish(session, t, max)));
    }
    let parent = session.journal();
    let in_parent = (0..parent.len() as u32).any(|p| parent.id_at(p).starts_with(wanted));
    if in_parent {
        return None;
    }
    for child in &children {
        let Ok(journal) = load(child) else { continue };
        let found = journal
            .spine(journal.head_id().as_str())
            .into_iter()
            .find(|e| e.id.as_str().starts_with(wanted));
        if let Some((kind, text)) = found.and_then(|e| crate::recall::entry_text(&e.payload)) {
            let head = format!("entry {wanted} of subagent session {} · {kind}\n", child.id);
            return Some(Ok(finish(session, head + &text, max)));
        }
    }
    None
}

/// What `recall{query}` finds in the children's journals (empty when nothing matches): per
/// child, its entries holding a word of the query, with a snippet.
pub fn search(session: &Session, query: &str) -> String {
    let words: Vec<String> =
        query.split_whitespace().map(str::to_lowercase).filter(|w| w.len() > 1).collect();
    if words.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for child in children_on_spine(session) {
        let Ok(journal) = load(&child) else { continue };
        let mut hits = Vec::new();
        for entry in journal.spine(journal.head_id().as_str()) {
            let Some((kind, text)) = crate::recall::entry_text(&entry.payload) else { continue };
            let lower = text.to_lowercase();
            let Some(at) = words.iter().filter_map(|w| lower.find(w.as_str())).min() else {
                continue;
            };
            hits.push(format!("- entry {} · {kind}: {}", entry.id.as_str(), snippet(&text, at)));
            if hits.len() == 5 {
                break;
            }
        }
        if !hits.is_empty() {
            out.push_str(&format!(
                "\nIn subagent session {} (\"{}\", task call {}):\n{}\n",
                child.id,
                child.description,
                child.call_id,
                hits.join("\n")
            ));
        }
    }
    out
}

/// About 200 characters of `text` around byte `at`, on one line.
fn snippet(text: &str, at: usize) -> String {
    // `at` was found in the lowercased text: on another boundary, start at the top.
    let at = if text.is_char_boundary(at.min(text.len())) { at.min(text.len()) } else { 0 };
    let start = text[..at.min(text.len())].char_indices().rev().nth(60).map_or(0, |(i, _)| i);
    let piece: String = text[start..].chars().take(200).collect();
    piece.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn finish(session: &Session, text: String, max: usize) -> String {
    let text = session.redactor().redact(&text).into_owned();
    crate::recall::cap(text, max)
}

/// The answer to `GetSubagentTranscript`: the whole conversation of child `id` of the
/// session whose journal is in `dir`, read from its file (a running child's included).
pub fn transcript_event(
    dir: &std::path::Path,
    parent: &str,
    id: &str,
) -> codewhale_protocol::Event {
    use codewhale_protocol::{ErrorKind, Event};
    let error = |message: String| Event::Error { kind: ErrorKind::Journal, message };
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return error(format!("{id:?} is not a session id"));
    }
    let path = dir.join(format!("{id}.jsonl"));
    let journal = match load_read_only(&path) {
        Ok(loaded) => loaded.journal,
        Err(e) => {
            return error(format!("the subagent's journal {} cannot be read: {e}", path.display()))
        }
    };
    if journal.header().parent_session.as_deref() != Some(parent) {
        return error(format!("session {id} is not a subagent of this session"));
    }
    let model = crate::session::replay::journal_limits(&journal)
        .model
        .unwrap_or_else(|| journal.header().model.clone());
    let transcript = crate::history_pages::transcript(&journal, &model);
    Event::Transcript { transcript: Box::new(transcript) }
}

/// The children of `calls` (`task` call ids) as a note lists them under `## Subagents`:
/// (description, child session id), in call order.
pub fn listed(session: &Session, calls: &[&str]) -> Vec<(String, String)> {
    if calls.is_empty() {
        return Vec::new();
    }
    children_on_spine(session)
        .into_iter()
        .filter(|c| calls.contains(&c.call_id.as_str()))
        .map(|c| (c.description, c.id))
        .collect()
}
