//! Token counts of journal entries: computed once when an entry is written and stored in its
//! line; provisional when the encoder is not ready yet.
//!
//! Invariants: an entry's count covers exactly what the model reads of it (text, thinking,
//! tool names and arguments, tool output) plus a small per-message overhead; an entry written
//! before the encoder was ready carries no `tokens` field and is counted here, in memory, the
//! first time a decision needs it — a handful of recent entries, never the whole file. Such
//! in-memory counts are kept between runs in a sidecar beside the journal
//! ([`load_sidecar`], [`store_sidecar`]), so each entry is counted once, not on every open.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use codewhale_journal::{Block, EntryId, Payload};

use codewhale_provider::ToolSpec;

use crate::budget::SystemCounts;
use crate::tokens;

/// Tokens a provider adds around every message (role markers, separators).
pub const MESSAGE_OVERHEAD: u32 = 4;

/// The text of a payload as the model reads it, or `None` for kinds the model never reads.
pub fn payload_text(payload: &Payload) -> Option<String> {
    let blocks = match payload {
        Payload::User(u) => &u.content,
        Payload::Assistant(a) => &a.content,
        Payload::ToolResult(r) => return Some(r.content.to_string()),
        Payload::BranchSummary(b) => return Some(b.model_text()),
        _ => return None,
    };
    let mut text = String::new();
    if matches!(payload, Payload::User(u) if u.anchor) {
        // A pinned note is sent under its label (`crate::convert`).
        text.push_str(crate::convert::ANCHOR_LABEL);
        text.push('\n');
    }
    for block in blocks {
        match block {
            Block::Text(t) => text.push_str(&t.text),
            Block::Thinking(t) => text.push_str(&t.thinking),
            Block::ToolUse(t) => {
                text.push_str(&t.name);
                text.push(' ');
                text.push_str(&t.input.to_string());
            }
            Block::Opaque(raw) => text.push_str(raw.get()),
            // The picture itself is counted apart (`image_tokens`).
            Block::Image(image) => text.push_str(&image.describe()),
        }
        text.push('\n');
    }
    Some(text)
}

/// What the images of `blocks` cost, by the providers' published rules
/// ([`codewhale_provider::image_tokens`]); counted apart from the text, whose count holds
/// only each image's one line.
pub fn image_tokens(blocks: &[Block]) -> u32 {
    blocks
        .iter()
        .filter_map(Block::as_image)
        .map(|i| codewhale_provider::image_tokens(i.width, i.height))
        .fold(0u32, u32::saturating_add)
}

/// [`image_tokens`] of a payload's content (0 for a payload without blocks).
pub fn payload_image_tokens(payload: &Payload) -> u32 {
    match payload {
        Payload::User(u) => image_tokens(&u.content),
        _ => 0,
    }
}

/// What the model reads of an entry or a view item, as counted: its text (each image as its
/// one line) and, apart, what its images cost. The one way an entry's count is made.
#[derive(Debug, Clone)]
pub struct Counted {
    pub text: String,
    pub images: u32,
}

impl Counted {
    /// An entry's payload, or `None` for kinds the model never reads.
    pub fn of_payload(payload: &Payload) -> Option<Counted> {
        let text = payload_text(payload)?;
        Some(Counted { text, images: payload_image_tokens(payload) })
    }

    /// A view item as shown (a pruned or bounded item's text, a covered image's line).
    pub fn of_item(content: &codewhale_journal::ItemContent) -> Counted {
        let images = match content {
            codewhale_journal::ItemContent::Blocks(blocks) => image_tokens(blocks),
            codewhale_journal::ItemContent::ToolResult(_) => 0,
        };
        Counted { text: super::item_text(content), images }
    }

    /// The exact count, waiting for the encoder if needed.
    pub fn exact(&self) -> u32 {
        exact(&self.text).saturating_add(self.images)
    }

    /// The exact count, if the encoder is ready.
    pub fn exact_if_ready(&self) -> Option<u32> {
        exact_if_ready(&self.text).map(|n| n.saturating_add(self.images))
    }

    /// A provisional upper bound.
    pub fn upper(&self) -> u64 {
        upper_bound(&self.text) + u64::from(self.images)
    }
}

/// The exact count of `text` as one message, if the encoder is ready.
pub fn exact_if_ready(text: &str) -> Option<u32> {
    tokens::count_if_ready(text).map(|n| n.saturating_add(MESSAGE_OVERHEAD))
}

/// The exact count of `text` as one message, waiting for the encoder if needed.
pub fn exact(text: &str) -> u32 {
    tokens::count(text).saturating_add(MESSAGE_OVERHEAD)
}

/// A provisional upper bound for `text` as one message.
pub fn upper_bound(text: &str) -> u64 {
    tokens::upper_bound_bytes(text.len() as u64) + u64::from(MESSAGE_OVERHEAD)
}

/// What every request carries before the view — the system prompt `prompt` and the tool
/// schemas `specs` — counted the one way every figure uses: exactly when the encoder is ready
/// (or `wait` says to wait for it), else by the provisional upper bound. The flag says which.
pub fn system_counts(prompt: &str, specs: &[ToolSpec], wait: bool) -> (SystemCounts, bool) {
    let schemas = serde_json::to_string(specs).unwrap_or_default();
    let exact = wait || tokens::is_ready();
    let count = |text: &str| {
        if exact {
            u64::from(tokens::count(text))
        } else {
            tokens::upper_bound_bytes(text.len() as u64)
        }
    };
    (SystemCounts { prompt: count(prompt), schemas: count(&schemas) }, exact)
}

/// [`system_counts`] exactly, through a small cache in `cache` (`<home>/system-counts.json`,
/// keyed by a hash of the prompt and the schemas): a report on a session whose entries all
/// have their counts then builds no encoder (docs/performance.md, *Opening a long session*).
pub fn system_counts_cached(prompt: &str, specs: &[ToolSpec], cache: &Path) -> SystemCounts {
    use sha2::{Digest, Sha256};
    let schemas = serde_json::to_string(specs).unwrap_or_default();
    let mut hasher = Sha256::new();
    hasher.update(prompt.as_bytes());
    hasher.update([0]);
    hasher.update(schemas.as_bytes());
    let key: String = hasher.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect();
    let mut known: BTreeMap<String, (u64, u64)> = std::fs::read(cache)
        .ok()
        .filter(|b| b.len() < 64 * 1024)
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    if let Some(&(prompt, schemas)) = known.get(&key) {
        return SystemCounts { prompt, schemas };
    }
    let counted = system_counts(prompt, specs, true).0;
    // A few workspaces' worth: an old entry goes when the cache is full.
    while known.len() >= SYSTEM_CACHE_ENTRIES {
        let Some(first) = known.keys().next().cloned() else { break };
        known.remove(&first);
    }
    known.insert(key, (counted.prompt, counted.schemas));
    if let Ok(bytes) = serde_json::to_vec(&known) {
        if let Some(dir) = cache.parent() {
            let _ = codewhale_journal::private::create_dir_all(dir);
        }
        let mode = codewhale_journal::replace::PRIVATE;
        let _ = codewhale_journal::replace::replace_file(cache, mode, &bytes);
    }
    counted
}

/// How many system prompts [`system_counts_cached`] remembers.
const SYSTEM_CACHE_ENTRIES: usize = 64;

/// `<session>.counts.json` beside the journal: `{"<entry id>": tokens}` for entries whose lines
/// carry no count. An entry never changes once written, so a stored count never goes stale.
pub fn sidecar_path(journal: &Path) -> PathBuf {
    journal.with_extension("counts.json")
}

/// The counts stored beside `journal`; a missing or damaged sidecar is an empty one.
pub fn load_sidecar(journal: &Path) -> HashMap<EntryId, u32> {
    let Ok(bytes) = std::fs::read(sidecar_path(journal)) else { return HashMap::new() };
    let map: HashMap<String, u32> = serde_json::from_slice(&bytes).unwrap_or_default();
    map.into_iter().map(|(id, n)| (EntryId::from_string(id), n)).collect()
}

/// Stores `counts` beside `journal`, whole (written aside, then renamed). Best effort: a
/// read-only directory or a full disk only means counting again next time.
pub fn store_sidecar(journal: &Path, counts: &HashMap<EntryId, u32>) {
    let map: HashMap<&str, u32> = counts.iter().map(|(id, n)| (id.as_str(), *n)).collect();
    let Ok(bytes) = serde_json::to_vec(&map) else { return };
    let path = sidecar_path(journal);
    let replaced = codewhale_journal::replace::replace_file(
        &path,
        codewhale_journal::replace::PRIVATE,
        &bytes,
    );
    if replaced.is_err() {
        tracing::debug!(path = %path.display(), "cannot store the token counts sidecar");
    }
}

/// An entry counted provisionally: its upper bound and the text to count.
#[derive(Debug, Clone)]
struct Pending {
    upper: u64,
    counted: Counted,
}

/// Counts known only in memory, and entries still to be counted exactly.
#[derive(Debug, Default)]
pub struct Counts {
    memo: HashMap<EntryId, u32>,
    pending: HashMap<EntryId, Pending>,
    /// How many of `memo` came from the sidecar (more means there is something to store).
    loaded: usize,
}

impl Counts {
    /// Starts from the counts a sidecar kept.
    pub fn with_known(memo: HashMap<EntryId, u32>) -> Counts {
        Counts { loaded: memo.len(), memo, pending: HashMap::new() }
    }

    /// The in-memory counts, when some were computed since they were loaded.
    pub fn new_since_load(&self) -> Option<&HashMap<EntryId, u32>> {
        (self.memo.len() > self.loaded).then_some(&self.memo)
    }

    /// The in-memory count of an entry whose line has none.
    pub fn get(&self, id: &EntryId) -> Option<u32> {
        self.memo.get(id).copied()
    }

    pub fn remember(&mut self, id: EntryId, tokens: u32) {
        self.memo.insert(id, tokens);
    }

    /// Records an entry counted by its upper bound until the encoder is ready.
    pub fn defer(&mut self, id: EntryId, counted: Counted) {
        let upper = counted.upper();
        self.pending.insert(id, Pending { upper, counted });
    }

    /// The provisional figure of an entry still to be counted.
    pub fn pending_upper(&self, id: &EntryId) -> Option<u64> {
        self.pending.get(id).map(|p| p.upper)
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Counts every deferred entry exactly; returns (upper bound, exact) pairs to settle.
    pub fn settle(&mut self) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(self.pending.len());
        for (id, p) in std::mem::take(&mut self.pending) {
            let n = p.counted.exact();
            self.memo.insert(id, n);
            out.push((p.upper, u64::from(n)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codewhale_journal::{AssistantPayload, ToolResultPayload, UserPayload};

    #[test]
    fn text_covers_what_the_model_reads() {
        let a = AssistantPayload::new(vec![
            Block::text("hi"),
            Block::tool_use("t1", "shell", serde_json::json!({"command": "ls"})),
        ]);
        let text = payload_text(&Payload::Assistant(a)).unwrap();
        assert!(text.contains("hi") && text.contains("shell") && text.contains("\"ls\""));
        let r = ToolResultPayload::new("t1", "out", false);
        assert_eq!(payload_text(&Payload::ToolResult(r)).unwrap(), "out");
        assert!(payload_text(&Payload::User(UserPayload::text("x"))).is_some());
    }

    #[test]
    fn deferred_counts_settle_to_exact_figures() {
        let mut c = Counts::default();
        let id = EntryId::new();
        c.defer(id.clone(), Counted { text: "hello world".into(), images: 0 });
        let settled = c.settle();
        assert_eq!(settled, vec![(upper_bound("hello world"), 2 + u64::from(MESSAGE_OVERHEAD))]);
        assert_eq!(c.get(&id), Some(6));
        assert!(!c.has_pending());
    }
}
