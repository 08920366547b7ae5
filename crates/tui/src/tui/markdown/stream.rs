//! A reply that grows by deltas, rendered at the cost of what changed.
//!
//! The text is cut into top-level blocks (a paragraph, a list, a code fence, a table, a quote).
//! A block is *finished* once the next top-level block has begun on a complete line: CommonMark
//! decides block structure line by line, so nothing appended later can reopen a block that an
//! earlier complete line closed. A finished block is parsed, highlighted and rendered once and
//! laid out once per width; only the open tail — the last block and an unfinished line — is
//! rendered again, and only when the text grew. The height comes from the cached lines.
//!
//! Invariant: [`StreamedMarkdown::lines`] equals [`super::render_at`] on the whole text at
//! every step, at every width. Three things could break that and are handled: the renderer
//! carries one fact from block to block (whether the last line is blank), which each block is
//! rendered with; a block that leaves a line open (an HTML block without a final newline) is
//! kept together with the next one; and a link reference definition, which changes links
//! anywhere in the document, makes the reply render whole from then on (rare in replies).

use std::cell::RefCell;

use pulldown_cmark::{Event, Parser};
use ratatui::text::Line;

use super::{highlight, lines_at, render_chunk, trim_blank_tail, MdLine, OPTIONS};

/// A markdown text that grows at its end, with its rendering cached by block.
#[derive(Debug, Clone, Default)]
pub struct StreamedMarkdown {
    source: String,
    state: RefCell<State>,
}

#[derive(Debug, Clone, Default)]
struct State {
    /// Bytes of the source that `blocks` hold; the rest is the open tail.
    done: usize,
    blocks: Vec<Block>,
    /// The text holds a link reference definition: nothing is committed, the tail is it all.
    whole: bool,
    tail: Option<Tail>,
}

/// A finished top-level block (or a few, when one left a line open).
#[derive(Debug, Clone)]
struct Block {
    start: usize,
    end: usize,
    /// What the line before it was (see [`render_chunk`]); kept to colour it again.
    after: Option<bool>,
    lines: Vec<MdLine>,
    plain_code: bool,
    laid: Option<Laid>,
}

/// The tail as rendered when the source was `len` bytes long.
#[derive(Debug, Clone)]
struct Tail {
    len: usize,
    plain_code: bool,
    lines: Vec<MdLine>,
    laid: Option<Laid>,
}

/// Lines laid out at a width.
#[derive(Debug, Clone)]
struct Laid {
    width: usize,
    lines: Vec<Line<'static>>,
}

impl StreamedMarkdown {
    pub fn new(source: impl Into<String>) -> StreamedMarkdown {
        StreamedMarkdown { source: source.into(), state: RefCell::default() }
    }

    /// The markdown so far.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Appends streamed text; the work waits for the next draw.
    pub fn push_str(&mut self, text: &str) {
        self.source.push_str(text);
    }

    /// The number of rows at `width` columns.
    pub fn height(&self, width: usize) -> usize {
        let width = width.max(1);
        let mut state = self.state.borrow_mut();
        self.sync(&mut state, width);
        let committed: usize = state.blocks.iter().map(|b| laid_len(&b.laid)).sum();
        let tail = state.tail.as_ref().map_or(0, |t| laid_len(&t.laid));
        (committed + tail).saturating_sub(trimmed(&state))
    }

    /// Every row at `width` columns.
    pub fn lines(&self, width: usize) -> Vec<Line<'static>> {
        self.rows(width, 0, usize::MAX)
    }

    /// Rows `skip..skip + take` at `width` columns (only those are copied).
    pub fn rows(&self, width: usize, skip: usize, take: usize) -> Vec<Line<'static>> {
        let width = width.max(1);
        let mut state = self.state.borrow_mut();
        self.sync(&mut state, width);
        let cut = trimmed(&state);
        let state = &*state;
        let committed = state.blocks.iter().filter_map(|b| b.laid.as_ref());
        let all = committed.chain(state.tail.as_ref().and_then(|t| t.laid.as_ref()));
        let total: usize = all.clone().map(|l| l.lines.len()).sum::<usize>() - cut;
        let take = take.min(total.saturating_sub(skip));
        all.flat_map(|l| l.lines.iter()).skip(skip).take(take).cloned().collect()
    }

    /// Brings the cache up to the source and lays it out at `width`.
    fn sync(&self, state: &mut State, width: usize) {
        let ready = highlight::ready();
        if ready {
            for block in state.blocks.iter_mut().filter(|b| b.plain_code) {
                let chunk = render_chunk(&self.source[block.start..block.end], block.after);
                block.lines = chunk.lines;
                block.plain_code = chunk.plain_code;
                block.laid = None;
            }
        }
        if !state.whole {
            self.commit(state);
        }
        let stale = state
            .tail
            .as_ref()
            .is_none_or(|t| t.len != self.source.len() || (ready && t.plain_code));
        if stale {
            let chunk = render_chunk(&self.source[state.done..], last_is_blank(&state.blocks));
            let mut lines = chunk.lines;
            trim_blank_tail(&mut lines);
            state.tail = Some(Tail {
                len: self.source.len(),
                plain_code: chunk.plain_code,
                lines,
                laid: None,
            });
        }
        for block in &mut state.blocks {
            lay_out(&mut block.laid, &block.lines, width);
        }
        if let Some(tail) = state.tail.as_mut() {
            lay_out(&mut tail.laid, &tail.lines, width);
        }
    }

    /// Moves the blocks of the tail that later text can no longer change into `blocks`.
    fn commit(&self, state: &mut State) {
        let region = &self.source[state.done..];
        if region.contains("]:") && has_reference_definition(region) {
            // Links before the definition change: from now on the reply renders whole.
            *state = State { whole: true, ..State::default() };
            return;
        }
        // Only complete lines decide: an unfinished one may still turn into anything.
        let Some(newline) = region.rfind('\n') else { return };
        let complete = &region[..=newline];
        let starts = block_starts(complete);
        let mut begin = 0;
        for &end in starts.iter().skip(1) {
            if end <= begin {
                continue;
            }
            let after = last_is_blank(&state.blocks);
            let chunk = render_chunk(&complete[begin..end], after);
            if !chunk.clean {
                // A line is left open: the next block continues it, so they go together.
                continue;
            }
            state.blocks.push(Block {
                start: state.done + begin,
                end: state.done + end,
                after,
                lines: chunk.lines,
                plain_code: chunk.plain_code,
                laid: None,
            });
            begin = end;
        }
        if begin > 0 {
            state.done += begin;
            state.tail = None;
        }
    }
}

/// The line starts of the top-level blocks of `text`, in order, without repeats.
fn block_starts(text: &str) -> Vec<usize> {
    let mut starts: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    for (event, range) in Parser::new_ext(text, OPTIONS).into_offset_iter() {
        let opens = match event {
            Event::Start(_) => {
                depth += 1;
                depth == 1
            }
            Event::End(_) => {
                depth = depth.saturating_sub(1);
                false
            }
            _ => depth == 0,
        };
        if opens {
            let line = text[..range.start].rfind('\n').map_or(0, |i| i + 1);
            if starts.last().is_none_or(|&last| last < line) {
                starts.push(line);
            }
        }
    }
    starts
}

fn has_reference_definition(text: &str) -> bool {
    Parser::new_ext(text, OPTIONS).reference_definitions().iter().next().is_some()
}

/// Whether the last rendered line of `blocks` is blank; `None` before the first line.
fn last_is_blank(blocks: &[Block]) -> Option<bool> {
    blocks.iter().rev().find_map(|b| b.lines.last()).map(MdLine::is_blank)
}

/// Blank lines at the end of the committed blocks that the whole document would not have:
/// they are trimmed when the tail draws nothing below them.
fn trimmed(state: &State) -> usize {
    if state.tail.as_ref().is_some_and(|t| !t.lines.is_empty()) {
        return 0;
    }
    // A blank logical line is always exactly one row.
    state
        .blocks
        .iter()
        .rev()
        .flat_map(|b| b.lines.iter().rev())
        .take_while(|l| l.is_blank())
        .count()
}

fn lay_out(laid: &mut Option<Laid>, lines: &[MdLine], width: usize) {
    if laid.as_ref().is_none_or(|l| l.width != width) {
        *laid = Some(Laid { width, lines: lines_at(lines, width) });
    }
}

fn laid_len(laid: &Option<Laid>) -> usize {
    laid.as_ref().map_or(0, |l| l.lines.len())
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
