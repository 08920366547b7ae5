//! The transcript: committed cells, at most one active streaming cell, the per-width height
//! cache, scrolling and viewport drawing.
//!
//! Invariants: committed cells are never changed except to fold/unfold them (which drops their
//! cached height); only the active cell changes while a reply streams. A frame draws only the
//! cells that intersect the viewport, so its cost depends on the screen, not on the length of
//! the conversation; finding them sums cached heights (one integer per cell) and never wraps
//! text outside the viewport. Scrolling is an offset from the bottom; 0 means "follow the tail",
//! which is where new output keeps the view while streaming.

use std::cell::Cell as StdCell;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

use super::cells::{AssistantCell, Cell};

/// A cell with its cached height: `(width, height)` of the last measurement.
#[derive(Debug)]
struct Slot {
    cell: Box<dyn Cell>,
    height: StdCell<Option<(u16, usize)>>,
}

impl Slot {
    fn new(cell: Box<dyn Cell>) -> Slot {
        Slot { cell, height: StdCell::new(None) }
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
        let mut cell: Box<dyn Cell> = Box::new(cell);
        if self.expanded {
            cell.set_expanded(true);
        }
        self.committed.push(Slot::new(cell));
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
        self.active.get_or_insert_with(AssistantCell::default).text.push_str(text);
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
        self.active_height.set(None);
        if let Some(cell) = self.active.take() {
            if !cell.text.trim().is_empty() || cell.cut_short {
                self.committed.push(Slot::new(Box::new(cell)));
            }
        }
    }

    /// Applies `f` to the most recent committed cell for which it returns true (tool results
    /// find their call this way). Drops that cell's cached height.
    pub fn update_last(&mut self, mut f: impl FnMut(&mut dyn Cell) -> bool) -> bool {
        for slot in self.committed.iter_mut().rev() {
            if f(slot.cell.as_mut()) {
                slot.height.set(None);
                return true;
            }
        }
        false
    }

    /// Folds or unfolds every foldable cell (Ctrl+O); returns the new state.
    pub fn toggle_expanded(&mut self) -> bool {
        self.expanded = !self.expanded;
        for slot in &mut self.committed {
            if slot.cell.set_expanded(self.expanded) {
                slot.height.set(None);
            }
        }
        self.expanded
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn len(&self) -> usize {
        self.committed.len() + usize::from(self.active.is_some())
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
        for (cell, slot) in cells {
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
            lines.extend(cell.lines(width).into_iter().skip(skip).take(take));
            y += h;
        }
        Paragraph::new(lines).render(area, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::cells::{NoticeCell, NoticeKind};

    fn notice(text: &str) -> NoticeCell {
        NoticeCell { kind: NoticeKind::Info, text: text.into() }
    }

    fn screen(t: &Transcript, w: u16, h: u16) -> Vec<String> {
        let area = Rect::new(0, 0, w, h);
        let mut buf = Buffer::empty(area);
        t.render(area, &mut buf);
        (0..h)
            .map(|y| {
                (0..w)
                    .map(|x| buf[(x, y)].symbol().to_owned())
                    .collect::<String>()
                    .trim_end()
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn heights_are_cached_per_width() {
        let mut t = Transcript::default();
        for i in 0..100 {
            t.push(notice(&format!("line {i}")));
        }
        assert_eq!(t.total_height(40), 100);
        assert_eq!(t.measured(), 100);
        t.total_height(40);
        screen(&t, 40, 10);
        assert_eq!(t.measured(), 100, "a second pass at the same width reads the cache");
        t.total_height(20);
        assert_eq!(t.measured(), 200, "a new width measures again");
    }

    #[test]
    fn the_viewport_follows_the_tail_and_scrolls() {
        let mut t = Transcript::default();
        for i in 0..30 {
            t.push(notice(&format!("n{i}")));
        }
        let rows = screen(&t, 20, 5);
        assert_eq!(rows[4], "· n29");
        t.scroll_up(10, 20, 5);
        assert!(!t.follows_tail());
        assert_eq!(screen(&t, 20, 5)[4], "· n19");
        t.scroll_up(1000, 20, 5);
        assert_eq!(screen(&t, 20, 5)[0], "· n0");
        t.scroll_down(1000);
        assert!(t.follows_tail());
        assert_eq!(screen(&t, 20, 5)[4], "· n29");
    }

    #[test]
    fn rows_being_read_stay_put_while_output_arrives() {
        let mut t = Transcript::default();
        for i in 0..30 {
            t.push(notice(&format!("n{i}")));
        }
        screen(&t, 20, 5);
        t.scroll_up(10, 20, 5);
        assert_eq!(screen(&t, 20, 5)[4], "· n19");
        t.push_delta("new\noutput\nbelow");
        assert_eq!(screen(&t, 20, 5)[4], "· n19", "the rows being read did not move");
        t.scroll_down(usize::MAX);
        assert!(screen(&t, 20, 5).iter().any(|r| r.contains("below")));
    }

    /// A cell that counts how often it is drawn.
    #[derive(Debug)]
    struct Counting(std::sync::Arc<std::sync::atomic::AtomicUsize>);

    impl Cell for Counting {
        fn lines(&self, _width: u16) -> Vec<Line<'static>> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            vec![Line::from("x"), Line::from("y")]
        }
    }

    #[test]
    fn a_frame_draws_only_the_cells_in_the_viewport() {
        let drawn = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut t = Transcript::default();
        for _ in 0..5_000 {
            t.push(Counting(drawn.clone()));
        }
        screen(&t, 40, 10);
        let first = drawn.swap(0, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(first, 5_000 + 5, "measured once each, then the 5 visible cells drawn");
        screen(&t, 40, 10);
        assert_eq!(drawn.load(std::sync::atomic::Ordering::Relaxed), 5, "the next frame draws 5");
    }

    #[test]
    fn a_cell_taller_than_the_screen_shows_its_tail() {
        let mut t = Transcript::default();
        let text: Vec<String> = (0..20).map(|i| format!("row {i}")).collect();
        t.push(notice(&text.join("\n")));
        let rows = screen(&t, 20, 3);
        assert_eq!(rows, ["  row 17", "  row 18", "  row 19"]);
    }

    #[test]
    fn streaming_text_is_committed_in_order() {
        let mut t = Transcript::default();
        t.push_delta("hel");
        t.push_delta("lo");
        assert!(t.has_active());
        t.push(notice("after"));
        assert!(!t.has_active());
        let rows = screen(&t, 20, 4);
        assert_eq!(rows[..3], ["• hello", "", "· after"]);
    }
}
