//! Assistant markdown to styled lines (pulldown-cmark), laid out at a width.
//!
//! Headings and strong text bold, emphasis italic, inline code in a distinct colour, lists
//! with bullets or numbers whose wrapped lines keep the item's indent, block quotes with a
//! bar, links as their text followed by the URL, tables with aligned columns and a rule under
//! the header, and code blocks syntax-highlighted ([`highlight`]) and never wrapped: a code
//! line (or a table row) wider than the screen is cut with a `›` mark, so what is on screen
//! is the code as written (the copy key puts whole blocks on the clipboard). Invariant: no
//! text of the source is lost — unknown constructs fall back to their text. A streaming reply
//! is not re-rendered whole on every delta: [`stream`] renders each finished top-level block
//! once and only the open tail again, with the same result as [`render`] on the whole text.

pub mod highlight;
mod layout;
pub mod stream;
mod table;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

pub use layout::{lines_at, render_at};
pub use stream::StreamedMarkdown;

const CODE: Style = Style::new().fg(Color::Cyan);
const DIM: Style = Style::new().fg(Color::DarkGray);

/// How a logical line goes on screen.
#[derive(Debug, Clone, PartialEq)]
pub enum Flow {
    /// Wrapped at the width; wrapped rows start with `cont` (the item's or quote's indent).
    Prose { cont: Vec<Span<'static>> },
    /// Never wrapped: cut at the width with a mark (code, table rows).
    Clip,
}

/// One logical line: what goes before it (a bullet, a quote bar), its text, and its flow.
#[derive(Debug, Clone, PartialEq)]
pub struct MdLine {
    pub lead: Vec<Span<'static>>,
    pub body: Vec<Span<'static>>,
    pub flow: Flow,
}

impl MdLine {
    fn blank() -> MdLine {
        MdLine { lead: Vec::new(), body: Vec::new(), flow: Flow::Prose { cont: Vec::new() } }
    }

    /// A non-blank line that stands for one rendered before a chunk (never shown).
    fn stand_in() -> MdLine {
        MdLine { lead: Vec::new(), body: vec![Span::raw("·")], flow: Flow::Clip }
    }

    fn is_blank(&self) -> bool {
        self.lead.is_empty() && self.body.iter().all(|s| s.content.is_empty())
    }
}

/// A fenced or indented code block of the source, for the copy picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeBlock {
    pub lang: String,
    pub code: String,
}

/// The parser options every rendering uses (the streaming renderer's block boundaries must
/// come from the same grammar as the lines).
const OPTIONS: Options = Options::ENABLE_STRIKETHROUGH.union(Options::ENABLE_TABLES);

/// Renders `source` to logical lines (laid out by [`render_at`] / [`lines_at`]).
pub fn render(source: &str) -> Vec<MdLine> {
    let mut lines = render_chunk(source, None).lines;
    trim_blank_tail(&mut lines);
    lines
}

/// Drops the blank lines at the end (a reply never ends with empty rows).
fn trim_blank_tail(lines: &mut Vec<MdLine>) {
    while lines.last().is_some_and(MdLine::is_blank) {
        lines.pop();
    }
}

/// A piece of a document rendered on its own (see [`stream`]).
#[derive(Debug)]
pub(crate) struct Chunk {
    pub lines: Vec<MdLine>,
    /// Nothing was left on an open line, so what follows starts a line of its own exactly as
    /// it would in the whole document.
    pub clean: bool,
    /// A fenced block with a language was drawn without colours (the grammars were loading).
    pub plain_code: bool,
}

/// Renders `source` as the continuation of a document whose last line so far is blank
/// (`Some(true)`), not blank (`Some(false)`), or which has none yet (`None`): the only state
/// the renderer carries from one top-level block to the next. Trailing blank lines are kept.
pub(crate) fn render_chunk(source: &str, after: Option<bool>) -> Chunk {
    let mut r = Renderer::default();
    if let Some(blank) = after {
        // A stand-in for the previous line, so `blank()` decides as in the whole document.
        r.lines.push(if blank { MdLine::blank() } else { MdLine::stand_in() });
    }
    for event in Parser::new_ext(source, OPTIONS) {
        r.event(event);
    }
    let clean = r.current.is_empty() && r.lead.is_empty();
    r.flush();
    let mut lines = r.lines;
    if after.is_some() {
        lines.remove(0);
    }
    Chunk { lines, clean, plain_code: r.plain_code }
}

/// The code blocks of `source`, in order.
pub fn code_blocks(source: &str) -> Vec<CodeBlock> {
    let mut out = Vec::new();
    let mut current: Option<CodeBlock> = None;
    for event in Parser::new_ext(source, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(l) => l.into_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                current = Some(CodeBlock { lang, code: String::new() });
            }
            Event::Text(t) => {
                if let Some(block) = current.as_mut() {
                    block.code.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => out.extend(current.take()),
            _ => {}
        }
    }
    out
}

#[derive(Default)]
struct Renderer {
    lines: Vec<MdLine>,
    /// The line being built: its lead and body.
    lead: Vec<Span<'static>>,
    current: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// One entry per open list: the next number for ordered lists.
    lists: Vec<Option<u64>>,
    /// The width of each open item's marker, for its wrapped lines.
    markers: Vec<usize>,
    quote_depth: usize,
    code: Option<(String, String)>,
    link: Option<String>,
    table: Option<table::Table>,
    /// Set when a fenced block with a language was drawn before the grammars loaded.
    plain_code: bool,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles.iter().fold(Style::default(), |acc, s| acc.patch(*s))
    }

    /// What wrapped lines (and lines after the first of an item) start with.
    fn cont(&self) -> Vec<Span<'static>> {
        let mut spans = Vec::new();
        if self.quote_depth > 0 {
            spans.push(Span::styled("│ ".repeat(self.quote_depth), DIM));
        }
        let indent: usize = self.markers.iter().sum();
        if indent > 0 {
            spans.push(Span::raw(" ".repeat(indent)));
        }
        spans
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
                self.start_line();
                self.current.push(Span::styled(part.to_owned(), style));
            }
        }
    }

    fn start_line(&mut self) {
        if self.lead.is_empty() && self.current.is_empty() {
            self.lead = self.cont();
        }
    }

    fn flush(&mut self) {
        if self.current.is_empty() && self.lead.is_empty() {
            return;
        }
        let body = std::mem::take(&mut self.current);
        let lead = std::mem::take(&mut self.lead);
        self.lines.push(MdLine { lead, body, flow: Flow::Prose { cont: self.cont() } });
    }

    fn blank(&mut self) {
        self.flush();
        if self.lines.last().is_some_and(|l| !l.is_blank()) {
            self.lines.push(MdLine::blank());
        }
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some(t) = self.table.as_mut() {
            if t.event(&event, self.styles.iter().fold(Style::default(), |a, s| a.patch(*s))) {
                return;
            }
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match self.code.as_mut() {
                Some((_, code)) => code.push_str(&text),
                None => self.push_text(&text),
            },
            Event::Code(code) => {
                self.start_line();
                self.current.push(Span::styled(code.into_string(), CODE));
            }
            Event::SoftBreak => self.push_text(" "),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.blank();
                self.lines.push(MdLine {
                    lead: Vec::new(),
                    body: vec![Span::styled("─".repeat(20), DIM)],
                    flow: Flow::Clip,
                });
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
                let lang = match kind {
                    CodeBlockKind::Fenced(lang) => lang.into_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.blank();
                } else {
                    self.flush();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let bullet = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let b = format!("{n}. ");
                        *n += 1;
                        b
                    }
                    _ => "• ".to_owned(),
                };
                self.lead = self.cont();
                self.lead.push(Span::raw(bullet.clone()));
                self.markers.push(crate::tui::text_width::width(&bullet));
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
            Tag::Table(aligns) => {
                self.blank();
                self.table = Some(table::Table::new(aligns));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush();
                if self.lists.is_empty() {
                    self.lines.push(MdLine::blank());
                }
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
                self.lines.push(MdLine::blank());
            }
            TagEnd::BlockQuote(_) => {
                self.quote_depth = self.quote_depth.saturating_sub(1);
                self.blank();
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    self.code_lines(&lang, &code);
                }
                self.lines.push(MdLine::blank());
            }
            TagEnd::List(_) => {
                self.lists.pop();
                self.flush();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Item => {
                self.flush();
                self.markers.pop();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    self.current.push(Span::styled(format!(" ({url})"), DIM));
                }
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    let cont = self.cont();
                    for row in t.rows() {
                        self.lines.push(MdLine { lead: cont.clone(), body: row, flow: Flow::Clip });
                    }
                }
                self.blank();
            }
            _ => {}
        }
    }

    /// A code block's lines: highlighted when the grammar is known, never wrapped.
    fn code_lines(&mut self, lang: &str, code: &str) {
        let cont = self.cont();
        if !lang.is_empty() {
            self.lines.push(MdLine {
                lead: cont.clone(),
                body: vec![Span::styled(format!("```{lang}"), DIM)],
                flow: Flow::Clip,
            });
        }
        // Asked before highlighting: grammars that finish loading in between must not leave
        // plain lines marked as coloured.
        self.plain_code |= !lang.is_empty() && !highlight::ready();
        let coloured = highlight::highlight(lang, code);
        for (i, line) in code.lines().enumerate() {
            let body = match coloured.as_ref().and_then(|c| c.get(i)) {
                Some(spans) => spans.clone(),
                None => vec![Span::styled(line.to_owned(), CODE)],
            };
            self.lines.push(MdLine { lead: cont.clone(), body, flow: Flow::Clip });
        }
    }
}

/// The plain text of laid-out lines (for tests and search).
pub fn plain(lines: &[Line<'static>]) -> Vec<String> {
    lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
}

#[cfg(test)]
mod tests;
