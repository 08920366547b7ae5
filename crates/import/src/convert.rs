//! Small conversions both sources share: timestamps, tool output text, image placeholders.

use chrono::DateTime;
use serde_json::Value;

use codewhale_journal::{Block, Timestamp};

use crate::report::Report;

/// A source timestamp, when it is RFC 3339.
pub(crate) fn parse_ts(s: Option<&str>) -> Option<Timestamp> {
    let t = DateTime::parse_from_rfc3339(s?).ok()?;
    Some(Timestamp::from_datetime(t.with_timezone(&chrono::Utc)))
}

/// The time each entry gets: the line's own, else the last one seen, else now.
#[derive(Debug, Default)]
pub(crate) struct Ts {
    last: Option<Timestamp>,
}

impl Ts {
    pub fn next(&mut self, parsed: Option<Timestamp>) -> Timestamp {
        let ts = parsed.or(self.last).unwrap_or_else(Timestamp::now);
        self.last = Some(ts);
        ts
    }
}

/// A user message's image with its bytes inline, as `{"type":"image","source":{"type":
/// "base64","media_type","data"}}`: the shape the caller stores in the session's blob store
/// (this crate writes nothing). `None` when the image carries no bytes (a URL source).
pub(crate) fn inline_image(media: &str, data: &str) -> Option<Block> {
    if data.is_empty() {
        return None;
    }
    let json = serde_json::json!({
        "type": "image",
        "source": {"type": "base64", "media_type": media, "data": data},
    });
    Block::opaque(&json.to_string()).ok()
}

/// The media type and base64 data of a `data:` URL.
pub(crate) fn data_url_parts(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let media = meta.strip_suffix(";base64")?;
    Some((media, data))
}

/// The text an image or document becomes where its bytes cannot be carried (a tool output, a
/// document, an image given by URL).
pub(crate) fn image_placeholder(kind: &str, media: &str, report: &mut Report) -> String {
    report.images_replaced += 1;
    format!("[{kind} ({media}) not imported: Codewhale sends text only]")
}

/// A tool output as text: a string as is; text items joined by newlines, images replaced by a
/// placeholder, other items as their JSON; null as empty.
pub(crate) fn result_text(content: Option<&Value>, report: &mut Report) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => {
            let mut parts = Vec::with_capacity(items.len());
            for item in items {
                let ty = item.get("type").and_then(Value::as_str).unwrap_or_default();
                match ty {
                    "text" | "input_text" | "output_text" => parts.push(
                        item.get("text").and_then(Value::as_str).unwrap_or_default().to_owned(),
                    ),
                    "image" | "input_image" => {
                        let data_url = item.get("image_url").and_then(Value::as_str);
                        let media = item
                            .get("source")
                            .and_then(|s| s.get("media_type"))
                            .and_then(Value::as_str)
                            .or_else(|| data_url.and_then(media_of_data_url))
                            .unwrap_or("image");
                        parts.push(image_placeholder("image", media, report));
                    }
                    "tool_reference" => parts.push(format!(
                        "[tool reference: {}]",
                        item.get("tool_name").and_then(Value::as_str).unwrap_or_default()
                    )),
                    _ => parts.push(item.to_string()),
                }
            }
            parts.join("\n")
        }
        Some(Value::Object(map)) => match map.get("content") {
            Some(inner) => result_text(Some(inner), report),
            None => Value::Object(map.clone()).to_string(),
        },
        Some(other) => other.to_string(),
    }
}

/// The media type of a `data:` URL (`data:image/png;base64,...`).
pub(crate) fn media_of_data_url(url: &str) -> Option<&str> {
    url.strip_prefix("data:")?.split([';', ',']).next().filter(|m| !m.is_empty())
}
