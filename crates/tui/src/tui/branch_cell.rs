//! The transcript cell of a `branch_summary` (docs/journal-format.md, *`branch_summary`*): what was
//! tried on a branch the user left, which the model reads with the conversation. Folded to one
//! line; Ctrl+O shows the summary.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::cell::{folding_cell, gutter, Cell};
use super::wrap::wrap_line;

/// A branch summary, folded by default.
#[derive(Debug, Clone, Default)]
pub struct BranchSummaryCell {
    pub summary: String,
    pub expanded: bool,
    pub focused: bool,
}

impl Cell for BranchSummaryCell {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let dim = Style::new().fg(Color::DarkGray);
        let mark = if self.focused { dim.add_modifier(Modifier::REVERSED) } else { dim };
        let fold = if self.expanded { "" } else { " … Ctrl+O shows it" };
        let head = Line::from(vec![
            Span::styled("⎇ ", mark),
            Span::styled(format!("what was tried on a branch you left{fold}"), dim),
        ]);
        let mut out = wrap_line(&head, usize::from(width));
        if self.expanded {
            let body = self.summary.lines().map(|l| Line::from(l.to_owned())).collect();
            out.extend(gutter("  ┆ ", "  ┆ ", dim, body, width));
        }
        out
    }

    folding_cell!(summary);
}
