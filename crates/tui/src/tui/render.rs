//! Drawing one frame: transcript on top, then the bottom pane (the top modal view, or the
//! composer with its completion popup), then the status line.
//!
//! Pure with respect to the app: drawing reads state and never changes what the app will do
//! next (it only records the transcript's size for page-sized scrolling).

use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};
use ratatui::Frame;

use super::app::App;
use super::composer::layout::Cell;

/// Composer rows shown at most before it scrolls.
const MAX_COMPOSER_ROWS: usize = 8;
/// Queued messages listed above the prompt at most.
const MAX_QUEUED_SHOWN: usize = 3;
/// Columns of the `› ` prompt.
const PROMPT_WIDTH: usize = 2;

impl App {
    /// Draws the whole screen.
    pub fn draw(&mut self, frame: &mut Frame<'_>) {
        let area = frame.area();
        if area.height < 3 || area.width < 10 {
            Paragraph::new("window too small").render(area, frame.buffer_mut());
            return;
        }
        let status = Rect { y: area.bottom() - 1, height: 1, ..area };
        let room = area.height - 1;
        // The pane leaves the transcript a row or two when it can, and never takes more than
        // the room there is (a modal on a three-row terminal gets the two rows above status).
        let pane_height = match self.views.top() {
            Some(view) => view.desired_height(area.width).min(room.saturating_sub(2)).max(3),
            None => self.composer_height(area.width).min(room.saturating_sub(1)),
        }
        .clamp(1, room);
        let pane = Rect { y: status.y - pane_height, height: pane_height, ..area };
        let transcript = Rect { height: pane.y - area.y, ..area };
        self.screen.viewport = (transcript.width, transcript.height);
        self.transcript.render(transcript, frame.buffer_mut());
        match self.views.top() {
            Some(view) => view.render(pane, frame.buffer_mut()),
            None => {
                if let Some(cursor) = self.draw_composer(pane, frame) {
                    frame.set_cursor_position(cursor);
                }
                if self.popups.mention.is_some() {
                    self.draw_mentions(pane, frame);
                } else if self.popup_open() {
                    self.draw_popup(pane, frame);
                }
            }
        }
        self.draw_status(status, frame);
    }

    /// The composer's height: its rows (at most [`MAX_COMPOSER_ROWS`]), the queue and the
    /// border.
    fn composer_height(&mut self, width: u16) -> u16 {
        let inner = usize::from(width).saturating_sub(PROMPT_WIDTH).max(1);
        let rows = self.composer.layout(inner).rows.len().min(MAX_COMPOSER_ROWS);
        u16::try_from(rows + 1 + self.outbox.queued.len().min(MAX_QUEUED_SHOWN)).unwrap_or(2)
    }

    fn draw_composer(&mut self, area: Rect, frame: &mut Frame<'_>) -> Option<Position> {
        let block =
            Block::default().borders(Borders::TOP).border_style(Style::new().fg(Color::DarkGray));
        let mut inner = block.inner(area);
        block.render(area, frame.buffer_mut());
        // Messages waiting for the turn to end, oldest first, above the prompt.
        let queued: Vec<Line<'static>> = self
            .outbox
            .queued
            .iter()
            .take(MAX_QUEUED_SHOWN)
            .map(|message| {
                let first = message.text.lines().next().unwrap_or_default().to_owned();
                Line::from(vec![
                    Span::styled("⧗ queued ", Style::new().fg(Color::Yellow)),
                    Span::styled(first, Style::new().fg(Color::DarkGray)),
                ])
            })
            .collect();
        let shown = u16::try_from(queued.len()).unwrap_or(0).min(inner.height.saturating_sub(1));
        if shown > 0 {
            let area = Rect { height: shown, ..inner };
            Paragraph::new(queued).render(area, frame.buffer_mut());
            inner = Rect { y: inner.y + shown, height: inner.height - shown, ..inner };
        }
        if inner.height == 0 {
            return None;
        }
        let width = usize::from(inner.width).saturating_sub(PROMPT_WIDTH).max(1);
        let layout = self.composer.layout(width);
        let (cursor_row, cursor_col) = layout.cursor;
        let visible = usize::from(inner.height);
        let first = (cursor_row + 1).saturating_sub(visible);
        let lines: Vec<Line<'static>> = if self.composer.is_empty() {
            vec![Line::from(vec![
                Span::styled("› ", Style::new().fg(Color::Cyan)),
                Span::styled(
                    "Ask anything · / for commands · @ for files",
                    Style::new().fg(Color::DarkGray),
                ),
            ])]
        } else {
            layout
                .rows
                .iter()
                .enumerate()
                .skip(first)
                .take(visible)
                .map(|(i, row)| {
                    let lead = if i == 0 { "› " } else { "  " };
                    let mut spans = vec![Span::styled(lead, Style::new().fg(Color::Cyan))];
                    for (_, cell) in &row.cells {
                        spans.push(match cell {
                            Cell::Text(t) => Span::raw(t.to_string()),
                            Cell::Chip(label) => Span::styled(
                                label.clone(),
                                Style::new().fg(Color::Black).bg(Color::Cyan),
                            ),
                        });
                    }
                    Line::from(spans)
                })
                .collect()
        };
        Paragraph::new(lines).render(inner, frame.buffer_mut());
        let x = inner.x + u16::try_from(cursor_col + PROMPT_WIDTH).unwrap_or(u16::MAX);
        let y = inner.y + u16::try_from(cursor_row - first).unwrap_or(0);
        Some(Position { x: x.min(inner.right().saturating_sub(1)), y })
    }

    /// The `@` picker above the composer: the best matches, the chosen one highlighted.
    fn draw_mentions(&self, pane: Rect, frame: &mut Frame<'_>) {
        let Some(picker) = &self.popups.mention else { return };
        let dim = Style::new().fg(Color::DarkGray);
        let mut lines: Vec<Line<'static>> = picker
            .results
            .iter()
            .enumerate()
            .map(|(i, path)| {
                let style = if i == picker.selected {
                    Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
                } else {
                    Style::new()
                };
                Line::styled(format!("  @{path}"), style)
            })
            .collect();
        if lines.is_empty() {
            let text = if self.popups.files.is_none() {
                "  indexing the workspace…"
            } else {
                "  no file matches"
            };
            lines.push(Line::styled(text, dim));
        }
        lines.push(Line::styled("  Tab or Enter insert · ↑↓ choose · Esc close", dim));
        let height = u16::try_from(lines.len()).unwrap_or(0).min(pane.y);
        let area = Rect { y: pane.y - height, height, ..pane };
        Clear.render(area, frame.buffer_mut());
        Paragraph::new(lines).render(area, frame.buffer_mut());
    }

    fn draw_popup(&self, pane: Rect, frame: &mut Frame<'_>) {
        let matches = self.completions();
        if matches.is_empty() {
            return;
        }
        let height = u16::try_from(matches.len()).unwrap_or(0).min(pane.y);
        let area = Rect { y: pane.y - height, height, ..pane };
        Clear.render(area, frame.buffer_mut());
        let selected = self.popups.completion.min(matches.len() - 1);
        let lines: Vec<Line<'static>> = matches
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let style = if i == selected {
                    Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
                } else {
                    Style::new()
                };
                Line::from(vec![
                    Span::styled(format!("  {:<32}", c.usage()), style),
                    Span::styled(c.description(), Style::new().fg(Color::DarkGray)),
                ])
            })
            .collect();
        Paragraph::new(lines).render(area, frame.buffer_mut());
    }
}

/// `1536` as `1.5 KB`, `3_400_000` as `3.2 MB`.
pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
