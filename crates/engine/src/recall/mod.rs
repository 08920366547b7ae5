//! `recall` (docs/compaction.md, *`recall`: the journal is one call away*): what compaction took
//! out of the model's view, read back from the journal.
//!
//! The scope is the entries on HEAD's spine that the view does not carry whole: covered by the
//! active compaction (and not retained), pruned, bounded, or left out of the last request by a
//! fail-open trim ([`scope`]). `query` ranks those entries by the query's words — text blocks,
//! tool results and tool-call inputs alike — and answers with entry ids, kinds and snippets;
//! `entry` (an id or a unique prefix) returns one entry's full text. Invariants: an entry of
//! another branch is never read, an entry the view carries whole is never returned (the model
//! has it already), everything returned passes through the session's current redactor and fits
//! in `max_chars` and in the room the budget leaves. Pure over the journal and the view: the
//! caller supplies the room and the redactor.

use std::collections::HashMap;

use codewhale_journal::{cut, EntryId, ItemKind, Journal, Payload, Role, Shortened, View};
use codewhale_provider::ToolSpec;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::redact::Redactor;

/// The tool's name.
pub const TOOL: &str = "recall";

/// `max_chars` when the call does not say.
pub const DEFAULT_MAX_CHARS: usize = 20_000;

/// Why an entry in scope is not in the view whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Absence {
    /// Covered by the active compaction: only the note speaks of it.
    Covered,
    /// Replaced by a one-line stub.
    Pruned,
    /// Cut to a head and a tail, or a prefix.
    Bounded,
    /// Left out of the last request by a fail-open trim.
    Trimmed,
}

impl Absence {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Absence::Covered => "covered by compaction",
            Absence::Pruned => "pruned",
            Absence::Bounded => "shortened",
            Absence::Trimmed => "left out of the last request",
        }
    }
}

/// What the request being answered cut that the view carries whole: what a fail-open trim left
/// out (everything before `first`, the first item still sent after a left-out one) and the
/// outputs the request itself bounded (`reads.trimmed_before` and `reads.bounded`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestCut {
    pub first: Option<EntryId>,
    pub bounded: Vec<EntryId>,
}

impl RequestCut {
    /// The cut of the last request, as its assistant entry on `view` records it.
    fn of_last_request(journal: &Journal, view: &View) -> RequestCut {
        let reads = view
            .items
            .iter()
            .rev()
            .find(|i| i.role == Role::Assistant && i.kind == ItemKind::Assistant)
            .and_then(|i| match &journal.get(i.source.as_str())?.payload {
                Payload::Assistant(a) => a.reads.clone(),
                _ => None,
            });
        let Some(reads) = reads else { return RequestCut::default() };
        RequestCut {
            first: reads.trimmed_before,
            bounded: reads.bounded.unwrap_or_default().into_iter().map(|b| b.id).collect(),
        }
    }
}

/// The spine positions (oldest first) of the entries in scope, and why each is. `cut` is what a
/// request not journaled yet cut; `None` reads the cut of the last request from its assistant
/// entry.
pub fn scope(journal: &Journal, view: &View, cut: Option<&RequestCut>) -> Vec<(u32, Absence)> {
    // By position: the spine is long, and comparing positions formats no id.
    let mut in_view: HashMap<u32, Absence> = HashMap::new();
    let mut whole: std::collections::HashSet<u32> = std::collections::HashSet::new();
    // The fail-open trim of the last request left out what came before `first` (anchors and
    // the checkpoint are always sent), and it may have bounded outputs the view has whole.
    let cut = cut.cloned().unwrap_or_else(|| RequestCut::of_last_request(journal, view));
    let trimmed_before = cut.first;
    let trimmed_end = trimmed_before
        .as_ref()
        .and_then(|first| view.items.iter().position(|i| &i.source == first))
        .unwrap_or(0);
    for (index, item) in view.items.iter().enumerate() {
        if item.kind == ItemKind::Checkpoint {
            continue;
        }
        let Some(pos) = journal.position(item.source.as_str()) else { continue };
        let trimmed = index < trimmed_end && item.kind != ItemKind::Anchor;
        let bounded = cut.bounded.contains(&item.source);
        match (item.shortened, trimmed) {
            (_, true) => {
                in_view.insert(pos, Absence::Trimmed);
            }
            (Some(Shortened::Pruned { .. }), _) => {
                in_view.insert(pos, Absence::Pruned);
            }
            (Some(Shortened::Bounded { .. }), _) => {
                in_view.insert(pos, Absence::Bounded);
            }
            (None | Some(Shortened::ImagesCovered { .. }), false) if bounded => {
                in_view.insert(pos, Absence::Bounded);
            }
            // Its text is in the view whole; its images are in the journal, not in the text.
            (None | Some(Shortened::ImagesCovered { .. }), false) => {
                whole.insert(pos);
            }
        }
    }
    let Some(head) = journal.position(view.head.as_str()) else { return Vec::new() };
    journal
        .spine_positions(head)
        .into_iter()
        .filter(|&p| journal.is_model_visible_at(p))
        .filter(|p| !whole.contains(p))
        .map(|p| (p, in_view.get(&p).copied().unwrap_or(Absence::Covered)))
        .collect()
}

/// What a call needs besides its arguments.
pub struct RecallContext<'a> {
    pub journal: &'a Journal,
    pub view: &'a View,
    /// Characters the budget leaves for the result.
    pub room_chars: usize,
    pub redactor: &'a Redactor,
    /// What a request not journaled yet cut ([`scope`]); `None` in a turn, where the
    /// request that asked is journaled.
    pub trim: Option<&'a RequestCut>,
}

impl RecallContext<'_> {
    fn scope(&self) -> Vec<(u32, Absence)> {
        scope(self.journal, self.view, self.trim)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    entry: Option<String>,
    #[serde(default)]
    max_chars: Option<u64>,
}

/// Runs a call: the text the model reads, or the sentence that says what is wrong.
pub fn run(ctx: &RecallContext<'_>, input: &Value) -> Result<String, String> {
    let value = match input {
        Value::String(s) => serde_json::from_str(s).map_err(|e| {
            format!("the arguments of {TOOL} are not a JSON object: {e}; send an object")
        })?,
        other => other.clone(),
    };
    let args: Args = serde_json::from_value(value)
        .map_err(|e| format!("invalid arguments for {TOOL}: {e}; see the tool's schema"))?;
    let asked =
        args.max_chars.map_or(DEFAULT_MAX_CHARS, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let max = asked.min(ctx.room_chars);
    if max < 200 {
        return Err("the context has no room left for recalled text; answer from what you have \
                    or ask the user to run /compact first"
            .to_owned());
    }
    let text = match (args.entry.as_deref().map(str::trim), args.query.as_deref().map(str::trim)) {
        (Some(entry), _) if !entry.is_empty() => one_entry(ctx, entry)?,
        (_, Some(query)) if !query.is_empty() => search::search(ctx, query)?,
        _ => {
            return Err(format!(
                "{TOOL} needs a query (words to search for) or an entry (an id from a marker or \
                 an earlier hit)"
            ))
        }
    };
    let text = ctx.redactor.redact(&text).into_owned();
    Ok(cap(text, max))
}

/// `text` cut to `max` characters (its head, room left for the marker), with the marker saying
/// how much is left out and what to ask instead.
pub(crate) fn cap(text: String, max: usize) -> String {
    if text.chars().count() <= max {
        return text;
    }
    let budget = cut::char_budget(&text, max.saturating_sub(200));
    let hint = format!("the limit was {max} characters: ask for less, or a more specific query");
    cut::head(&text, budget, cut::Whole::Hint(&hint)).unwrap_or(text)
}

/// What an entry holds as searchable text: text blocks, tool-call names and inputs, tool output.
/// Thinking is left out (it is the model's own and may be signed). A tool result's output is
/// lent, not copied: a query over a long session reads most of its bytes.
pub(crate) fn entry_text(payload: &Payload) -> Option<(&'static str, std::borrow::Cow<'_, str>)> {
    match payload {
        Payload::User(u) => {
            let text: Vec<&str> = u.content.iter().filter_map(|b| b.as_text()).collect();
            let kind = if u.anchor {
                "anchor"
            } else if u.synthetic {
                "synthetic"
            } else {
                "user"
            };
            Some((kind, text.join("\n").into()))
        }
        Payload::Assistant(a) => {
            let mut out = Vec::new();
            let mut calls = false;
            for block in &a.content {
                if let Some(t) = block.as_text() {
                    out.push(t.to_owned());
                } else if let Some(call) = block.as_tool_use() {
                    calls = true;
                    out.push(format!("[tool call {} {}]", call.name, call.input));
                }
            }
            let kind = if calls { "assistant (tool calls)" } else { "assistant" };
            Some((kind, out.join("\n").into()))
        }
        Payload::ToolResult(r) => Some(("tool_result", r.content.as_str().into())),
        _ => None,
    }
}

fn one_entry(ctx: &RecallContext<'_>, wanted: &str) -> Result<String, String> {
    let journal = ctx.journal;
    let matches: Vec<u32> =
        (0..journal.len() as u32).filter(|&p| journal.id_at(p).starts_with(wanted)).collect();
    let exact = matches.iter().copied().find(|&p| &*journal.id_at(p) == wanted);
    let pos = match (exact, matches.as_slice()) {
        (Some(p), _) | (None, &[p]) => p,
        (None, []) => {
            return Err(format!(
                "no journal entry has the id {wanted:?}; use an id from a marker or from a \
                 recall hit"
            ))
        }
        (None, many) => {
            return Err(format!(
                "{} entries start with {wanted:?}; send more of the id",
                many.len()
            ))
        }
    };
    let id = journal.id_at(pos).to_string();
    let in_scope = ctx.scope();
    let Some(&(_, absence)) = in_scope.iter().find(|(p, _)| *p == pos) else {
        let head = journal.position(ctx.view.head.as_str());
        let on_spine = head.is_some_and(|h| journal.spine_positions(h).contains(&pos));
        return Err(if !on_spine {
            format!(
                "entry {id} is not on this branch of the conversation; recall reads only the \
                 current branch"
            )
        } else if journal.is_model_visible_at(pos) {
            format!("entry {id} is in your context whole; read it there")
        } else {
            format!("entry {id} is a {} record, not part of the conversation", journal.kind_at(pos))
        });
    };
    let entry = journal.read_entry(pos);
    let (kind, text) = entry_text(&entry.payload).unwrap_or(("entry", "".into()));
    Ok(format!("entry {id} · {kind} · {}\n{text}", absence.as_str()))
}

/// The tool's schema.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: TOOL.to_owned(),
        description: "Read back what compaction took out of your context: earlier messages, tool \
                      calls and outputs that the handoff note summarizes or that a marker says \
                      were pruned or cut. With query, search them and get the best matches with \
                      their entry ids; with entry (an id from a marker or a hit, or a unique \
                      prefix), read that entry whole. Read-only; it never reruns anything."
            .to_owned(),
        input_schema: json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "Words to look for: an identifier, a path, a phrase of an error, a decision."},
            "entry": {"type": "string", "description": "A journal entry id, or a unique prefix of one."},
            "max_chars": {"type": "integer", "minimum": 200, "description": "Most characters to return (default 20000; never more than the context has room for)."}
        }, "additionalProperties": false}),
    }
}

mod search;
#[cfg(test)]
use search::{snippet, terms, SNIPPET_SIDE};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_scan;
