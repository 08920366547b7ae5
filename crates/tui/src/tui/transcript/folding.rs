//! The transcript's focus and folding: which foldable cell Ctrl+O and Ctrl+T act on (Alt+↑/↓
//! moves it), and folding or unfolding cells.
//!
//! Invariant: folding a cell drops its cached height and keeps the rows being read where they
//! are — only what lies at or below the top row moves, and a view following the tail keeps
//! following it.

use super::Transcript;

impl Transcript {
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
        let tool = crate::tui::tool_cell::tool_mut(cell)?;
        let id = tool.subagent.clone()?;
        Some((format!("subagent {id} · {}", tool.summary), id))
    }

    /// Whether a cell holds the focus (Alt+Up/Down).
    pub fn has_focus(&self) -> bool {
        self.focus.is_some()
    }

    /// Lets go of the focused cell.
    pub fn clear_focus(&mut self) {
        self.set_focus(None);
    }
}
