//! The one text cutter: where a cut of text to a byte budget falls, and the one marker that says
//! what it left out (docs/journal-format.md, *Cuts and their marker*). Every place that shortens
//! text a model reads — a bounded entry in the view, a tool's or an MCP server's output, a
//! fetched page, a recalled entry, the summarizer's input — cuts here, so a cut falls by the
//! same rule and reads the same everywhere.
//!
//! The rule. A head kept within `N` bytes ends at the last UTF-8 boundary at or below `N`; if a
//! newline lies within the last 10 % of that head, the head ends just after it instead, so a cut
//! of line-shaped output keeps whole lines. A tail kept within `N` bytes is the mirror image: it
//! starts at the first boundary at or above `len − N`, moved to just after a newline that lies
//! within its first 10 %. A head + tail cut of `N` gives the head `N / 2` and the tail the rest.
//!
//! The marker: `[… C of M bytes cut; recall entry ID …]`, where `C` is the number of bytes left
//! out and `M` the size of the whole text. The part after the semicolon says where the whole
//! text is: the journal entry that holds it (in a request's view), else a short hint of how to
//! get it again (`[… C of M bytes cut; call again with a larger max_chars …]`); where nothing
//! holds it whole and there is nothing to suggest, the marker ends after `cut`.
//!
//! Invariants: a cut never splits a UTF-8 character of valid text; what is kept never exceeds the
//! budget; text within its budget comes back unchanged; a head and a tail never overlap; the
//! marker's `C` is exactly the bytes left out and `M` the original length. Pure: no I/O.

use crate::entry::EntryId;

/// The words every cut marker carries; the handoff note's header quotes them so the model knows
/// what a cut looks like.
pub const WORDS: &str = "bytes cut";

/// Where the whole of a cut text can be had, as the marker says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whole<'a> {
    /// A journal entry holds it whole: `recall entry ID` reads it back.
    Entry(&'a EntryId),
    /// Nothing holds it whole; this short hint says how to get it again.
    Hint(&'a str),
    /// Nothing holds it whole and there is nothing to suggest.
    Nowhere,
}

/// The marker for `cut` bytes left out of `original` bytes.
pub fn marker(cut: u64, original: u64, whole: Whole<'_>) -> String {
    match whole {
        Whole::Entry(id) => format!("[… {cut} of {original} {WORDS}; recall entry {id} …]"),
        Whole::Hint(hint) => format!("[… {cut} of {original} {WORDS}; {hint} …]"),
        Whole::Nowhere => format!("[… {cut} of {original} {WORDS} …]"),
    }
}

/// Whether `text` (trimmed) is exactly one cut marker: Codewhale's words, no one else's.
pub fn is_marker(text: &str) -> bool {
    let Some(rest) = text.trim().strip_prefix("[… ") else { return false };
    let Some(rest) = rest.strip_suffix(" …]") else { return false };
    let Some((cut, rest)) = rest.split_once(" of ") else { return false };
    let Some((original, rest)) = rest.split_once(' ') else { return false };
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let Some(after) = rest.strip_prefix(WORDS) else { return false };
    number(cut) && number(original) && (after.is_empty() || after.starts_with("; "))
}

/// Where a head of `text` kept within `max` bytes ends (`text.len()` when it fits).
pub fn prefix_end(text: &str, max: usize) -> usize {
    if text.len() <= max {
        return text.len();
    }
    head_end_in(text.as_bytes(), max)
}

/// Where a tail of `text` kept within `max` bytes starts (`0` when it fits).
pub fn suffix_start(text: &str, max: usize) -> usize {
    if text.len() <= max {
        return 0;
    }
    tail_start_in(text.as_bytes(), max)
}

/// The head end by the rule in `bytes`, the start of a longer stream that goes on past `max`
/// (`bytes.len() > max`, else `bytes.len()`). Works on output that may not be UTF-8: a position
/// is a boundary unless its byte continues a multi-byte character.
pub fn head_end_in(bytes: &[u8], max: usize) -> usize {
    if bytes.len() <= max {
        return bytes.len();
    }
    let mut end = max;
    // A character is at most 4 bytes: more continuation bytes than 3 are not UTF-8, and any
    // position cuts them as well as another.
    for _ in 0..3 {
        if end == 0 || is_boundary(bytes[end]) {
            break;
        }
        end -= 1;
    }
    if !is_boundary(bytes[end]) {
        end = max;
    }
    match memchr::memrchr(b'\n', &bytes[..end]) {
        Some(newline) if end - (newline + 1) <= end / 10 => newline + 1,
        _ => end,
    }
}

/// The tail start by the rule in `bytes`, the end of a longer stream that began before it: the
/// tail keeps at most `max` bytes of it (`0` when `bytes.len() <= max` and `bytes` starts on a
/// boundary).
pub fn tail_start_in(bytes: &[u8], max: usize) -> usize {
    let len = bytes.len();
    let mut start = len.saturating_sub(max);
    for _ in 0..3 {
        if start == len || is_boundary(bytes[start]) {
            break;
        }
        start += 1;
    }
    if start < len && !is_boundary(bytes[start]) {
        start = len.saturating_sub(max);
    }
    let kept = len - start;
    // From the byte before the start: a tail that already starts a line stays where it is.
    let from = start.saturating_sub(1);
    match memchr::memchr(b'\n', &bytes[from..]) {
        Some(at) if from + at < start + kept / 10 => (from + at + 1).max(start),
        _ => start,
    }
}

/// Whether a cut before this byte splits no character.
fn is_boundary(byte: u8) -> bool {
    // As `str::is_char_boundary`: not a continuation byte (0b10xx_xxxx).
    (byte as i8) >= -0x40
}

/// `text` cut to a head within `max` bytes followed by the marker (on a line of its own), or
/// `None` when it fits.
pub fn head(text: &str, max: usize, whole: Whole<'_>) -> Option<String> {
    if text.len() <= max {
        return None;
    }
    let end = prefix_end(text, max);
    let marker = marker((text.len() - end) as u64, text.len() as u64, whole);
    let mut out = String::with_capacity(end + marker.len() + 1);
    out.push_str(&text[..end]);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&marker);
    Some(out)
}

/// `text` cut to a head and a tail within `max` bytes together, the marker on a line of its own
/// between them, or `None` when it fits.
pub fn head_tail(text: &str, max: usize, whole: Whole<'_>) -> Option<String> {
    if text.len() <= max {
        return None;
    }
    let end = prefix_end(text, max / 2);
    let start = suffix_start(text, max - max / 2);
    Some(join(&text[..end], (start - end) as u64, text.len() as u64, &text[start..], whole))
}

/// A head, the marker for `cut` of `original` bytes, and a tail, the marker on a line of its
/// own: the shape of every head + tail cut (also of a stream kept by its ends).
pub fn join(head: &str, cut: u64, original: u64, tail: &str, whole: Whole<'_>) -> String {
    let marker = marker(cut, original, whole);
    let mut out = String::with_capacity(head.len() + marker.len() + tail.len() + 2);
    out.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&marker);
    if !tail.is_empty() {
        out.push('\n');
        out.push_str(tail);
    }
    out
}

/// How many bytes the first `max_chars` characters of `text` take: a character budget as the
/// byte budget the cut takes.
pub fn char_budget(text: &str, max_chars: usize) -> usize {
    text.char_indices().nth(max_chars).map_or(text.len(), |(at, _)| at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_head_falls_on_a_character_boundary_then_on_a_near_newline() {
        assert_eq!(prefix_end("héllo", 2), 1, "never half of é");
        assert_eq!(prefix_end("short", 10), 5);
        // 100 bytes of budget; a newline at byte 94 lies within the last 10 %: the head ends
        // after it. One at byte 50 does not: the head ends at the budget.
        let near = format!("{}\n{}", "a".repeat(94), "b".repeat(50));
        assert_eq!(prefix_end(&near, 100), 95);
        let far = format!("{}\n{}", "a".repeat(50), "b".repeat(100));
        assert_eq!(prefix_end(&far, 100), 100);
    }

    #[test]
    fn a_tail_is_the_mirror_image() {
        assert_eq!(suffix_start("héllo", 4), 3, "never half of é");
        assert_eq!(suffix_start("short", 10), 0);
        let near = format!("{}\n{}", "a".repeat(50), "b".repeat(95));
        // The tail of 100 starts at byte 46; the newline at 50 is within its first 10 bytes.
        assert_eq!(suffix_start(&near, 100), 51);
        let far = format!("{}\n{}", "a".repeat(100), "b".repeat(60));
        assert_eq!(suffix_start(&far, 100), 61);
    }

    #[test]
    fn the_marker_has_one_shape() {
        let id = EntryId::from("0192-abc");
        assert_eq!(
            marker(5, 9, Whole::Entry(&id)),
            "[… 5 of 9 bytes cut; recall entry 0192-abc …]"
        );
        assert_eq!(
            marker(5, 9, Whole::Hint("ask for less")),
            "[… 5 of 9 bytes cut; ask for less …]"
        );
        assert_eq!(marker(5, 9, Whole::Nowhere), "[… 5 of 9 bytes cut …]");
        for whole in [Whole::Entry(&id), Whole::Hint("x"), Whole::Nowhere] {
            assert!(is_marker(&marker(1, 2, whole)));
        }
        for text in [
            "[… 5 of 9 bytes cut",
            "[… five of 9 bytes cut …]",
            "[… 5 of 9 bytes cutting …]",
            "a [… 5 of 9 bytes cut …]",
        ] {
            assert!(!is_marker(text), "{text}");
        }
    }

    #[test]
    fn a_head_tail_cut_of_lines_keeps_whole_lines_and_counts_what_it_left_out() {
        let text: String = (0..100).map(|i| format!("line {i:04}\n")).collect();
        let out = head_tail(&text, 210, Whole::Nowhere).unwrap();
        let (head, rest) = out.split_once("[… ").unwrap();
        let tail = rest.split_once(" …]\n").unwrap().1;
        assert!(head.ends_with("line 0009\n") && head.len() == 100, "{head}");
        assert!(tail.starts_with("line 0090\n") && tail.len() == 100, "{tail}");
        assert!(out.contains("[… 800 of 1000 bytes cut …]"), "{out}");
        assert_eq!(head_tail("fits", 4, Whole::Nowhere), None);
    }

    #[test]
    fn a_char_budget_counts_characters() {
        assert_eq!(char_budget("ééé", 2), 4);
        assert_eq!(char_budget("ab", 5), 2);
    }

    /// Text of ASCII, newlines and 2-, 3- and 4-byte characters.
    fn utf8() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![Just('a'), Just('\n'), Just('é'), Just('€'), Just('🐋'), any::<char>()],
            0..400,
        )
        .prop_map(|chars| chars.into_iter().collect())
    }

    proptest! {
        #[test]
        fn a_head_is_a_boundary_within_budget_and_near_it(text in utf8(), max in 0usize..500) {
            let end = prefix_end(&text, max);
            prop_assert!(text.is_char_boundary(end));
            prop_assert!(end <= max || end == text.len());
            if text.len() > max {
                let floor = text.floor_char_boundary(max);
                // Only a newline within the last 10 % pulls the head back, to just after it.
                prop_assert!(end == floor || (text.as_bytes()[end - 1] == b'\n' && floor - end <= floor / 10));
                prop_assert_eq!(head_end_in(text.as_bytes(), max), end);
            }
        }

        #[test]
        fn a_tail_is_a_boundary_within_budget_and_near_it(text in utf8(), max in 0usize..500) {
            let start = suffix_start(&text, max);
            prop_assert!(text.is_char_boundary(start));
            prop_assert!(text.len() - start <= max);
            if text.len() > max {
                let ceil = text.ceil_char_boundary(text.len() - max);
                prop_assert!(start == ceil || (text.as_bytes()[start - 1] == b'\n' && start - ceil <= (text.len() - ceil) / 10));
                prop_assert_eq!(tail_start_in(text.as_bytes(), max), start);
            }
        }

        #[test]
        fn a_head_tail_cut_keeps_both_ends_and_says_exactly_what_it_left_out(
            text in utf8(), max in 0usize..500,
        ) {
            match head_tail(&text, max, Whole::Nowhere) {
                None => prop_assert!(text.len() <= max),
                Some(out) => {
                    let end = prefix_end(&text, max / 2);
                    let start = suffix_start(&text, max - max / 2);
                    prop_assert!(end <= start);
                    prop_assert!(end + (text.len() - start) <= max);
                    prop_assert!(out.starts_with(&text[..end]));
                    prop_assert!(out.ends_with(&text[start..]));
                    let marker = marker((start - end) as u64, text.len() as u64, Whole::Nowhere);
                    prop_assert!(out.contains(&marker));
                    prop_assert!(out.lines().any(is_marker));
                }
            }
        }

        #[test]
        fn a_head_cut_keeps_a_prefix_and_says_exactly_what_it_left_out(
            text in utf8(), max in 0usize..500,
        ) {
            match head(&text, max, Whole::Hint("h")) {
                None => prop_assert!(text.len() <= max),
                Some(out) => {
                    let end = prefix_end(&text, max);
                    prop_assert!(out.starts_with(&text[..end]));
                    let marker = marker((text.len() - end) as u64, text.len() as u64, Whole::Hint("h"));
                    prop_assert!(out.ends_with(&marker));
                }
            }
        }
    }
}
