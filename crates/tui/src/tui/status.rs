//! The status line: what the engine is doing, the hints that apply, the model and the context
//! gauge — fitted to any width. Parts drop by priority (hints first, then the model, then the
//! gauge's details), the state is cut last, and no part ever runs into another. While the
//! transcript search is open, the line is the search bar.

use super::text_width;
use codewhale_protocol::ApprovalMode;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};
use ratatui::Frame;

use super::app::{App, Lifecycle};
use super::cells::short_tokens;
use super::render::human_bytes;

/// One piece of the line: lower `rank` stays longer.
struct Part {
    text: String,
    style: Style,
    right: bool,
    rank: u8,
}

impl App {
    pub(crate) fn draw_status(&self, area: Rect, frame: &mut Frame<'_>) {
        let line = match &self.screen.search {
            Some(search) => self.search_line(search),
            None => fit(self.status_parts(), usize::from(area.width)),
        };
        Paragraph::new(line).render(area, frame.buffer_mut());
    }

    fn search_line(&self, search: &super::app::Search) -> Line<'static> {
        let found = match (search.hit, search.count) {
            (_, 0) if !search.query.is_empty() => " · no match".to_owned(),
            (Some(_), 1) => " · 1 match".to_owned(),
            (Some(_), n) => format!(" · {n} matches"),
            _ => String::new(),
        };
        Line::from(vec![
            Span::styled(" find: ", Style::new().fg(Color::Cyan)),
            Span::raw(search.query.clone()),
            Span::styled("▏", Style::new().fg(Color::Cyan)),
            Span::styled(
                format!("{found} · Enter/↑ older · ↓ newer · Esc done"),
                Style::new().fg(Color::DarkGray),
            ),
        ])
    }

    /// The line's parts, in the order drawn: the state, then what goes on around it on the
    /// left, then the modes, the model and the gauge on the right.
    fn status_parts(&self) -> Vec<Part> {
        let (state, style, hint) = self.state();
        let mut parts = vec![Part { text: format!(" {state}"), style, right: false, rank: 0 }];
        self.activity_parts(&mut parts, hint);
        self.mode_parts(&mut parts);
        self.gauge_parts(&mut parts);
        parts
    }

    /// What the engine is doing, in words, with its colour and the hint that applies.
    fn state(&self) -> (String, Style, Option<&'static str>) {
        let busy = Style::new().fg(Color::Yellow);
        match &self.lifecycle {
            _ if self.progress.retry.is_some() => self.retry_state(busy),
            Lifecycle::Idle if self.keys.quitting => {
                ("saving and quitting…".to_owned(), busy, None)
            }
            Lifecycle::Idle if self.keys.quit_armed => {
                ("press Ctrl+C again to quit".to_owned(), Style::new().fg(Color::Red), None)
            }
            Lifecycle::Idle if self.keys.esc_armed && self.composer.is_empty() => (
                "press Esc again to edit an earlier message".to_owned(),
                Style::new().fg(Color::Cyan),
                None,
            ),
            Lifecycle::Idle if self.keys.esc_armed => {
                ("press Esc again to clear the draft".to_owned(), Style::new().fg(Color::Red), None)
            }
            Lifecycle::Idle => match self.session.opening {
                Some(0) => ("opening session…".to_owned(), busy, None),
                Some(bytes) => (format!("opening session ({})…", human_bytes(bytes)), busy, None),
                None => ("ready".to_owned(), Style::new().fg(Color::Green), None),
            },
            Lifecycle::Streaming { thinking: true } => {
                ("thinking…".to_owned(), busy, Some("Esc interrupts"))
            }
            Lifecycle::Streaming { thinking: false } => {
                ("streaming…".to_owned(), busy, Some("Esc interrupts"))
            }
            Lifecycle::RunningTool { name } => {
                (format!("running {name}…"), busy, Some("Esc interrupts"))
            }
            Lifecycle::Compacting { .. } => self.compacting_state(),
            Lifecycle::AwaitingApproval => {
                ("waiting for your approval".to_owned(), Style::new().fg(Color::Cyan), None)
            }
        }
    }

    /// A request failed and is retried: the countdown and the attempt.
    fn retry_state(&self, busy: Style) -> (String, Style, Option<&'static str>) {
        let r = self.progress.retry.unwrap_or(super::app::Retry {
            attempt: 0,
            max_attempts: 0,
            until: self.progress.clock,
        });
        let secs = r.until.saturating_duration_since(self.progress.clock).as_secs_f64().ceil();
        (
            format!("retrying in {secs} s · attempt {}/{}", r.attempt, r.max_attempts),
            busy,
            Some("Esc stops"),
        )
    }

    /// A compaction pass runs: its summary requests, once there is something to count.
    fn compacting_state(&self) -> (String, Style, Option<&'static str>) {
        // Shown for a pass of several requests, or one that runs over a second.
        let clock = self.progress.clock;
        let progress = self.session.compaction_progress.filter(|&(_, of, _, since)| {
            of > 1 || clock.saturating_duration_since(since).as_secs() >= 1
        });
        let state = match progress {
            Some((request, of, tokens, _)) => format!(
                "compacting… summary {request} of {of} · {} tokens",
                super::cells::short_tokens(tokens)
            ),
            None => "compacting…".to_owned(),
        };
        (state, Style::new().fg(Color::Magenta), Some("Ctrl+C cancels"))
    }

    /// The left side after the state: the turn's time, the hint, work in the background, the
    /// queue and whether the view is scrolled.
    fn activity_parts(&self, parts: &mut Vec<Part>, hint: Option<&str>) {
        let busy = Style::new().fg(Color::Yellow);
        let dim = Style::new().fg(Color::DarkGray);
        if let Some(p) = self.progress.turn_progress.filter(|_| self.lifecycle.turn_running()) {
            // Time passing, as Codex shows it, and the reply so far (bytes/4, so "~").
            let secs = self.progress.clock.saturating_duration_since(p.since).as_secs();
            let text = match p.bytes {
                0 => format!(" ({secs} s)"),
                n => format!(" ({secs} s · ~{} tokens)", short_tokens((n as u64).div_ceil(4))),
            };
            parts.push(Part { text, style: dim, right: false, rank: 4 });
        }
        if let Some(hint) = hint {
            parts.push(Part { text: format!(" · {hint}"), style: dim, right: false, rank: 5 });
        }
        // Quiet: the user never waits for it, so it is dim and goes before the hints do.
        if let Some(note) = self.session.background_note {
            let text = match note {
                codewhale_protocol::BackgroundState::Writing => " · writing note…",
                codewhale_protocol::BackgroundState::Ready => " · note ready",
            };
            parts.push(Part { text: text.to_owned(), style: dim, right: false, rank: 4 });
        }
        if self.session.branch_summary_writing {
            let text = " · summarizing the branch you left…".to_owned();
            parts.push(Part { text, style: dim, right: false, rank: 4 });
        }
        match self.outbox.queued.len() {
            0 => {}
            n => {
                let text = if self.lifecycle.turn_running() {
                    format!(" · {n} queued, Ctrl+S sends now")
                } else {
                    format!(" · {n} queued")
                };
                parts.push(Part { text, style: busy, right: false, rank: 3 });
            }
        }
        if !self.transcript.follows_tail() {
            parts.push(Part {
                text: " · scrolled, End follows".to_owned(),
                style: dim,
                right: false,
                rank: 6,
            });
        }
    }

    /// The right side's modes: mouse capture, the approval mode, the plan and the model.
    fn mode_parts(&self, parts: &mut Vec<Part>) {
        let dim = Style::new().fg(Color::DarkGray);
        if self.screen.mouse_capture {
            parts.push(Part { text: "mouse · ".to_owned(), style: dim, right: true, rank: 5 });
        }
        // The default mode says nothing; the others stay in sight (Shift+Tab cycles them).
        match self.session.approval {
            ApprovalMode::Ask => {}
            ApprovalMode::Plan => {
                let style = Style::new().fg(Color::Cyan);
                parts.push(Part { text: "plan mode · ".to_owned(), style, right: true, rank: 3 });
            }
            mode @ (ApprovalMode::AutoEdit | ApprovalMode::Full) => {
                let color = if mode == ApprovalMode::Full { Color::Red } else { Color::Yellow };
                let text = format!("{mode} · ");
                parts.push(Part { text, style: Style::new().fg(color), right: true, rank: 3 });
            }
        }
        if let Some(plan) = &self.session.plan {
            let text = format!("{} · ", plan.progress());
            parts.push(Part { text, style: dim, right: true, rank: 3 });
        }
        parts.push(Part {
            text: format!("{} · ", self.session.model),
            style: dim,
            right: true,
            rank: 4,
        });
    }

    /// The context gauge: a long form and a short one to fall back to.
    fn gauge_parts(&self, parts: &mut Vec<Part>) {
        let dim = Style::new().fg(Color::DarkGray);
        match &self.session.gauge {
            Some(g) => {
                let percent = g.pressure.percent_of(g.usable_input);
                let unverified = if g.window_unverified { ", window unverified" } else { "" };
                let full = format!(
                    "ctx {percent}% of {} ({}{unverified}) ",
                    short_tokens(g.usable_input),
                    g.pressure.source.as_str()
                );
                parts.push(Part { text: full, style: dim, right: true, rank: 2 });
                parts.push(Part {
                    text: format!("ctx {percent}% "),
                    style: dim,
                    right: true,
                    rank: 1,
                });
            }
            None => {
                parts.push(Part { text: "ctx — ".to_owned(), style: dim, right: true, rank: 1 })
            }
        }
    }
}

/// Lays `parts` out in `width` columns: the left ones from the left, the right ones against
/// the right edge, at least one space between; parts of the highest rank go first while they
/// do not fit (a gauge has a long form, rank 2, and a short one, rank 1: only one is drawn).
fn fit(mut parts: Vec<Part>, width: usize) -> Line<'static> {
    // The short gauge is the fallback of the long one.
    let has_long = parts.iter().any(|p| p.right && p.rank == 2);
    if has_long {
        parts.retain(|p| !(p.right && p.rank == 1));
    }
    let total =
        |parts: &[Part]| parts.iter().map(|p| text_width::width(&p.text)).sum::<usize>() + 1;
    while total(&parts) > width {
        let Some(worst) = parts
            .iter()
            .enumerate()
            .filter(|(_, p)| p.rank > 0)
            .max_by_key(|(_, p)| p.rank)
            .map(|(i, _)| i)
        else {
            break;
        };
        let dropped = parts.remove(worst);
        if dropped.right && dropped.rank == 2 {
            // The long gauge goes; the short one takes its place.
            let short = dropped.text.split(" of ").next().unwrap_or_default().to_owned() + " ";
            parts.push(Part { text: short, style: dropped.style, right: true, rank: 1 });
        }
    }
    let left: Vec<&Part> = parts.iter().filter(|p| !p.right).collect();
    let right: Vec<&Part> = parts.iter().filter(|p| p.right).collect();
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for p in &left {
        let room = width.saturating_sub(used);
        let text: String = cut(&p.text, room);
        used += text_width::width(&text);
        spans.push(Span::styled(text, p.style));
    }
    let right_w: usize = right.iter().map(|p| text_width::width(&p.text)).sum();
    if used + 1 + right_w <= width {
        spans.push(Span::raw(" ".repeat(width - used - right_w)));
        for p in right {
            spans.push(Span::styled(p.text.clone(), p.style));
        }
    }
    Line::from(spans)
}

/// `text` cut to `room` columns.
fn cut(text: &str, room: usize) -> String {
    text_width::prefix(text, room).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(text: &str, right: bool, rank: u8) -> Part {
        Part { text: text.into(), style: Style::default(), right, rank }
    }

    fn text(line: &Line<'static>) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn parts_drop_by_rank_and_never_overlap() {
        let parts = || {
            vec![
                part(" streaming…", false, 0),
                part(" · Esc interrupts", false, 5),
                part("mock-model · ", true, 4),
                part("ctx 35% of 25k (estimated, window unverified) ", true, 2),
                part("ctx 35% ", true, 1),
            ]
        };
        let wide = text(&fit(parts(), 100));
        assert!(wide.starts_with(" streaming… · Esc interrupts"), "{wide}");
        assert!(wide.ends_with("mock-model · ctx 35% of 25k (estimated, window unverified) "));
        let narrow = text(&fit(parts(), 60));
        assert!(narrow.contains("streaming…") && narrow.contains("ctx 35%"), "{narrow}");
        assert!(!narrow.contains("interruptsmock"), "{narrow}");
        for width in 1..100 {
            let line = fit(parts(), width);
            assert!(line.width() <= width, "{width}: {}", text(&line));
        }
        assert_eq!(text(&fit(parts(), 20)), " streaming… ctx 35% ");
    }
}
