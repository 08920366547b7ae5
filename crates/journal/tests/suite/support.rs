//! Builders for journals and a canonical text form of views, shared by the suites.

use codewhale_journal::{
    AssistantPayload, Block, CompactionPath, CompactionPayload, Covers, Entry, EntryId,
    HeaderPayload, ItemContent, Journal, JournalFile, Payload, ToolResultPayload, Trigger,
    UserPayload, View,
};
use serde_json::json;

/// Something entries can be appended to: an in-memory journal or a file.
pub trait Sink {
    fn journal(&self) -> &Journal;
    fn add(&mut self, e: Entry);

    fn tip(&self) -> EntryId {
        self.journal().head_id().clone()
    }

    /// Appends `payload` on HEAD and returns the new id.
    fn on_head(&mut self, payload: impl Into<Payload>) -> EntryId {
        let e = Entry::new(Some(self.tip()), payload).with_tokens(10);
        let id = e.id.clone();
        self.add(e);
        id
    }

    fn user(&mut self, text: &str) -> EntryId {
        self.on_head(UserPayload::text(text))
    }

    fn assistant(&mut self, text: &str) -> EntryId {
        self.on_head(AssistantPayload::new(vec![Block::text(text)]))
    }

    /// An assistant response calling each of `calls`, followed by their results in order.
    fn tools(&mut self, calls: &[&str]) -> (EntryId, Vec<EntryId>) {
        let blocks =
            calls.iter().map(|c| Block::tool_use(*c, "shell", json!({"command": c}))).collect();
        let a = self.on_head(AssistantPayload::new(blocks));
        let results = calls
            .iter()
            .map(|c| self.on_head(ToolResultPayload::new(*c, format!("output of {c}"), false)))
            .collect();
        (a, results)
    }

    /// Appends a record (never moves HEAD) parented on `parent`.
    fn record(&mut self, parent: &EntryId, payload: impl Into<Payload>) -> EntryId {
        let e = Entry::new(Some(parent.clone()), payload);
        let id = e.id.clone();
        self.add(e);
        id
    }

    /// Appends a head record (from `Journal::fork` etc.).
    fn move_head(&mut self, e: Entry) {
        self.add(e);
    }
}

impl Sink for Journal {
    fn journal(&self) -> &Journal {
        self
    }
    fn add(&mut self, e: Entry) {
        self.push(e);
    }
}

impl Sink for JournalFile {
    fn journal(&self) -> &Journal {
        JournalFile::journal(self)
    }
    fn add(&mut self, e: Entry) {
        self.append(e).unwrap();
    }
}

pub fn header() -> Entry {
    Entry::new(None, HeaderPayload::new(EntryId::new().to_string(), "/home/dev/project"))
}

pub fn journal() -> Journal {
    Journal::new(header()).unwrap()
}

/// A summary-path record covering `first..=last`.
pub fn summary_record(
    first: &EntryId,
    last: &EntryId,
    count: u64,
    note: &str,
) -> CompactionPayload {
    let mut c = CompactionPayload::new(CompactionPath::Summary, Trigger::Manual);
    c.summary = Some(note.to_owned());
    c.note = format!("Codewhale handoff note.\n{note}");
    c.covers = Some(Covers::new(first.clone(), last.clone(), count));
    c
}

/// One line per view item: `kind source-suffix: text`, tool calls and results by call id.
pub fn lines(view: &View) -> Vec<String> {
    view.items
        .iter()
        .map(|item| {
            let body = match &item.content {
                ItemContent::Blocks(blocks) => blocks
                    .iter()
                    .map(|b| match b {
                        Block::Text(t) => t.text.clone(),
                        Block::ToolUse(t) => format!("call {}", t.id),
                        other => other.block_type(),
                    })
                    .collect::<Vec<_>>()
                    .join(" | "),
                ItemContent::ToolResult(r) => format!("result {}: {}", r.tool_use_id, r.content),
            };
            format!("{}: {}", item.kind.as_str(), body)
        })
        .collect()
}

/// The view's lines, with only the first line of each (checkpoint notes are multi-line).
pub fn short(view: &View) -> Vec<String> {
    lines(view).into_iter().map(|l| l.lines().next().unwrap_or_default().to_owned()).collect()
}
