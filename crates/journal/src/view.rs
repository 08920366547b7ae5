//! The view function (DESIGN §3): what the model reads at a given HEAD.
//!
//! [`render`] is the single place that decides what a request contains. It is a pure function
//! of the journal's entries and the head: no clock, no configuration, no I/O, so the same file
//! renders byte-identically after a restart (the provider's prompt-cache prefix stays stable).
//!
//! 1. Walk the head's spine to the root, keeping `user`, `assistant` and `tool_result` entries.
//! 2. The active compaction is the newest valid `compaction` record whose covered segment
//!    (`covers.last` back to `covers.first`) and every `pruned_ids` entry lie on this spine.
//! 3. The covered segment is replaced, at its position, by the record's `retained_ids` (those in
//!    the segment, in spine order) and then the checkpoint. Results in `pruned_ids` become a
//!    one-line stub; results in `bounded` are cut to head + marker + tail. The checkpoint's
//!    first block is the record's `note`, or one rebuilt from its summary when the record has
//!    none (see [`crate::note`]).
//!
//! [`check_view`] verifies a view before it is sent: tool pairs complete, no orphans, legal
//! role order.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::block::Block;
use crate::entry::{Entry, EntryId};
use crate::journal::Journal;
use crate::note::checkpoint_note;
use crate::payload::{CompactionPayload, Payload};
use crate::text::Text;

/// The second text block of every checkpoint message (DESIGN §5.5).
pub const CHECKPOINT_MARKER: &str = "<!-- codewhale.compaction-checkpoint.v1 -->";

/// Who says a view item in the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    User,
    Assistant,
}

/// What a view item is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ItemKind {
    /// A plain user message.
    User,
    /// A pinned note (`anchor: true`).
    Anchor,
    /// Engine-written text in the user role (`synthetic: true`).
    Synthetic,
    Assistant,
    ToolResult,
    /// The compaction checkpoint note.
    Checkpoint,
}

impl ItemKind {
    /// The name used in `context --json` and `/context`.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::User => "user",
            ItemKind::Anchor => "anchor",
            ItemKind::Synthetic => "synthetic",
            ItemKind::Assistant => "assistant",
            ItemKind::ToolResult => "tool_result",
            ItemKind::Checkpoint => "checkpoint",
        }
    }
}

/// A tool result as the model reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResultView {
    pub tool_use_id: String,
    /// The output: the stored text, a pruning stub, or a bounded cut.
    pub content: Text,
    pub is_error: bool,
    /// Structured output; dropped when the result is pruned.
    pub content_blocks: Option<Vec<Block>>,
}

/// The content of a view item.
#[derive(Clone, Debug, PartialEq)]
pub enum ItemContent {
    /// The blocks of a user, assistant or checkpoint message.
    Blocks(Vec<Block>),
    ToolResult(ToolResultView),
}

/// How a tool result was changed by the active compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shortened {
    /// Replaced by a one-line stub (`pruned_ids`).
    Pruned { original_bytes: u64 },
    /// Cut to `max_bytes` (`bounded`).
    Bounded { original_bytes: u64, max_bytes: u64 },
}

/// One message-sized part of a request, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewItem {
    /// The entry it comes from; for the checkpoint, the compaction record.
    pub source: EntryId,
    pub role: Role,
    pub kind: ItemKind,
    pub content: ItemContent,
    /// The stored token count; `None` when absent or when the view changed the content.
    pub tokens: Option<u32>,
    /// Set when the active compaction shortened this tool result.
    pub shortened: Option<Shortened>,
}

impl ViewItem {
    /// The blocks of a user/assistant/checkpoint item.
    pub fn blocks(&self) -> &[Block] {
        match &self.content {
            ItemContent::Blocks(b) => b,
            ItemContent::ToolResult(_) => &[],
        }
    }

    /// The tool result of a tool_result item.
    pub fn tool_result(&self) -> Option<&ToolResultView> {
        match &self.content {
            ItemContent::ToolResult(r) => Some(r),
            ItemContent::Blocks(_) => None,
        }
    }
}

/// The active compaction of a view.
#[derive(Clone, Debug, PartialEq)]
pub struct ActiveCompaction {
    pub id: EntryId,
    pub record: CompactionPayload,
    /// The record's stored token count (of its note), if any.
    pub tokens: Option<u32>,
}

/// What the model reads at `head`.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    pub head: EntryId,
    pub items: Vec<ViewItem>,
    pub compaction: Option<ActiveCompaction>,
}

impl View {
    /// The checkpoint item, if the view has one.
    pub fn checkpoint(&self) -> Option<&ViewItem> {
        self.items.iter().find(|i| i.kind == ItemKind::Checkpoint)
    }
}

/// The one-line stub that replaces a pruned tool result.
pub fn pruned_stub(original_bytes: u64) -> String {
    format!("[output pruned by compaction: {original_bytes} bytes; rerun the tool if you need it]")
}

/// The marker between the head and tail of a bounded tool result.
pub fn bounded_marker(cut_bytes: usize) -> String {
    format!("\n[... {cut_bytes} bytes cut by compaction; rerun the tool if you need them ...]\n")
}

/// Cuts `text` to at most `max_bytes` of original text: the first half, a marker, the last
/// half, each cut on a UTF-8 boundary. Text within the bound is returned unchanged (`None`).
pub fn cut_to_bound(text: &str, max_bytes: usize) -> Option<String> {
    if text.len() <= max_bytes {
        return None;
    }
    let mut head = max_bytes / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - (max_bytes - max_bytes / 2);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    let marker = bounded_marker(tail - head);
    let mut out = String::with_capacity(head + marker.len() + text.len() - tail);
    out.push_str(&text[..head]);
    out.push_str(&marker);
    out.push_str(&text[tail..]);
    Some(out)
}

/// The view of `head` (an entry id). An unknown head renders an empty view.
pub fn render(journal: &Journal, head: &str) -> View {
    let head_id = EntryId::from(head);
    let Some(start) = journal.position(head) else {
        return View { head: head_id, items: Vec::new(), compaction: None };
    };
    let spine: Vec<u32> = journal
        .spine_positions(start)
        .into_iter()
        .filter(|&p| journal.entry_at(p).payload.is_model_visible())
        .collect();
    let active = if journal.compaction_positions().is_empty() {
        None
    } else {
        active_compaction(journal, &SpineIndex::new(journal, &spine))
    };
    let Some((record_entry, record, range)) = active else {
        let mut items = Vec::with_capacity(spine.len());
        convert_into(&mut items, journal, &spine, None);
        return View { head: head_id, items, compaction: None };
    };

    let pruned: HashSet<&str> = record.pruned_ids.iter().map(EntryId::as_str).collect();
    let bounded: HashMap<&str, u64> =
        record.bounded.iter().map(|b| (b.id.as_str(), b.max_bytes)).collect();
    let shorten = Shorten { pruned: &pruned, bounded: &bounded };
    let mut items = Vec::with_capacity(spine.len());
    let convert = |p: &u32| item(journal.entry_at(*p), Some(&shorten));
    match range {
        Some((first, last)) => {
            let retained: HashSet<&str> = record.retained_ids.iter().map(EntryId::as_str).collect();
            convert_into(&mut items, journal, &spine[..first], Some(&shorten));
            items.extend(
                spine[first..=last]
                    .iter()
                    .filter(|&&p| retained.contains(journal.entry_at(p).id.as_str()))
                    .filter_map(convert),
            );
            items.push(checkpoint_item(record_entry, record));
            convert_into(&mut items, journal, &spine[last + 1..], Some(&shorten));
        }
        None => convert_into(&mut items, journal, &spine, Some(&shorten)),
    }
    let compaction = Some(ActiveCompaction {
        id: record_entry.id.clone(),
        record: record.clone(),
        tokens: record_entry.tokens,
    });
    View { head: head_id, items, compaction }
}

type Active<'a> = (&'a Entry, &'a CompactionPayload, Option<(usize, usize)>);

/// Where each entry sits in the (model-visible) spine, by entry position. A flat table rather
/// than a map of ids: ids are resolved through the journal's own index, so rendering a long
/// session hashes only the ids the records name, not every entry of the spine.
struct SpineIndex<'a> {
    journal: &'a Journal,
    at: Vec<u32>,
}

impl<'a> SpineIndex<'a> {
    const OFF: u32 = u32::MAX;

    fn new(journal: &'a Journal, spine: &[u32]) -> SpineIndex<'a> {
        let mut at = vec![Self::OFF; journal.entries().len()];
        for (i, &p) in spine.iter().enumerate() {
            at[p as usize] = i as u32;
        }
        SpineIndex { journal, at }
    }

    /// The spine index of the entry with this id, when it is on the spine.
    fn get(&self, id: &str) -> Option<usize> {
        let pos = self.journal.position(id)?;
        let i = *self.at.get(pos as usize)?;
        (i != Self::OFF).then_some(i as usize)
    }
}

/// The newest valid record that applies to this spine, with its covered index range.
fn active_compaction<'a>(journal: &'a Journal, on_spine: &SpineIndex<'_>) -> Option<Active<'a>> {
    journal.compaction_positions().iter().rev().find_map(|&pos| {
        let entry = journal.entry_at(pos);
        let Payload::Compaction(record) = &entry.payload else { return None };
        if !record.is_valid() {
            return None;
        }
        if !record.pruned_ids.iter().all(|id| on_spine.get(id.as_str()).is_some()) {
            return None;
        }
        let range = match &record.covers {
            Some(c) => {
                let first = on_spine.get(c.first.as_str())?;
                let last = on_spine.get(c.last.as_str())?;
                if first > last {
                    return None;
                }
                Some((first, last))
            }
            None => None,
        };
        Some((entry, &**record, range))
    })
}

/// Views at least this long are converted on two threads.
const PARALLEL_ITEMS: usize = 16_384;

/// Appends the view items of the entries at `positions`, in order. Converting an item copies
/// its blocks (the view owns its content), which dominates rendering a long uncompacted
/// session; a long run is split in two halves converted at once. The result is the same
/// either way.
fn convert_into(
    items: &mut Vec<ViewItem>,
    journal: &Journal,
    positions: &[u32],
    shorten: Option<&Shorten<'_>>,
) {
    let convert = |p: &u32| item(journal.entry_at(*p), shorten);
    let parallel = positions.len() >= PARALLEL_ITEMS
        && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    if !parallel {
        items.extend(positions.iter().filter_map(convert));
        return;
    }
    let (first, second) = positions.split_at(positions.len() / 2);
    let second_items = std::thread::scope(|scope| {
        let handle = scope.spawn(|| second.iter().filter_map(convert).collect::<Vec<_>>());
        items.extend(first.iter().filter_map(convert));
        handle.join()
    });
    match second_items {
        Ok(rest) => items.extend(rest),
        // The conversion cannot panic; should it anyway, convert the half here rather than
        // return a view with a hole in it.
        Err(_) => items.extend(second.iter().filter_map(convert)),
    }
}

struct Shorten<'a> {
    pruned: &'a HashSet<&'a str>,
    bounded: &'a HashMap<&'a str, u64>,
}

fn checkpoint_item(entry: &Entry, record: &CompactionPayload) -> ViewItem {
    let (note, tokens) = match checkpoint_note(record) {
        Cow::Borrowed(note) => (note.to_owned(), entry.tokens),
        // The stored count (if any) was not of this text: leave it to be estimated.
        Cow::Owned(rebuilt) => (rebuilt, None),
    };
    ViewItem {
        source: entry.id.clone(),
        role: Role::User,
        kind: ItemKind::Checkpoint,
        content: ItemContent::Blocks(vec![Block::text(note), Block::text(CHECKPOINT_MARKER)]),
        tokens,
        shortened: None,
    }
}

fn item(entry: &Entry, shorten: Option<&Shorten<'_>>) -> Option<ViewItem> {
    let (role, kind, content, mut tokens, mut shortened) = match &entry.payload {
        Payload::User(u) => {
            let kind = if u.anchor {
                ItemKind::Anchor
            } else if u.synthetic {
                ItemKind::Synthetic
            } else {
                ItemKind::User
            };
            (Role::User, kind, ItemContent::Blocks(u.content.clone()), entry.tokens, None)
        }
        Payload::Assistant(a) => (
            Role::Assistant,
            ItemKind::Assistant,
            ItemContent::Blocks(a.content.clone()),
            entry.tokens,
            None,
        ),
        Payload::ToolResult(r) => {
            let view = ToolResultView {
                tool_use_id: r.tool_use_id.clone(),
                content: r.content.clone(),
                is_error: r.is_error,
                content_blocks: r.content_blocks.clone(),
            };
            (Role::User, ItemKind::ToolResult, ItemContent::ToolResult(view), entry.tokens, None)
        }
        _ => return None,
    };
    let mut content = content;
    if let (Some(s), ItemContent::ToolResult(view), Payload::ToolResult(r)) =
        (shorten, &mut content, &entry.payload)
    {
        let original_bytes = || r.bytes.unwrap_or(r.content.byte_len() as u64);
        if s.pruned.contains(entry.id.as_str()) {
            let original_bytes = original_bytes();
            view.content = Text::from(pruned_stub(original_bytes));
            view.content_blocks = None;
            tokens = None;
            shortened = Some(Shortened::Pruned { original_bytes });
        } else if let Some(&max_bytes) = s.bounded.get(entry.id.as_str()) {
            let bound = usize::try_from(max_bytes).unwrap_or(usize::MAX);
            if let Some(cut) = cut_to_bound(&r.content, bound) {
                view.content = Text::from(cut);
                tokens = None;
                shortened =
                    Some(Shortened::Bounded { original_bytes: original_bytes(), max_bytes });
            }
        }
    }
    Some(ViewItem { source: entry.id.clone(), role, kind, content, tokens, shortened })
}

/// Why a view cannot be sent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    #[error("the view starts with an assistant message (entry {entry})")]
    FirstNotUser { entry: EntryId },
    #[error("assistant entry {entry} follows another assistant message with no user message or tool result between")]
    AssistantAfterAssistant { entry: EntryId },
    #[error("tool call {call_id} in assistant entry {entry} has no tool result after it")]
    MissingResult { entry: EntryId, call_id: String },
    #[error("tool result entry {entry} answers call {call_id}, which is not a pending call of the assistant message before it")]
    OrphanResult { entry: EntryId, call_id: String },
    #[error("assistant entry {entry} uses tool call id {call_id} twice")]
    DuplicateCall { entry: EntryId, call_id: String },
}

impl ViewError {
    /// The entry the error names.
    pub fn entry(&self) -> &EntryId {
        match self {
            ViewError::FirstNotUser { entry }
            | ViewError::AssistantAfterAssistant { entry }
            | ViewError::MissingResult { entry, .. }
            | ViewError::OrphanResult { entry, .. }
            | ViewError::DuplicateCall { entry, .. } => entry,
        }
    }
}

/// Checks that a view can be sent: the first item is a user message; no assistant message
/// follows another without a user message or tool result between; every `tool_use` is answered
/// by a tool result directly after its assistant message (results of one batch may come in any
/// order), and every tool result answers a call of the assistant message just before it.
pub fn check_view(view: &View) -> Result<(), ViewError> {
    let mut pending: Vec<(&str, &EntryId)> = Vec::new();
    let mut last_role: Option<Role> = None;
    for item in &view.items {
        match (&item.content, item.kind) {
            (ItemContent::ToolResult(r), _) => {
                match pending.iter().position(|(id, _)| *id == r.tool_use_id) {
                    Some(i) => {
                        pending.remove(i);
                    }
                    None => {
                        return Err(ViewError::OrphanResult {
                            entry: item.source.clone(),
                            call_id: r.tool_use_id.clone(),
                        })
                    }
                }
            }
            (ItemContent::Blocks(blocks), _) => {
                if let Some((call_id, entry)) = pending.first() {
                    return Err(ViewError::MissingResult {
                        entry: (*entry).clone(),
                        call_id: (*call_id).to_owned(),
                    });
                }
                if item.role == Role::Assistant {
                    match last_role {
                        None => return Err(ViewError::FirstNotUser { entry: item.source.clone() }),
                        Some(Role::Assistant) => {
                            return Err(ViewError::AssistantAfterAssistant {
                                entry: item.source.clone(),
                            })
                        }
                        Some(Role::User) => {}
                    }
                    for call in blocks.iter().filter_map(Block::as_tool_use) {
                        if pending.iter().any(|(id, _)| *id == call.id) {
                            return Err(ViewError::DuplicateCall {
                                entry: item.source.clone(),
                                call_id: call.id.clone(),
                            });
                        }
                        pending.push((&call.id, &item.source));
                    }
                }
            }
        }
        last_role = Some(item.role);
    }
    match pending.first() {
        Some((call_id, entry)) => Err(ViewError::MissingResult {
            entry: (*entry).clone(),
            call_id: (*call_id).to_owned(),
        }),
        None => Ok(()),
    }
}
