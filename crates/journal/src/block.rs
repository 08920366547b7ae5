//! Content blocks of `user` and `assistant` entries.
//!
//! Block bytes are sacred (docs/journal-format.md): a `thinking` signature, a `tool_use` id and any
//! field a provider added are stored and replayed unchanged. Blocks of a type this version does not
//! know (`redacted_thinking`, `server_tool_use`, ...) are kept as their raw JSON text and written
//! back byte-for-byte.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::json_object::record;

record! {
    /// `{"type":"text","text":...}`.
    pub struct TextBlock {
        text: String = "text" req,
    }
}

record! {
    /// `{"type":"tool_use","id","name","input"}`: a call the model made.
    pub struct ToolUseBlock {
        /// The provider's call id, replayed byte-for-byte and matched by `tool_use_id`.
        id: String = "id" req,
        name: String = "name" req,
        /// The call's arguments as the model sent them (normally an object).
        input: Value = "input" always,
    }
}

record! {
    /// `{"type":"thinking","thinking","signature"}`: reasoning, with the provider's signature.
    pub struct ThinkingBlock {
        thinking: String = "thinking" req,
        signature: Option<String> = "signature" opt,
    }
}

record! {
    /// `{"type":"image","blob","media_type","width","height","bytes","name"}`: an image a user
    /// message carries. Its bytes live in the session's blob store ([`crate::blob`]) under
    /// `blob`; the journal never holds them.
    pub struct ImageBlock {
        /// The blob's file name in `<session-id>.blobs/` (`<sha256>.<ext>`).
        blob: String = "blob" req,
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
        media_type: String = "media_type" req,
        width: u32 = "width" info,
        height: u32 = "height" info,
        /// The size of the stored blob.
        bytes: u64 = "bytes" info,
        /// The file name the user gave (`shot.png`), as shown in the transcript.
        name: String = "name" info,
    }
}

impl ImageBlock {
    /// The one line that stands for the image where its bytes are not sent: `[image shot.png
    /// 64×48]`, with `why` (`", covered by …"`, `" left out: …"`) before the bracket closes.
    pub fn line(&self, why: &str) -> String {
        format!("[image {} {}×{}{why}]", self.name, self.width, self.height)
    }

    /// The line a summary request reads.
    pub fn describe(&self) -> String {
        self.line("")
    }

    /// The line that stands for the image in a view a compaction covered it in.
    pub fn covered(&self) -> String {
        self.line(", covered by compaction; the journal keeps it")
    }
}

/// One content block.
#[derive(Clone, Debug)]
pub enum Block {
    Text(TextBlock),
    ToolUse(ToolUseBlock),
    Thinking(ThinkingBlock),
    /// An image stored in the blob store.
    Image(ImageBlock),
    /// A block of another type, kept as its exact JSON text.
    Opaque(Box<RawValue>),
}

impl Block {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Block {
        Block::Text(TextBlock { text: text.into(), extra: Default::default() })
    }

    /// A tool call block.
    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Block {
        Block::ToolUse(ToolUseBlock {
            id: id.into(),
            name: name.into(),
            input,
            extra: Default::default(),
        })
    }

    /// A thinking block; `signature` is the provider's, stored verbatim.
    pub fn thinking(thinking: impl Into<String>, signature: Option<String>) -> Block {
        Block::Thinking(ThinkingBlock {
            thinking: thinking.into(),
            signature,
            extra: Default::default(),
        })
    }

    /// A block of any other type from its exact JSON text (must be a JSON object).
    pub fn opaque(json: &str) -> Result<Block, serde_json::Error> {
        let raw = RawValue::from_string(json.to_owned())?;
        Ok(Block::Opaque(raw))
    }

    /// The block's `type`.
    pub fn block_type(&self) -> String {
        match self {
            Block::Text(_) => "text".into(),
            Block::ToolUse(_) => "tool_use".into(),
            Block::Thinking(_) => "thinking".into(),
            Block::Image(_) => "image".into(),
            Block::Opaque(raw) => opaque_type(raw.get()).unwrap_or_default(),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Block::Text(t) => Some(&t.text),
            _ => None,
        }
    }

    /// The image of an image block.
    pub fn as_image(&self) -> Option<&ImageBlock> {
        match self {
            Block::Image(i) => Some(i),
            _ => None,
        }
    }

    /// The call of a tool_use block.
    pub fn as_tool_use(&self) -> Option<&ToolUseBlock> {
        match self {
            Block::ToolUse(t) => Some(t),
            _ => None,
        }
    }
}

impl PartialEq for Block {
    fn eq(&self, other: &Block) -> bool {
        match (self, other) {
            (Block::Text(a), Block::Text(b)) => a == b,
            (Block::ToolUse(a), Block::ToolUse(b)) => a == b,
            (Block::Thinking(a), Block::Thinking(b)) => a == b,
            (Block::Image(a), Block::Image(b)) => a == b,
            (Block::Opaque(a), Block::Opaque(b)) => a.get() == b.get(),
            _ => false,
        }
    }
}

fn opaque_type(json: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct TypeOnly {
        #[serde(rename = "type")]
        ty: String,
    }
    serde_json::from_str::<TypeOnly>(json).ok().map(|t| t.ty)
}

impl Serialize for Block {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            Text(&'a TextBlock),
            ToolUse(&'a ToolUseBlock),
            Thinking(&'a ThinkingBlock),
            Image(&'a ImageBlock),
        }
        match self {
            Block::Text(b) => Tagged::Text(b).serialize(s),
            Block::ToolUse(b) => Tagged::ToolUse(b).serialize(s),
            Block::Thinking(b) => Tagged::Thinking(b).serialize(s),
            Block::Image(b) => Tagged::Image(b).serialize(s),
            Block::Opaque(raw) => raw.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Block {
    /// Borrows the block's exact text first, then parses the types this version knows. Only
    /// supported by serde_json's borrowing deserializers (`from_str`, `from_slice`), not by
    /// `from_reader` or from a `serde_json::Value`.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = <&'de RawValue>::deserialize(d)?;
        parse_block(raw).map_err(D::Error::custom)
    }
}

fn parse_block(raw: &RawValue) -> Result<Block, serde_json::Error> {
    let json = raw.get();
    fn strip_type(mut extra: serde_json::Map<String, Value>) -> serde_json::Map<String, Value> {
        extra.remove("type");
        extra
    }
    let ty = json_type_prefix(json).map(str::to_owned).or_else(|| opaque_type(json));
    Ok(match ty.as_deref() {
        Some("text") => {
            let mut b: TextBlock = serde_json::from_str(json)?;
            b.extra = strip_type(b.extra);
            Block::Text(b)
        }
        Some("tool_use") => {
            let mut b: ToolUseBlock = serde_json::from_str(json)?;
            b.extra = strip_type(b.extra);
            Block::ToolUse(b)
        }
        Some("thinking") => {
            let mut b: ThinkingBlock = serde_json::from_str(json)?;
            b.extra = strip_type(b.extra);
            Block::Thinking(b)
        }
        // An image of the blob store; any other `image` (a provider's base64 source, as other
        // tools write them) is kept as it is.
        Some("image") => match serde_json::from_str::<ImageBlock>(json) {
            Ok(mut b) => {
                b.extra = strip_type(b.extra);
                Block::Image(b)
            }
            Err(_) => Block::Opaque(raw.to_owned()),
        },
        Some(_) => Block::Opaque(raw.to_owned()),
        None => return Err(serde_json::Error::custom("a content block needs a string \"type\"")),
    })
}

/// Fast path: blocks we write start with `{"type":"..."`; avoids a second parse for the type.
fn json_type_prefix(json: &str) -> Option<&str> {
    let rest = json.strip_prefix("{\"type\":\"")?;
    let end = rest.find('"')?;
    let ty = &rest[..end];
    (!ty.contains('\\')).then_some(ty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_blocks_round_trip_with_unknown_fields() {
        let line = r#"[{"type":"text","text":"hi","citations":[1]},{"type":"tool_use","id":"toolu_1","name":"shell","input":{"command":"ls"}},{"type":"thinking","thinking":"hm","signature":"c2ln"}]"#;
        let blocks: Vec<Block> = serde_json::from_str(line).unwrap();
        assert_eq!(blocks[0].as_text(), Some("hi"));
        assert_eq!(serde_json::to_string(&blocks).unwrap(), line);
    }

    #[test]
    fn opaque_blocks_replay_byte_for_byte() {
        let line = r#"[{ "data" : "EmwKAhgBEgy3va3pzix/LafPsn4a" ,"type":"redacted_thinking"}]"#;
        let blocks: Vec<Block> = serde_json::from_str(line).unwrap();
        assert_eq!(blocks[0].block_type(), "redacted_thinking");
        assert_eq!(
            serde_json::to_string(&blocks).unwrap(),
            r#"[{ "data" : "EmwKAhgBEgy3va3pzix/LafPsn4a" ,"type":"redacted_thinking"}]"#
        );
    }

    #[test]
    fn an_image_of_the_blob_store_round_trips_and_another_image_stays_opaque() {
        let line = r#"[{"type":"image","blob":"ab.png","media_type":"image/png","width":64,"height":48,"bytes":12288,"name":"shot.png"},{"type":"image","source":{"type":"base64","data":"iVBO"}}]"#;
        let blocks: Vec<Block> = serde_json::from_str(line).unwrap();
        let image = blocks[0].as_image().expect("an image block");
        assert_eq!((image.width, image.height, image.bytes), (64, 48, 12288));
        assert_eq!(image.describe(), "[image shot.png 64×48]");
        assert!(matches!(blocks[1], Block::Opaque(_)));
        assert_eq!(serde_json::to_string(&blocks).unwrap(), line);
    }

    #[test]
    fn a_block_without_type_is_an_error() {
        assert!(serde_json::from_str::<Block>(r#"{"text":"x"}"#).is_err());
    }
}
