//! The fast path of loading: a long `tool_result` line whose output is left in the file.
//!
//! Tool output is most of a journal's bytes and most of it is never read again, so the loader
//! does not decode it: [`lazy_tool_result`] finds where the output string lies in the line
//! without parsing it, parses the rest, and hands back an entry whose output is a [`Text`] that
//! reads itself from the file on first use (see `text.rs`). Anything unusual about the line
//! makes it return `None`, and the line is parsed normally.

use std::sync::Arc;

use crate::entry::Entry;
use crate::payload::Payload;
use crate::text::{Source, Text};

/// The substring searches of [`lazy_tool_result`], built once per scan: building a searcher
/// costs about as much as running it on a short line, and it runs on every long line.
pub(crate) struct LazyFinders {
    content: memchr::memmem::Finder<'static>,
    kind: memchr::memmem::Finder<'static>,
    end: memchr::memmem::FinderRev<'static>,
}

impl LazyFinders {
    pub(crate) fn new() -> LazyFinders {
        LazyFinders {
            content: memchr::memmem::Finder::new(LAZY_CONTENT_KEY),
            kind: memchr::memmem::Finder::new(LAZY_KIND),
            end: memchr::memmem::FinderRev::new(LAZY_END),
        }
    }
}

/// Where a `tool_result` line's output starts, how its kind reads, and what follows the output.
const LAZY_CONTENT_KEY: &[u8] = br#""content":""#;
const LAZY_KIND: &[u8] = br#""kind":"tool_result""#;
const LAZY_END: &[u8] = br#"","is_error":"#;

/// The fast path for a long `tool_result` line in the order this crate writes it (`kind`
/// before `payload`, `is_error` right after `content`): the output string is not parsed. Its
/// end is taken to be the last `","is_error":` of the line (found from the end, so the cost does
/// not depend on the output), and that is accepted only when every quote in between is escaped,
/// i.e. the span is one JSON string (a vectorized quote search; ~3 ns per quote).
/// The rest of the line (with a placeholder output) is parsed and validated now; the output
/// becomes a [`Text`] that decodes (and so validates escapes) from the file when first read, and
/// `journal check` decodes every one. `None` means "parse the line normally" (another field
/// order, duplicate keys, ...).
pub(crate) fn lazy_tool_result(
    body: &[u8],
    offset: u64,
    source: &Arc<Source>,
    scratch: &mut Vec<u8>,
    finders: &LazyFinders,
) -> Option<Entry> {
    const PLACEHOLDER: &[u8] = br"\u0000lazy";
    let (start, end) = output_span(body, finders)?;
    let key = start - LAZY_CONTENT_KEY.len();
    scratch.clear();
    scratch.extend_from_slice(&body[..start]);
    scratch.extend_from_slice(PLACEHOLDER);
    scratch.extend_from_slice(&body[end..]);
    let mut entry = serde_json::from_str::<Entry>(std::str::from_utf8(scratch).ok()?).ok()?;
    match &mut entry.payload {
        Payload::ToolResult(r) if r.content.as_str() == "\0lazy" => {
            r.content =
                Text::on_disk(source.clone(), offset + key as u64 + 10, end + 1 - (start - 1));
            Some(entry)
        }
        _ => None,
    }
}

/// Where the output string of a `tool_result` line in this crate's field order lies:
/// `body[start..end]` is the string between its quotes, escapes as they stand (the checks of
/// [`lazy_tool_result`]). `None` for any other line.
pub(crate) fn output_span(body: &[u8], finders: &LazyFinders) -> Option<(usize, usize)> {
    let key = finders.content.find(body)?;
    finders.kind.find(&body[..key])?;
    let start = key + LAZY_CONTENT_KEY.len(); // first byte of the output
    let end = start + finders.end.rfind(&body[start..])?; // its closing quote
    if escaped(body, key) || escaped(body, end) || !one_string(&body[start - 2..end]) {
        return None;
    }
    Some((start, end))
}

/// True when every quote in `s[2..]` is escaped (`s[..2]` is left context), so that `s[2..]`
/// lies inside one JSON string and its closing quote comes right after. A quote after a single
/// backslash is escaped; only after two or more does the parity of the run need counting.
fn one_string(s: &[u8]) -> bool {
    memchr::memchr_iter(b'"', &s[2..]).all(|i| {
        let i = i + 2;
        s[i - 1] == b'\\' && (s[i - 2] != b'\\' || escaped(s, i))
    })
}

/// True when the quote at `q` is preceded by an odd number of backslashes.
fn escaped(body: &[u8], q: usize) -> bool {
    body[..q].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The obvious definition: walk the bytes, an unescaped quote ends the string.
    fn one_string_reference(s: &[u8]) -> bool {
        let mut i = 2;
        while i < s.len() {
            match s[i] {
                b'\\' => i += 2,
                b'"' => return false,
                _ => i += 1,
            }
        }
        true
    }

    proptest::proptest! {
        /// Quotes and backslash runs in every arrangement, including runs of two or more
        /// before a quote (where only the parity of the run tells).
        #[test]
        fn one_string_agrees_with_a_byte_walk(
            body in proptest::collection::vec(
                proptest::sample::select(vec![b'a', b'"', b'\\', b'x']), 0..64),
        ) {
            let mut s = b":\"".to_vec();
            s.extend_from_slice(&body);
            // Only spans that do not end inside an escape are asked about (the caller checks
            // that the closing quote after the span is itself unescaped).
            proptest::prop_assume!(!escaped(&[s.as_slice(), b"\""].concat(), s.len()));
            proptest::prop_assert_eq!(one_string(&s), one_string_reference(&s), "{:?}",
                String::from_utf8_lossy(&s));
        }
    }
}
