//! The transcript: committed cells, at most one active streaming cell, the per-width height
//! cache, scrolling and viewport drawing.
//!
//! Invariants: committed cells are never changed except to fold/unfold them (which drops their
//! cached height); only the active cell changes while a reply streams. A frame draws only the
//! cells that intersect the viewport, so its cost depends on the screen, not on the length of
//! the conversation; finding them sums cached heights (one integer per cell) and never wraps
//! text outside the viewport. Scrolling is an offset from the bottom; 0 means "follow the tail",
//! which is where new output keeps the view while streaming.
//!
//! This file holds the state and the cells' life (push, stream, commit, cut); the focus and
//! folding are in `transcript/folding.rs`, the viewport (scrolling, heights, drawing) in
//! `transcript/viewport.rs`, the search in `transcript/search.rs`.

use std::cell::{Cell as StdCell, RefCell};

use ratatui::text::Line;

use super::cells::{AssistantCell, Cell, ThinkingCell};
use super::markdown::highlight;

mod folding;
mod search;
mod viewport;

/// A cell with its cached height (`(width, height)` of the last measurement) and, once it was
/// drawn, its lines at that width (so a frame never lays out a long reply again). Lines drawn
/// before the code-block colours loaded are drawn once more when they have.
#[derive(Debug)]
struct Slot {
    cell: Box<dyn Cell>,
    height: StdCell<Option<(u16, usize)>>,
    drawn: RefCell<Option<Drawn>>,
}

/// A cell's lines at a width, and whether the code-block colours were loaded when drawn.
#[derive(Debug)]
struct Drawn {
    width: u16,
    coloured: bool,
    lines: Vec<Line<'static>>,
}

impl Slot {
    fn new(cell: Box<dyn Cell>) -> Slot {
        Slot { cell, height: StdCell::new(None), drawn: RefCell::new(None) }
    }

    /// The cell changed: forget what was measured and drawn.
    fn changed(&self) {
        self.height.set(None);
        self.drawn.replace(None);
    }

    /// Rows `skip..skip + take` of the cell at `width`.
    fn rows(&self, width: u16, skip: usize, take: usize) -> Vec<Line<'static>> {
        let mut drawn = self.drawn.borrow_mut();
        let coloured = highlight::ready();
        let stale = match &*drawn {
            Some(d) => d.width != width || (coloured && !d.coloured),
            None => true,
        };
        if stale {
            *drawn = Some(Drawn { width, coloured, lines: self.cell.lines(width) });
        }
        drawn
            .as_ref()
            .map_or_else(Vec::new, |d| d.lines.iter().skip(skip).take(take).cloned().collect())
    }

    fn height(&self, width: u16) -> usize {
        match self.height.get() {
            Some((w, h)) if w == width => h,
            _ => {
                let h = self.cell.height(width);
                self.height.set(Some((width, h)));
                h
            }
        }
    }
}

/// The list of cells and the scroll position.
#[derive(Debug, Default)]
pub struct Transcript {
    committed: Vec<Slot>,
    active: Option<AssistantCell>,
    /// Reasoning streaming before the reply (committed before the reply starts).
    thinking: Option<ThinkingCell>,
    /// The cell Ctrl+O and Ctrl+T act on, chosen with Alt+↑/↓; `None` means the last one.
    focus: Option<usize>,
    /// The current search match, drawn with a marker.
    highlight: Option<usize>,
    /// The active cell's height, dropped on every delta (it is measured at most once per
    /// change and width, not on every frame).
    active_height: StdCell<Option<(u16, usize)>>,
    /// Rows scrolled up from the bottom; 0 follows the tail.
    scroll_up: StdCell<usize>,
    /// The total height at the last draw, so that output arriving while the user reads
    /// older rows does not move them: the offset grows by what was added below.
    last_total: StdCell<Option<(u16, usize)>>,
    /// How many cell heights were computed (not read from the cache), for tests of the cache.
    measured: StdCell<usize>,
    expanded: bool,
}

impl Transcript {
    /// Appends a finished cell (the active reply, if any, is committed first so order holds).
    pub fn push(&mut self, cell: impl Cell + 'static) {
        self.commit_active();
        self.committed.push(Slot::new(Box::new(cell)));
    }

    /// Adds a cell that belongs to no reply — a notice, a command's output. A reply being
    /// streamed stays one cell: the new cell goes above it and the reply goes on below.
    pub fn push_beside(&mut self, cell: impl Cell + 'static) {
        self.committed.push(Slot::new(Box::new(cell)));
    }

    /// Puts a finished cell before the last committed one: an entry the engine journaled just
    /// before the message the user sent, which is already shown.
    pub fn insert_before_last(&mut self, cell: impl Cell + 'static) {
        let at = self.committed.len().saturating_sub(1);
        self.committed.insert(at, Slot::new(Box::new(cell)));
    }

    /// Adds streamed reasoning (shown folded, before the reply it leads to).
    pub fn push_thinking(&mut self, text: &str) {
        self.thinking.get_or_insert_with(ThinkingCell::default).text.push_str(text);
    }

    fn commit_thinking(&mut self) {
        if let Some(cell) = self.thinking.take().filter(|c| !c.text.trim().is_empty()) {
            self.committed.push(Slot::new(Box::new(cell)));
        }
    }

    /// Puts the cells of `earlier` before everything shown so far (a resumed session's
    /// history, which arrives after the start-up notices).
    pub fn prepend(&mut self, earlier: Transcript) {
        let mut cells = earlier.committed;
        cells.append(&mut self.committed);
        self.committed = cells;
        // Rows added above keep their distance from the bottom: the next draw must not take
        // them for output arriving below and move what the user is reading.
        self.last_total.set(None);
    }

    /// Adds streamed text to the active reply, starting one if needed.
    pub fn push_delta(&mut self, text: &str) {
        self.commit_thinking();
        self.active.get_or_insert_with(AssistantCell::default).push_str(text);
        self.active_height.set(None);
    }

    /// Whether a reply is streaming.
    #[cfg(test)]
    pub fn has_active(&self) -> bool {
        self.active.is_some()
    }

    /// Freezes the active reply; `cut_short` marks an interrupted or failed one.
    pub fn finish_active(&mut self, cut_short: bool) {
        if let Some(cell) = self.active.as_mut() {
            cell.cut_short = cut_short;
        }
        self.commit_active();
    }

    fn commit_active(&mut self) {
        self.commit_thinking();
        self.active_height.set(None);
        if let Some(cell) = self.active.take() {
            if !cell.source().trim().is_empty() || cell.cut_short {
                self.committed.push(Slot::new(Box::new(cell)));
            }
        }
    }

    /// Applies `f` to the most recent committed cell for which it returns true (tool results
    /// find their call this way). Drops that cell's cached height.
    pub fn update_last(&mut self, mut f: impl FnMut(&mut dyn Cell) -> bool) -> bool {
        for slot in self.committed.iter_mut().rev() {
            if f(slot.cell.as_mut()) {
                slot.changed();
                return true;
            }
        }
        false
    }

    /// Applies `f` to every committed cell; each it returns true for is redrawn.
    pub fn update_all(&mut self, mut f: impl FnMut(&mut dyn Cell) -> bool) {
        for slot in &mut self.committed {
            if f(slot.cell.as_mut()) {
                slot.changed();
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn len(&self) -> usize {
        self.committed.len() + usize::from(self.active.is_some())
    }

    /// Keeps the messages the user sent as far as they are `kept` (their texts, oldest first)
    /// and drops everything from the next one on: what followed the point HEAD moved back to.
    /// `false`, and nothing changed, when the transcript's first messages are not those.
    pub fn cut_after_user_messages(&mut self, kept: &[&str]) -> bool {
        let positions = self.user_positions();
        if positions.len() < kept.len() {
            return false;
        }
        for (&at, text) in positions.iter().zip(kept) {
            let cell = self.committed[at].cell.content_mut();
            let same =
                cell.downcast_ref::<super::cells::UserCell>().is_some_and(|u| u.text == *text);
            if !same {
                return false;
            }
        }
        let at = positions.get(kept.len()).copied().unwrap_or(self.committed.len());
        self.committed.truncate(at);
        self.focus = self.focus.filter(|&f| f < at);
        self.highlight = self.highlight.filter(|&h| h < at);
        self.scroll_up.set(0);
        true
    }

    fn user_positions(&mut self) -> Vec<usize> {
        self.committed
            .iter_mut()
            .enumerate()
            .filter_map(|(i, s)| s.cell.content_mut().is::<super::cells::UserCell>().then_some(i))
            .collect()
    }

    /// The newest reply's markdown (the streaming one, if any).
    pub fn last_reply(&self) -> Option<String> {
        if let Some(active) = &self.active {
            return Some(active.source().to_owned());
        }
        self.committed.iter().rev().find_map(|s| s.cell.reply_text().map(str::to_owned))
    }
}

#[cfg(test)]
mod tests;
