//! The plan cell: the model's plan (`update_plan`) as it stands after a call changed it, one
//! line per step with a mark for its status. The status line shows the short form ("plan 2/5").

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use codewhale_protocol::{Plan, StepStatus};

use super::cells::Cell;
use super::wrap::wrap_lines;

/// A plan as a call set it.
#[derive(Debug)]
pub struct PlanCell {
    pub plan: Plan,
}

impl Cell for PlanCell {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let title = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
        let mut out = vec![Line::from(Span::styled(
            format!("◇ {} of {} steps done", self.plan.done(), self.plan.steps.len()),
            title,
        ))];
        for step in &self.plan.steps {
            let (mark, style) = match step.status {
                StepStatus::Done => ("  ✓ ", Style::new().fg(Color::Green)),
                StepStatus::InProgress => ("  ▸ ", Style::new().fg(Color::Yellow)),
                StepStatus::Pending => ("  · ", Style::new().fg(Color::DarkGray)),
            };
            let body = vec![Line::from(step.step.clone())];
            let inner = usize::from(width).saturating_sub(4).max(1);
            for (i, line) in wrap_lines(&body, inner).into_iter().enumerate() {
                let lead = if i == 0 { mark } else { "    " };
                let mut spans = vec![Span::styled(lead, style)];
                spans.extend(line.spans);
                out.push(Line::from(spans));
            }
        }
        out.push(Line::default());
        out
    }
}

#[cfg(test)]
mod tests {
    use codewhale_protocol::PlanStep;

    use super::*;

    #[test]
    fn a_plan_draws_one_marked_line_per_step() {
        let plan = Plan {
            steps: vec![
                PlanStep { step: "Write the lexer".into(), status: StepStatus::Done },
                PlanStep { step: "Write the parser".into(), status: StepStatus::InProgress },
                PlanStep { step: "Wire it up".into(), status: StepStatus::Pending },
            ],
        };
        let text = PlanCell { plan }.text();
        assert_eq!(
            text,
            "◇ 1 of 3 steps done\n  ✓ Write the lexer\n  ▸ Write the parser\n  · Wire it up\n"
        );
    }
}
