//! Plain message data: the shape every pure compaction function works on.
//!
//! A [`Message`] is `{role, content: [text | tool_use | tool_result | thinking]}` — the format of
//! the survival fixture matrix (docs/survival-contract.md) and what the engine converts its view
//! into before it cuts, prunes or validates. Nothing here knows about journals, providers or
//! tokens, so the cut and the survival contract can be tested on hand-written data.
//!
//! Two optional flags extend the matrix format: `anchor` and `synthetic` mark user-role
//! messages that are not plain user messages (a pinned note, an engine notice). They default to
//! false and are only written when true.

use codewhale_journal::Text;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// Who a message is from. `tool` is accepted for OpenAI-shaped data (a tool result message).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    /// Also read from `assistant_interrupted`, schema v2's name for an interrupted assistant
    /// message: it counts as assistant output like any other.
    #[serde(alias = "assistant_interrupted")]
    Assistant,
    Tool,
    System,
}

/// One content block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        /// The output as text; an Anthropic-style array of text blocks is joined on read. Shared
        /// with the journal and read from the session file only when looked at, so sizing a
        /// long view reads none of it.
        #[serde(deserialize_with = "result_content")]
        content: Text,
        /// The call failed, was denied or refused: it changed nothing (the note's files
        /// touched leave it out).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    /// Reasoning. The survival contract ignores it; it exists so thinking blocks can travel
    /// through the pure functions untouched.
    Thinking {
        thinking: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
}

/// One message of a view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    /// The blocks; a plain string (OpenAI shape) is read as one text block.
    #[serde(deserialize_with = "content")]
    pub content: Vec<Part>,
    /// A pinned note (`/anchor`): user-role, but not a plain user message.
    #[serde(default, skip_serializing_if = "is_false")]
    pub anchor: bool,
    /// Text the engine wrote in the user role: not a plain user message.
    #[serde(default, skip_serializing_if = "is_false")]
    pub synthetic: bool,
    /// A file the user attached (synthetic too): pruned like a tool result.
    #[serde(default, skip_serializing_if = "is_false")]
    pub attachment: bool,
    /// What was tried on a branch HEAD left (synthetic too): kept verbatim by every pass.
    #[serde(default, skip_serializing_if = "is_false")]
    pub branch_summary: bool,
    /// What the message's images cost: a message retained before the checkpoint reads each as
    /// its one line (docs/images.md), so retaining it costs that much less.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub image_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn content<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Part>, D::Error> {
    use serde::de::Error;
    match Value::deserialize(d)? {
        Value::String(text) => Ok(vec![Part::Text { text }]),
        value @ Value::Array(_) => serde_json::from_value(value).map_err(D::Error::custom),
        other => Err(D::Error::custom(format!(
            "message content must be an array of blocks or a string, not {other}"
        ))),
    }
}

fn result_content<'de, D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
    use serde::de::Error;
    match Value::deserialize(d)? {
        Value::String(s) => Ok(Text::from(s)),
        Value::Array(items) => {
            let mut out = Vec::new();
            for item in items {
                match item.get("text").and_then(Value::as_str) {
                    Some(text) => out.push(text.to_owned()),
                    None => {
                        return Err(D::Error::custom(
                            "a tool_result content array may only hold text blocks",
                        ))
                    }
                }
            }
            Ok(Text::from(out.join("\n")))
        }
        other => Err(D::Error::custom(format!(
            "tool_result content must be a string or an array of text blocks, not {other}"
        ))),
    }
}

impl Part {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Part {
        Part::Text { text: text.into() }
    }

    /// A tool call.
    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Part {
        Part::ToolUse { id: id.into(), name: name.into(), input }
    }

    /// The result of call `tool_use_id`.
    pub fn tool_result(tool_use_id: impl Into<String>, content: impl Into<Text>) -> Part {
        Part::ToolResult {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error: false,
        }
    }

    /// The result of call `tool_use_id` that failed (denied, refused or an error).
    pub fn failed_result(tool_use_id: impl Into<String>, content: impl Into<Text>) -> Part {
        Part::ToolResult {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error: true,
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Part::Text { text } => Some(text),
            _ => None,
        }
    }
}

impl Message {
    /// A message with these blocks.
    pub fn new(role: Role, content: Vec<Part>) -> Message {
        Message {
            role,
            content,
            anchor: false,
            synthetic: false,
            image_tokens: 0,
            attachment: false,
            branch_summary: false,
        }
    }

    /// A user message with one text block.
    #[cfg(test)]
    pub fn user(text: impl Into<String>) -> Message {
        Message::new(Role::User, vec![Part::text(text)])
    }

    /// An assistant message with one text block.
    #[cfg(test)]
    pub fn assistant(text: impl Into<String>) -> Message {
        Message::new(Role::Assistant, vec![Part::text(text)])
    }

    /// The text blocks, in order.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(Part::as_text)
    }

    /// The ids of the `tool_use` blocks, in call order.
    pub fn tool_use_ids(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(|p| match p {
            Part::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }

    /// The `tool_use_id`s of the `tool_result` blocks, in order.
    pub fn tool_result_ids(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(|p| match p {
            Part::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
            _ => None,
        })
    }

    /// True when the message carries at least one tool result.
    pub fn has_tool_result(&self) -> bool {
        self.tool_result_ids().next().is_some()
    }

    /// True for an assistant message that issues at least one call.
    pub fn has_tool_use(&self) -> bool {
        self.role == Role::Assistant && self.tool_use_ids().next().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_content_and_result_arrays_are_accepted() {
        let m: Message = serde_json::from_str(r#"{"role":"user","content":"hi"}"#).unwrap();
        assert_eq!(m, Message::user("hi"));
        let r: Message = serde_json::from_str(
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"x"},{"type":"text","text":"y"}],"is_error":false}]}"#,
        )
        .unwrap();
        assert_eq!(r.content, vec![Part::tool_result("a", "x\ny")]);
        let bad =
            serde_json::from_str::<Message>(r#"{"role":"user","content":[{"type":"image"}]}"#);
        assert!(bad.is_err());
        let bad = serde_json::from_str::<Message>(r#"{"role":"user","content":7}"#);
        assert!(bad.unwrap_err().to_string().contains("array of blocks or a string"));
    }
}
