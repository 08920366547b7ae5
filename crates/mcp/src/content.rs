//! A tool result from an MCP server → the text the model reads.
//!
//! Text blocks are kept as they are; an embedded text resource keeps its text under its URI;
//! images, audio and binary resources become a one-line description (neither provider takes
//! binary content in a tool result the way MCP sends it, and base64 would only burn tokens);
//! structured content is added as JSON when there is no text block. Invariant: the
//! result is never empty, so the model always reads something.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// The model-readable text of `result` and whether the server marked it as an error.
pub fn to_text(result: &CallToolResult) -> (String, bool) {
    let mut parts: Vec<String> = Vec::new();
    for block in &result.content {
        parts.push(describe(block));
    }
    // Servers that return structured content also put it in a text block (the protocol asks
    // them to); it is added only when there is no text to read.
    let has_text = result.content.iter().any(|b| matches!(b, ContentBlock::Text(_)));
    if let Some(structured) = result.structured_content.as_ref().filter(|_| !has_text) {
        parts.push(serde_json::to_string_pretty(structured).unwrap_or_default());
    }
    let is_error = result.is_error.unwrap_or(false);
    let text = parts.join("\n");
    let text = if text.trim().is_empty() {
        if is_error {
            "the tool failed without saying why".to_owned()
        } else {
            "(the tool returned no content)".to_owned()
        }
    } else {
        text
    };
    (text, is_error)
}

fn describe(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => {
            format!("[image: {}, {} — not shown to the model]", i.mime_type, size(&i.data))
        }
        ContentBlock::Audio(a) => {
            format!("[audio: {}, {} — not shown to the model]", a.mime_type, size(&a.data))
        }
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => format!(
                "[resource {uri}: {}, {} of binary data — not shown to the model]",
                mime_type.as_deref().unwrap_or("unknown type"),
                size(blob)
            ),
            _ => "[a resource of a kind Codewhale cannot show]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link: {} {}]", link.name, link.uri),
        _ => "[content of a kind Codewhale cannot show]".to_owned(),
    }
}

/// The decoded size of base64 `data`, in words.
fn size(data: &str) -> String {
    let bytes = data.len() / 4 * 3;
    if bytes >= 1024 {
        format!("about {} KiB", bytes / 1024)
    } else {
        format!("about {bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{CallToolResult, ContentBlock};
    use serde_json::json;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_images_and_structured_content_become_text() {
        let r = result(json!({"content": [
            {"type": "image", "data": "aGVsbG8gd29ybGQh", "mimeType": "image/png"}
        ], "structuredContent": {"temperature": 22}}));
        let (text, is_error) = to_text(&r);
        assert!(!is_error);
        assert!(text.starts_with("[image: image/png, about 12 bytes"), "{text}");
        assert!(text.contains("\"temperature\": 22"), "{text}");
    }

    #[test]
    fn structured_content_already_in_the_text_is_not_repeated() {
        let r = result(json!({"content": [{"type": "text", "text": "3"}],
            "structuredContent": {"result": 3}}));
        assert_eq!(to_text(&r).0, "3");
    }

    #[test]
    fn errors_and_empty_results_still_say_something() {
        let r = result(json!({"content": [], "isError": true}));
        assert_eq!(to_text(&r), ("the tool failed without saying why".into(), true));
        let r = CallToolResult::success(vec![ContentBlock::text("")]);
        assert_eq!(to_text(&r).0, "(the tool returned no content)");
    }
}
