//! Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): pass 1 and the plan.
//!
//! Both line generations are read: the envelope `{timestamp, type, payload}` (since
//! September 2025, with or without `ordinal`) and the older bare form (a meta line with `id`
//! and no `type`, then bare response items and `record_type` state lines). Pass 1 keeps, per
//! line, only its place, whether it starts a real user turn, and `thread_rolled_back` counts;
//! [`plan`] leaves out the turns a rollback undid (counted), keeping file order otherwise.
//! [`convert`] turns the planned lines into events.

pub(crate) mod convert;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::lines::LineRef;
use crate::report::Report;

/// What pass 1 needs of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// A `response_item` message the user typed: a turn starts here.
    UserTurn,
    /// `event_msg` `thread_rolled_back` (or `undo_completed`): drop the last N user turns.
    Rollback(u64),
    Other,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    pub line: LineRef,
    pub class: Class,
}

/// What the header needs, gathered in pass 1.
#[derive(Clone, Debug, Default)]
pub(crate) struct Meta {
    pub id: Option<String>,
    pub cwd: Option<String>,
    pub version: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub title: Option<String>,
}

#[derive(Debug, Default)]
pub(crate) struct Index {
    pub nodes: Vec<Node>,
    pub meta: Meta,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type")]
    ty: Option<Value>,
    #[serde(borrow)]
    payload: Option<&'a RawValue>,
    id: Option<Value>,
    role: Option<Value>,
    #[serde(default, deserialize_with = "first_text")]
    content: Option<String>,
    cwd: Option<Value>,
    cli_version: Option<Value>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(rename = "type")]
    ty: Option<Value>,
    role: Option<Value>,
    #[serde(default, deserialize_with = "first_text")]
    content: Option<String>,
    num_turns: Option<Value>,
    id: Option<Value>,
    cwd: Option<Value>,
    cli_version: Option<Value>,
    model_provider: Option<Value>,
    model: Option<Value>,
    thread_name: Option<Value>,
    name: Option<Value>,
}

fn string(v: &Option<Value>) -> Option<String> {
    v.as_ref().and_then(Value::as_str).map(str::to_owned)
}

/// Whether a user-role text is context Codex injected (`<environment_context>`,
/// `<user_instructions>`, `# AGENTS.md instructions ...`) rather than something typed.
pub(crate) fn is_injected(text: &str) -> bool {
    let t = text.trim_start();
    if t.starts_with("# AGENTS.md instructions") {
        return true;
    }
    let Some(rest) = t.strip_prefix('<') else { return false };
    let tag: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    !tag.is_empty() && rest[tag.len()..].starts_with('>')
}

impl Index {
    /// Pass 1: indexes one line.
    pub fn add(&mut self, line: LineRef, bytes: &[u8]) {
        let class = self.classify(bytes);
        self.nodes.push(Node { line, class });
    }

    fn classify(&mut self, bytes: &[u8]) -> Class {
        let Ok(env) = serde_json::from_slice::<Envelope<'_>>(bytes) else { return Class::Other };
        let outer = string(&env.ty);
        let Some(raw) = env.payload else {
            // The bare form: a meta line, or a bare response item.
            if outer.is_none() {
                self.meta.id = self.meta.id.take().or(string(&env.id));
                self.meta.cwd = self.meta.cwd.take().or(string(&env.cwd));
                self.meta.version = self.meta.version.take().or(string(&env.cli_version));
                return Class::Other;
            }
            let user = outer.as_deref() == Some("message")
                && env.role.as_ref().and_then(Value::as_str) == Some("user");
            return match env.content {
                Some(text) if user && !is_injected(&text) => Class::UserTurn,
                _ => Class::Other,
            };
        };
        let Ok(item) = serde_json::from_str::<Item>(raw.get()) else { return Class::Other };
        let inner = string(&item.ty);
        match (outer.as_deref(), inner.as_deref()) {
            (Some("session_meta"), _) => {
                let m = &mut self.meta;
                m.id = m.id.take().or(string(&item.id));
                m.cwd = m.cwd.take().or(string(&item.cwd));
                m.version = m.version.take().or(string(&item.cli_version));
                m.provider = m.provider.take().or(string(&item.model_provider));
            }
            (Some("turn_context"), _) => {
                if let Some(model) = string(&item.model) {
                    self.meta.model = Some(model);
                }
                if self.meta.cwd.is_none() {
                    self.meta.cwd = string(&item.cwd);
                }
            }
            (Some("event_msg"), Some("thread_rolled_back" | "undo_completed")) => {
                let n = item.num_turns.as_ref().and_then(Value::as_u64).unwrap_or(1);
                return Class::Rollback(n);
            }
            (Some("event_msg"), Some("thread_name_updated")) => {
                self.meta.title = string(&item.thread_name).or(string(&item.name));
            }
            (Some("response_item"), Some("message"))
                if item.role.as_ref().and_then(Value::as_str) == Some("user")
                    && item.content.as_deref().is_some_and(|t| !is_injected(t)) =>
            {
                return Class::UserTurn;
            }
            _ => {}
        }
        Class::Other
    }
}

/// The lines to convert, in file order, without the turns a rollback undid. Lines left out
/// are counted in `report`.
pub(crate) fn plan(index: &Index, report: &mut Report) -> Vec<usize> {
    let mut dropped = vec![false; index.nodes.len()];
    let mut turns: Vec<usize> = Vec::new();
    for (i, node) in index.nodes.iter().enumerate() {
        match node.class {
            Class::UserTurn => turns.push(i),
            Class::Rollback(n) => {
                let mut from = None;
                for _ in 0..n {
                    match turns.pop() {
                        Some(start) => from = Some(start),
                        None => {
                            report.problem("rollback of more turns than the rollout holds");
                            break;
                        }
                    }
                }
                if let Some(start) = from {
                    for d in dropped.iter_mut().take(i).skip(start) {
                        *d = true;
                    }
                }
            }
            Class::Other => {}
        }
    }
    let mut order = Vec::with_capacity(index.nodes.len());
    for (i, gone) in dropped.iter().enumerate() {
        if *gone {
            report.unused("line of a turn Codex rolled back");
        } else {
            order.push(i);
        }
    }
    order
}

/// The first text of a content array (or a plain string), skipping everything else.
fn first_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    struct TextItem {
        text: Option<Value>,
    }
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Content {
        Text(String),
        Items(Vec<Value>),
        Other(serde::de::IgnoredAny),
    }
    Ok(match Content::deserialize(d)? {
        Content::Text(s) => Some(s),
        Content::Items(items) => items
            .into_iter()
            .find_map(|v| serde_json::from_value::<TextItem>(v).ok().and_then(|t| string(&t.text))),
        Content::Other(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injected_context_is_told_from_typed_text() {
        assert!(is_injected("<environment_context>\n<cwd>/x</cwd>"));
        assert!(is_injected("  <user_instructions>be brief</user_instructions>"));
        assert!(is_injected("# AGENTS.md instructions for /x"));
        assert!(!is_injected("<- this arrow is typed"));
        assert!(!is_injected("fix <b>this</b>"));
        assert!(!is_injected("< not a tag>"));
    }
}
