//! "The model wants to run X": the approval view.
//!
//! The headline (the command, or the path written) and the keys are always on screen, at any
//! pane height; between them the body — a write's or an edit's diff, coloured, or the call's
//! arguments — scrolls with ↑↓ and PgUp/PgDn, its position in the title. On a small terminal
//! the body gets the rows the view can spare: the reason line goes first, then the keys shrink
//! to their short form, before the diff drops below six rows (`BODY_ROWS`); a diff's
//! `---`/`+++` lines, which repeat the headline's path, are not shown. Keys: `y` once; `a` the
//! first "always" offered (this exact command, or edits inside the workspace), `p` the second
//! (commands starting with the same program and subcommand), each shown with what it allows;
//! `n` or Esc deny; `r` deny with a reason the model reads. Ctrl+C interrupts the turn. After
//! the sandbox refused a command a write, the same view asks whether to rerun it unconfined:
//! then only `u` reruns it (once), and `n`, Esc or `r` keep the refused result — `y` does
//! nothing, so no habitual key lifts the sandbox.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use codewhale_protocol::{ApprovalOffer, ApprovalScope};

use super::views::{frame, is_ctrl_c, View, ViewAction, ViewKind};
use super::wrap::{wrap_line, wrap_lines};

/// The approval view.
#[derive(Debug, Clone)]
pub struct ApprovalView {
    pub call_id: String,
    pub name: String,
    /// What the call acts on: the command, or the path.
    pub headline: String,
    /// The diff, or the arguments one per line.
    pub body: String,
    pub is_diff: bool,
    pub reason: String,
    pub offers: Vec<ApprovalOffer>,
    scroll: usize,
    /// The reason being typed after `r`.
    denial: Option<String>,
}

/// Keys for the offers, in order.
const OFFER_KEYS: [char; 2] = ['a', 'p'];
/// Rows of the body the view keeps, before the reason line and the long key labels, when the
/// body has that many.
const BODY_ROWS: usize = 6;

impl ApprovalView {
    pub fn new(
        call_id: String,
        name: String,
        input: &serde_json::Value,
        reason: String,
        offers: Vec<ApprovalOffer>,
        diff: Option<String>,
    ) -> ApprovalView {
        let headline = match (input.get("command"), input.get("path")) {
            (Some(c), _) => c.as_str().unwrap_or_default().to_owned(),
            (_, Some(p)) => p.as_str().unwrap_or_default().to_owned(),
            _ => String::new(),
        };
        let (body, is_diff) = match diff {
            Some(diff) => (diff, true),
            None => (arguments(input), false),
        };
        ApprovalView {
            call_id,
            name,
            headline,
            body,
            is_diff,
            reason,
            offers,
            scroll: 0,
            denial: None,
        }
    }

    fn head(&self, width: usize, reason: bool) -> Vec<Line<'static>> {
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let mut lines = wrap_line(
            &Line::from(vec![
                Span::styled(format!("{} ", self.name), Style::new().fg(Color::Cyan)),
                Span::styled(self.headline.replace('\n', " ⏎ "), bold),
            ]),
            width,
        );
        if reason && !self.reason.is_empty() {
            lines.extend(wrap_line(
                &Line::styled(self.reason.clone(), Style::new().fg(Color::DarkGray)),
                width,
            ));
        }
        lines
    }

    /// The keys; `short` names each in a word or two, for a narrow or low pane.
    fn keys(&self, width: usize, short: bool) -> Vec<Line<'static>> {
        let key = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
        if let Some(typed) = &self.denial {
            return wrap_line(
                &Line::from(vec![
                    Span::styled("reason for the model: ", key),
                    Span::raw(typed.clone()),
                    Span::styled("▏ Enter deny · Esc back", Style::new().fg(Color::DarkGray)),
                ]),
                width,
            );
        }
        if let Some((k, scope)) = self.rerun() {
            let git = scope == ApprovalScope::GitWritable;
            if short {
                return wrap_line(
                    &Line::from(vec![
                        Span::styled(k.to_string(), key),
                        Span::raw(if git {
                            " .git writable once  "
                        } else {
                            " rerun unsandboxed  "
                        }),
                        Span::styled("n", key),
                        Span::raw(" keep  "),
                        Span::styled("r", key),
                        Span::raw(" why"),
                    ]),
                    width,
                );
            }
            let (does, keeps) = if git {
                (" run once with .git writable  ", " keep .git read-only  ")
            } else {
                (" rerun once without the sandbox  ", " keep the sandbox  ")
            };
            return wrap_line(
                &Line::from(vec![
                    Span::styled(k.to_string(), key),
                    Span::raw(does),
                    Span::styled("n", key),
                    Span::raw(keeps),
                    Span::styled("r", key),
                    Span::raw(" keep it, saying why"),
                ]),
                width,
            );
        }
        let mut spans = vec![Span::styled("y", key), Span::raw(" once  ")];
        for ((offer, k), word) in self.grant_offers().zip(OFFER_KEYS).zip(["always", "prefix"]) {
            spans.push(Span::styled(k.to_string(), key));
            let label = if short { word } else { offer.label.as_str() };
            spans.push(Span::raw(format!(" {label}  ")));
        }
        spans.extend([
            Span::styled("n", key),
            Span::raw(" deny  "),
            Span::styled("r", key),
            Span::raw(if short { " why" } else { " deny, saying why" }),
        ]);
        wrap_line(&Line::from(spans), width)
    }

    /// The headline and the keys for a pane of `rows` rows: the long forms while the body
    /// keeps [`BODY_ROWS`] rows (or all of its own), the reason dropped first, then the long
    /// key labels.
    fn frame_lines(&self, width: usize, rows: usize) -> (Vec<Line<'static>>, Vec<Line<'static>>) {
        let want = self.body_lines(width).len().min(BODY_ROWS);
        for (reason, short) in [(true, false), (false, false), (false, true)] {
            let (head, keys) = (self.head(width, reason), self.keys(width, short));
            if rows.saturating_sub(head.len() + keys.len()) >= want {
                return (head, keys);
            }
        }
        (self.head(width, false), self.keys(width, true))
    }

    /// The question after a refused write — rerun without the sandbox (`u`), or with `.git`
    /// writable (`g`)? — with its key.
    fn rerun(&self) -> Option<(char, ApprovalScope)> {
        self.offers.iter().find_map(|o| match o.scope {
            ApprovalScope::Unconfined => Some(('u', o.scope)),
            ApprovalScope::GitWritable => Some(('g', o.scope)),
            _ => None,
        })
    }

    /// The "always" offers, keyed `a` and `p`.
    fn grant_offers(&self) -> impl Iterator<Item = &ApprovalOffer> {
        self.offers
            .iter()
            .filter(|o| !matches!(o.scope, ApprovalScope::Unconfined | ApprovalScope::GitWritable))
    }

    fn body_lines(&self, width: usize) -> Vec<Line<'static>> {
        // A diff's file lines repeat the headline's path.
        let skip = if self.is_diff {
            self.body
                .lines()
                .take(2)
                .take_while(|l| l.starts_with("--- ") || l.starts_with("+++ "))
                .count()
        } else {
            0
        };
        let lines: Vec<Line<'static>> = self
            .body
            .lines()
            .skip(skip)
            .map(|l| {
                let style =
                    if self.is_diff { super::diff_cell::diff_style(l) } else { Style::new() };
                Line::styled(l.to_owned(), style)
            })
            .collect();
        wrap_lines(&lines, width)
    }
}

/// One line per argument, long values cut.
fn arguments(input: &serde_json::Value) -> String {
    const MAX: usize = 2_000;
    let Some(args) = super::tool_cell::argument_texts(input) else { return input.to_string() };
    args.iter()
        .map(|(k, v)| {
            let count = v.chars().count();
            if count > MAX {
                let kept: String = v.chars().take(MAX).collect();
                format!("{k}: {kept}… ({} more characters)", count - MAX)
            } else {
                format!("{k}: {v}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl View for ApprovalView {
    fn kind(&self) -> ViewKind {
        ViewKind::Approval
    }

    fn desired_height(&self, width: u16) -> u16 {
        let w = usize::from(width).max(1);
        let h = self.head(w, true).len()
            + self.body_lines(w).len().min(30)
            + self.keys(w, false).len()
            + 1;
        u16::try_from(h).unwrap_or(u16::MAX)
    }

    fn render(&self, area: Rect, buf: &mut Buffer) {
        // The frame takes the top row.
        let w = usize::from(area.width).max(1);
        let rows = usize::from(area.height.saturating_sub(1));
        // The keys first (bottom), then the headline (top), then whatever room is left.
        let (head, keys) = self.frame_lines(w, rows);
        let keys_h = keys.len().min(rows);
        let head_h = head.len().min(rows - keys_h);
        let body_h = rows - keys_h - head_h;
        let body = self.body_lines(w);
        let scroll = self.scroll.min(body.len().saturating_sub(body_h));
        // Where the body is, in the title, when it does not fit.
        let title = if body.len() > body_h && body_h > 0 {
            format!("approval needed · ↕ {}/{} ↑↓ PgUp PgDn", scroll + body_h, body.len())
        } else {
            "approval needed".to_owned()
        };
        let inner = frame(&title, area, buf);
        let mut lines: Vec<Line<'static>> = head.into_iter().take(head_h).collect();
        lines.extend(body.iter().skip(scroll).take(body_h).cloned());
        while lines.len() < rows - keys_h {
            lines.push(Line::default());
        }
        lines.extend(keys.into_iter().take(keys_h));
        Paragraph::new(lines).render(inner, buf);
    }

    fn handle_key(&mut self, key: KeyEvent) -> ViewAction {
        if is_ctrl_c(&key) {
            return ViewAction::Interrupt;
        }
        let call_id = self.call_id.clone();
        if let Some(typed) = self.denial.as_mut() {
            match key.code {
                KeyCode::Enter => {
                    let reason = Some(typed.trim().to_owned()).filter(|r| !r.is_empty());
                    return ViewAction::Deny { call_id, reason };
                }
                KeyCode::Esc => self.denial = None,
                KeyCode::Backspace => {
                    typed.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => typed.push(c),
                _ => {}
            }
            return ViewAction::Stay;
        }
        let offer = |i: usize| self.grant_offers().nth(i).map(|o| o.scope);
        let special = self.rerun();
        let rerun = special.is_some();
        match key.code {
            KeyCode::Char(c) if special.is_some_and(|(k, _)| c.eq_ignore_ascii_case(&k)) => {
                match special {
                    Some((_, scope)) => ViewAction::Approve { call_id, scope },
                    None => ViewAction::Stay,
                }
            }
            KeyCode::Char('y') | KeyCode::Char('Y') if !rerun => {
                ViewAction::Approve { call_id, scope: ApprovalScope::Once }
            }
            KeyCode::Char('a') | KeyCode::Char('A') => match offer(0) {
                Some(scope) => ViewAction::Approve { call_id, scope },
                None => ViewAction::Stay,
            },
            KeyCode::Char('p') | KeyCode::Char('P') => match offer(1) {
                Some(scope) => ViewAction::Approve { call_id, scope },
                None => ViewAction::Stay,
            },
            KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc => {
                ViewAction::Deny { call_id, reason: None }
            }
            KeyCode::Char('r') | KeyCode::Char('R') => {
                self.denial = Some(String::new());
                ViewAction::Stay
            }
            KeyCode::Up => {
                self.scroll = self.scroll.saturating_sub(1);
                ViewAction::Stay
            }
            KeyCode::Down => {
                self.scroll += 1;
                ViewAction::Stay
            }
            KeyCode::PageUp => {
                self.scroll = self.scroll.saturating_sub(10);
                ViewAction::Stay
            }
            KeyCode::PageDown => {
                self.scroll += 10;
                ViewAction::Stay
            }
            _ => ViewAction::Stay,
        }
    }
}
