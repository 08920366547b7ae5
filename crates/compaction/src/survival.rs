//! The survival contract (docs/survival-contract.md): what a compaction must never lose.
//!
//! [`check`] compares the view before a pass with the view after it and lists every
//! [`Violation`]. The engine runs it before a compaction record is appended (a violation means
//! nothing is written and the old view stays); `codewhale survival-check` runs the very same
//! function over the fixture matrix. It is pure: plain messages in, verdict out.
//!
//! The last round and its protected part are found by [`round::last_round`], the function the
//! cut uses: tool ids and assistant texts are checked in the protected part (and in the two
//! exchanges a long discussion keeps from before its round); plain user texts over the whole
//! last round. Codewhale's own markers ("[… N of M bytes cut; recall entry ID …]") are no
//! one's words: a bound tightened by a later pass may replace them.

use std::collections::HashSet;
use std::fmt;

use super::checkpoint::{is_checkpoint, is_placeholder, note_body};
use super::message::{Message, Part, Role};
use super::round::{self, is_plain_user};

/// What a pass produced and what it must be checked against.
#[derive(Clone, Copy, Debug)]
pub struct SurvivalInput<'a> {
    /// The view before the pass.
    pub original: &'a [Message],
    /// The view after the pass.
    pub replacement: &'a [Message],
    /// Index into `original` where the last round starts; computed (§5.3) when `None`.
    pub last_round_start: Option<usize>,
    /// What a toolless tail is measured against when the round is computed: the messages'
    /// estimates and the kept-tail target. `None`: the count of user turns alone decides.
    pub tail: Option<round::TailMeasure<'a>>,
    /// The anchors text(s) that must appear verbatim somewhere in the replacement.
    pub anchors: &'a [String],
    /// The texts of the branch summaries on the spine, which must appear verbatim too.
    pub branch_summaries: &'a [String],
    /// Summary path: the replacement must hold exactly one checkpoint. A prune-only pass may
    /// have none (but never more than one).
    pub require_checkpoint: bool,
    /// The steps of the live plan (`update_plan`), each of which must appear verbatim in the
    /// replacement: in the note's `## Plan` or in the call itself.
    pub plan_steps: &'a [String],
}

/// One broken rule. [`Violation::rule`] is a stable name (used by the fixture matrix).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    UserTextGone { excerpt: String },
    ToolUseGone { id: String },
    ToolResultGone { id: String },
    AssistantTextGone { excerpt: String },
    AssistantOutputGone,
    OrphanResult { id: String },
    OrphanCall { id: String },
    NoCheckpoint,
    MultipleCheckpoints { count: usize },
    AnchorsMissing { excerpt: String },
    PlanStepMissing { excerpt: String },
    BranchSummaryMissing { excerpt: String },
    PlaceholderNote,
}

impl Violation {
    /// The rule's stable name.
    pub fn rule(&self) -> &'static str {
        match self {
            Violation::UserTextGone { .. } => "user_text",
            Violation::ToolUseGone { .. } => "tool_use",
            Violation::ToolResultGone { .. } => "tool_result",
            Violation::AssistantTextGone { .. } => "assistant_text",
            Violation::AssistantOutputGone => "assistant_output",
            Violation::OrphanResult { .. } => "orphan_result",
            Violation::OrphanCall { .. } => "orphan_call",
            Violation::NoCheckpoint => "no_checkpoint",
            Violation::MultipleCheckpoints { .. } => "multiple_checkpoints",
            Violation::AnchorsMissing { .. } => "anchors",
            Violation::PlanStepMissing { .. } => "plan",
            Violation::BranchSummaryMissing { .. } => "branch_summary",
            Violation::PlaceholderNote => "placeholder",
        }
    }

    /// `count` violations of this one's rule, said once with this one's detail.
    fn grouped(&self, count: usize) -> String {
        match self {
            Violation::UserTextGone { excerpt } => {
                format!("{count} last-round user texts would be gone (the first: {excerpt:?})")
            }
            Violation::ToolUseGone { id } => {
                format!("{count} last-round tool calls would be gone ({id} among them)")
            }
            Violation::ToolResultGone { id } => {
                format!(
                    "the results of {count} last-round tool calls would be gone ({id} among them)"
                )
            }
            Violation::AssistantTextGone { excerpt } => {
                format!("{count} last-round assistant texts would be gone (the first: {excerpt:?})")
            }
            Violation::OrphanResult { id } => {
                format!("the new view holds {count} results without their calls ({id} among them)")
            }
            Violation::OrphanCall { id } => {
                format!("the new view holds {count} calls without their results ({id} among them)")
            }
            Violation::AnchorsMissing { excerpt } => {
                format!("{count} anchors texts are not present verbatim (the first: {excerpt:?})")
            }
            Violation::PlanStepMissing { excerpt } => {
                format!("{count} steps of the live plan are not present verbatim (the first: {excerpt:?})")
            }
            Violation::BranchSummaryMissing { excerpt } => format!(
                "{count} branch summaries are not present verbatim (the first: {excerpt:?})"
            ),
            other => other.to_string(),
        }
    }

    /// Every rule name, in the order of docs/survival-contract.md.
    pub const RULES: [&'static str; 13] = [
        "user_text",
        "tool_result",
        "tool_use",
        "assistant_text",
        "assistant_output",
        "orphan_result",
        "orphan_call",
        "no_checkpoint",
        "multiple_checkpoints",
        "anchors",
        "plan",
        "branch_summary",
        "placeholder",
    ];
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::UserTextGone { excerpt } => {
                write!(f, "a last-round user text is gone: {excerpt:?}")
            }
            Violation::ToolUseGone { id } => write!(f, "last-round tool call {id} is gone"),
            Violation::ToolResultGone { id } => {
                write!(f, "the result of last-round tool call {id} is gone")
            }
            Violation::AssistantTextGone { excerpt } => {
                write!(f, "a last-round assistant text is gone: {excerpt:?}")
            }
            Violation::AssistantOutputGone => {
                f.write_str("the last round had assistant output and the new view has none")
            }
            Violation::OrphanResult { id } => {
                write!(f, "the new view holds a result for call {id} but not the call before it")
            }
            Violation::OrphanCall { id } => {
                write!(f, "the new view holds call {id} but not its result")
            }
            Violation::NoCheckpoint => f.write_str("the new view has no checkpoint"),
            Violation::MultipleCheckpoints { count } => {
                write!(f, "the new view has {count} checkpoints; exactly one is allowed")
            }
            Violation::AnchorsMissing { excerpt } => {
                write!(f, "the anchors text is not present verbatim: {excerpt:?}")
            }
            Violation::PlanStepMissing { excerpt } => {
                write!(f, "a step of the live plan is not present verbatim: {excerpt:?}")
            }
            Violation::BranchSummaryMissing { excerpt } => {
                write!(f, "a branch summary is not present verbatim: {excerpt:?}")
            }
            Violation::PlaceholderNote => f.write_str("the checkpoint note is a placeholder"),
        }
    }
}

fn excerpt(text: &str) -> String {
    const MAX: usize = 60;
    let mut out: String = text.chars().take(MAX).collect();
    if text.chars().count() > MAX {
        out.push('…');
    }
    out
}

/// Checks `input` and returns every violation (empty when the replacement is acceptable).
pub fn check(input: &SurvivalInput<'_>) -> Vec<Violation> {
    let original = input.original;
    let new = input.replacement;
    let round = match input.last_round_start {
        Some(start) => round::Round::starting_at(original, start),
        None => round::last_round(original, input.tail).unwrap_or_default(),
    };
    let round_start = round.start.min(original.len());
    let mut out = Vec::new();

    let kept_user = Kept::new(
        new.iter().filter(|m| m.role == Role::User && !is_checkpoint(m)).flat_map(Message::texts),
    );
    for message in original[round_start..].iter().filter(|m| is_plain_user(m)) {
        for text in words(message) {
            if !kept_user.holds(text) {
                out.push(Violation::UserTextGone { excerpt: excerpt(text) });
            }
        }
    }

    let new_assistant: Vec<&Message> =
        new.iter().filter(|m| m.role == Role::Assistant && !is_checkpoint(m)).collect();
    let new_calls: HashSet<&str> = new_assistant.iter().flat_map(|m| m.tool_use_ids()).collect();
    let new_results: HashSet<&str> = new.iter().flat_map(Message::tool_result_ids).collect();
    let kept_assistant = Kept::new(new_assistant.iter().flat_map(|m| m.texts()));
    let protected = original.iter().enumerate().filter(|(i, _)| round.protects(*i));
    for (_, message) in protected {
        if message.role == Role::Assistant {
            for id in message.tool_use_ids().filter(|id| !new_calls.contains(id)) {
                out.push(Violation::ToolUseGone { id: id.to_owned() });
            }
            for text in words(message) {
                if !kept_assistant.holds(text) {
                    out.push(Violation::AssistantTextGone { excerpt: excerpt(text) });
                }
            }
        }
        for id in message.tool_result_ids().filter(|id| !new_results.contains(id)) {
            out.push(Violation::ToolResultGone { id: id.to_owned() });
        }
    }

    let had_output =
        original[round_start..].iter().any(|m| m.role == Role::Assistant && has_output(m));
    if had_output && !new_assistant.iter().any(|m| has_output(m)) {
        out.push(Violation::AssistantOutputGone);
    }

    check_pairs(original, new, &mut out);
    check_checkpoints(input, &mut out);
    out
}

/// The texts of one role in the new view, and the rule by which an original text is kept: an
/// exact copy, or a prefix either way (a bounded message keeps a prefix of its text; a text may
/// also have grown, as a streamed reply does). Exact copies are found by hash, so checking a
/// long round costs one lookup per text.
struct Kept<'a> {
    exact: HashSet<&'a str>,
    texts: Vec<&'a str>,
}

impl<'a> Kept<'a> {
    fn new(texts: impl Iterator<Item = &'a str>) -> Kept<'a> {
        let texts: Vec<&str> = texts.collect();
        Kept { exact: texts.iter().copied().collect(), texts }
    }

    fn holds(&self, text: &str) -> bool {
        self.exact.contains(text)
            || self
                .texts
                .iter()
                .any(|c| !c.trim().is_empty() && (text.starts_with(c) || c.starts_with(text)))
    }
}

/// The texts of `message` that are someone's words: not blank, not a compaction marker.
fn words(message: &Message) -> impl Iterator<Item = &str> {
    message.texts().filter(|t| !t.trim().is_empty() && !is_compaction_marker(t))
}

/// Whether `text` is the marker a bound leaves after a message's prefix (docs/compaction.md,
/// *Room is always found*): Codewhale's words, which a tighter bound replaces with its own.
pub fn is_compaction_marker(text: &str) -> bool {
    codewhale_journal::cut::is_marker(text) && text.contains("; recall entry ")
}

/// The violations as one sentence that names each broken part once ("the survival contract
/// refused it: …" follows it): what would be lost, how many, and the first excerpt.
pub fn describe(violations: &[Violation]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for rule in Violation::RULES {
        let of_rule: Vec<&Violation> = violations.iter().filter(|v| v.rule() == rule).collect();
        let Some(first) = of_rule.first() else { continue };
        parts.push(match of_rule.len() {
            1 => first.to_string(),
            n => first.grouped(n),
        });
    }
    match parts.len() {
        0 => String::new(),
        1 => parts.remove(0),
        _ => {
            let last = parts.pop().unwrap_or_default();
            format!("{}, and {last}", parts.join(", "))
        }
    }
}

/// Output is anything but blank text: a text, a call, a thought.
fn has_output(message: &Message) -> bool {
    message.content.iter().any(|p| p.as_text().is_none_or(|t| !t.trim().is_empty()))
}

/// Every result follows its call; every call has its result, unless it was already waiting
/// for one in the original (a pending call at the end of the round).
fn check_pairs(original: &[Message], new: &[Message], out: &mut Vec<Violation>) {
    let originally_answered: HashSet<&str> =
        original.iter().flat_map(Message::tool_result_ids).collect();
    let mut seen_calls: HashSet<&str> = HashSet::new();
    let mut answered: HashSet<&str> = HashSet::new();
    for message in new {
        if message.role == Role::Assistant {
            seen_calls.extend(message.tool_use_ids());
        }
        for id in message.tool_result_ids() {
            if seen_calls.contains(id) {
                answered.insert(id);
            } else {
                out.push(Violation::OrphanResult { id: id.to_owned() });
            }
        }
    }
    let mut calls: Vec<&str> = new
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(Message::tool_use_ids)
        .filter(|id| !answered.contains(id) && originally_answered.contains(id))
        .collect();
    calls.dedup();
    out.extend(calls.into_iter().map(|id| Violation::OrphanCall { id: id.to_owned() }));
}

fn check_checkpoints(input: &SurvivalInput<'_>, out: &mut Vec<Violation>) {
    let checkpoints: Vec<&Message> =
        input.replacement.iter().filter(|m| is_checkpoint(m)).collect();
    match checkpoints.len() {
        0 if input.require_checkpoint => out.push(Violation::NoCheckpoint),
        0 | 1 => {}
        count => out.push(Violation::MultipleCheckpoints { count }),
    }
    if checkpoints.iter().any(|m| m.texts().next().is_none_or(|t| is_placeholder(note_body(t)))) {
        out.push(Violation::PlaceholderNote);
    }
    for anchors in input.anchors.iter().map(|a| a.trim()).filter(|a| !a.is_empty()) {
        if !carries(input.replacement, anchors) {
            out.push(Violation::AnchorsMissing { excerpt: excerpt(anchors) });
        }
    }
    for step in super::plan_steps::carried(input.replacement, input.plan_steps) {
        out.push(Violation::PlanStepMissing { excerpt: excerpt(&step) });
    }
    for summary in input.branch_summaries.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        if !carries(input.replacement, summary) {
            out.push(Violation::BranchSummaryMissing { excerpt: excerpt(summary) });
        }
    }
}

/// Whether some text block or tool result of `messages` holds `text` (trimmed) verbatim. Text
/// blocks are searched first (anchors live in the checkpoint and in anchor entries); tool
/// output, which may still be in the session file, only when they do not hold it.
pub fn carries(messages: &[Message], text: &str) -> bool {
    let needle = text.trim();
    let parts = || messages.iter().flat_map(|m| &m.content);
    parts().any(|p| matches!(p, Part::Text { text } if text.contains(needle)))
        || parts()
            .any(|p| matches!(p, Part::ToolResult { content, .. } if content.contains(needle)))
}
