//! The requests of one input plan (docs/compaction.md, *The summary request*): the chunks
//! oldest first, each folding in the interim note the one before wrote, then the final request,
//! which reads the kept tail too and is told where the part to summarize ends.
//!
//! Invariants: only the items some request reads are copied, with the plan's bounds applied (and
//! the tail bounded when another model writes the note); an interim note is capped to the room
//! the plan left for it; progress is told before each request.

use codewhale_journal::{bound_item, Block, ItemContent, View, ViewItem};
use codewhale_provider::CancellationToken;

use super::ask::ask;
use super::job::{Attempt, Progress, SummaryJob, OTHER_MODEL_TAIL_BYTES};
use crate::compaction::checkpoint::is_checkpoint;
use crate::compaction::message;
use crate::compaction::plain::PlainView;
use crate::compaction::summary::{self, Scope, SummaryStats};
use crate::compaction::summary_input::InputPlan;

pub(super) async fn run_plan(
    job: &SummaryJob<'_>,
    plan: &InputPlan,
    note_tokens: u64,
    cancel: CancellationToken,
) -> Result<(String, SummaryStats), Attempt> {
    // Only what some request reads is copied: `items[k]` is the view's `first + k`.
    let first = plan.chunks.first().map_or(plan.final_from, |c| c.start).min(plan.final_from);
    let mut items = bounded_items(job.view, job.plain, plan, first);
    if job.summarizer.other_model {
        for item in items.iter_mut().skip(job.cut.saturating_sub(first)) {
            if let Some(cut) = bound_item(item, OTHER_MODEL_TAIL_BYTES) {
                *item = cut;
            }
        }
    }
    let tokens = &job.plain.tokens;
    let covered = job.cut.min(tokens.len());
    let unread = plan.unread.min(covered);
    let mut stats = SummaryStats {
        unread,
        unread_tokens: tokens[..unread].iter().sum(),
        read_tokens: tokens[unread..covered].iter().sum(),
        ..SummaryStats::default()
    };
    // Three characters per token keeps the note inside the room the plan left for it.
    let chars = usize::try_from(note_tokens.saturating_mul(3)).unwrap_or(usize::MAX);
    let chars = chars.min(job.note_chars);
    // A previous note in the unread part is what the first request folds in.
    let mut interim: Option<String> = job.plain.messages[..unread]
        .iter()
        .find(|m| is_checkpoint(m))
        .and_then(|m| m.content.first())
        .and_then(|part| match part {
            message::Part::Text { text } => Some(summary::cap_to(text, chars)),
            _ => None,
        });
    let of = plan.chunks.len() as u32 + 1;
    for (k, chunk) in plan.chunks.iter().enumerate() {
        if let Some(progress) = job.progress {
            let tokens = tokens[chunk.clone()].iter().sum();
            progress(Progress { request: k as u32 + 1, of, tokens });
        }
        let read = &items[chunk.start - first..chunk.end - first];
        let text = ask(job, interim.as_deref(), read, Scope::Chunk, &cancel, &mut stats).await?;
        stats.chunks += 1;
        interim = Some(summary::cap_to(&text, chars));
    }
    let kept = &items[plan.final_from - first..];
    let scope = match job.cut.checked_sub(plan.final_from) {
        Some(offset) if offset < kept.len() => Scope::Before {
            position: offset + 1 + usize::from(interim.is_some()),
            opening: opening_words(&kept[offset]),
        },
        _ => Scope::All,
    };
    if let Some(progress) = job.progress {
        let tokens = tokens[plan.final_from.min(tokens.len())..].iter().sum();
        progress(Progress { request: of, of, tokens });
    }
    let text = ask(job, interim.as_deref(), kept, scope, &cancel, &mut stats).await?;
    Ok((text, stats))
}

/// The view's items from `first` on (what the plan's requests read; the older ones only the
/// extract covers, never copied), with the plan's bounds applied.
fn bounded_items(view: &View, plain: &PlainView, plan: &InputPlan, first: usize) -> Vec<ViewItem> {
    let mut items = view.items.get(first..).unwrap_or_default().to_vec();
    // The pass's plain view holds the calls' inputs (`PlainView::taking_inputs`).
    plain.restore_inputs(&mut items, first);
    for &(index, max_bytes) in plan.bounds.iter().filter(|(index, _)| *index >= first) {
        let at = index - first;
        if let Some(cut) = items.get(at).and_then(|item| bound_item(item, max_bytes)) {
            items[at] = cut;
        }
    }
    items
}

/// The first words of an item, as the scope quotes them.
fn opening_words(item: &ViewItem) -> String {
    match &item.content {
        ItemContent::ToolResult(r) => {
            let text = r.content.try_str().unwrap_or_default();
            format!("the result of call {}: {}", r.tool_use_id, first_chars(text))
        }
        ItemContent::Blocks(blocks) => {
            let text = blocks.iter().find_map(|b| match b {
                Block::Text(t) if !t.text.trim().is_empty() => Some(first_chars(&t.text)),
                Block::ToolUse(call) => Some(format!("a call of {}", call.name)),
                _ => None,
            });
            text.unwrap_or_default()
        }
    }
}

fn first_chars(text: &str) -> String {
    text.chars().take(120).collect()
}
