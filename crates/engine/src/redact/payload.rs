//! Which texts of a journal payload are redacted, and how: every text a user, the model or a
//! tool wrote, tool call arguments inside their JSON, the texts of a compaction.
//!
//! Invariants: bytes that must replay exactly are never edited — a signed thinking block that
//! holds a secret is dropped whole; call ids and opaque blocks are left alone.

use std::borrow::Cow;

use codewhale_journal::{Block, Payload, Text};

use super::Redactor;

impl Redactor {
    /// Redacts every text of a payload about to be journaled. Signed thinking that holds a
    /// secret is dropped whole (its bytes must replay exactly or not at all); call ids and
    /// opaque blocks are left alone.
    pub fn redact_payload(&self, payload: &mut Payload) {
        match payload {
            Payload::User(u) => self.redact_blocks(&mut u.content),
            Payload::Assistant(a) => self.redact_blocks(&mut a.content),
            Payload::ToolResult(r) => {
                if let Cow::Owned(s) = self.redact(&r.content) {
                    r.content = Text::from(s);
                }
                if let Some(blocks) = &mut r.content_blocks {
                    self.redact_blocks(blocks);
                }
                if let Some(reason) = &mut r.reason {
                    if let Cow::Owned(t) = self.redact(reason) {
                        *reason = t;
                    }
                }
            }
            Payload::System(s) => {
                if let Cow::Owned(t) = self.redact(&s.text) {
                    s.text = t;
                }
            }
            Payload::Side(s) => {
                for text in [&mut s.question, &mut s.answer] {
                    if let Cow::Owned(t) = self.redact(text) {
                        *text = t;
                    }
                }
            }
            Payload::Compaction(c) => {
                for text in [Some(&mut c.note), c.summary.as_mut(), c.anchors.as_mut()]
                    .into_iter()
                    .flatten()
                {
                    if let Cow::Owned(t) = self.redact(text) {
                        *text = t;
                    }
                }
            }
            _ => {}
        }
    }

    fn redact_blocks(&self, blocks: &mut Vec<Block>) {
        blocks.retain_mut(|block| match block {
            Block::Text(t) => {
                if let Cow::Owned(s) = self.redact(&t.text) {
                    t.text = s;
                }
                true
            }
            Block::ToolUse(call) => {
                self.redact_json(&mut call.input);
                true
            }
            Block::Thinking(t) if t.signature.is_some() => !self.finds_secret(&t.thinking),
            Block::Thinking(t) => {
                if let Cow::Owned(s) = self.redact(&t.thinking) {
                    t.thinking = s;
                }
                true
            }
            Block::Image(image) => {
                if let Cow::Owned(s) = self.redact(&image.name) {
                    image.name = s;
                }
                true
            }
            Block::Opaque(_) => true,
        });
    }

    fn redact_json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            serde_json::Value::Object(map) => map.values_mut().for_each(|v| self.redact_json(v)),
            _ => {}
        }
    }
}
