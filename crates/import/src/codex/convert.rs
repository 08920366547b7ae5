//! Pass 2 for Codex: one planned line → [`Event`]s.
//!
//! `response_item`s carry the conversation: user and assistant messages, `function_call` /
//! `custom_tool_call` / `local_shell_call` (paired with their outputs by `call_id`), and web
//! searches (kept as a line of assistant text: they have no output to pair). Items of one
//! response arrive as separate lines; the assembler joins them until a result arrives.
//! `reasoning` is encrypted for OpenAI only and carries no signature: counted as dropped
//! thinking. `compacted` is Codex's own summary. `event_msg` lines repeat the response items
//! for the UI and are counted, not imported.

use serde_json::{Map, Value};

use codewhale_journal::{Block, Timestamp, Trigger};

use crate::assemble::{AssistantPart, Event, SummaryPart};
use crate::convert::{image_placeholder, parse_ts, result_text, Ts};
use crate::report::{thinking_reason, Report};

use super::is_injected;

/// Pass-2 state: the model of the latest `turn_context`.
#[derive(Debug, Default)]
pub(crate) struct Converter {
    model: Option<String>,
    ts: Ts,
}

fn s<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

impl Converter {
    /// The events of one planned line.
    pub fn line(&mut self, bytes: &[u8], report: &mut Report, out: &mut Vec<Event>) {
        let Ok(Value::Object(mut line)) = serde_json::from_slice::<Value>(bytes) else {
            report.unused("unreadable line (not a JSON object)");
            return;
        };
        let ts = self.ts.next(parse_ts(line.get("timestamp").and_then(Value::as_str)));
        let (outer, payload) = match line.remove("payload") {
            Some(payload) => {
                (line.get("type").and_then(Value::as_str).unwrap_or("").to_owned(), payload)
            }
            None if line.contains_key("record_type") => {
                report.unused("state line (record_type)");
                return;
            }
            None if line.contains_key("type") => ("response_item".to_owned(), Value::Object(line)),
            None => ("session_meta".to_owned(), Value::Object(line)),
        };
        match outer.as_str() {
            "session_meta" => {}
            "turn_context" => {
                if let Some(model) = s(&payload, "model") {
                    self.model = Some(model.to_owned());
                }
            }
            "response_item" => self.item(&payload, ts, report, out),
            "compacted" => out.push(Event::Summary(summary(&payload, ts))),
            "event_msg" => match s(&payload, "type") {
                Some("thread_rolled_back" | "undo_completed") => {}
                kind => report.unused(format!(
                    "event_msg ({}): a UI event; the response items carry the conversation",
                    kind.unwrap_or("no type")
                )),
            },
            other => report.unused(format!("{} line", crate::claude::label(other))),
        }
    }

    fn part(&self, blocks: Vec<Block>, ts: Timestamp) -> Event {
        Event::Assistant(AssistantPart {
            blocks,
            model: self.model.clone(),
            ts,
            ..Default::default()
        })
    }

    fn item(&mut self, item: &Value, ts: Timestamp, report: &mut Report, out: &mut Vec<Event>) {
        let ty = s(item, "type").unwrap_or_default();
        match ty {
            "message" => match s(item, "role") {
                Some("user") => {
                    let blocks = content_blocks(item.get("content"), report);
                    let first = blocks.iter().find_map(Block::as_text).unwrap_or_default();
                    if is_injected(first) {
                        report.unused("context Codex injected in the user role");
                    } else if blocks.is_empty() {
                        report.unused("user message with no content");
                    } else {
                        out.push(Event::User { blocks, ts });
                    }
                }
                Some("assistant") => {
                    let blocks = content_blocks(item.get("content"), report);
                    out.push(self.part(blocks, ts));
                }
                role => report.unused(format!(
                    "{} message (instructions Codex sends, not conversation)",
                    role.unwrap_or("no role")
                )),
            },
            "reasoning" => report.drop_thinking(thinking_reason::ENCRYPTED_REASONING),
            "function_call" | "custom_tool_call" | "local_shell_call" => {
                let Some(call_id) = s(item, "call_id").filter(|c| !c.is_empty()) else {
                    report.unused(format!("{ty} without a call_id"));
                    return;
                };
                let (name, input) = match ty {
                    "function_call" => {
                        let args = s(item, "arguments").unwrap_or("{}");
                        let input = match serde_json::from_str::<Value>(args) {
                            Ok(v @ Value::Object(_)) => v,
                            Ok(v) => wrap("arguments", v),
                            Err(_) => wrap("arguments", Value::String(args.to_owned())),
                        };
                        (s(item, "name").unwrap_or("function"), input)
                    }
                    "custom_tool_call" => (
                        s(item, "name").unwrap_or("custom_tool"),
                        wrap("input", item.get("input").cloned().unwrap_or(Value::Null)),
                    ),
                    _ => ("local_shell", item.get("action").cloned().unwrap_or(Value::Null)),
                };
                out.push(self.part(vec![Block::tool_use(call_id, name, input)], ts));
            }
            "function_call_output" | "custom_tool_call_output" => {
                let call_id = s(item, "call_id").unwrap_or_default().to_owned();
                let output = item.get("output");
                let is_error = output
                    .and_then(|o| o.get("success"))
                    .and_then(Value::as_bool)
                    .is_some_and(|ok| !ok);
                let content = result_text(output, report);
                out.push(Event::Result { call_id, content, is_error, ts });
            }
            "web_search_call" => {
                let action = item.get("action").unwrap_or(&Value::Null);
                let what = s(action, "query")
                    .or_else(|| s(action, "url"))
                    .map(str::to_owned)
                    .unwrap_or_else(|| action.to_string());
                out.push(self.part(vec![Block::text(format!("[Searched the web: {what}]"))], ts));
            }
            "compaction" | "compaction_summary" => {
                report.unused("encrypted compaction item (readable by OpenAI only)")
            }
            other => report.unused(format!("response_item ({})", crate::claude::label(other))),
        }
    }
}

fn wrap(key: &str, v: Value) -> Value {
    let mut map = Map::new();
    map.insert(key.to_owned(), v);
    Value::Object(map)
}

/// The blocks of a message's content items.
fn content_blocks(content: Option<&Value>, report: &mut Report) -> Vec<Block> {
    match content {
        Some(Value::String(text)) if !text.is_empty() => vec![Block::text(text.clone())],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|item| match s(item, "type") {
                Some("input_image") => {
                    let url = s(item, "image_url").unwrap_or_default();
                    let inline = crate::convert::data_url_parts(url)
                        .and_then(|(media, data)| crate::convert::inline_image(media, data));
                    if let Some(block) = inline {
                        report.images_imported += 1;
                        return Some(block);
                    }
                    let media = crate::convert::media_of_data_url(url).unwrap_or("image");
                    Some(Block::text(image_placeholder("image", media, report)))
                }
                _ => s(item, "text").filter(|t| !t.is_empty()).map(Block::text),
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn summary(payload: &Value, ts: Timestamp) -> SummaryPart {
    let history = payload.get("replacement_history").and_then(Value::as_array);
    let user_texts: Vec<String> = history
        .into_iter()
        .flatten()
        .filter(|item| s(item, "type") == Some("message") && s(item, "role") == Some("user"))
        .map(|item| {
            let mut ignored = Report::new(crate::report::Tool::Codex);
            content_blocks(item.get("content"), &mut ignored)
                .iter()
                .filter_map(Block::as_text)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .filter(|t| !t.is_empty() && !is_injected(t))
        .collect();
    let mut text = s(payload, "message").unwrap_or_default().to_owned();
    let mut retained_texts = user_texts;
    if text.trim().is_empty() {
        // No message: Codex put the summary in the history, as its last user message.
        text = retained_texts.pop().unwrap_or_default();
    }
    SummaryPart { text, ts, trigger: Trigger::Auto, tokens_before: None, retained_texts }
}
