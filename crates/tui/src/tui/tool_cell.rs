//! A tool call in the transcript: one line while folded (what ran, how it ended, in words for
//! the user), the live tail of a running command with its elapsed time, and when unfolded the
//! head and tail of the output with the exit code and how many lines were left out (Ctrl+T
//! opens all of it). The user's own command (`!CMD`) is not folded away: its first
//! [`USER_SHELL_LINES`] lines show under it, the rest behind the fold (Ctrl+O), live and after
//! a resume alike. Colours in output are drawn, other escape sequences dropped.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use codewhale_protocol::CallEnd;

use super::ansi;
use super::cell::{folding_cell, gutter, Cell};
use super::text_width;
use super::wrap::wrap_line;

/// The tool call `cell` shows, when it shows one.
pub fn tool_mut(cell: &mut dyn Cell) -> Option<&mut ToolCell> {
    cell.content_mut().downcast_mut::<ToolCell>()
}

/// Lines an unfolded output shows from its start and from its end.
const HEAD_LINES: usize = 20;
const TAIL_LINES: usize = 20;
/// Lines of the user's own command's output (`!CMD`) shown while its cell is folded.
pub const USER_SHELL_LINES: usize = 10;
/// Lines of a running command's output shown live.
const LIVE_LINES: usize = 4;
/// Bytes of live output kept (the result has all of it).
const LIVE_BYTES: usize = 8 * 1024;

/// Where a tool call is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolState {
    Requested,
    Running {
        elapsed_secs: u64,
        /// The newest output, for the live view.
        live: String,
    },
    Done {
        end: CallEnd,
        exit_code: Option<i32>,
        /// Whether `output` states the exit code itself (the engine says so), so the cell
        /// does not repeat it.
        exit_code_in_output: bool,
        /// For a call the user declined: what they said with the no.
        reason: Option<String>,
        output: String,
    },
}

/// A tool call and, once it finished, its result.
#[derive(Debug, Clone)]
pub struct ToolCell {
    pub call_id: String,
    pub name: String,
    /// The call's arguments in one line (`path=src/main.rs`).
    pub summary: String,
    pub state: ToolState,
    pub expanded: bool,
    /// Chosen with Alt+↑/↓: Ctrl+O and Ctrl+T act on it.
    pub focused: bool,
    /// Lines of the finished output shown while folded: none for the model's calls,
    /// [`USER_SHELL_LINES`] for the user's own command.
    pub preview: usize,
    /// A `task` call's child session, once it started: Ctrl+T opens its conversation.
    pub subagent: Option<String>,
}

impl ToolCell {
    /// A call the model just asked for.
    pub fn new(call_id: String, name: String, input: &serde_json::Value) -> ToolCell {
        ToolCell {
            call_id,
            name,
            summary: summarize_input(input),
            state: ToolState::Requested,
            expanded: false,
            focused: false,
            preview: 0,
            subagent: None,
        }
    }

    /// A shell command the user ran themselves (`!CMD`): shown as `! command`.
    pub fn user_shell(call_id: String, command: &str, state: ToolState) -> ToolCell {
        ToolCell {
            call_id,
            name: "!".to_owned(),
            summary: command.replace('\n', "⏎"),
            state,
            expanded: false,
            focused: false,
            preview: USER_SHELL_LINES,
            subagent: None,
        }
    }

    /// Adds output that just arrived to the live view.
    pub fn push_live(&mut self, text: &str) {
        if let ToolState::Running { live, .. } = &mut self.state {
            live.push_str(text);
            if live.len() > LIVE_BYTES {
                let cut = live.ceil_char_boundary(live.len() - LIVE_BYTES);
                live.drain(..cut);
            }
        }
    }

    /// What a running subagent does now, as its live line: its step, the tokens its view
    /// holds and its compactions (replacing the line before).
    pub fn set_subagent_step(&mut self, step: &str, tokens: u64, compactions: u32) {
        if let ToolState::Running { live, .. } = &mut self.state {
            let s = if compactions == 1 { "" } else { "s" };
            let tokens = crate::tui::cells::short_tokens(tokens);
            *live = format!("{step} · {tokens} tokens · {compactions} compaction{s}");
        }
    }

    /// Whether the folded cell leaves any of `output` out (what the fold mark says).
    fn hides(&self, output: &str) -> bool {
        self.preview == 0 || output.lines().count() > self.preview
    }

    /// The whole output, for the pager.
    pub fn output(&self) -> Option<&str> {
        match &self.state {
            ToolState::Done { output, .. } => Some(output),
            ToolState::Running { live, .. } => Some(live),
            ToolState::Requested => None,
        }
    }

    /// The folded cell's line as plain text: "✓ shell command=ls · 6 lines".
    pub fn folded_line(&self) -> String {
        let (mark, _, status) = self.status();
        format!("{mark} {} {} · {status}", self.name, self.summary)
    }

    fn status(&self) -> (&'static str, Style, String) {
        let grey = Style::new().fg(Color::DarkGray);
        match &self.state {
            ToolState::Requested => ("○", grey, "waiting".to_owned()),
            ToolState::Running { elapsed_secs, .. } => {
                ("◐", Style::new().fg(Color::Yellow), format!("running {}", elapsed(*elapsed_secs)))
            }
            ToolState::Done { end: CallEnd::Completed, output, .. } => {
                let n = output.lines().count();
                let what = if n == 1 { "1 line".to_owned() } else { format!("{n} lines") };
                ("✓", Style::new().fg(Color::Green), what)
            }
            ToolState::Done { end: CallEnd::Failed, exit_code: Some(code), .. } => {
                ("✗", Style::new().fg(Color::Red), format!("failed, exit code {code}"))
            }
            ToolState::Done { end: CallEnd::Failed, output, .. } => {
                let first = output.lines().find(|l| !l.trim().is_empty()).unwrap_or("failed");
                ("✗", Style::new().fg(Color::Red), format!("failed: {}", ansi::strip(first)))
            }
            ToolState::Done { end: CallEnd::TimedOut, .. } => {
                ("✗", Style::new().fg(Color::Red), "timed out, killed".to_owned())
            }
            ToolState::Done { end: CallEnd::Denied, reason, .. } => {
                let what = match reason {
                    Some(said) => format!("denied by you: {}", ansi::strip(said)),
                    None => "denied by you".to_owned(),
                };
                ("⊘", Style::new().fg(Color::Yellow), what)
            }
            ToolState::Done { end: CallEnd::NotApproved, .. } => (
                "⊘",
                Style::new().fg(Color::Yellow),
                "not run: it needs an approval no one could give here".to_owned(),
            ),
            ToolState::Done { end: CallEnd::NotRun, .. } => (
                "⊘",
                Style::new().fg(Color::Yellow),
                "not run: too many calls in one reply".to_owned(),
            ),
            ToolState::Done { end: CallEnd::Interrupted, .. } => {
                ("◼", Style::new().fg(Color::Yellow), "interrupted".to_owned())
            }
        }
    }
}

/// `65` as `1 min 5 s`.
fn elapsed(secs: u64) -> String {
    match secs {
        0..=59 => format!("{secs} s"),
        _ => format!("{} min {} s", secs / 60, secs % 60),
    }
}

/// A call's arguments as (name, text) pairs: strings unquoted, other values as JSON. `None`
/// when the input is not an object.
pub fn argument_texts(input: &serde_json::Value) -> Option<Vec<(&str, String)>> {
    let serde_json::Value::Object(map) = input else { return None };
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    Some(map.iter().map(|(k, v)| (k.as_str(), text(v))).collect())
}

/// `{"path":"a.rs","limit":10}` as `path=a.rs limit=10`, strings unquoted, newlines shown as ⏎.
pub fn summarize_input(input: &serde_json::Value) -> String {
    match argument_texts(input) {
        Some(args) => args
            .iter()
            .map(|(k, v)| format!("{k}={}", v.replace('\n', "⏎")))
            .collect::<Vec<_>>()
            .join(" "),
        None => input.to_string(),
    }
}

impl Cell for ToolCell {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let (mark, mark_style, status) = self.status();
        let w = usize::from(width).max(1);
        let head = format!("{} {}", self.name, self.summary);
        let fold = match (&self.state, self.expanded) {
            (ToolState::Done { output, .. }, false) if self.hides(output) => " …",
            _ => "",
        };
        let room = w.saturating_sub(text_width::width(&status) + 6).max(8);
        let head: String = if text_width::width(&head) > room {
            format!("{}…", text_width::prefix(&head, room.saturating_sub(1)))
        } else {
            head
        };
        let mark_style =
            if self.focused { mark_style.add_modifier(Modifier::REVERSED) } else { mark_style };
        let line = Line::from(vec![
            Span::styled(format!("{mark} "), mark_style),
            Span::styled(head, Style::new().add_modifier(Modifier::BOLD)),
            Span::styled(format!(" · {status}"), Style::new().fg(Color::DarkGray)),
            Span::styled(fold.to_owned(), Style::new().fg(Color::DarkGray)),
        ]);
        let mut out = wrap_line(&line, w);
        let grey = Style::new().fg(Color::DarkGray);
        match &self.state {
            ToolState::Running { live, .. } if !live.trim().is_empty() => {
                let all = ansi::lines(live, Style::new().fg(Color::Gray));
                let skip = all.len().saturating_sub(LIVE_LINES);
                out.extend(gutter(
                    "  ┆ ",
                    "  ┆ ",
                    grey,
                    all.into_iter().skip(skip).collect(),
                    width,
                ));
            }
            ToolState::Done { output, exit_code, exit_code_in_output, .. } if self.expanded => {
                let all = ansi::lines(output, Style::new().fg(Color::Gray));
                let total = all.len();
                let mut body: Vec<Line<'static>> = Vec::new();
                if total > HEAD_LINES + TAIL_LINES {
                    body.extend(all[..HEAD_LINES].iter().cloned());
                    let left = total - HEAD_LINES - TAIL_LINES;
                    body.push(Line::styled(
                        format!("… {left} lines left out · Ctrl+T shows all {total} …"),
                        grey,
                    ));
                    body.extend(all[total - TAIL_LINES..].iter().cloned());
                } else {
                    body = all;
                }
                if exit_code.is_some_and(|c| c != 0) && !exit_code_in_output {
                    body.push(Line::styled(
                        format!("exit code {}", exit_code.unwrap_or_default()),
                        Style::new().fg(Color::Red),
                    ));
                }
                out.extend(gutter("  │ ", "  │ ", grey, body, width));
            }
            ToolState::Done { output, .. } if self.preview > 0 => {
                let all = ansi::lines(output, Style::new().fg(Color::Gray));
                let total = all.len();
                let mut body: Vec<Line<'static>> = all.into_iter().take(self.preview).collect();
                if total > self.preview {
                    let more = total - self.preview;
                    let s = if more == 1 { "" } else { "s" };
                    body.push(Line::styled(
                        format!("… {more} more line{s} · Ctrl+O unfolds · Ctrl+T shows all"),
                        grey,
                    ));
                }
                out.extend(gutter("  │ ", "  │ ", grey, body, width));
            }
            _ => {}
        }
        out
    }

    folding_cell!();

    fn tool_output(&self) -> Option<(String, String)> {
        let output = self.output()?;
        Some((format!("{} {}", self.name, self.summary), ansi::strip(output)))
    }

    fn text(&self) -> String {
        let mut text = format!("{} {}", self.name, self.summary);
        if let Some(output) = self.output() {
            text.push('\n');
            text.push_str(&ansi::strip(output));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A finished call; `exit_code_in_output` is what the engine says about `output`.
    fn finished(
        end: CallEnd,
        exit_code: Option<i32>,
        exit_code_in_output: bool,
        output: &str,
    ) -> ToolCell {
        let mut cell =
            ToolCell::new("c".into(), "shell".into(), &serde_json::json!({"command": "make"}));
        let output = output.into();
        cell.state = ToolState::Done { end, exit_code, exit_code_in_output, reason: None, output };
        cell
    }

    /// A finished call whose output does not state an exit code itself.
    fn done(end: CallEnd, exit_code: Option<i32>, output: &str) -> ToolCell {
        finished(end, exit_code, false, output)
    }

    fn first_line(cell: &ToolCell) -> String {
        cell.lines(80)[0].spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn every_ending_is_said_in_words_for_the_user() {
        assert!(first_line(&done(CallEnd::Completed, Some(0), "a\nb")).ends_with("· 2 lines …"));
        // The ending and the code are fields; the output's words play no part.
        assert!(first_line(&finished(CallEnd::Failed, Some(2), true, "oops\nexit status 2"))
            .contains("failed, exit code 2"));
        let mut denied = done(CallEnd::Denied, None, "refused before it ran");
        if let ToolState::Done { reason, .. } = &mut denied.state {
            *reason = Some("use the Makefile".into());
        }
        assert!(
            first_line(&denied).contains("denied by you: use the Makefile"),
            "{}",
            first_line(&denied)
        );
        assert!(first_line(&done(CallEnd::Interrupted, None, "partial")).contains("interrupted"));
        assert!(first_line(&done(CallEnd::TimedOut, None, "partial")).contains("timed out"));
        // Output worded like a user's no does not make one: only the ending decides.
        let unasked = done(CallEnd::NotApproved, None, "the user declined, and said: x");
        assert!(
            first_line(&unasked).contains("no one could give here"),
            "{}",
            first_line(&unasked)
        );
    }

    #[test]
    fn unfolded_output_shows_head_tail_the_count_left_out_and_the_exit_code() {
        let output: String =
            (1..=100).map(|i| format!("line {i}\n")).collect::<String>() + "exit status 1";
        let mut cell = finished(CallEnd::Failed, Some(1), true, &output);
        assert_eq!(cell.height(80), 1);
        cell.set_expanded(true);
        let text: Vec<String> = cell
            .lines(80)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert!(text[1].ends_with("line 1"));
        assert!(text.iter().any(|l| l.contains("61 lines left out · Ctrl+T shows all 101")));
        // The output states its code itself (a field says so): no second line is added.
        assert!(text.last().unwrap().ends_with("exit status 1"), "stated once: {text:?}");
        // Output that does not state its exit code gets a line that does.
        let mut bare = done(CallEnd::Failed, Some(3), "oops");
        bare.set_expanded(true);
        let last: String =
            bare.lines(80).last().unwrap().spans.iter().map(|s| s.content.as_ref()).collect();
        assert!(last.ends_with("exit code 3"), "{last}");
    }

    #[test]
    fn a_running_command_shows_its_newest_lines_and_time() {
        let mut cell =
            ToolCell::new("c".into(), "shell".into(), &serde_json::json!({"command": "make"}));
        cell.state = ToolState::Running { elapsed_secs: 75, live: String::new() };
        cell.push_live("one\ntwo\nthree\nfour\n\u{1b}[32mfive\u{1b}[0m\n");
        let text: Vec<String> = cell
            .lines(80)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert!(text[0].contains("running 1 min 15 s"), "{text:?}");
        assert_eq!(text.len(), 1 + LIVE_LINES);
        assert!(text.last().unwrap().ends_with("five"));
    }
}
