//! The transcript's viewport: the scroll offset, the heights it is measured in, and drawing
//! the rows in view.
//!
//! Invariants: the offset counts rows up from the bottom, 0 following the tail; output that
//! arrives while the user reads older rows grows the offset by what was added, so the rows
//! read stay put. A frame wraps only the cells that intersect the viewport; the others are
//! skipped by their cached heights.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

use super::{Slot, Transcript};
use crate::tui::cells::Cell;

impl Transcript {
    /// Shows the first rows of the conversation.
    pub fn scroll_to_top(&mut self, width: u16, viewport: u16) {
        let max = self.total_height(width).saturating_sub(usize::from(viewport));
        self.scroll_up.set(max);
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
