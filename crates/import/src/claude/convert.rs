//! Pass 2 for Claude Code: one planned line → [`Event`]s.
//!
//! - `user`: a string is one text; an array gives its `tool_result`s (in order) and then one
//!   user message of its text, with images and documents replaced by a placeholder;
//!   `isMeta` lines (harness-injected text) are counted, not imported, and so are the
//!   harness's interruption markers and slash-command lines in the user role; an `isCompactSummary`
//!   line is the summary of the `compact_boundary` before it.
//! - `assistant`: its blocks, grouped by `message.id` (Claude Code writes one line per block);
//!   blocks of unknown types (`redacted_thinking`, server tools) are kept byte-for-byte; API
//!   error notices (`isApiErrorMessage`, model `<synthetic>`) are counted, not imported.
//! - `system` `compact_boundary`: remembered for its summary; other chain lines are counted.

use serde::Deserialize;
use serde_json::Value;

use codewhale_journal::{Block, Trigger, Usage};

use crate::assemble::{AssistantPart, Event, SummaryPart};
use crate::convert::{image_placeholder, inline_image, parse_ts, result_text, Ts};
use crate::report::Report;

#[derive(Deserialize)]
struct Line {
    #[serde(rename = "type")]
    ty: Option<Value>,
    subtype: Option<Value>,
    message: Option<Message>,
    #[serde(rename = "isMeta")]
    is_meta: Option<Value>,
    #[serde(rename = "isCompactSummary")]
    compact_summary: Option<Value>,
    #[serde(rename = "isApiErrorMessage")]
    api_error: Option<Value>,
    #[serde(rename = "compactMetadata")]
    compact: Option<Value>,
    timestamp: Option<Value>,
}

#[derive(Deserialize)]
struct Message {
    id: Option<Value>,
    model: Option<Value>,
    content: Option<Value>,
    stop_reason: Option<Value>,
    usage: Option<Value>,
}

/// Pass-2 state: the boundary whose summary comes next.
#[derive(Debug, Default)]
pub(crate) struct Converter {
    boundary: Option<(Trigger, Option<u64>)>,
    ts: Ts,
}

fn is_true(v: &Option<Value>) -> bool {
    matches!(v, Some(Value::Bool(true)))
}

fn str_of(v: &Option<Value>) -> Option<&str> {
    v.as_ref().and_then(Value::as_str)
}

impl Converter {
    /// The events of one planned line.
    pub fn line(&mut self, bytes: &[u8], report: &mut Report, out: &mut Vec<Event>) {
        let Ok(line) = serde_json::from_slice::<Line>(bytes) else {
            report.unused("unreadable line (not a JSON object of the expected shape)");
            return;
        };
        let ts = self.ts.next(parse_ts(str_of(&line.timestamp)));
        match str_of(&line.ty).unwrap_or_default() {
            "user" if is_true(&line.compact_summary) => {
                let text = line.message.and_then(|m| m.content).map(|c| plain_text(&c));
                let (trigger, tokens_before) = self.boundary.take().unwrap_or_default();
                out.push(Event::Summary(SummaryPart {
                    text: text.unwrap_or_default(),
                    ts,
                    trigger,
                    tokens_before,
                    retained_texts: Vec::new(),
                }));
            }
            "user" if is_true(&line.is_meta) => {
                report.unused("harness-injected user text (isMeta)");
            }
            "user" => match line.message.and_then(|m| m.content) {
                Some(content) => user(content, ts, report, out),
                None => report.unused("user line without a message"),
            },
            "assistant" => {
                let Some(message) = line.message else {
                    report.unused("assistant line without a message");
                    return;
                };
                let model = str_of(&message.model).map(str::to_owned);
                if is_true(&line.api_error) || model.as_deref() == Some("<synthetic>") {
                    report.unused("API error or notice written by Claude Code, not the model");
                    return;
                }
                let blocks = match message.content {
                    Some(Value::Array(items)) => items
                        .into_iter()
                        .filter_map(|item| {
                            let block = assistant_block(item);
                            if block.is_none() {
                                report.unused("assistant block that is empty or unreadable");
                            }
                            block
                        })
                        .collect(),
                    Some(Value::String(text)) if !text.is_empty() => vec![Block::text(text)],
                    _ => Vec::new(),
                };
                out.push(Event::Assistant(AssistantPart {
                    group: str_of(&message.id).map(str::to_owned),
                    blocks,
                    model,
                    stop_reason: str_of(&message.stop_reason).map(str::to_owned),
                    usage: message.usage.as_ref().map(usage),
                    ts,
                }));
            }
            "system" if str_of(&line.subtype) == Some("compact_boundary") => {
                let meta = line.compact.unwrap_or(Value::Null);
                let trigger = match meta.get("trigger").and_then(Value::as_str) {
                    Some("manual") => Trigger::Manual,
                    _ => Trigger::Auto,
                };
                self.boundary = Some((trigger, meta.get("preTokens").and_then(Value::as_u64)));
            }
            "system" => report
                .unused(format!("system line ({})", str_of(&line.subtype).unwrap_or("no subtype"))),
            other => report.unused(format!("{} line", super::label(other))),
        }
    }
}

/// The text of a summary's content (a string, or text blocks).
fn plain_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn user(
    content: Value,
    ts: codewhale_journal::Timestamp,
    report: &mut Report,
    out: &mut Vec<Event>,
) {
    let items = match content {
        Value::String(text) => {
            match harness_text(&text) {
                Some(reason) => report.unused(reason),
                None => out.push(Event::User { blocks: vec![Block::text(text)], ts }),
            }
            return;
        }
        Value::Array(items) => items,
        _ => {
            report.unused("user line whose content is neither text nor blocks");
            return;
        }
    };
    let mut blocks = Vec::new();
    for item in items {
        match item.get("type").and_then(Value::as_str) {
            Some("tool_result") => {
                let call_id = item.get("tool_use_id").and_then(Value::as_str).unwrap_or_default();
                let is_error = item.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                let content = result_text(item.get("content"), report);
                out.push(Event::Result { call_id: call_id.to_owned(), content, is_error, ts });
            }
            Some("text") => {
                if let Some(text) = item.get("text").and_then(Value::as_str) {
                    match harness_text(text) {
                        Some(reason) => report.unused(reason),
                        None => blocks.push(Block::text(text)),
                    }
                }
            }
            Some(kind @ ("image" | "document")) => {
                let source = item.get("source");
                let field = |k: &str| source.and_then(|s| s.get(k)).and_then(Value::as_str);
                let media = field("media_type").unwrap_or(kind);
                let inline = (kind == "image" && field("type") == Some("base64"))
                    .then(|| inline_image(media, field("data").unwrap_or_default()))
                    .flatten();
                match inline {
                    Some(block) => {
                        report.images_imported += 1;
                        blocks.push(block);
                    }
                    None => blocks.push(Block::text(image_placeholder(kind, media, report))),
                }
            }
            _ => match Block::opaque(&item.to_string()) {
                Ok(block) => blocks.push(block),
                Err(_) => report.unused("user content block that is not an object"),
            },
        }
    }
    if !blocks.is_empty() {
        out.push(Event::User { blocks, ts });
    }
}

/// Why `text` is not the user's words but a line Claude Code's harness wrote in the user
/// role: an interruption marker, or a slash command and its local output. Such text is left
/// out (and counted): the model would read it as something the user said.
fn harness_text(text: &str) -> Option<&'static str> {
    let t = text.trim_start();
    if t.starts_with("[Request interrupted by user") {
        return Some("interruption marker written by Claude Code");
    }
    const COMMAND_TAGS: [&str; 5] = [
        "<command-name>",
        "<command-message>",
        "<local-command-stdout>",
        "<local-command-stderr>",
        "<local-command-caveat>",
    ];
    COMMAND_TAGS
        .iter()
        .any(|tag| t.starts_with(tag))
        .then_some("slash command or its local output, written by Claude Code")
}

fn assistant_block(item: Value) -> Option<Block> {
    let json = item.to_string();
    match item.get("type").and_then(Value::as_str) {
        Some("text") if item.get("text").and_then(Value::as_str).is_some_and(str::is_empty) => None,
        Some("text" | "tool_use" | "thinking") => serde_json::from_str::<Block>(&json).ok(),
        Some(_) => Block::opaque(&json).ok(),
        None => None,
    }
}

fn usage(v: &Value) -> Usage {
    let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: n("input_tokens"),
        output_tokens: n("output_tokens"),
        cache_read_tokens: n("cache_read_input_tokens"),
        cache_write_tokens: n("cache_creation_input_tokens"),
        ..Default::default()
    }
}
