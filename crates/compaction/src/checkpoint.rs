//! What makes a message a checkpoint, and what makes a note a placeholder.
//!
//! Detection is structural (docs/compaction.md, *The checkpoint note*): a checkpoint's first block
//! starts with [`NOTE_PREFIX`] and its second block is exactly [`MARKER`]. A user who merely quotes
//! the phrase is a user. Checkpoints written by older tools are recognised by their opening words
//! ([`LEGACY_PREFIXES`]). The note's fixed wording ([`HEADER`], [`CLOSING`], the section titles) is
//! named here — the long texts are read from `assets/prompts/`, the ones a note rebuilt by the
//! journal crate shares come from there — so that the composer (`note`), the validator (`survival`)
//! and the view builder's tests all read the same text.

use super::message::{Message, Part, Role};

/// The provenance marker: the second text block of every checkpoint message.
pub const MARKER: &str = codewhale_journal::CHECKPOINT_MARKER;

/// How every note's first block starts.
pub const NOTE_PREFIX: &str = "Codewhale handoff note";

/// The opening of checkpoints from imported or older sessions.
pub const LEGACY_PREFIXES: [&str; 2] = [
    "Another language model started to solve this problem",
    "Conversation Summary (Auto-Generated)",
];

/// The note's header: what the view keeps verbatim around the note and where output is cut.
/// A test in `compaction::note` ties each claim to what the journal's view function renders.
pub const HEADER: &str = include_str!("../../../assets/prompts/note-header.md").trim_ascii_end();

/// Title of the list of files Codewhale saw the covered tool calls touch.
pub const FILES_TOUCHED_TITLE: &str = codewhale_journal::FILES_TOUCHED_TITLE;

/// Title of the list of background commands still alive at the time of the pass.
pub const RUNNING_NOW_TITLE: &str = "## Running now";

/// Start of the one-line live-state stamp.
pub const LIVE_STATE_PREFIX: &str = "Live state at compaction:";

/// Introduces the verbatim text of the workspace's anchors.
pub const ANCHORS_TITLE: &str = codewhale_journal::NOTE_ANCHORS_TITLE;

/// The note's last paragraph (the journal crate's, which rebuilt notes end with too).
pub const CLOSING: &str = codewhale_journal::NOTE_CLOSING;

/// True when `message` is a checkpoint: structurally ours, or a legacy summary.
pub fn is_checkpoint(message: &Message) -> bool {
    is_structural_checkpoint(message) || is_legacy_checkpoint(message)
}

/// A user message of exactly two text blocks: the first starts with [`NOTE_PREFIX`], the
/// second is exactly [`MARKER`]. Anything else that merely quotes the phrase is not ours.
pub fn is_structural_checkpoint(message: &Message) -> bool {
    message.role == Role::User
        && matches!(
            message.content.as_slice(),
            [Part::Text { text: first }, Part::Text { text: second }]
                if first.starts_with(NOTE_PREFIX) && second == MARKER
        )
}

/// A user message whose text starts with a legacy summary opening, optionally after a `## `
/// heading (either as the heading itself or on the line after it).
pub fn is_legacy_checkpoint(message: &Message) -> bool {
    if message.role != Role::User {
        return false;
    }
    let Some(first) = message.texts().next() else {
        return false;
    };
    legacy_body(first).is_some()
}

/// The text after a legacy opening, when `text` is a legacy summary.
fn legacy_body(text: &str) -> Option<&str> {
    let text = text.trim_start();
    let starts = |s: &'_ str| LEGACY_PREFIXES.iter().any(|p| s.starts_with(p));
    if starts(text) {
        return Some(text);
    }
    let heading = text.strip_prefix("## ")?;
    if starts(heading) {
        return Some(heading);
    }
    let (_, after) = heading.split_once('\n')?;
    let after = after.trim_start();
    starts(after).then_some(after)
}

/// The summary part of a checkpoint's first block: without the header and without the
/// sections Codewhale appends. What the placeholder check looks at.
pub fn note_body(note: &str) -> &str {
    let body = if let Some(rest) = note.strip_prefix(HEADER) {
        rest
    } else if let Some(rest) = note.strip_prefix(NOTE_PREFIX) {
        rest.trim_start_matches(['.', ':', ' '])
    } else if let Some(legacy) = legacy_body(note) {
        let prefix =
            LEGACY_PREFIXES.iter().find(|p| legacy.starts_with(**p)).map_or(0, |p| p.len());
        &legacy[prefix..]
    } else {
        note
    };
    let end = [
        format!("\n{FILES_TOUCHED_TITLE}"),
        format!("\n{}", crate::plan::SECTION_TITLE),
        format!("\n{RUNNING_NOW_TITLE}"),
        format!("\n{LIVE_STATE_PREFIX}"),
        format!("\n{ANCHORS_TITLE}"),
        format!("\n{CLOSING}"),
    ]
    .iter()
    .filter_map(|m| body.find(m.as_str()))
    .min()
    .unwrap_or(body.len());
    body[..end].trim()
}

/// Outputs that stand in for a summary without being one.
const PLACEHOLDERS: [&str; 18] = [
    "",
    "none",
    "n/a",
    "na",
    "todo",
    "tbd",
    "placeholder",
    "summary",
    "empty",
    "no summary",
    "no summary available",
    "summary unavailable",
    "summary not available",
    "no summary provided",
    "nothing to summarize",
    "nothing to summarise",
    "no content",
    "insert summary here",
];

/// Openings of a refusal.
const REFUSALS: [&str; 10] = [
    "i'm sorry",
    "i am sorry",
    "sorry,",
    "i cannot",
    "i can't",
    "i can not",
    "i'm unable",
    "i am unable",
    "i won't",
    "as an ai",
];

/// A refusal longer than this is assumed to be a real text that happens to start politely.
const REFUSAL_MAX_CHARS: usize = 600;

/// True when `summary` says nothing: empty, a stock placeholder, a refusal, or headings with
/// nothing but `None` under every one of them.
pub fn is_placeholder(summary: &str) -> bool {
    let summary = &strip_comments(summary);
    let norm = normalize(summary);
    if PLACEHOLDERS.contains(&norm.as_str()) || only_filler(&norm) {
        return true;
    }
    let lower = summary.trim().to_lowercase().replace('\u{2019}', "'");
    if lower.chars().count() <= REFUSAL_MAX_CHARS && REFUSALS.iter().any(|r| lower.starts_with(r)) {
        return true;
    }
    summary
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .all(|l| matches!(normalize(l).as_str(), "none" | "n/a" | "na" | "nothing"))
}

/// Words that make up stand-in text ("TODO: summary goes here", "summary not available yet").
const FILLER: [&str; 27] = [
    "no",
    "not",
    "summary",
    "available",
    "unavailable",
    "provided",
    "none",
    "n",
    "a",
    "na",
    "todo",
    "tbd",
    "placeholder",
    "insert",
    "here",
    "goes",
    "the",
    "empty",
    "nothing",
    "to",
    "summarize",
    "summarise",
    "yet",
    "pending",
    "lorem",
    "ipsum",
    "fill",
];

/// A short text made only of filler words.
fn only_filler(norm: &str) -> bool {
    let words: Vec<&str> =
        norm.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    !words.is_empty() && words.len() <= 8 && words.iter().all(|w| FILLER.contains(w))
}

/// The text without `<!-- ... -->` comments (a template's leftovers are not content).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        match rest[start..].find("-->") {
            Some(end) => rest = &rest[start + end + 3..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Lowercase, markdown and punctuation trimmed from both ends, inner whitespace collapsed.
fn normalize(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let joined = words.join(" ").to_lowercase();
    joined.trim_matches(|c: char| !c.is_alphanumeric()).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint(first: &str) -> Message {
        Message::new(Role::User, vec![Part::text(first), Part::text(MARKER)])
    }

    #[test]
    fn structural_detection_needs_both_blocks() {
        assert!(is_checkpoint(&checkpoint("Codewhale handoff note. Work on the parser.")));
        assert!(!is_checkpoint(&Message::user("Codewhale handoff note: what is that?")));
        let wrong_marker = Message::new(
            Role::User,
            vec![Part::text("Codewhale handoff note."), Part::text("<!-- other -->")],
        );
        assert!(!is_checkpoint(&wrong_marker));
        assert!(!is_checkpoint(&checkpoint("Please read the Codewhale handoff note")));
        let assistant = Message::new(
            Role::Assistant,
            vec![Part::text("Codewhale handoff note."), Part::text(MARKER)],
        );
        assert!(!is_checkpoint(&assistant), "only a user message is a checkpoint");
        let third_block = Message::new(
            Role::User,
            vec![Part::text("Codewhale handoff note."), Part::text(MARKER), Part::text("more")],
        );
        assert!(!is_checkpoint(&third_block), "a checkpoint has exactly two blocks");
    }

    #[test]
    fn legacy_openings_are_checkpoints() {
        assert!(is_checkpoint(&Message::user(
            "Another language model started to solve this problem and produced a summary"
        )));
        assert!(is_checkpoint(&Message::user("## Conversation Summary (Auto-Generated)\n...")));
        assert!(is_checkpoint(&Message::user(
            "## Context\nConversation Summary (Auto-Generated): the user wants X"
        )));
        assert!(!is_checkpoint(&Message::user("Is a Conversation Summary (Auto-Generated) ok?")));
        assert!(!is_checkpoint(&Message::assistant("Conversation Summary (Auto-Generated)")));
    }

    #[test]
    fn placeholders_and_refusals_are_detected() {
        for junk in [
            "",
            "  ",
            "No summary available.",
            "**N/A**",
            "I'm sorry, I can't help.",
            "## Objective\nNone\n## Done\nNone",
            "TODO: summary goes here",
            "<!-- summary -->",
            "Summary not available yet.",
            "Lorem ipsum",
        ] {
            assert!(is_placeholder(junk), "{junk:?}");
        }
        for real in [
            "## Objective\nFix the parser.\n## Done\nNone",
            "Fix the flaky test.",
            "No changes yet.",
            "<!-- x --> Ship the summary view.",
        ] {
            assert!(!is_placeholder(real), "{real:?}");
        }
    }

    #[test]
    fn note_body_strips_header_and_appended_sections() {
        let note = format!(
            "{HEADER}\n\n## Objective\nShip it.\n\n{FILES_TOUCHED_TITLE}\n- a.rs\n\n{CLOSING}"
        );
        assert_eq!(note_body(&note), "## Objective\nShip it.");
        assert_eq!(
            note_body("Codewhale handoff note.\n\nNo summary available."),
            "No summary available."
        );
        assert_eq!(note_body("## Conversation Summary (Auto-Generated)\nwork"), "work");
    }
}
