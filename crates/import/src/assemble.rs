//! The shared back half of every import: normalized [`Event`]s in, journal entries out.
//!
//! Owns the rules that make the written conversation one valid branch (docs/journal-format.md):
//! - blocks of one response (same group, or items with no group before any result) become one
//!   `assistant` entry;
//! - the results of its calls follow it as consecutive `tool_result` entries in call order; a
//!   call without a result gets "no result: the call was interrupted" (`is_error`); a result
//!   whose call is not in the conversation is kept as a synthetic user text after the turn;
//! - thinking is kept only with its signature;
//! - the source's own compaction summary becomes a `compaction` record covering everything
//!   written before it (same `first` for every record, so a later record supersedes an earlier
//!   one as Codewhale's own passes do), whose note is marked as imported; a summary with nothing
//!   before it becomes a user message opening with `Conversation Summary (Auto-Generated)`,
//!   which docs/compaction.md, *The checkpoint note* counts as a checkpoint;
//! - the view never starts with an assistant message: a synthetic user line is put first.
//!
//! Memory is bounded by one turn: entries go to the sink as soon as they are final.

use std::collections::hash_map::Entry as Slot;
use std::collections::HashMap;

use codewhale_journal::{
    imported_checkpoint_note, AssistantPayload, Block, CompactionPath, CompactionPayload, Covers,
    Entry, EntryId, Payload, Timestamp, ToolResultPayload, Trigger, Usage, UserPayload,
};

use crate::report::{thinking_reason, Report, Tool};
use crate::ImportError;

/// The text of the result a call without one gets (docs/journal-format.md, *The view*).
pub const INTERRUPTED: &str = "no result: the call was interrupted";

/// What opens a summary that has nothing before it to cover (a docs/compaction.md, *The checkpoint
/// note* checkpoint prefix).
pub const SUMMARY_PREFIX: &str = "Conversation Summary (Auto-Generated)";

/// One normalized piece of a source conversation.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Event {
    /// A message the user typed (text, image placeholders).
    User { blocks: Vec<Block>, ts: Timestamp },
    /// Blocks of a model response; `group` ties lines of one response together.
    Assistant(AssistantPart),
    /// The output of a call.
    Result { call_id: String, content: String, is_error: bool, ts: Timestamp },
    /// The source's own compaction summary.
    Summary(SummaryPart),
}

#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct AssistantPart {
    pub group: Option<String>,
    pub blocks: Vec<Block>,
    pub model: Option<String>,
    pub stop_reason: Option<String>,
    pub usage: Option<Usage>,
    pub ts: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct SummaryPart {
    pub text: String,
    pub ts: Timestamp,
    pub trigger: Trigger,
    pub tokens_before: Option<u64>,
    /// User texts the source kept verbatim beside the summary (Codex `replacement_history`).
    pub retained_texts: Vec<String>,
}

struct Turn {
    group: Option<String>,
    payload: AssistantPayload,
    ts: Timestamp,
    calls: Vec<String>,
    results: HashMap<String, (ToolResultPayload, Timestamp)>,
    orphans: Vec<(UserPayload, Timestamp)>,
}

/// Turns events into entries and hands each to `sink` in file order.
pub(crate) struct Assembler<F> {
    tool: Tool,
    sink: F,
    report: Report,
    parent: EntryId,
    /// The first model-visible entry and its parent: every record's `covers.first` and splice.
    first: Option<(EntryId, EntryId)>,
    last_visible: Option<EntryId>,
    visible: u64,
    /// Plain user entries written so far (for `retained_ids`), only kept when needed.
    users: Vec<(EntryId, String)>,
    keep_users: bool,
    pending: Option<Turn>,
    previous_record: Option<EntryId>,
    model: Option<String>,
}

impl<F: FnMut(Entry) -> Result<(), ImportError>> Assembler<F> {
    /// Writes `header` and starts after it.
    pub fn new(tool: Tool, header: Entry, mut sink: F) -> Result<Assembler<F>, ImportError> {
        let parent = header.id.clone();
        sink(header)?;
        Ok(Assembler {
            tool,
            sink,
            report: Report::new(tool),
            parent,
            first: None,
            last_visible: None,
            visible: 0,
            users: Vec::new(),
            keep_users: tool == Tool::Codex,
            pending: None,
            previous_record: None,
            model: None,
        })
    }

    pub fn report(&mut self) -> &mut Report {
        &mut self.report
    }

    pub fn push(&mut self, event: Event) -> Result<(), ImportError> {
        match event {
            Event::User { blocks, ts } => {
                self.flush()?;
                if blocks.is_empty() {
                    self.report.unused("user message with no content");
                    return Ok(());
                }
                let payload = UserPayload { content: blocks, ..Default::default() };
                if self.keep_users {
                    let text = joined_text(&payload.content);
                    let id = self.emit_visible(payload.into(), ts)?;
                    self.users.push((id, text));
                } else {
                    self.emit_visible(payload.into(), ts)?;
                }
            }
            Event::Assistant(part) => self.assistant(part)?,
            Event::Result { call_id, content, is_error, ts } => {
                self.result(call_id, content, is_error, ts)?
            }
            Event::Summary(summary) => self.summary(summary)?,
        }
        Ok(())
    }

    /// Writes what is still pending and returns the report.
    pub fn finish(mut self) -> Result<Report, ImportError> {
        self.flush()?;
        Ok(self.report)
    }

    fn assistant(&mut self, mut part: AssistantPart) -> Result<(), ImportError> {
        let before = part.blocks.len();
        part.blocks.retain(|b| match b {
            Block::Thinking(t) => t.signature.as_deref().is_some_and(|s| !s.is_empty()),
            _ => true,
        });
        for _ in part.blocks.len()..before {
            self.report.drop_thinking(thinking_reason::UNSIGNED);
        }
        if let Some(model) = &part.model {
            self.model = Some(model.clone());
        }
        let merge = match &self.pending {
            None => false,
            Some(turn) => match (&turn.group, &part.group) {
                (Some(a), Some(b)) if a == b => true,
                (_, None) => turn.results.is_empty(),
                _ => turn.calls.is_empty() && turn.results.is_empty(),
            },
        };
        if merge {
            if let Some(turn) = &mut self.pending {
                self.report.blocks_merged += 1;
                let before = part.blocks.len();
                part.blocks.retain(|b| b.as_tool_use().is_none_or(|c| !turn.calls.contains(&c.id)));
                for _ in part.blocks.len()..before {
                    self.report.unused("tool call repeated in its response");
                }
                add_calls(&mut turn.calls, &part.blocks);
                turn.payload.content.extend(part.blocks);
                if part.stop_reason.is_some() {
                    turn.payload.stop_reason = part.stop_reason;
                }
                if part.usage.is_some() {
                    turn.payload.usage = part.usage;
                }
                if turn.group.is_none() {
                    turn.group = part.group;
                }
            }
            return Ok(());
        }
        self.flush()?;
        let mut calls = Vec::new();
        add_calls(&mut calls, &part.blocks);
        let payload = AssistantPayload {
            content: part.blocks,
            model: part.model,
            stop_reason: part.stop_reason,
            usage: part.usage,
            ..Default::default()
        };
        self.pending = Some(Turn {
            group: part.group,
            payload,
            ts: part.ts,
            calls,
            results: HashMap::new(),
            orphans: Vec::new(),
        });
        Ok(())
    }

    fn result(
        &mut self,
        call_id: String,
        content: String,
        is_error: bool,
        ts: Timestamp,
    ) -> Result<(), ImportError> {
        if let Some(turn) = &mut self.pending {
            if turn.calls.contains(&call_id) {
                match turn.results.entry(call_id) {
                    Slot::Occupied(_) => self.report.unused("second result of one tool call"),
                    Slot::Vacant(slot) => {
                        let result = ToolResultPayload::new(slot.key().clone(), content, is_error);
                        slot.insert((result, ts));
                    }
                }
                return Ok(());
            }
        }
        self.report.pairs_repaired += 1;
        self.report.results_kept_as_text += 1;
        let error = if is_error { ", an error" } else { "" };
        let text = format!(
            "[Output of tool call {call_id}{error}, imported from {}; the call itself is not in \
             this conversation.]\n{content}",
            self.tool.display_name()
        );
        let orphan = UserPayload::synthetic(text);
        match &mut self.pending {
            Some(turn) => turn.orphans.push((orphan, ts)),
            None => {
                self.emit_visible(orphan.into(), ts)?;
            }
        }
        Ok(())
    }

    fn summary(&mut self, summary: SummaryPart) -> Result<(), ImportError> {
        self.flush()?;
        self.report.summaries_imported += 1;
        let (Some((first, splice)), Some(last)) = (self.first.clone(), self.last_visible.clone())
        else {
            let text = format!("{SUMMARY_PREFIX}\n\n{}", summary.text.trim());
            self.emit_visible(UserPayload::text(text).into(), summary.ts)?;
            return Ok(());
        };
        let mut record = CompactionPayload::new(CompactionPath::Summary, summary.trigger);
        record.note = imported_checkpoint_note(self.tool.display_name(), &summary.text);
        record.summary = Some(summary.text);
        record.covers = Some(Covers::new(first, last, self.visible));
        record.retained_ids = self
            .users
            .iter()
            .filter(|(_, text)| summary.retained_texts.iter().any(|t| t.trim() == text.trim()))
            .map(|(id, _)| id.clone())
            .collect();
        record.previous_id = self.previous_record.clone();
        record.model = self.model.clone();
        record.tokens_before = summary.tokens_before;
        record.extra.insert("imported_from".into(), self.tool.as_str().into());
        let mut entry = Entry::new(Some(splice), record);
        entry.ts = summary.ts;
        self.previous_record = Some(entry.id.clone());
        self.report.entries_written += 1;
        (self.sink)(entry)
    }

    fn flush(&mut self) -> Result<(), ImportError> {
        let Some(mut turn) = self.pending.take() else { return Ok(()) };
        if turn.payload.content.is_empty() {
            self.report.unused("response with nothing left to import");
        } else {
            self.emit_visible(Payload::Assistant(turn.payload), turn.ts)?;
            for call in std::mem::take(&mut turn.calls) {
                let (result, ts) = match turn.results.remove(&call) {
                    Some(found) => found,
                    None => {
                        self.report.pairs_repaired += 1;
                        self.report.calls_interrupted += 1;
                        (ToolResultPayload::new(call, INTERRUPTED, true), turn.ts)
                    }
                };
                self.emit_visible(result.into(), ts)?;
            }
        }
        for (orphan, ts) in turn.orphans {
            self.emit_visible(orphan.into(), ts)?;
        }
        Ok(())
    }

    /// Writes a model-visible entry on the branch.
    fn emit_visible(&mut self, payload: Payload, ts: Timestamp) -> Result<EntryId, ImportError> {
        if self.visible == 0 && matches!(payload, Payload::Assistant(_)) {
            let opening = UserPayload::synthetic(format!(
                "[This conversation was imported from {}; its first reply has no prompt before \
                 it in the source.]",
                self.tool.display_name()
            ));
            self.emit_visible(opening.into(), ts)?;
        }
        let mut entry = Entry::new(Some(self.parent.clone()), payload);
        entry.ts = ts;
        let id = entry.id.clone();
        if self.first.is_none() {
            self.first = Some((id.clone(), self.parent.clone()));
        }
        self.parent = id.clone();
        self.last_visible = Some(id.clone());
        self.visible += 1;
        self.report.entries_written += 1;
        (self.sink)(entry)?;
        Ok(id)
    }
}

fn add_calls(calls: &mut Vec<String>, blocks: &[Block]) {
    for call in blocks.iter().filter_map(Block::as_tool_use) {
        if !calls.contains(&call.id) {
            calls.push(call.id.clone());
        }
    }
}

fn joined_text(blocks: &[Block]) -> String {
    blocks.iter().filter_map(Block::as_text).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assemble(events: Vec<Event>) -> (Vec<Entry>, Report) {
        let header = Entry::new(None, codewhale_journal::HeaderPayload::new("s", "/w"));
        let mut out = Vec::new();
        let mut a = Assembler::new(Tool::Claude, header, |e| {
            out.push(e);
            Ok(())
        })
        .unwrap();
        for e in events {
            a.push(e).unwrap();
        }
        let report = a.finish().unwrap();
        (out, report)
    }

    fn reply(group: Option<&str>, blocks: Vec<Block>) -> Event {
        Event::Assistant(AssistantPart {
            group: group.map(str::to_owned),
            blocks,
            ..Default::default()
        })
    }

    fn result(id: &str, text: &str) -> Event {
        Event::Result {
            call_id: id.into(),
            content: text.into(),
            is_error: false,
            ts: Timestamp::default(),
        }
    }

    fn kinds(entries: &[Entry]) -> Vec<&str> {
        entries.iter().map(Entry::kind).collect()
    }

    #[test]
    fn a_reply_with_no_prompt_before_it_gets_a_synthetic_opening() {
        let (entries, _) = assemble(vec![reply(None, vec![Block::text("hi")])]);
        assert_eq!(kinds(&entries), ["header", "user", "assistant"]);
        let Payload::User(u) = &entries[1].payload else { panic!("not a user entry") };
        assert!(u.synthetic);
        assert_eq!(entries[1].parent.as_ref(), Some(&entries[0].id));
        assert_eq!(entries[2].parent.as_ref(), Some(&entries[1].id));
    }

    #[test]
    fn a_repeated_call_or_result_is_counted_not_written_twice() {
        let call = || Block::tool_use("t1", "Bash", json!({"command": "ls"}));
        let (entries, report) = assemble(vec![
            Event::User { blocks: vec![Block::text("go")], ts: Timestamp::default() },
            reply(Some("m"), vec![call()]),
            reply(Some("m"), vec![call(), Block::text("done")]),
            result("t1", "a"),
            result("t1", "b"),
        ]);
        assert_eq!(kinds(&entries), ["header", "user", "assistant", "tool_result"]);
        let Payload::Assistant(a) = &entries[2].payload else { panic!("not an assistant entry") };
        assert_eq!(a.tool_uses().count(), 1);
        assert_eq!(report.lines_unused["tool call repeated in its response"], 1);
        assert_eq!(report.lines_unused["second result of one tool call"], 1);
        let Payload::ToolResult(r) = &entries[3].payload else { panic!("not a result") };
        assert_eq!(&*r.content, "a");
    }

    #[test]
    fn responses_of_different_groups_stay_apart_once_a_result_came() {
        let (entries, report) = assemble(vec![
            Event::User { blocks: vec![Block::text("go")], ts: Timestamp::default() },
            reply(Some("m1"), vec![Block::text("first")]),
            reply(Some("m2"), vec![Block::text("second")]),
            reply(Some("m2"), vec![Block::tool_use("t", "Read", json!({}))]),
            result("t", "out"),
            reply(Some("m3"), vec![Block::text("third")]),
        ]);
        assert_eq!(kinds(&entries), ["header", "user", "assistant", "tool_result", "assistant"]);
        assert_eq!(report.blocks_merged, 2, "two responses with nothing between are one entry");
    }
}
