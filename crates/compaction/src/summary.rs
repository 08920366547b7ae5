//! The summary request's words (docs/compaction.md, *The summary request*): the instruction, the
//! quality gate and the caps.
//!
//! Pure text work. The request itself is the live request plus the instruction
//! ([`super::summary_input`] plans it, the engine's summarizer sends it). The instruction comes from
//! `assets/prompts/compaction.md` with a scope paragraph saying which messages the note replaces;
//! the stricter retry adds `compaction-strict.md`; a manual focus is always the last line.
//!
//! Invariant: a capped summary is at most [`NOTE_MAX_CHARS`] characters and says where it was
//! cut.

use super::checkpoint::is_placeholder;

/// The instruction of every summary request; `{scope}` is replaced by one of the scopes below.
pub const INSTRUCTION: &str = include_str!("../../../assets/prompts/compaction.md");
/// The same instruction in few words, for a small window's note (docs/compaction.md, *Small
/// local models*): the same ten headings and rules.
pub const INSTRUCTION_COMPACT: &str = include_str!("../../../assets/prompts/compaction-compact.md");
/// Added for the one retry after an unusable summary.
pub const STRICT_ADDENDUM: &str = include_str!("../../../assets/prompts/compaction-strict.md");
const SCOPE_KEPT: &str = include_str!("../../../assets/prompts/compaction-scope-kept.md");
const SCOPE_ALL: &str = include_str!("../../../assets/prompts/compaction-scope-all.md");
const SCOPE_CHUNK: &str = include_str!("../../../assets/prompts/compaction-scope-chunk.md");
/// The headings a summary must have, in order.
pub const HEADINGS: [&str; 10] = [
    "Objective",
    "User direction",
    "Permissions and limits",
    "Done",
    "Changed files",
    "Still running",
    "Verification left",
    "Open questions",
    "Next action",
    "Reference",
];
/// The summary cap, in characters (stated in the instruction).
pub const NOTE_MAX_CHARS: usize = 12_000;
/// The serialized summary input cap, in bytes.
pub const INPUT_MAX_BYTES: usize = 2 * 1024 * 1024;
/// Appended where a summary was cut to its cap.
pub const CAP_MARKER: &str = "[... shortened by Codewhale to fit the 12,000-character note cap]";

/// Which messages of a summary request the note replaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Everything before the `position`-th message (1-based) of the request, which begins with
    /// `opening`; from there on the conversation stays verbatim after the note.
    Before { position: usize, opening: String },
    /// Every message of the request; the kept part is not in it.
    All,
    /// Every message of the request, the oldest part of a longer conversation (an interim note).
    Chunk,
}

/// Words of the first kept message the scope quotes.
const OPENING_CHARS: usize = 80;

impl Scope {
    /// The scope paragraph.
    fn text(&self) -> String {
        match self {
            Scope::Before { position, opening } => {
                let mut opening: String = opening.split_whitespace().collect::<Vec<_>>().join(" ");
                if opening.chars().count() > OPENING_CHARS {
                    opening = opening.chars().take(OPENING_CHARS).collect::<String>() + "…";
                }
                let opening = opening.replace('"', "'");
                SCOPE_KEPT
                    .trim_end()
                    .replace("{position}", &position.to_string())
                    .replace("{opening}", &opening)
            }
            Scope::All => SCOPE_ALL.trim_end().to_owned(),
            Scope::Chunk => SCOPE_CHUNK.trim_end().to_owned(),
        }
    }
}

/// The instruction text: the base instruction with its scope, the strict addendum on a retry,
/// then the focus.
pub fn instruction(scope: &Scope, focus: Option<&str>, strict: bool, max_chars: usize) -> String {
    // A note shorter than the full cap is a small window's: its instruction is short too.
    let base = if max_chars < NOTE_MAX_CHARS { INSTRUCTION_COMPACT } else { INSTRUCTION };
    let mut out = base
        .trim_end()
        .replace("{scope}", &scope.text())
        .replace("{max_chars}", &thousands(max_chars));
    if strict {
        out.push_str("\n\n");
        out.push_str(STRICT_ADDENDUM.trim_end());
    }
    if let Some(focus) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        out.push_str("\n\nFocus the note on: ");
        out.push_str(&focus.replace('\n', " "));
    }
    out
}

/// 12000 as "12,000".
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Why a summary is unusable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QualityIssue {
    #[error("the summary is empty")]
    Empty,
    #[error("the summary is a placeholder or a refusal")]
    Placeholder,
    #[error("the summary has only {found} of the 10 required headings")]
    MissingHeadings { found: usize },
}

/// The quality gate: a summary must say something and carry at least half the headings.
pub fn judge(summary: &str) -> Result<(), QualityIssue> {
    if summary.trim().is_empty() {
        return Err(QualityIssue::Empty);
    }
    if is_placeholder(summary) {
        return Err(QualityIssue::Placeholder);
    }
    let found = HEADINGS.iter().filter(|h| heading_line(summary, h).is_some()).count();
    if found * 2 < HEADINGS.len() {
        return Err(QualityIssue::MissingHeadings { found });
    }
    Ok(())
}

/// Byte offset of the line that is heading `title` (any level or bold, case-insensitive).
fn heading_line(text: &str, title: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        // Models write headings as `## Title`, `# Title:` or `**Title**`; all count.
        if t.starts_with('#') || t.starts_with("**") {
            let name =
                t.trim_matches(|c: char| c == '#' || c == '*' || c == ':' || c.is_whitespace());
            if name.eq_ignore_ascii_case(title) {
                return Some(offset);
            }
        }
        offset += line.len();
    }
    None
}

/// Byte offset of the `char_count`-th character (or the end).
fn byte_at(text: &str, char_count: usize) -> usize {
    text.char_indices().nth(char_count).map_or(text.len(), |(i, _)| i)
}

/// Caps a summary at `limit` characters (at most [`NOTE_MAX_CHARS`]; a small window's note and
/// an interim note get less): the `Reference` section is cut first, then the end.
pub fn cap_to(summary: &str, limit: usize) -> String {
    let summary = summary.trim();
    let total = summary.chars().count();
    if total <= limit {
        return summary.to_owned();
    }
    let marker = if limit == NOTE_MAX_CHARS {
        format!("\n{CAP_MARKER}")
    } else {
        format!("\n[... shortened by Codewhale to fit the {limit}-character note cap]")
    };
    let marker_chars = marker.chars().count();
    if let Some(start) = heading_line(summary, "Reference") {
        let body_start = summary[start..].find('\n').map_or(summary.len(), |n| start + n);
        let body_end = HEADINGS
            .iter()
            .filter_map(|h| heading_line(&summary[body_start..], h).map(|o| body_start + o))
            .min()
            .unwrap_or(summary.len());
        let body_chars = summary[body_start..body_end].chars().count();
        let excess = (total + marker_chars).saturating_sub(limit);
        let keep = body_chars.saturating_sub(excess);
        let cut_at = body_start + byte_at(&summary[body_start..], keep);
        let shortened =
            format!("{}{marker}\n{}", &summary[..cut_at], summary[body_end..].trim_start());
        let shortened = shortened.trim_end().to_owned();
        if shortened.chars().count() <= limit {
            return shortened;
        }
        return cut_end(&shortened, &marker, limit);
    }
    cut_end(summary, &marker, limit)
}

fn cut_end(text: &str, marker: &str, limit: usize) -> String {
    let keep = limit.saturating_sub(marker.chars().count());
    format!("{}{marker}", &text[..byte_at(text, keep)])
}

/// What the requests of a job were like (for the log, the user and the benchmark).
#[derive(Debug, Default, Clone, Copy)]
pub struct SummaryStats {
    pub requests: u32,
    pub chunks: u32,
    /// `plain.messages[..unread]` were read by no request (an extract covers them).
    pub unread: usize,
    /// Estimated tokens of the covered part the requests read, and of the part they did not.
    pub read_tokens: u64,
    pub unread_tokens: u64,
    /// What the job's requests cost, when every one of them had a known price.
    pub cost_usd: Option<f64>,
    /// The tokens its requests read and wrote, as the provider reported them.
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// The one line that says what a note read and what only `recall` reaches.
pub fn unread_line(stats: &SummaryStats) -> String {
    format!(
        "the oldest {} messages (about {} tokens) are kept for recall; the note read the newest \
         {} tokens",
        stats.unread,
        short_count(stats.unread_tokens),
        short_count(stats.read_tokens)
    )
}

/// A token count as people say it: 950, 12k, 172k, 58M.
fn short_count(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{}k", n / 1_000),
        _ => format!("{}M", n / 1_000_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full_summary(reference: &str) -> String {
        HEADINGS
            .iter()
            .map(|h| {
                let body = if *h == "Reference" { reference } else { "None" };
                format!("## {h}\n{body}\n")
            })
            .collect::<Vec<_>>()
            .join("\n")
            .replace("## Objective\nNone", "## Objective\nFix the parser.")
    }

    #[test]
    fn instruction_lists_the_ten_headings_in_order_and_states_the_cap() {
        let text = instruction(&Scope::All, Some("the parser\nonly"), false, NOTE_MAX_CHARS);
        let positions: Vec<usize> =
            HEADINGS.iter().map(|h| text.find(&format!("## {h}\n")).unwrap()).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]));
        assert!(text.contains("12,000 characters"));
        assert!(text.ends_with("Focus the note on: the parser only"));
        let strict = instruction(&Scope::All, Some("x"), true, NOTE_MAX_CHARS);
        assert!(strict.contains(STRICT_ADDENDUM.trim_end()));
        assert!(strict.ends_with("Focus the note on: x"), "the focus stays last");
        assert!(!instruction(&Scope::All, Some("  "), false, NOTE_MAX_CHARS).contains("Focus"));
        assert!(!text.contains("{scope}"));
        let kept = Scope::Before { position: 7, opening: "Ran  \"cargo test\"\nand".into() };
        let kept = instruction(&kept, None, false, NOTE_MAX_CHARS);
        assert!(
            kept.contains("before message 7, which begins:\n\"Ran 'cargo test' and\"."),
            "{kept}"
        );
        assert!(instruction(&Scope::Chunk, None, false, NOTE_MAX_CHARS)
            .contains("a later note will fold yours in"));
        // The length is stated: a small window's note is shorter.
        assert!(instruction(&Scope::All, None, false, NOTE_MAX_CHARS)
            .contains("under 12,000 characters"));
        let small = instruction(&Scope::All, None, false, 1_228);
        assert!(small.contains("under 1,228 characters"));
        // A small window's instruction is short, with the same ten headings.
        assert!(small.len() * 2 < instruction(&Scope::All, None, false, NOTE_MAX_CHARS).len());
        for heading in HEADINGS {
            assert!(small.contains(&format!("## {heading}")), "{heading}");
        }
    }

    #[test]
    fn the_gate_rejects_empty_placeholder_refusal_and_sparse_summaries() {
        assert_eq!(judge("  \n"), Err(QualityIssue::Empty));
        assert_eq!(judge("No summary available."), Err(QualityIssue::Placeholder));
        assert_eq!(judge("I'm sorry, I can't do that."), Err(QualityIssue::Placeholder));
        let sparse = "## Objective\nFix it.\n## Done\nRead a.rs\n## Next action\nTest.";
        assert_eq!(judge(sparse), Err(QualityIssue::MissingHeadings { found: 3 }));
        assert_eq!(judge(&full_summary("a.rs")), Ok(()));
        let five = "# objective:\nx\n**## Done**\ny\n## CHANGED FILES\nz\n## Still running\nNone\n## Reference\nq";
        assert_eq!(judge(five), Ok(()), "five of ten, any level and case");
    }

    #[test]
    fn cap_cuts_reference_first() {
        let summary = full_summary(&"ref line\n".repeat(2000));
        let capped = cap_to(&summary, NOTE_MAX_CHARS);
        assert!(capped.chars().count() <= NOTE_MAX_CHARS);
        assert!(capped.contains(CAP_MARKER));
        assert!(capped.contains("## Next action\nNone"), "earlier sections untouched");
        assert!(capped.find("## Reference").unwrap() < capped.find(CAP_MARKER).unwrap());
        let short = full_summary("a.rs");
        assert_eq!(cap_to(&short, NOTE_MAX_CHARS), short.trim());
    }

    #[test]
    fn cap_cuts_the_end_when_reference_is_not_enough() {
        let summary = format!("## Objective\n{}\n## Reference\nr", "é".repeat(20_000));
        let capped = cap_to(&summary, NOTE_MAX_CHARS);
        assert_eq!(capped.chars().count(), NOTE_MAX_CHARS);
        assert!(capped.ends_with(CAP_MARKER));
        let no_reference = "word ".repeat(5000);
        assert!(cap_to(&no_reference, NOTE_MAX_CHARS).ends_with(CAP_MARKER));
    }
}
