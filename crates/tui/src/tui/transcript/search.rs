//! Searching the transcript (Ctrl+F): finding the cells whose text holds the query, and the
//! one match drawn with a marker. A search reads the committed cells and changes none.

use super::Transcript;

impl Transcript {
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
}
