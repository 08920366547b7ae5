//! [`Meta`]: what the journal knows about an entry without holding it — its kind, the flags the
//! view and the engine test on every entry of a branch, its stored token count, and where its
//! line lies in the file.
//!
//! A loaded journal keeps a `Meta` (24 bytes) and the id and parent of every entry, and the
//! parsed entry only for the small records it consults as a whole (header, system notices,
//! compaction, branch summary and head records) and for whatever has been read since. Everything
//! here is derived from the parsed entry by [`Meta::of`], on the scan or when an entry is
//! appended, so the index sidecar (the `sidecar` module) and a full parse always agree.

use crate::entry::Entry;
use crate::kind_code::KindCode;
use crate::payload::Payload;

/// A user entry pinned with `/anchor`.
pub const ANCHOR: u8 = 1;
/// A user entry that is neither an anchor nor synthetic (`UserPayload::is_plain`).
pub const PLAIN: u8 = 2;
/// A user entry that withdraws an anchor (`withdraws` is set).
pub const WITHDRAWS: u8 = 4;
/// A tool result appended later for a call that had none (`repairs: true`).
pub const REPAIRS: u8 = 8;

/// An assistant entry with a provider-reported prompt size (`usage.input_tokens > 0`).
pub const REPORTED: u8 = 16;
/// An assistant entry that records the estimate its request was sent with (`reads.estimate`).
pub const ESTIMATED: u8 = 32;
/// An assistant entry that calls [`PLAN_TOOL`]: where the live plan can be, so finding it reads
/// only these entries, not every reply of a long branch.
pub const PLAN: u8 = 64;
/// A user entry that tells the model plan mode began or ended (`plan_mode` is set): finding
/// what the model was last told reads only these.
pub const PLAN_MODE: u8 = 128;

/// The tool whose newest valid call on HEAD's spine is the live plan (docs/compaction.md,
/// *The plan (`update_plan`)*).
pub const PLAN_TOOL: &str = "update_plan";

/// What the name of every MCP tool call starts with (`mcp__<server>__<tool>`): a recorded call
/// is told from a built-in one by it.
pub const MCP_TOOL_PREFIX: &str = "mcp__";

/// Bits of [`Meta`]'s packed word that hold the offset (files up to 256 TiB).
const OFFSET_BITS: u32 = 48;
const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;

/// The offset of an entry that is not in a file (built in memory or appended live): its entry
/// is always held.
pub(crate) const IN_MEMORY: u64 = OFFSET_MASK;

/// No stored token count.
const NO_TOKENS: u32 = u32::MAX;

/// One entry's index record, 16 bytes: the line's offset, kind and flags packed in one word,
/// its length and the stored count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    /// Offset (bits 0–47), kind (48–51), flags (52–59).
    packed: u64,
    len: u32,
    tokens: u32,
}

impl Meta {
    /// The record of `entry`, whose line is `len` bytes at `offset`.
    pub(crate) fn of(entry: &Entry, offset: u64, len: u32) -> Meta {
        let flags = match &entry.payload {
            Payload::User(u) => {
                (if u.anchor { ANCHOR } else { 0 })
                    | (if u.is_plain() { PLAIN } else { 0 })
                    | (if u.withdraws.is_some() { WITHDRAWS } else { 0 })
                    | (if u.plan_mode.is_some() { PLAN_MODE } else { 0 })
            }
            Payload::ToolResult(r) if r.repairs => REPAIRS,
            Payload::Assistant(a) => {
                (if a.usage.as_ref().is_some_and(|u| u.input_tokens > 0) { REPORTED } else { 0 })
                    | (if a.reads.as_ref().is_some_and(|r| r.estimate.is_some_and(|e| e > 0)) {
                        ESTIMATED
                    } else {
                        0
                    })
                    | (if a.tool_uses().any(|c| c.name == PLAN_TOOL) { PLAN } else { 0 })
            }
            _ => 0,
        };
        // A count of u32::MAX cannot be stored; it reads as "not counted".
        let tokens = entry.tokens.unwrap_or(NO_TOKENS);
        Meta::from_parts(offset, len, tokens, KindCode::of(&entry.payload), flags)
    }

    /// The record of an entry held in memory.
    pub(crate) fn in_memory(entry: &Entry) -> Meta {
        Meta::of(entry, IN_MEMORY, 0)
    }

    /// A record from its parts. An offset beyond 256 TiB cannot be recorded and reads as "not
    /// in a file".
    pub(crate) fn from_parts(
        offset: u64,
        len: u32,
        tokens: u32,
        kind: KindCode,
        flags: u8,
    ) -> Meta {
        let packed =
            offset.min(OFFSET_MASK) | (u64::from(kind as u8) << 48) | (u64::from(flags) << 52);
        Meta { packed, len, tokens }
    }

    /// Where the line's JSON starts in the file ([`IN_MEMORY`] when it is not in one).
    pub(crate) fn offset(&self) -> u64 {
        self.packed & OFFSET_MASK
    }

    /// The JSON's length in bytes.
    pub(crate) fn len(&self) -> u32 {
        self.len
    }

    pub(crate) fn kind(&self) -> KindCode {
        KindCode::from_byte(((self.packed >> 48) & 0xF) as u8).unwrap_or(KindCode::Unknown)
    }

    pub(crate) fn flags(&self) -> u8 {
        (self.packed >> 52) as u8
    }

    pub(crate) fn raw_tokens(&self) -> u32 {
        self.tokens
    }

    /// The stored token count.
    pub(crate) fn tokens(&self) -> Option<u32> {
        (self.tokens != NO_TOKENS).then_some(self.tokens)
    }

    pub(crate) fn on_disk(&self) -> bool {
        self.offset() != IN_MEMORY
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::{HeaderPayload, ToolResultPayload, UserPayload};

    #[test]
    fn flags_follow_the_payload() {
        let mut anchor = UserPayload::text("pin");
        anchor.anchor = true;
        let m = Meta::in_memory(&Entry::new(None, anchor));
        assert!(m.flags() == ANCHOR && m.kind() == KindCode::User);
        let plain = Meta::in_memory(&Entry::new(None, UserPayload::text("hi")).with_tokens(3));
        assert!(plain.flags() == PLAIN && plain.tokens() == Some(3));
        let mut r = ToolResultPayload::new("t", "x", false);
        r.repairs = true;
        assert_eq!(Meta::in_memory(&Entry::new(None, r)).flags(), REPAIRS);
        let h = Meta::in_memory(&Entry::new(None, HeaderPayload::new("s", "/w")));
        assert!(h.kind().is_kept() && h.kind().is_chain() && !h.kind().is_model_visible());
        let far = Meta::from_parts(IN_MEMORY - 1, 7, 3, KindCode::Head, REPORTED | ESTIMATED);
        assert_eq!(
            (far.offset(), far.len(), far.kind(), far.flags()),
            (IN_MEMORY - 1, 7, KindCode::Head, 48)
        );
        // A reply that calls the plan tool is marked, so the live plan's search reads only those.
        let call = |name: &str| {
            let block = crate::Block::tool_use("c", name, serde_json::json!({"steps": []}));
            Meta::in_memory(&Entry::new(None, crate::AssistantPayload::new(vec![block]))).flags()
        };
        assert_eq!((call(PLAN_TOOL), call("shell")), (PLAN, 0));
        let all = Meta::from_parts(0, 1, 0, KindCode::Assistant, REPORTED | ESTIMATED | PLAN);
        assert_eq!(all.flags(), REPORTED | ESTIMATED | PLAN, "the flag fits the packed word");
        for b in 0..=9 {
            assert_eq!(KindCode::from_byte(b).map(|k| k as u8), Some(b));
        }
        assert_eq!(KindCode::from_byte(10), None);
        // The kind fits its four bits, and the plan-mode flag the top of the flags' byte.
        let side = Meta::from_parts(7, 1, 0, KindCode::Side, PLAN_MODE);
        assert_eq!((side.kind(), side.flags(), side.offset()), (KindCode::Side, PLAN_MODE, 7));
    }
}
