//! Which tool wrote a file, from its first lines (`codewhale import` detects the format,
//! docs/import.md).
//!
//! A line with `type` and a `payload` object, a `record_type` line, or a bare meta line
//! (`id` + `timestamp`, no `type`) is Codex; a line with `uuid`, `parentUuid`, `leafUuid` or
//! `sessionId` is Claude Code. Lines that decide nothing (blank, unreadable) are skipped; at most
//! [`SNIFF_LINES`] lines are looked at.

use std::io::{BufReader, Read};

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::report::Tool;

/// How many lines are looked at before giving up.
pub const SNIFF_LINES: usize = 64;

/// The first bytes of a zstd frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// What the first lines say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sniffed {
    Tool(Tool),
    Compressed,
    Empty,
    Unknown,
}

#[derive(Deserialize)]
struct Sniff {
    #[serde(rename = "type")]
    ty: Option<serde_json::Value>,
    payload: Option<IgnoredAny>,
    record_type: Option<IgnoredAny>,
    uuid: Option<IgnoredAny>,
    #[serde(rename = "parentUuid")]
    parent: Option<IgnoredAny>,
    #[serde(rename = "leafUuid")]
    leaf: Option<IgnoredAny>,
    #[serde(rename = "sessionId")]
    session: Option<IgnoredAny>,
    id: Option<IgnoredAny>,
    timestamp: Option<IgnoredAny>,
}

/// The most of one line the format detection reads.
const SNIFF_LINE_BYTES: usize = 1 << 20;

/// Looks at the first lines of `reader`.
pub fn sniff(reader: impl Read) -> std::io::Result<Sniffed> {
    let mut reader = BufReader::new(reader);
    let mut buf = Vec::new();
    let mut seen_any = false;
    for _ in 0..SNIFF_LINES {
        // A line too long to be a session's first lines is not read whole to find that out.
        let (n, cut) = crate::lines::read_line_bounded(&mut reader, &mut buf, SNIFF_LINE_BYTES)?;
        if n == 0 {
            break;
        }
        if cut {
            seen_any = true;
            continue;
        }
        if !seen_any && buf.starts_with(&ZSTD_MAGIC) {
            return Ok(Sniffed::Compressed);
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        seen_any = true;
        let Ok(line) = serde_json::from_slice::<Sniff>(&buf) else { continue };
        let typed = line.ty.as_ref().is_some_and(serde_json::Value::is_string);
        if (typed && line.payload.is_some()) || line.record_type.is_some() {
            return Ok(Sniffed::Tool(Tool::Codex));
        }
        if line.uuid.is_some()
            || line.parent.is_some()
            || line.leaf.is_some()
            || line.session.is_some()
        {
            return Ok(Sniffed::Tool(Tool::Claude));
        }
        if !typed && line.id.is_some() && line.timestamp.is_some() {
            return Ok(Sniffed::Tool(Tool::Codex));
        }
    }
    Ok(if seen_any { Sniffed::Unknown } else { Sniffed::Empty })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(text: &str) -> Sniffed {
        sniff(text.as_bytes()).unwrap()
    }

    #[test]
    fn each_generation_is_recognized() {
        let claude = r#"{"type":"summary","summary":"x","leafUuid":"a"}"#;
        assert_eq!(of(claude), Sniffed::Tool(Tool::Claude));
        let snapshot = "{\"type\":\"file-history-snapshot\",\"messageId\":\"u\"}\n\
                        {\"type\":\"user\",\"uuid\":\"u\",\"parentUuid\":null}";
        assert_eq!(of(snapshot), Sniffed::Tool(Tool::Claude));
        let g2 = r#"{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}"#;
        assert_eq!(of(g2), Sniffed::Tool(Tool::Codex));
        let g1 = r#"{"id":"x","timestamp":"2025-07-10T17:24:21.123Z","instructions":null}"#;
        assert_eq!(of(g1), Sniffed::Tool(Tool::Codex));
    }

    #[test]
    fn other_files_say_so() {
        assert_eq!(of(""), Sniffed::Empty);
        assert_eq!(of("\n  \n"), Sniffed::Empty);
        assert_eq!(of("{\"hello\":1}\nnot json"), Sniffed::Unknown);
        assert_eq!(sniff(&[0x28u8, 0xb5, 0x2f, 0xfd, 0, 1][..]).unwrap(), Sniffed::Compressed);
    }
}
