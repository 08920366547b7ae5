//! One line of a journal: [`Entry`], with its [`EntryId`] and [`Timestamp`] (each in a module of
//! its own, below the payloads that hold them).
//!
//! The line format (docs/journal-format.md), fields in this order when written:
//! `{"v":1,"id":"<uuidv7>","parent":"<id>"|null,"kind":"...","ts":"...Z","payload":{...},"tokens":N}`.
//! `tokens` is present only on model-visible entries whose count is known. Unknown top-level fields
//! are kept in [`Entry::extra`] and written back after the known ones.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

pub use crate::entry_id::EntryId;
use crate::json_object::Key;
use crate::payload::Payload;
pub use crate::timestamp::Timestamp;

/// The format version this crate writes.
pub const FORMAT_VERSION: u32 = 1;

/// An entry could not be serialized as a journal line; nothing was written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the {kind} entry {id} as a journal line: {source}")]
pub struct EncodeError {
    pub id: EntryId,
    pub kind: String,
    #[source]
    pub source: serde_json::Error,
}

/// One journal line.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Format version of the line (1).
    pub v: u32,
    pub id: EntryId,
    /// The entry this one follows; `None` only for the header.
    pub parent: Option<EntryId>,
    pub ts: Timestamp,
    /// The kind and its payload.
    pub payload: Payload,
    /// o200k token count of a model-visible entry; `None` = not yet counted.
    pub tokens: Option<u32>,
    /// Top-level fields this version does not know.
    pub extra: Map<String, Value>,
}

impl Entry {
    /// A new entry with a fresh id and the current time.
    pub fn new(parent: Option<EntryId>, payload: impl Into<Payload>) -> Entry {
        Entry {
            v: FORMAT_VERSION,
            id: EntryId::new(),
            parent,
            ts: Timestamp::now(),
            payload: payload.into(),
            tokens: None,
            extra: Map::new(),
        }
    }

    /// The same entry with its token count set.
    pub fn with_tokens(mut self, tokens: u32) -> Entry {
        self.tokens = Some(tokens);
        self
    }

    /// The entry's `kind`.
    pub fn kind(&self) -> &str {
        self.payload.kind()
    }

    /// The line as written to the file, without the trailing newline. An entry that cannot be
    /// written as a valid line is an error, never an empty or partial line.
    pub fn to_line(&self) -> Result<String, EncodeError> {
        serde_json::to_string(self).map_err(|source| EncodeError {
            id: self.id.clone(),
            kind: self.kind().to_owned(),
            source,
        })
    }

    /// Parses one line (without its newline).
    pub fn parse_line(line: &str) -> Result<Entry, serde_json::Error> {
        serde_json::from_str(line)
    }

    /// Parses one line given as bytes (without its newline).
    pub fn parse_line_bytes(line: &[u8]) -> Result<Entry, serde_json::Error> {
        serde_json::from_slice(line)
    }
}

impl Serialize for Entry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Body<'a>(&'a Payload);
        impl Serialize for Body<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.0.serialize_body(s)
            }
        }
        if let Payload::Unknown { kind, .. } = &self.payload {
            // A kind this version knows must carry its typed payload: written untyped, its
            // payload was never checked against the kind's fields, and a reader could reject
            // the line as malformed.
            if crate::kind_code::KindCode::of_name(kind) != crate::kind_code::KindCode::Unknown {
                return Err(serde::ser::Error::custom(format!(
                    "a `{kind}` entry must carry a typed payload, not an untyped one"
                )));
            }
        }
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("v", &self.v)?;
        m.serialize_entry("id", &self.id)?;
        m.serialize_entry("parent", &self.parent)?;
        m.serialize_entry("kind", self.payload.kind())?;
        m.serialize_entry("ts", &self.ts)?;
        m.serialize_entry("payload", &Body(&self.payload))?;
        if let Some(t) = self.tokens {
            m.serialize_entry("tokens", &t)?;
        }
        for (k, v) in &self.extra {
            if !matches!(k.as_str(), "v" | "id" | "parent" | "kind" | "ts" | "payload" | "tokens") {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

/// Reads an informational top-level field tolerantly (see [`crate::lenient`]).
fn lax<'de, A: MapAccess<'de>, T: crate::lenient::Lenient>(
    map: &mut A,
    key: &str,
) -> Result<T, A::Error> {
    let mark = crate::lenient::mark();
    let v = map.next_value::<crate::lenient::Lax<T>>()?.0;
    if crate::lenient::mark() != mark {
        crate::lenient::name_since(mark, key);
    }
    Ok(v)
}

/// Parses a payload directly when `kind` was already seen (the order this crate writes).
struct PayloadSeed<'k>(&'k str);

impl<'de> de::DeserializeSeed<'de> for PayloadSeed<'_> {
    type Value = Payload;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Payload, D::Error> {
        use crate::payload::kind;
        Ok(match self.0 {
            kind::HEADER => Payload::Header(Deserialize::deserialize(d)?),
            kind::USER => Payload::User(Deserialize::deserialize(d)?),
            kind::ASSISTANT => Payload::Assistant(Deserialize::deserialize(d)?),
            kind::TOOL_RESULT => Payload::ToolResult(Deserialize::deserialize(d)?),
            kind::COMPACTION => Payload::Compaction(Box::new(Deserialize::deserialize(d)?)),
            kind::BRANCH_SUMMARY => Payload::BranchSummary(Deserialize::deserialize(d)?),
            kind::SYSTEM => Payload::System(Deserialize::deserialize(d)?),
            kind::SIDE => Payload::Side(Deserialize::deserialize(d)?),
            kind::HEAD => Payload::Head(Deserialize::deserialize(d)?),
            other => Payload::Unknown { kind: other.to_owned(), payload: Value::deserialize(d)? },
        })
    }
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entry;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a journal entry object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entry, A::Error> {
                let mut v = None;
                let mut id = None;
                let mut parent = None;
                // Borrowed from the line when it can be: one allocation less per entry loaded.
                let mut kind: Option<Key<'de>> = None;
                let mut ts = None;
                let mut payload = None;
                let mut raw_payload: Option<Box<RawValue>> = None;
                let mut tokens = None;
                let mut extra = Map::new();
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    match key.0.as_ref() {
                        "v" => v = Some(lax::<A, u32>(&mut map, "v")?),
                        "id" => id = Some(map.next_value()?),
                        "parent" => parent = Some(map.next_value()?),
                        "kind" => kind = Some(map.next_value()?),
                        "ts" => ts = Some(lax::<A, Timestamp>(&mut map, "ts")?),
                        "payload" => {
                            let mark = crate::lenient::mark();
                            match &kind {
                                Some(k) => payload = Some(map.next_value_seed(PayloadSeed(&k.0))?),
                                None => raw_payload = Some(map.next_value()?),
                            }
                            if crate::lenient::mark() != mark {
                                crate::lenient::name_since(mark, "payload");
                            }
                        }
                        "tokens" => tokens = lax::<A, Option<u32>>(&mut map, "tokens")?,
                        _ => {
                            let value: Value = map.next_value()?;
                            extra.insert(key.0.into_owned(), value);
                        }
                    }
                }
                let kind = kind.ok_or_else(|| de::Error::missing_field("kind"))?.0;
                let payload = match (payload, raw_payload) {
                    (Some(p), _) => p,
                    (None, Some(raw)) => {
                        let mark = crate::lenient::mark();
                        let p = Payload::parse(&kind, raw.get())
                            .map_err(|e| de::Error::custom(format!("bad {kind} payload: {e}")))?;
                        if crate::lenient::mark() != mark {
                            crate::lenient::name_since(mark, "payload");
                        }
                        p
                    }
                    (None, None) => return Err(de::Error::missing_field("payload")),
                };
                Ok(Entry {
                    v: v.unwrap_or(FORMAT_VERSION),
                    id: id.ok_or_else(|| de::Error::missing_field("id"))?,
                    parent: parent.ok_or_else(|| de::Error::missing_field("parent"))?,
                    ts: ts.unwrap_or_default(),
                    payload,
                    tokens,
                    extra,
                })
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::Block;
    use crate::payload::{AssistantPayload, ToolResultPayload, UserPayload};

    #[test]
    fn a_line_round_trips_in_field_order() {
        let e = Entry::new(Some(EntryId::from("p")), UserPayload::text("hello")).with_tokens(3);
        let line = e.to_line().unwrap();
        assert!(line
            .starts_with(&format!(r#"{{"v":1,"id":"{}","parent":"p","kind":"user","ts":""#, e.id)));
        assert!(
            line.ends_with(r#""payload":{"content":[{"type":"text","text":"hello"}]},"tokens":3}"#)
        );
        assert_eq!(Entry::parse_line(&line).unwrap(), e);
    }

    #[test]
    fn unknown_fields_and_kinds_survive() {
        let line = r#"{"v":1,"id":"a","parent":null,"kind":"vote","ts":"2026-11-29T18:00:00.123Z","payload":{"x":[1,2]},"later":true}"#;
        let e = Entry::parse_line(line).unwrap();
        assert_eq!(e.kind(), "vote");
        assert_eq!(e.to_line().unwrap(), line);

        let line = r#"{"v":1,"id":"b","parent":"a","kind":"tool_result","ts":"2026-11-29T18:00:00.123Z","payload":{"tool_use_id":"t","content":"out","is_error":false,"mime":"text/plain"}}"#;
        let e = Entry::parse_line(line).unwrap();
        assert_eq!(e.to_line().unwrap(), line);
    }

    #[test]
    fn an_untyped_payload_of_a_known_kind_is_an_error_not_a_line() {
        let e = Entry::new(None, Payload::Unknown { kind: "user".into(), payload: Value::Null });
        let err = e.to_line().unwrap_err();
        assert_eq!(err.id, e.id);
        assert!(err.to_string().contains("`user` entry must carry a typed payload"), "{err}");
    }

    #[test]
    fn payload_before_kind_is_accepted() {
        let line = r#"{"payload":{"content":[{"type":"text","text":"x"}],"model":"m"},"kind":"assistant","v":1,"id":"a","parent":null,"ts":"2026-11-29T18:00:00Z"}"#;
        let e = Entry::parse_line(line).unwrap();
        let Payload::Assistant(a) = &e.payload else { panic!("not assistant") };
        assert_eq!(a.content, vec![Block::text("x")]);
        assert_eq!(a.model.as_deref(), Some("m"));
    }

    #[test]
    fn constructors_fill_id_and_time() {
        let a = Entry::new(None, AssistantPayload::new(vec![Block::text("x")]));
        let b = Entry::new(Some(a.id.clone()), ToolResultPayload::new("t", "out", false));
        assert_ne!(a.id, b.id);
        assert!(a.id < b.id, "v7 ids are time ordered");
        assert_eq!(b.ts.to_string().len(), "2026-11-29T18:00:00.123Z".len());
    }
}
