//! The conversation as the user saw it, written out: what `/export` copies or writes and what
//! `codewhale export` prints (docs/commands.md, docs/cli.md). One builder for both, over the
//! engine's [`Transcript`] (HEAD's branch, oldest first, covered turns included, each
//! compaction where it happened), so the file and the screen say the same things in the same
//! words: a tool call is the line its folded cell shows, a compaction is its capsule's line
//! with the note under it.
//!
//! Markdown: messages under `## You` / `## Assistant`, each tool call folded to one line with
//! how it ended, the user's own `!CMD` with its output, compaction capsules as quotes holding
//! their notes, notices and `/btw` side questions as quotes. JSON: one object `{session, model,
//! messages}` whose messages are `{role, text}` (a side question: role `side`, with its
//! `question`), `{tool, input, result}` or `{compaction, note}` (fields are only ever added). Reasoning the model showed is left out of both, as the transcript folds it.

use codewhale_protocol::{HistoryItem, ImageInfo, NoticeLevel, Transcript};
use serde_json::{json, Value};

use crate::tui::page_cells::{compaction_summary, tool_cell};

/// How the conversation is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Json,
}

/// The conversation in `format`, ending with a newline.
pub fn render(t: &Transcript, format: Format) -> String {
    match format {
        Format::Markdown => markdown(t),
        Format::Json => format!("{}\n", json(t)),
    }
}

/// How many messages (user and assistant turns, not tool calls or notices) `t` holds: what a
/// front end says it exported.
pub fn message_count(t: &Transcript) -> usize {
    t.items
        .iter()
        .filter(|i| match i {
            HistoryItem::User { .. } => true,
            HistoryItem::Assistant { text, .. } => !text.trim().is_empty(),
            _ => false,
        })
        .count()
}

/// The conversation as Markdown.
pub fn markdown(t: &Transcript) -> String {
    let mut page = Page {
        out: format!("# Codewhale session {}\n\nModel: {}\n", t.session, code_span(&t.model)),
        speaker: None,
        last_note: None,
    };
    for item in &t.items {
        page.item(item);
    }
    page.out
}

/// The Markdown being written, with what the next item's text depends on.
struct Page<'a> {
    out: String,
    /// The speaker named last: the speaker is named once for a run of items of one side.
    speaker: Option<&'static str>,
    /// The note of the last compaction written.
    last_note: Option<&'a str>,
}

impl<'a> Page<'a> {
    /// Names `who` unless the run of items before was theirs.
    fn said(&mut self, who: &'static str) {
        if self.speaker != Some(who) {
            self.out.push_str(&format!("\n## {who}\n"));
            self.speaker = Some(who);
        }
    }

    /// One item of the conversation, as its cell shows it.
    fn item(&mut self, item: &'a HistoryItem) {
        match item {
            HistoryItem::User { text, images, .. } => self.user(text, images),
            HistoryItem::Assistant { text, .. } if !text.trim().is_empty() => {
                self.said("Assistant");
                self.out.push_str(&format!("\n{}\n", text.trim_end()));
            }
            HistoryItem::Assistant { .. } => {}
            HistoryItem::Anchor { text, .. } => {
                self.said("You");
                self.out
                    .push_str(&format!("\n{}\n", quote(&format!("⚑ pinned: {}", text.trim_end()))));
            }
            HistoryItem::AnchorWithdrawn { text, .. } => {
                let first = text.lines().next().unwrap_or_default();
                self.out
                    .push_str(&format!("\n{}\n", quote(&format!("· anchor withdrawn: {first}"))));
            }
            HistoryItem::Tool { .. } => {
                self.said("Assistant");
                if let Some(cell) = tool_cell(item) {
                    self.out.push_str(&format!("\n{}\n", code_span(&cell.folded_line())));
                }
            }
            HistoryItem::UserShell { command, output, exit_code, .. } => {
                self.user_shell(command, output, *exit_code)
            }
            HistoryItem::Compaction { note, .. } => self.compaction(item, note),
            HistoryItem::BranchSummary { summary, .. } => {
                let text =
                    format!("⎇ what was tried on a branch you left\n\n{}", summary.trim_end());
                self.aside(&text);
            }
            HistoryItem::Side { question, answer, .. } => {
                let text = format!(
                    "? /btw {}\n\n{}\n\n(a side question: not in the conversation)",
                    question.trim_end(),
                    answer.trim_end()
                );
                self.aside(&text);
            }
            HistoryItem::Notice { text, level, .. } => {
                let mark = match level {
                    NoticeLevel::Info => "·",
                    NoticeLevel::Warning => "!",
                    NoticeLevel::Error => "✗",
                };
                self.out
                    .push_str(&format!("\n{}\n", quote(&format!("{mark} {}", text.trim_end()))));
            }
        }
    }

    /// A message of the user's, under its own heading, with the images it carried.
    fn user(&mut self, text: &str, images: &[ImageInfo]) {
        self.speaker = None;
        self.said("You");
        self.out.push_str(&format!("\n{}\n", text.trim_end()));
        for image in images {
            self.out.push_str(&format!("\n▣ {}\n", crate::figures::image(image)));
        }
    }

    /// The user's own `!CMD`: the command, how it ended unless it succeeded, and its output.
    fn user_shell(&mut self, command: &str, output: &str, exit_code: Option<i32>) {
        self.said("You");
        let ended = match exit_code {
            Some(0) | None => String::new(),
            Some(code) => format!(" (exit code {code})"),
        };
        self.out.push_str(&format!("\n{}{ended}\n", code_span(&format!("! {command}"))));
        if !output.trim().is_empty() {
            self.out.push_str(&format!("\n{}\n", fenced(&crate::tui::ansi::strip(output))));
        }
    }

    /// A compaction: its capsule's line, and its note unless the record before had it.
    fn compaction(&mut self, item: &HistoryItem, note: &'a str) {
        let Some(summary) = compaction_summary(item) else { return };
        let mut text = format!("**{}**", summary.headline());
        // A prune-only record carries the note before it forward: said once.
        if self.last_note != Some(note) && !note.trim().is_empty() {
            text.push_str(&format!("\n\n{}", note.trim_end()));
        }
        self.last_note = Some(note);
        self.aside(&text);
    }

    /// A quote that belongs to neither side: the next item names its speaker again.
    fn aside(&mut self, text: &str) {
        self.out.push_str(&format!("\n{}\n", quote(text)));
        self.speaker = None;
    }
}

/// The conversation as one JSON object (module docs).
pub fn json(t: &Transcript) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    for item in &t.items {
        let mut m = match item {
            HistoryItem::User { text, images, .. } => {
                let mut m = json!({"role": "user", "text": text});
                if !images.is_empty() {
                    m["images"] = json!(images);
                }
                m
            }
            HistoryItem::Assistant { text, .. } if !text.trim().is_empty() => {
                json!({"role": "assistant", "text": text})
            }
            HistoryItem::Assistant { .. } => continue,
            HistoryItem::Anchor { text, .. } => {
                json!({"role": "user", "text": text, "anchor": true})
            }
            HistoryItem::AnchorWithdrawn { text, .. } => {
                json!({"role": "notice", "text": format!("anchor withdrawn: {text}"), "level": "info"})
            }
            HistoryItem::Tool { name, input, result, .. } => {
                let mut m = json!({
                    "tool": name,
                    "input": input,
                    "result": result.as_ref().map(|r| r.output.as_str()),
                });
                if let Some(r) = result {
                    m["end"] = json!(r.end);
                    m["is_error"] = json!(r.is_error);
                    if let Some(code) = r.exit_code {
                        m["exit_code"] = json!(code);
                    }
                }
                m
            }
            HistoryItem::UserShell { command, output, exit_code, .. } => {
                let mut m = json!({"tool": "!", "input": {"command": command}, "result": output});
                if let Some(code) = exit_code {
                    m["exit_code"] = json!(code);
                }
                m
            }
            HistoryItem::Compaction { note, .. } => {
                let Some(summary) = compaction_summary(item) else { continue };
                let headline = summary.headline();
                let line = headline.trim_start_matches("⇣ ");
                json!({
                    "compaction": line,
                    "note": note,
                    "id": summary.id,
                    "trigger": summary.trigger,
                    "path": summary.path,
                    "covered": summary.covered,
                    "tokens_before": summary.tokens_before,
                    "tokens_after": summary.tokens_after,
                })
            }
            HistoryItem::BranchSummary { summary, .. } => {
                json!({"role": "user", "text": summary, "branch_summary": true})
            }
            HistoryItem::Side { question, answer, model, .. } => {
                json!({"role": "side", "text": answer, "question": question, "model": model})
            }
            HistoryItem::Notice { text, level, .. } => {
                json!({"role": "notice", "text": text, "level": level})
            }
        };
        if covered(item) {
            m["covered"] = json!(true);
        }
        messages.push(m);
    }
    json!({"session": t.session, "model": t.model, "messages": messages})
}

/// Whether the active compaction covers `item` (the model reads it only through the note).
fn covered(item: &HistoryItem) -> bool {
    match item {
        HistoryItem::User { covered, .. }
        | HistoryItem::Assistant { covered, .. }
        | HistoryItem::Anchor { covered, .. }
        | HistoryItem::AnchorWithdrawn { covered, .. }
        | HistoryItem::Tool { covered, .. }
        | HistoryItem::UserShell { covered, .. }
        | HistoryItem::BranchSummary { covered, .. } => *covered,
        HistoryItem::Compaction { .. } | HistoryItem::Notice { .. } | HistoryItem::Side { .. } => {
            false
        }
    }
}

/// `text` as an inline code span, fenced with more backticks than it holds in a row (and
/// padded when it starts or ends with one), on one line.
fn code_span(text: &str) -> String {
    let text = text.replace('\n', " ⏎ ");
    let fence = "`".repeat(longest_run(&text, '`') + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// `text` as a fenced code block whose fence no line of it can close.
fn fenced(text: &str) -> String {
    let fence = "`".repeat((longest_run(text, '`') + 1).max(3));
    format!("{fence}\n{}\n{fence}", text.trim_end_matches('\n'))
}

/// `text` as a block quote, blank lines included.
fn quote(text: &str) -> String {
    text.lines()
        .map(|l| if l.is_empty() { ">".to_owned() } else { format!("> {l}") })
        .collect::<Vec<_>>()
        .join("\n")
}

fn longest_run(text: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for ch in text.chars() {
        run = if ch == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

#[cfg(test)]
mod tests {
    use codewhale_protocol::{CallEnd, CompactionKind, CompactionTrigger, ToolOutcome};

    use super::*;

    fn sample() -> Transcript {
        let outcome = |output: &str, end, code| ToolOutcome {
            is_error: end != CallEnd::Completed,
            output: output.into(),
            end,
            exit_code: code,
            exit_code_in_output: code.is_some(),
            reason: None,
        };
        Transcript {
            session: "0193c0de-0000-7000-8000-000000000001".into(),
            model: "gpt-test".into(),
            items: vec![
                HistoryItem::User {
                    id: "u1".into(),
                    text: "list the files".into(),
                    covered: true,
                    images: Vec::new(),
                },
                HistoryItem::Tool {
                    id: "a1".into(),
                    call_id: "c1".into(),
                    name: "shell".into(),
                    input: json!({"command": "ls `pwd`"}),
                    result: Some(outcome(
                        "Cargo.toml\nsrc\n[exit code: 0]",
                        CallEnd::Completed,
                        Some(0),
                    )),
                    covered: true,
                },
                HistoryItem::Assistant {
                    id: "a2".into(),
                    text: "Two entries.".into(),
                    thinking: "counting".into(),
                    covered: true,
                },
                HistoryItem::Compaction {
                    id: "k1".into(),
                    trigger: CompactionTrigger::Manual,
                    path: CompactionKind::Summary,
                    covered_entries: 4,
                    retained: 1,
                    tokens_before: 9_000,
                    tokens_after: 1_200,
                    note: "## Objective\nList the files.".into(),
                    background: false,
                },
                HistoryItem::UserShell {
                    id: "u2".into(),
                    command: "cat ```x".into(),
                    output: "a\n```\nb\n".into(),
                    end: CallEnd::Failed,
                    exit_code: Some(1),
                    covered: false,
                },
                HistoryItem::Notice {
                    id: "n1".into(),
                    text: "model switched to gpt-5".into(),
                    level: NoticeLevel::Info,
                },
            ],
        }
    }

    #[test]
    fn markdown_folds_tool_calls_to_their_line_and_quotes_the_note() {
        let md = markdown(&sample());
        assert!(md.starts_with("# Codewhale session 0193c0de-0000-7000-8000-000000000001\n"));
        assert!(md.contains("## You\n\nlist the files\n"), "{md}");
        assert!(md.contains("\n``✓ shell command=ls `pwd` · 3 lines``\n"), "{md}");
        assert!(
            md.contains("## Assistant\n\n``✓ shell"),
            "one heading for the call and reply: {md}"
        );
        assert!(md.contains("\nTwo entries.\n") && !md.contains("counting"), "{md}");
        assert!(
            md.contains("> **⇣ compacted 4 messages · 9k → 1.2k tokens (manual)**\n>\n> ## Objective\n> List the files."),
            "{md}"
        );
        // The user's own command: its output in a fence no line of it closes.
        assert!(md.contains("````! cat ```x```` (exit code 1)"), "{md}");
        assert!(md.contains("````\na\n```\nb\n````"), "{md}");
        assert!(md.ends_with("> · model switched to gpt-5\n"), "{md}");
    }

    #[test]
    fn json_is_one_object_of_messages_tools_and_compactions_in_order() {
        let v = json(&sample());
        assert_eq!(v["session"], "0193c0de-0000-7000-8000-000000000001");
        assert_eq!(v["model"], "gpt-test");
        let m = v["messages"].as_array().unwrap();
        assert_eq!(m[0], json!({"role": "user", "text": "list the files", "covered": true}));
        assert_eq!(m[1]["tool"], "shell");
        assert_eq!(m[1]["input"], json!({"command": "ls `pwd`"}));
        assert_eq!(m[1]["result"], "Cargo.toml\nsrc\n[exit code: 0]");
        assert_eq!(m[2]["role"], "assistant");
        assert_eq!(m[3]["compaction"], "compacted 4 messages · 9k → 1.2k tokens (manual)");
        assert_eq!(m[3]["note"], "## Objective\nList the files.");
        assert_eq!((m[4]["tool"].as_str(), m[4]["exit_code"].as_i64()), (Some("!"), Some(1)));
        assert_eq!(m[5]["role"], "notice");
        assert_eq!(message_count(&sample()), 2);
        assert!(render(&sample(), Format::Json).ends_with("}\n"));
    }
}
