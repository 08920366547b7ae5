//! One summary request (docs/compaction.md, *The summary request*): built as the live request
//! (system prompt, tools, the items, a cache breakpoint on the last) with the instruction after
//! it, sent, and its reply judged.
//!
//! Invariants: a reply that calls a tool or is unusable gets one retry, with the stricter
//! instruction and tool calls forbidden, never more; every reply is timed and paid for whether it
//! is used or not; a rejection as too long comes back with the request's o200k estimate, so the
//! caller never sends the same request again.

use codewhale_journal::{Block, EntryId, ItemContent, ItemKind, Role, View, ViewItem};
use codewhale_provider::{CancellationToken, ErrorKind, Request, ToolChoice};

use super::job::{Attempt, SummaryError, SummaryJob};
use crate::compaction::summary::{self, Scope, SummaryStats};
use crate::convert;
use crate::session::counts;

/// One request of the plan: the interim note so far (if any), `items`, the instruction. One
/// retry when the answer is unusable.
pub(super) async fn ask(
    job: &SummaryJob<'_>,
    interim: Option<&str>,
    items: &[ViewItem],
    scope: Scope,
    cancel: &CancellationToken,
    stats: &mut SummaryStats,
) -> Result<String, Attempt> {
    let mut strict = false;
    loop {
        let request = build_request(job, interim, items, &scope, strict);
        stats.requests += 1;
        let sent = std::time::Instant::now();
        match job.summarizer.client.complete(&request, cancel.clone()).await {
            Ok(response) => {
                job.summarizer.clock.record(&job.summarizer.model, sent.elapsed());
                // Paid for whether it is used or not.
                if let Some(usage) = &response.usage {
                    job.summarizer.spend.add(usage, job.summarizer.price.as_ref());
                }
                let issue = if response.tool_uses().next().is_some() {
                    "the reply called a tool instead of writing the note".to_owned()
                } else {
                    let text = response.text();
                    match summary::judge(&text) {
                        Ok(()) => return Ok(text),
                        Err(issue) => issue.to_string(),
                    }
                };
                if strict {
                    return Err(Attempt::Stop(SummaryError::Unusable(format!(
                        "the summary was unusable twice ({issue})"
                    ))));
                }
                tracing::info!(%issue, "unusable summary, retrying with a stricter instruction and no tools");
                strict = true;
            }
            Err(failure) if failure.error.is_context_overflow() => {
                let limit = match failure.error.kind {
                    ErrorKind::ContextOverflow { limit, .. } => limit,
                    _ => None,
                };
                let estimate = request_estimate(job, &request);
                return Err(Attempt::Overflow { limit, estimate });
            }
            Err(failure) if failure.error.kind == ErrorKind::Cancelled => {
                return Err(Attempt::Stop(SummaryError::Cancelled))
            }
            Err(failure) => {
                return Err(Attempt::Stop(SummaryError::Failed(format!(
                    "the summary request failed: {}",
                    failure.error
                ))))
            }
        }
    }
}

/// The o200k estimate of a summary request as sent: the system prompt with the tool schemas,
/// and every text, call and result of its messages.
fn request_estimate(job: &SummaryJob<'_>, request: &Request) -> u64 {
    let messages: u64 = request
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .map(|block| {
            let text = match block {
                codewhale_provider::Block::Text { text, .. } => text.clone(),
                codewhale_provider::Block::ToolUse { name, input, .. } => format!("{name} {input}"),
                codewhale_provider::Block::ToolResult { content, .. } => content.to_string(),
                _ => String::new(),
            };
            u64::from(counts::exact(&text))
        })
        .sum();
    job.summarizer.system_tokens + messages
}

/// The request: the live request's system prompt and tools, the interim note, `items`, a cache
/// breakpoint on the last of them, then the instruction as a message of its own.
fn build_request(
    job: &SummaryJob<'_>,
    interim: Option<&str>,
    items: &[ViewItem],
    scope: &Scope,
    strict: bool,
) -> Request {
    let mut all: Vec<ViewItem> = Vec::with_capacity(items.len() + 1);
    if let Some(note) = interim {
        all.push(synthetic(format!(
            "Codewhale interim note of the earlier part of this conversation:\n\n{note}"
        )));
    }
    all.extend(items.iter().cloned());
    if job.summarizer.lean {
        all = crate::compaction::lean::flatten(all);
    }
    let mut request = convert::to_request(
        &View { head: EntryId::from_string("summary"), items: all, compaction: None },
        convert::RequestParams {
            model: &job.summarizer.model,
            system: &job.summarizer.system,
            tools: job.summarizer.tools.clone(),
            max_output_tokens: job.max_output,
            // The summarizer reads each image as its one line: the note names them.
            images: convert::Images::Describe,
        },
    );
    if let Some(last) = request.messages.last_mut() {
        last.cache_breakpoint = true;
    }
    let instruction = summary::instruction(scope, job.focus, strict, job.note_chars);
    request.messages.push(codewhale_provider::Message::user_text(instruction));
    if strict {
        request.tool_choice = ToolChoice::None;
    }
    request
}

fn synthetic(text: String) -> ViewItem {
    ViewItem {
        source: EntryId::from_string("interim-note"),
        role: Role::User,
        kind: ItemKind::Synthetic,
        content: ItemContent::Blocks(vec![Block::text(text)]),
        tokens: None,
        shortened: None,
    }
}
