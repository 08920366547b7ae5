//! The transcript cell of the change a write or an edit made: the unified diff, folded to one
//! line with its size ("± src/lib.rs: +3 −1 lines … Ctrl+O shows the diff"), and the one
//! colouring of diff lines that the approval view uses too.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::cell::{folding_cell, gutter, Cell};
use super::wrap::wrap_line;

/// How a line of a unified diff is drawn.
pub fn diff_style(line: &str) -> Style {
    if line.starts_with("+++") || line.starts_with("---") {
        Style::new().add_modifier(Modifier::BOLD)
    } else if line.starts_with('+') {
        Style::new().fg(Color::Green)
    } else if line.starts_with('-') {
        Style::new().fg(Color::Red)
    } else if line.starts_with("@@") {
        Style::new().fg(Color::Cyan)
    } else {
        Style::new().fg(Color::Gray)
    }
}

/// A change made, folded by default.
#[derive(Debug, Clone, Default)]
pub struct DiffCell {
    pub diff: String,
    pub expanded: bool,
    pub focused: bool,
}

impl DiffCell {
    /// The file the diff names (its `+++` line), and the lines added and removed.
    fn summary(&self) -> (String, usize, usize) {
        let file = self
            .diff
            .lines()
            .find_map(|l| l.strip_prefix("+++ "))
            .map(|f| f.trim_start_matches("b/").to_owned())
            .unwrap_or_default();
        let body = self.diff.lines().filter(|l| !l.starts_with("+++") && !l.starts_with("---"));
        let (mut added, mut removed) = (0, 0);
        for l in body {
            if l.starts_with('+') {
                added += 1;
            } else if l.starts_with('-') {
                removed += 1;
            }
        }
        (file, added, removed)
    }
}

impl Cell for DiffCell {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let dim = Style::new().fg(Color::DarkGray);
        let mark = if self.focused { dim.add_modifier(Modifier::REVERSED) } else { dim };
        let (file, added, removed) = self.summary();
        let fold = if self.expanded { "" } else { " … Ctrl+O shows the diff" };
        let head = Line::from(vec![
            Span::styled("  ± ", mark),
            Span::styled(format!("{file}: "), dim),
            Span::styled(format!("+{added}"), Style::new().fg(Color::Green)),
            Span::styled(" ", dim),
            Span::styled(format!("−{removed}"), Style::new().fg(Color::Red)),
            Span::styled(format!(" lines{fold}"), dim),
        ]);
        let mut out = wrap_line(&head, usize::from(width));
        if self.expanded {
            let body =
                self.diff.lines().map(|l| Line::styled(l.to_owned(), diff_style(l))).collect();
            out.extend(gutter("    ", "    ", dim, body, width));
        }
        out
    }

    folding_cell!(diff);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn a_diff_folds_to_its_file_and_size_and_unfolds_to_its_lines() {
        let diff = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,2 +1,2 @@\n-old line\n+new line\n+more\n ctx";
        let mut cell = DiffCell { diff: diff.into(), ..DiffCell::default() };
        assert_eq!(plain(&cell.lines(80)), ["  ± src/lib.rs: +2 −1 lines … Ctrl+O shows the diff"]);
        cell.set_expanded(true);
        let rows = plain(&cell.lines(80));
        assert_eq!(rows[0], "  ± src/lib.rs: +2 −1 lines");
        assert_eq!(rows[4], "    -old line");
        assert_eq!(diff_style("+new"), Style::new().fg(Color::Green));
    }
}
