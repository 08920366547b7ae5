//! An HTML page as Markdown for the model: `htmd` (turndown's rules over html5ever, the
//! parser browsers specify), with what a reader of the page never sees left out — scripts,
//! styles, templates, inline images' vector drawings, frames — and the page's title put first.
//!
//! Invariants: never crashes on any input. The converter walks the document recursively, so a
//! page nested deeper than [`MAX_DEPTH`] tags (a few megabytes of `<div>` cannot be, the body is
//! bounded, but a page of 1 MiB of unclosed tags can) is turned into its text by
//! [`plain_text`] instead, and the conversion runs on a thread of its own with a large stack.

use std::sync::OnceLock;

/// Open tags deeper than this make a page plain text rather than Markdown.
const MAX_DEPTH: usize = 512;

/// The converter's thread stack: far more than [`MAX_DEPTH`] levels need.
const STACK_BYTES: usize = 256 << 20;

/// Elements whose content a reader never sees as text.
const HIDDEN: [&str; 11] = [
    "head", "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object",
    "embed", "math",
];

/// Elements that never hold content (and need no closing tag).
const VOID: [&str; 14] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "param",
];

/// `html` as Markdown, its title first (module docs).
pub async fn to_markdown(html: String) -> String {
    let work = move || {
        let title = title(&html);
        let body = if depth(&html) > MAX_DEPTH { None } else { convert(&html) };
        let body = body.unwrap_or_else(|| plain_text(&html));
        let body = tidy(&body);
        match title.filter(|t| !body.contains(t.as_str())) {
            Some(title) => format!("# {title}\n\n{body}"),
            None => body,
        }
    };
    let converted = tokio::task::spawn_blocking(move || {
        std::thread::Builder::new()
            .name("web-fetch-markdown".into())
            .stack_size(STACK_BYTES)
            .spawn(work)
            .ok()
            .and_then(|t| t.join().ok())
    })
    .await;
    converted.ok().flatten().unwrap_or_default()
}

/// The conversion proper; `None` when the converter fails.
fn convert(html: &str) -> Option<String> {
    let converter = htmd::HtmlToMarkdown::builder().skip_tags(HIDDEN.to_vec()).build();
    converter.convert(html).ok()
}

/// The text of the page's `<title>`, whitespace collapsed.
fn title(html: &str) -> Option<String> {
    static TITLE: OnceLock<Option<regex::Regex>> = OnceLock::new();
    let re = TITLE
        .get_or_init(|| regex::Regex::new(r"(?is)<title[^>]*>(.*?)</title\s*>").ok())
        .as_ref()?;
    let raw = re.captures(html)?.get(1)?.as_str();
    let text = decode_entities(&raw.split_whitespace().collect::<Vec<_>>().join(" "));
    (!text.is_empty()).then_some(text)
}

/// An upper bound of how deep the page's elements nest, from its tags alone: each start tag
/// that is not void or self-closed opens a level, each end tag closes one; comments and the
/// raw text of scripts and styles are passed over.
pub(super) fn depth(html: &str) -> usize {
    let bytes = html.as_bytes();
    let (mut depth, mut max) = (0usize, 0usize);
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'<', &bytes[i..]) {
        let at = i + off;
        let rest = &html[at + 1..];
        if rest.starts_with("!--") {
            i = rest.find("-->").map_or(bytes.len(), |e| at + 1 + e + 3);
            continue;
        }
        if let Some(tail) = rest.strip_prefix('/') {
            if tail.starts_with(|c: char| c.is_ascii_alphabetic()) {
                depth = depth.saturating_sub(1);
            }
            i = at + 1;
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect::<String>()
            .to_ascii_lowercase();
        if name.is_empty() {
            i = at + 1;
            continue;
        }
        let end = rest.find('>').map_or(rest.len(), |e| e);
        let self_closed = rest[..end].ends_with('/');
        if !VOID.contains(&name.as_str()) && !self_closed {
            depth += 1;
            max = max.max(depth);
        }
        i = at + 1 + end;
        if matches!(name.as_str(), "script" | "style") {
            // Raw text up to its end tag: no tags inside count.
            let close = format!("</{name}");
            let lower = html[i..].to_ascii_lowercase();
            i = lower.find(&close).map_or(bytes.len(), |e| i + e);
        }
        if i >= bytes.len() {
            break;
        }
    }
    max
}

/// The page's text without its markup: what a page too deeply nested to convert becomes.
pub(super) fn plain_text(html: &str) -> String {
    static HIDDEN_BLOCKS: OnceLock<Option<regex::Regex>> = OnceLock::new();
    static TAGS: OnceLock<Option<regex::Regex>> = OnceLock::new();
    let hidden = HIDDEN_BLOCKS.get_or_init(|| {
        regex::Regex::new(r"(?is)<(script|style|head|template|svg)\b.*?</(script|style|head|template|svg)\s*>|<!--.*?-->").ok()
    });
    let tags = TAGS.get_or_init(|| regex::Regex::new(r"(?s)<[^>]*>").ok());
    let mut text = html.to_owned();
    if let Some(re) = hidden {
        text = re.replace_all(&text, " ").into_owned();
    }
    if let Some(re) = tags {
        text = re.replace_all(&text, "\n").into_owned();
    }
    decode_entities(&text)
}

/// The few character references a page's text is full of.
fn decode_entities(text: &str) -> String {
    text.replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Trailing spaces off, runs of blank lines down to one, the ends trimmed.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn scripts_styles_and_the_head_are_left_out() {
        let page = r#"<!doctype html><html><head><title>The  Guide</title>
            <style>body { color: red }</style><script>var secret = "SCRIPTTEXT";</script></head>
            <body><h1>Install</h1><p>Run <code>cargo add x</code> and see
            <a href="https://docs.rs/x">the docs</a>.</p><script>alert("INLINE")</script>
            <ul><li>one</li><li>two</li></ul><noscript>NOSCRIPT</noscript></body></html>"#;
        let md = to_markdown(page.to_owned()).await;
        assert!(md.starts_with("# The Guide\n\n# Install"), "{md}");
        assert!(md.contains("Run `cargo add x` and see [the docs](https://docs.rs/x)."), "{md}");
        assert!(md.contains("*   one") || md.contains("* one"), "{md}");
        for hidden in ["SCRIPTTEXT", "INLINE", "color: red", "NOSCRIPT"] {
            assert!(!md.contains(hidden), "{hidden} in {md}");
        }
    }

    #[tokio::test]
    async fn a_page_nested_past_the_bound_becomes_its_text() {
        let page = format!("<p>deep</p>{}<b>bottom</b>", "<div>".repeat(100_000));
        assert!(depth(&page) > MAX_DEPTH);
        let md = to_markdown(page).await;
        assert!(md.contains("deep") && md.contains("bottom"), "{md}");
        assert!(!md.contains('<'), "{md}");
    }

    #[test]
    fn depth_counts_open_tags_only() {
        assert_eq!(depth("<div><p>a</p><br><img src=x><p/>b</div>"), 2);
        assert_eq!(depth("<!-- <div><div> --><script>if (a<b) {'<div>'}</script><i>x</i>"), 1);
        assert_eq!(depth("plain text < and > signs"), 0);
    }
}
