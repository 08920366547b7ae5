//! Assistant markdown to styled lines (pulldown-cmark), before wrapping.
//!
//! Deliberately simple: headings and strong text bold, emphasis italic, inline code and code
//! blocks in a distinct colour (code blocks indented and never re-flowed as prose), list items
//! with bullets or numbers, block quotes with a bar, links as their text followed by the URL.
//! Invariant: no text of the source is lost — unknown constructs fall back to their text — so
//! a streaming reply can be re-rendered on every delta without flicker of missing words.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

const CODE: Style = Style::new().fg(Color::Cyan);

/// Renders `source` to logical lines (one per paragraph line; the caller wraps them).
pub fn render(source: &str) -> Vec<Line<'static>> {
    let mut r = Renderer::default();
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES;
    for event in Parser::new_ext(source, options) {
        r.event(event);
    }
    r.flush();
    while r.lines.last().is_some_and(|l| l.spans.is_empty()) {
        r.lines.pop();
    }
    r.lines
}

#[derive(Default)]
struct Renderer {
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// One entry per open list: the next number for ordered lists.
    lists: Vec<Option<u64>>,
    quote_depth: usize,
    in_code_block: bool,
    link: Option<String>,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles.iter().fold(Style::default(), |acc, s| acc.patch(*s))
    }

    fn prefix(&self) -> String {
        let mut p = "│ ".repeat(self.quote_depth);
        p.push_str(&"  ".repeat(self.lists.len().saturating_sub(1)));
        p
    }

    fn push_text(&mut self, text: &str) {
        let style = self.style();
        let mut first = true;
        for part in text.split('\n') {
            if !first {
                self.flush();
            }
            first = false;
            if !part.is_empty() {
                if self.current.is_empty() && self.in_code_block {
                    self.current.push(Span::raw(format!("{}    ", self.prefix())));
                }
                self.current.push(Span::styled(part.to_owned(), style));
            }
        }
    }

    fn start_line(&mut self) {
        if self.current.is_empty() && self.quote_depth > 0 {
            self.current.push(Span::styled(self.prefix(), Style::new().fg(Color::DarkGray)));
        }
    }

    fn flush(&mut self) {
        let spans = std::mem::take(&mut self.current);
        self.lines.push(Line::from(spans));
    }

    fn blank(&mut self) {
        if !self.current.is_empty() {
            self.flush();
        }
        if self.lines.last().is_some_and(|l| !l.spans.is_empty()) {
            self.lines.push(Line::default());
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => {
                self.start_line();
                self.push_text(&text);
            }
            Event::Code(code) => {
                self.start_line();
                self.current.push(Span::styled(code.into_string(), CODE));
            }
            Event::SoftBreak => self.push_text(" "),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.blank();
                self.lines.push(Line::styled("─".repeat(20), Style::new().fg(Color::DarkGray)));
            }
            Event::TaskListMarker(done) => self.push_text(if done { "[x] " } else { "[ ] " }),
            Event::Html(html) | Event::InlineHtml(html) => self.push_text(&html),
            Event::FootnoteReference(name) => self.push_text(&format!("[{name}]")),
            Event::InlineMath(m) | Event::DisplayMath(m) => self.push_text(&m),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {}
            Tag::Heading { level, .. } => {
                self.blank();
                let marks = match level {
                    HeadingLevel::H1 => "# ",
                    HeadingLevel::H2 => "## ",
                    _ => "### ",
                };
                self.styles.push(Style::new().add_modifier(Modifier::BOLD));
                self.push_text(marks);
            }
            Tag::BlockQuote(_) => {
                self.blank();
                self.quote_depth += 1;
            }
            Tag::CodeBlock(kind) => {
                self.blank();
                if let CodeBlockKind::Fenced(lang) = kind {
                    if !lang.is_empty() {
                        let label = format!("{}    {lang}", self.prefix());
                        self.lines.push(Line::styled(label, Style::new().fg(Color::DarkGray)));
                    }
                }
                self.in_code_block = true;
                self.styles.push(CODE);
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.blank();
                } else if !self.current.is_empty() {
                    self.flush();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                if !self.current.is_empty() {
                    self.flush();
                }
                let bullet = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let b = format!("{n}. ");
                        *n += 1;
                        b
                    }
                    _ => "• ".to_owned(),
                };
                let prefix = self.prefix();
                self.current.push(Span::raw(format!("{prefix}{bullet}")));
            }
            Tag::Emphasis => self.styles.push(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => {
                self.styles.push(Style::new().add_modifier(Modifier::CROSSED_OUT))
            }
            Tag::Link { dest_url, .. } => {
                self.styles.push(Style::new().add_modifier(Modifier::UNDERLINED));
                self.link = Some(dest_url.into_string());
            }
            Tag::TableRow | Tag::TableHead if !self.current.is_empty() => self.flush(),
            Tag::TableCell => self.push_text("│ "),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush();
                if self.lists.is_empty() {
                    self.lines.push(Line::default());
                }
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
                self.lines.push(Line::default());
            }
            TagEnd::BlockQuote(_) => {
                self.quote_depth = self.quote_depth.saturating_sub(1);
                self.blank();
            }
            TagEnd::CodeBlock => {
                self.styles.pop();
                self.in_code_block = false;
                if !self.current.is_empty() {
                    self.flush();
                }
                self.lines.push(Line::default());
            }
            TagEnd::List(_) => {
                self.lists.pop();
                if !self.current.is_empty() {
                    self.flush();
                }
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Item if !self.current.is_empty() => self.flush(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    self.current
                        .push(Span::styled(format!(" ({url})"), Style::new().fg(Color::DarkGray)));
                }
            }
            TagEnd::TableHead | TagEnd::TableRow => self.flush(),
            TagEnd::Table => self.blank(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn renders_the_common_constructs() {
        let src = "# Title\n\nSome *text* with `code`.\n\n- one\n- two\n\n1. first\n2. second\n\n```rust\nfn main() {}\n```\n\n> quoted\n\n[link](http://x)";
        let lines = text(&render(src));
        assert_eq!(
            lines,
            [
                "# Title",
                "",
                "Some text with code.",
                "",
                "• one",
                "• two",
                "",
                "1. first",
                "2. second",
                "",
                "    rust",
                "    fn main() {}",
                "",
                "│ quoted",
                "",
                "link (http://x)",
            ]
        );
    }

    #[test]
    fn unfinished_markdown_keeps_its_text() {
        let lines = text(&render("Here is ```rust\nlet x = **bold"));
        let joined = lines.join("\n");
        assert!(joined.contains("let x = "), "{joined}");
        assert!(joined.contains("bold"), "{joined}");
    }
}
