//! The summary request (DESIGN §5.4): its input, its instruction, the quality gate and the caps.
//!
//! Pure text work; the async pass sends what this module builds. The covered part of the view is
//! serialized into one transcript (a request with tool blocks but no tools would be rejected by
//! some providers, and a transcript is what the 2 MiB input cap measures). The instruction comes
//! from `assets/prompts/compaction.md`; the stricter retry adds `compaction-strict.md`; a manual
//! focus is always the last line.
//!
//! Invariants: shrinking the input drops whole exchanges from the oldest end and never the
//! previous checkpoint; a capped summary is at most [`NOTE_MAX_CHARS`] characters and says where
//! it was cut.

use super::checkpoint::{is_checkpoint, is_placeholder};
use super::message::{Message, Part, Role};
use super::round;

/// The instruction of every summary request.
pub const INSTRUCTION: &str = include_str!("../../../../assets/prompts/compaction.md");
/// Added for the one retry after an unusable summary.
pub const STRICT_ADDENDUM: &str = include_str!("../../../../assets/prompts/compaction-strict.md");
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

/// The instruction text: the base instruction, the strict addendum on a retry, then the focus.
pub fn instruction(focus: Option<&str>, strict: bool) -> String {
    let mut out = INSTRUCTION.trim_end().to_owned();
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

/// Serializes the covered part as a transcript the summarizer reads, for an input of at most
/// `max_bytes` (which sets how much of one long text or output is kept, see [`part_max`]).
pub fn transcript(covered: &[Message], max_bytes: usize) -> String {
    let mut out = String::from("<conversation>\n");
    render(&mut out, covered, part_max(max_bytes));
    out.push_str("</conversation>");
    out
}

/// Longest text or tool output rendered whole into a summary input; longer ones keep their
/// head and tail, so one huge message never crowds out every other exchange.
pub const PART_MAX_BYTES: usize = 64 * 1024;

/// The longest part kept whole in an input of `max_bytes`: a quarter of it, between 1 KiB and
/// [`PART_MAX_BYTES`] (a small model's window holds little, and one output must not fill it).
pub fn part_max(max_bytes: usize) -> usize {
    (max_bytes / 4).clamp(1024, PART_MAX_BYTES)
}

fn render(out: &mut String, covered: &[Message], part_max: usize) {
    let capped = |text: &str| -> String {
        let text = text.trim_end();
        codewhale_journal::cut_to_bound(text, part_max).unwrap_or_else(|| text.to_owned())
    };
    for message in covered {
        if is_checkpoint(message) {
            out.push_str("[earlier handoff note]\n");
            if let Some(note) = message.texts().next() {
                out.push_str(note.trim_end());
                out.push('\n');
            }
            continue;
        }
        let who = match message.role {
            Role::User if message.anchor => "user (pinned anchor)",
            Role::User if message.synthetic => "codewhale notice",
            Role::User | Role::Tool => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
        };
        for part in &message.content {
            match part {
                Part::Text { text } if !text.trim().is_empty() => {
                    out.push_str(&format!("[{who}]\n{}\n", capped(text)));
                }
                Part::Text { .. } | Part::Thinking { .. } => {}
                Part::ToolUse { id, name, input } => {
                    out.push_str(&format!("[assistant called {name} {input} (call {id})]\n"));
                }
                Part::ToolResult { tool_use_id, content } => {
                    out.push_str(&format!("[result of call {tool_use_id}]\n{}\n", capped(content)));
                }
            }
        }
    }
}

/// The serialized size of a summary input of at most `max_bytes`: transcript plus instruction.
#[cfg(test)]
pub fn input_bytes(covered: &[Message], focus: Option<&str>, max_bytes: usize) -> usize {
    transcript(covered, max_bytes).len() + instruction(focus, true).len()
}

/// About how many transcript bytes `message` renders to (each part kept to `part_max`),
/// without rendering it: tool output is measured by its length hint, so sizing a long covered
/// part reads none of its outputs.
pub fn message_bytes(message: &Message, part_max: usize) -> usize {
    if is_checkpoint(message) {
        return 24 + message.texts().next().map_or(0, str::len);
    }
    message
        .content
        .iter()
        .map(|part| match part {
            Part::Text { text } => 16 + text.len().min(part_max + 128),
            Part::ToolUse { id, name, input } => {
                32 + id.len() + name.len() + input.to_string().len()
            }
            Part::ToolResult { tool_use_id, content } => {
                24 + tool_use_id.len() + content.len_hint().min(part_max + 128)
            }
            Part::Thinking { .. } => 0,
        })
        .sum()
}

/// Where whole exchanges start in `covered`: a user message (or the message after a
/// checkpoint) where no call is pending, so a question goes with its answer and a call with its
/// results (a parallel batch included). Checkpoints are starts of their own: they are never
/// dropped.
fn exchange_starts(covered: &[Message]) -> Vec<usize> {
    let legal = round::legal_cuts(covered);
    (0..covered.len())
        .filter(|&i| {
            legal[i]
                && (i == 0
                    || is_checkpoint(&covered[i])
                    || is_checkpoint(&covered[i - 1])
                    || (covered[i].role == Role::User && !covered[i].has_tool_result()))
        })
        .collect()
}

/// `covered` without its first `start` messages, except the checkpoints among them (a previous
/// note is never dropped).
fn keep_from(covered: &[Message], start: usize) -> Vec<Message> {
    covered[..start].iter().filter(|m| is_checkpoint(m)).chain(&covered[start..]).cloned().collect()
}

/// The newest part of `covered` whose summary input fits `max_bytes`: the oldest whole
/// exchanges are dropped, never a checkpoint. One backward walk that stops as soon as the
/// budget is spent, so a long covered part costs what is kept, not what is dropped. `None`
/// when not even the checkpoints and the newest exchange fit.
pub fn fit_input(
    covered: &[Message],
    focus: Option<&str>,
    max_bytes: usize,
) -> Option<Vec<Message>> {
    let budget = max_bytes.checked_sub(instruction(focus, true).len() + 64)?;
    let part_max = part_max(max_bytes);
    let message_bytes = |m: &Message| message_bytes(m, part_max);
    let pinned: usize = covered.iter().filter(|m| is_checkpoint(m)).map(message_bytes).sum();
    let mut used = pinned;
    let mut from = covered.len();
    while from > 0 {
        let m = &covered[from - 1];
        let add = if is_checkpoint(m) { 0 } else { message_bytes(m) };
        if used + add > budget {
            break;
        }
        used += add;
        from -= 1;
    }
    if from == 0 {
        return Some(covered.to_vec());
    }
    // The first exchange start at or after `from`: whole exchanges only.
    let start = exchange_starts(covered).into_iter().find(|&s| s >= from).unwrap_or(covered.len());
    let kept = keep_from(covered, start);
    // Only checkpoints left: not even the newest exchange fits.
    (!kept.iter().all(is_checkpoint)).then_some(kept)
}

/// Bytes per token when turning a provider's token figures into transcript bytes to drop.
const BYTES_PER_TOKEN: u64 = 4;

/// Shrinks a summary input the provider rejected as too long: drops the oldest whole exchanges
/// until about `excess_tokens` (plus a tenth) are gone, or a quarter of the transcript when the
/// provider did not say by how much. Returns false when nothing could be dropped.
pub fn shrink_for_overflow(covered: &mut Vec<Message>, excess_tokens: Option<u64>) -> bool {
    let sizes: Vec<usize> = covered.iter().map(|m| message_bytes(m, PART_MAX_BYTES)).collect();
    let goal = match excess_tokens {
        Some(excess) => (excess + excess / 10 + 1).saturating_mul(BYTES_PER_TOKEN) as usize,
        None => (sizes.iter().sum::<usize>() / 4).max(1),
    };
    let starts = exchange_starts(covered);
    // Drop through the first exchange start past which the dropped bytes reach the goal.
    let mut freed = 0;
    let mut cut = None;
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(covered.len());
        if covered[start..end].iter().any(is_checkpoint) {
            continue;
        }
        freed += sizes[start..end].iter().sum::<usize>();
        cut = Some(end);
        if freed >= goal {
            break;
        }
    }
    let Some(cut) = cut else { return false };
    *covered = keep_from(covered, cut);
    true
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

/// Caps a summary at [`NOTE_MAX_CHARS`]: the `Reference` section is cut first, then the end.
pub fn cap(summary: &str) -> String {
    let summary = summary.trim();
    let total = summary.chars().count();
    if total <= NOTE_MAX_CHARS {
        return summary.to_owned();
    }
    let marker = format!("\n{CAP_MARKER}");
    let marker_chars = marker.chars().count();
    if let Some(start) = heading_line(summary, "Reference") {
        let body_start = summary[start..].find('\n').map_or(summary.len(), |n| start + n);
        let body_end = HEADINGS
            .iter()
            .filter_map(|h| heading_line(&summary[body_start..], h).map(|o| body_start + o))
            .min()
            .unwrap_or(summary.len());
        let body_chars = summary[body_start..body_end].chars().count();
        let excess = total + marker_chars - NOTE_MAX_CHARS;
        let keep = body_chars.saturating_sub(excess);
        let cut_at = body_start + byte_at(&summary[body_start..], keep);
        let shortened =
            format!("{}{marker}\n{}", &summary[..cut_at], summary[body_end..].trim_start());
        let shortened = shortened.trim_end().to_owned();
        if shortened.chars().count() <= NOTE_MAX_CHARS {
            return shortened;
        }
        return cut_end(&shortened, &marker);
    }
    cut_end(summary, &marker)
}

fn cut_end(text: &str, marker: &str) -> String {
    let keep = NOTE_MAX_CHARS.saturating_sub(marker.chars().count());
    format!("{}{marker}", &text[..byte_at(text, keep)])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::compaction::note::checkpoint_message;

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
        let text = instruction(Some("the parser\nonly"), false);
        let positions: Vec<usize> =
            HEADINGS.iter().map(|h| text.find(&format!("## {h}\n")).unwrap()).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]));
        assert!(text.contains("12,000 characters"));
        assert!(text.ends_with("Focus the note on: the parser only"));
        let strict = instruction(Some("x"), true);
        assert!(strict.contains(STRICT_ADDENDUM.trim_end()));
        assert!(strict.ends_with("Focus the note on: x"), "the focus stays last");
        assert!(!instruction(Some("  "), false).contains("Focus"));
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
        let capped = cap(&summary);
        assert!(capped.chars().count() <= NOTE_MAX_CHARS);
        assert!(capped.contains(CAP_MARKER));
        assert!(capped.contains("## Next action\nNone"), "earlier sections untouched");
        assert!(capped.find("## Reference").unwrap() < capped.find(CAP_MARKER).unwrap());
        let short = full_summary("a.rs");
        assert_eq!(cap(&short), short.trim());
    }

    #[test]
    fn cap_cuts_the_end_when_reference_is_not_enough() {
        let summary = format!("## Objective\n{}\n## Reference\nr", "é".repeat(20_000));
        let capped = cap(&summary);
        assert_eq!(capped.chars().count(), NOTE_MAX_CHARS);
        assert!(capped.ends_with(CAP_MARKER));
        let no_reference = "word ".repeat(5000);
        assert!(cap(&no_reference).ends_with(CAP_MARKER));
    }

    #[test]
    fn dropping_keeps_pairs_whole_and_never_drops_the_checkpoint() {
        let batch = Message::new(
            Role::Assistant,
            vec![Part::tool_use("a", "shell", json!(1)), Part::tool_use("b", "shell", json!(2))],
        );
        let mut covered = vec![
            checkpoint_message("Codewhale handoff note. Old."),
            batch,
            Message::new(Role::User, vec![Part::tool_result("a", "x")]),
            Message::new(Role::User, vec![Part::tool_result("b", "y")]),
            Message::user("next"),
        ];
        assert!(shrink_for_overflow(&mut covered, Some(1)));
        assert_eq!(covered.len(), 2, "the batch and both results went together");
        assert!(is_checkpoint(&covered[0]));
        assert!(shrink_for_overflow(&mut covered, Some(1)));
        assert!(!shrink_for_overflow(&mut covered, Some(1)));
        assert_eq!(covered.len(), 1);
        let mut chat = vec![
            Message::user("q0"),
            Message::assistant("a0"),
            Message::user("q1"),
            Message::assistant("a1"),
        ];
        assert!(shrink_for_overflow(&mut chat, Some(1)));
        assert_eq!(
            chat,
            vec![Message::user("q1"), Message::assistant("a1")],
            "a question leaves with its answer"
        );
    }

    #[test]
    fn overflow_shrinks_by_the_stated_excess_or_a_quarter() {
        let turns = |n: usize| -> Vec<Message> {
            (0..n)
                .flat_map(|i| [Message::user(format!("q{i}")), Message::assistant("a".repeat(396))])
                .collect()
        };
        let mut covered = turns(20);
        // Each exchange is about 420 transcript bytes: 200 tokens (+10 %) ≈ 880 bytes = 3 of them.
        assert!(shrink_for_overflow(&mut covered, Some(200)));
        assert_eq!(covered.len(), 2 * 17);
        let mut covered = turns(20);
        assert!(shrink_for_overflow(&mut covered, None));
        // 8,390 bytes in all; five exchanges free 2,095, short of a quarter (2,097): six go.
        assert_eq!(covered.len(), 2 * 14, "a quarter of the transcript");
        let mut only_note = vec![checkpoint_message("Codewhale handoff note. x")];
        assert!(!shrink_for_overflow(&mut only_note, Some(10)));
    }

    #[test]
    fn fit_input_drops_oldest_until_it_fits() {
        let covered: Vec<Message> =
            (0..10).map(|i| Message::user(format!("{i}{}", "z".repeat(1000)))).collect();
        let limit = input_bytes(&covered[7..], None, 2 << 20) + 100;
        let kept = fit_input(&covered, None, limit).unwrap();
        assert_eq!(kept.len(), 3);
        assert!(kept[0].texts().next().unwrap().starts_with('7'));
        assert_eq!(fit_input(&covered, None, 10), None);
        assert_eq!(fit_input(&covered, None, usize::MAX).unwrap().len(), 10);
        let t = transcript(&[Message::user("hi")], INPUT_MAX_BYTES);
        assert!(t.starts_with("<conversation>\n[user]\nhi\n"));
    }

    #[test]
    fn fit_input_keeps_the_checkpoint_and_whole_exchanges() {
        let mut covered =
            vec![Message::user("old"), checkpoint_message("Codewhale handoff note. x")];
        for i in 0..50 {
            covered.push(Message::user(format!("q{i} {}", "w".repeat(500))));
            covered.push(Message::assistant(format!("a{i} {}", "v".repeat(500))));
        }
        let limit = input_bytes(&covered[90..], None, 2 << 20) + 400;
        let kept = fit_input(&covered, None, limit).unwrap();
        assert!(is_checkpoint(&kept[0]), "the previous note is never dropped");
        assert!(
            kept[1].texts().next().unwrap().starts_with('q'),
            "an exchange starts at a question"
        );
        assert_eq!(kept.last(), covered.last());
        assert!(input_bytes(&kept, None, limit) <= limit + 1024);
    }

    #[test]
    fn one_huge_message_is_capped_in_the_transcript() {
        let t = transcript(&[Message::user("x".repeat(1_000_000))], INPUT_MAX_BYTES);
        assert!(t.len() < PART_MAX_BYTES + 1024, "{}", t.len());
        let small = transcript(&[Message::user("x".repeat(1_000_000))], 16_000);
        assert!(
            small.len() < 4_000 + 1024,
            "a small input keeps less of one part: {}",
            small.len()
        );
        assert!(t.contains("cut by compaction"));
    }
}
