//! The transcript: committed cells, at most one active streaming cell, the per-width height
//! cache, scrolling and viewport drawing.
//!
//! Invariants: committed cells are never changed except to fold/unfold them (which drops their
//! cached height); only the active cell changes while a reply streams. A frame draws only the
//! cells that intersect the viewport, so its cost depends on the screen, not on the length of
//! the conversation; finding them sums cached heights (one integer per cell) and never wraps
//! text outside the viewport. Scrolling is an offset from the bottom; 0 means "follow the tail",
//! which is where new output keeps the view while streaming.

use std::cell::{Cell as StdCell, RefCell};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

use super::cells::{AssistantCell, Cell, ThinkingCell};
use super::markdown::highlight;

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

    /// The foldable cells (tool calls, thinking, compactions), by index.
    fn foldable(&self) -> Vec<usize> {
        self.committed
            .iter()
            .enumerate()
            .filter(|(_, s)| s.cell.foldable())
            .map(|(i, _)| i)
            .collect()
    }

    /// Moves the focus to the previous (`up`) or next foldable cell.
    pub fn move_focus(&mut self, up: bool) {
        let foldable = self.foldable();
        if foldable.is_empty() {
            return;
        }
        let at = self.focus.and_then(|f| foldable.iter().position(|&i| i == f));
        let next = match (at, up) {
            (None, _) => foldable.len() - 1,
            (Some(0), true) => 0,
            (Some(i), true) => i - 1,
            (Some(i), false) if i + 1 < foldable.len() => i + 1,
            (Some(_), false) => {
                self.set_focus(None);
                return;
            }
        };
        self.set_focus(Some(foldable[next]));
    }

    fn set_focus(&mut self, focus: Option<usize>) {
        if let Some(old) = self.focus {
            if let Some(slot) = self.committed.get_mut(old) {
                slot.cell.set_focused(false);
                slot.changed();
            }
        }
        self.focus = focus;
        if let Some(new) = focus {
            if let Some(slot) = self.committed.get_mut(new) {
                slot.cell.set_focused(true);
                slot.changed();
            }
        }
    }

    /// The focused cell, or the last foldable one.
    fn target(&self) -> Option<usize> {
        self.focus.or_else(|| self.foldable().last().copied())
    }

    /// Folds or unfolds the focused (or last) foldable cell, keeping the rows being read
    /// where they are: what grows or shrinks is below them.
    pub fn toggle_one(&mut self, width: u16, viewport: u16) -> bool {
        let Some(index) = self.target() else { return false };
        let expanded = !self.committed[index].cell.is_expanded();
        self.toggle_cells(&[index], expanded, width, viewport);
        true
    }

    /// Folds or unfolds every foldable cell the same way, keeping the reading position.
    pub fn toggle_all(&mut self, width: u16, viewport: u16) {
        self.expanded = !self.expanded;
        let all = self.foldable();
        let expanded = self.expanded;
        self.toggle_cells(&all, expanded, width, viewport);
    }

    fn toggle_cells(&mut self, indices: &[usize], expanded: bool, width: u16, viewport: u16) {
        let chosen: std::collections::HashSet<usize> = indices.iter().copied().collect();
        let rows = usize::from(viewport);
        let top = self.total_height(width).saturating_sub(self.scroll_up.get() + rows);
        // A cell that ends above the top row changes nothing that is read (the offset is from
        // the bottom); one at or below it pushes the bottom away by its change.
        let mut y = 0usize;
        let mut growth = 0isize;
        for (i, slot) in self.committed.iter_mut().enumerate() {
            let h_before = match slot.height.get() {
                Some((w, h)) if w == width => h,
                _ => slot.cell.height(width),
            };
            if chosen.contains(&i) && slot.cell.is_expanded() != expanded {
                slot.cell.set_expanded(expanded);
                slot.changed();
                let h_after = slot.cell.height(width);
                slot.height.set(Some((width, h_after)));
                if y + h_before > top {
                    growth += h_after as isize - h_before as isize;
                }
            }
            y += h_before;
        }
        // Following the tail, the view keeps following it (the unfolded cell is in sight);
        // reading older rows, they stay where they are.
        let scroll = if self.scroll_up.get() == 0 {
            0
        } else {
            (self.scroll_up.get() as isize + growth).max(0) as usize
        };
        let total = self.total_height(width);
        self.scroll_up.set(scroll.min(total.saturating_sub(rows)));
        self.last_total.set(Some((width, total)));
    }

    /// The whole output of the focused (or last) tool call, for the pager.
    pub fn target_output(&self) -> Option<(String, String)> {
        // A focused cell without output (a capsule, a summary) falls back to the last call.
        let focused = self.focus.and_then(|i| self.committed.get(i)?.cell.tool_output());
        focused.or_else(|| self.committed.iter().rev().find_map(|s| s.cell.tool_output()))
    }

    /// The child session of the cell Ctrl+T acts on (the one [`Transcript::target_output`]
    /// reads), with its title, when that cell is a `task` call whose child started.
    pub fn target_subagent(&mut self) -> Option<(String, String)> {
        let focused = self
            .focus
            .filter(|&i| self.committed.get(i).is_some_and(|s| s.cell.tool_output().is_some()));
        let at = focused
            .or_else(|| self.committed.iter().rposition(|s| s.cell.tool_output().is_some()))?;
        let cell = self.committed.get_mut(at)?.cell.as_mut();
        let tool = super::tool_cell::tool_mut(cell)?;
        let id = tool.subagent.clone()?;
        Some((format!("subagent {id} · {}", tool.summary), id))
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

    /// Whether a cell holds the focus (Alt+Up/Down).
    pub fn has_focus(&self) -> bool {
        self.focus.is_some()
    }

    /// Lets go of the focused cell.
    pub fn clear_focus(&mut self) {
        self.set_focus(None);
    }

    /// The newest reply's markdown (the streaming one, if any).
    pub fn last_reply(&self) -> Option<String> {
        if let Some(active) = &self.active {
            return Some(active.source().to_owned());
        }
        self.committed.iter().rev().find_map(|s| s.cell.reply_text().map(str::to_owned))
    }

    /// Shows the first rows of the conversation.
    pub fn scroll_to_top(&mut self, width: u16, viewport: u16) {
        let max = self.total_height(width).saturating_sub(usize::from(viewport));
        self.scroll_up.set(max);
    }

    /// The index of the next cell, searching older (`older`) or newer from `from` (exclusive;
    /// `None` starts at the newest), whose text holds `query` (case-insensitive).
    pub fn find(&self, query: &str, from: Option<usize>, older: bool) -> Option<usize> {
        let query = query.to_lowercase();
        if query.is_empty() {
            return None;
        }
        let hit = |i: &usize| self.committed[*i].cell.text().to_lowercase().contains(&query);
        let n = self.committed.len();
        if older {
            let end = from.unwrap_or(n);
            (0..end.min(n)).rev().find(hit)
        } else {
            let start = from.map_or(0, |f| f + 1);
            (start..n).find(hit)
        }
    }

    /// How many cells hold `query`.
    pub fn count(&self, query: &str) -> usize {
        let query = query.to_lowercase();
        if query.is_empty() {
            return 0;
        }
        self.committed.iter().filter(|s| s.cell.text().to_lowercase().contains(&query)).count()
    }

    /// Marks cell `index` as the current search match (or nothing).
    pub fn set_highlight(&mut self, index: Option<usize>) {
        self.highlight = index;
    }

    /// Scrolls so that cell `index` starts at the top of the viewport (as far as possible).
    pub fn scroll_to_cell(&mut self, index: usize, width: u16, viewport: u16) {
        let start: usize =
            self.committed.iter().take(index).map(|s| self.slot_height(s, width)).sum();
        let total = self.total_height(width);
        let rows = usize::from(viewport);
        let scroll = total.saturating_sub(start + rows);
        self.scroll_up.set(scroll.min(total.saturating_sub(rows)));
        self.last_total.set(Some((width, total)));
    }

    /// Scrolls up (towards older output) by `rows`.
    pub fn scroll_up(&mut self, rows: usize, width: u16, viewport: u16) {
        let max = self.total_height(width).saturating_sub(usize::from(viewport));
        self.scroll_up.set((self.scroll_up.get() + rows).min(max));
    }

    /// Scrolls down by `rows`; reaching the bottom resumes following the tail.
    pub fn scroll_down(&mut self, rows: usize) {
        self.scroll_up.set(self.scroll_up.get().saturating_sub(rows));
    }

    /// Whether the oldest row is in view (nothing older is hidden above).
    pub fn at_top(&self, width: u16, viewport: u16) -> bool {
        let max = self.total_height(width).saturating_sub(usize::from(viewport));
        self.scroll_up.get() >= max
    }

    /// Whether new output is followed.
    pub fn follows_tail(&self) -> bool {
        self.scroll_up.get() == 0
    }

    /// Heights computed rather than read from the cache so far.
    #[cfg(test)]
    pub fn measured(&self) -> usize {
        self.measured.get()
    }

    fn slot_height(&self, slot: &Slot, width: u16) -> usize {
        if !matches!(slot.height.get(), Some((w, _)) if w == width) {
            self.measured.set(self.measured.get() + 1);
        }
        slot.height(width)
    }

    /// All rows at `width`.
    pub fn total_height(&self, width: u16) -> usize {
        let committed: usize = self.committed.iter().map(|s| self.slot_height(s, width)).sum();
        committed + self.active_rows(width)
    }

    fn active_rows(&self, width: u16) -> usize {
        let Some(cell) = &self.active else { return 0 };
        match self.active_height.get() {
            Some((w, h)) if w == width => h,
            _ => {
                let h = cell.height(width);
                self.active_height.set(Some((width, h)));
                h
            }
        }
    }

    /// Draws the rows of the viewport into `area`.
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        if area.width == 0 || area.height == 0 {
            return;
        }
        let width = area.width;
        let rows = usize::from(area.height);
        let total = self.total_height(width);
        if let Some((w, before)) = self.last_total.get() {
            if w == width && total > before && self.scroll_up.get() > 0 {
                self.scroll_up.set(self.scroll_up.get() + (total - before));
            }
        }
        self.last_total.set(Some((width, total)));
        let scroll = self.scroll_up.get().min(total.saturating_sub(rows));
        self.scroll_up.set(scroll);
        let bottom = total - scroll;
        let top = bottom.saturating_sub(rows);
        // Walk the cells, skipping whole cells above the viewport by their cached heights.
        let mut lines: Vec<Line<'static>> = Vec::with_capacity(rows);
        let mut y = 0;
        let active = self.active.as_ref().map(|c| c as &dyn Cell);
        let cells = self
            .committed
            .iter()
            .map(|s| (s.cell.as_ref(), Some(s)))
            .chain(active.map(|c| (c, None)));
        for (index, (cell, slot)) in cells.enumerate() {
            let h = match slot {
                Some(slot) => self.slot_height(slot, width),
                None => self.active_rows(width),
            };
            if y + h <= top {
                y += h;
                continue;
            }
            if y >= bottom {
                break;
            }
            let skip = top.saturating_sub(y);
            let take = (bottom - y.max(top)).min(h - skip);
            let start = lines.len();
            match slot {
                Some(slot) => lines.extend(slot.rows(width, skip, take)),
                // The streaming reply: its finished blocks are cached inside it, and only the
                // rows in view are copied out.
                None => lines.extend(cell.rows(width, skip, take)),
            }
            if self.highlight == Some(index) {
                // The search match: its rows on a marked background.
                let mark = ratatui::style::Style::new().bg(ratatui::style::Color::DarkGray);
                for line in &mut lines[start..] {
                    *line = std::mem::take(line).patch_style(mark);
                }
            }
            y += h;
        }
        Paragraph::new(lines).render(area, buf);
    }
}

#[cfg(test)]
mod tests;
