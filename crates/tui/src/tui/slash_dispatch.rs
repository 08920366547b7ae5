//! Running a slash command: each [`SlashCommand`] becomes an engine op, an effect for the
//! event loop, or a view; and the results of those effects become views or notices.
//!
//! Invariant: a command that is not allowed while a turn runs is refused with a notice and
//! never reaches the engine (which would refuse it too, less clearly).

use codewhale_engine::protocol::{AnchorInfo, ContextReport, Op};
use codewhale_engine::Resume;

use super::app::{App, Lifecycle, Pending};
use super::cells::NoticeKind;
use super::event::{AppEvent, Effect};
use super::slash::{self, Invocation, SlashCommand};
use super::views::{SessionPicker, TextView};

impl App {
    pub(crate) fn run_command(&mut self, inv: Invocation) {
        let cmd = inv.command;
        if self.lifecycle.busy() && !cmd.allowed_during_turn() {
            let what = if self.lifecycle.turn_running() { "a turn" } else { "a compaction" };
            self.notice(
                NoticeKind::Warning,
                format!(
                    "/{} is not available while {what} runs; wait for it to finish or press Ctrl+C",
                    cmd.name()
                ),
            );
            return;
        }
        let args = inv.args;
        match cmd {
            SlashCommand::Compact => {
                let focus = (!args.is_empty()).then_some(args);
                if let Some(id) = self.submit(Op::Compact { focus }) {
                    // Busy from now on: a message typed before the pass starts is queued too.
                    self.lifecycle = Lifecycle::Compacting { in_turn: false };
                    self.pending.push((id, Pending::Compact));
                }
            }
            SlashCommand::Context => {
                if self.submit(Op::GetContext).is_some() && self.lifecycle.busy() {
                    self.notice(NoticeKind::Info, "the context report follows when this ends");
                }
            }
            SlashCommand::Anchor => self.anchor(&args),
            SlashCommand::New => self.effects.push(Effect::OpenSession(Resume::New)),
            SlashCommand::Resume if args.is_empty() => {
                self.effects.push(Effect::LoadSessions { all: false })
            }
            SlashCommand::Resume => self.effects.push(Effect::OpenSession(Resume::Id(args))),
            SlashCommand::Sessions => self.effects.push(Effect::LoadSessions { all: true }),
            SlashCommand::Fork | SlashCommand::Checkout | SlashCommand::Rewind
                if args.is_empty() =>
            {
                self.notice(
                    NoticeKind::Warning,
                    format!(
                        "usage: {}; /context lists the entry ids of the current view",
                        cmd.usage()
                    ),
                );
            }
            SlashCommand::Fork => self.move_head(Op::Fork { at: args }),
            SlashCommand::Checkout => self.move_head(Op::Checkout { to: args }),
            SlashCommand::Rewind => self.move_head(Op::Rewind { to: args }),
            SlashCommand::Model if args.is_empty() => {
                let model = self.model.clone();
                self.notice(NoticeKind::Info, format!("model: {model}; /model <name> switches"));
            }
            SlashCommand::Model => {
                // The status line follows the engine's next usage figures, not the request.
                self.submit(Op::SwitchModel { model: args });
            }
            SlashCommand::Help => {
                let text = slash::help_text(self.keyboard_enhanced);
                self.views.push(Box::new(TextView::new("help", &text)))
            }
            SlashCommand::Quit => self.quit(),
        }
    }

    fn move_head(&mut self, op: Op) {
        if let Some(id) = self.submit(op) {
            self.pending.push((id, Pending::HeadMove));
        }
    }

    fn anchor(&mut self, args: &str) {
        let (word, rest) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
        match word {
            "" => {
                self.notice(NoticeKind::Warning, format!("usage: {}", SlashCommand::Anchor.usage()))
            }
            "list" if rest.trim().is_empty() => {
                if let Some(id) = self.submit(Op::ListAnchors) {
                    self.pending.push((id, Pending::ListAnchors));
                }
            }
            "rm" => match rest.trim().parse::<usize>() {
                Ok(index) if index > 0 => {
                    self.submit(Op::RemoveAnchor { index });
                }
                _ => self.notice(
                    NoticeKind::Warning,
                    "usage: /anchor rm <n>, with n as numbered by /anchor list",
                ),
            },
            _ => {
                let text = args.to_owned();
                if let Some(id) = self.submit(Op::AddAnchor { text: text.clone() }) {
                    self.pending.push((id, Pending::Anchor(text)));
                }
            }
        }
    }

    /// The results of effects the event loop ran.
    pub(crate) fn on_loaded(&mut self, event: AppEvent) {
        match event {
            AppEvent::SessionsLoaded { all, result: Ok(rows) } => {
                let title = if all { "sessions" } else { "resume a session of this workspace" };
                self.views.push(Box::new(SessionPicker::new(title, rows)));
            }
            AppEvent::SessionOpening(bytes) => self.opening = bytes,
            AppEvent::SessionsLoaded { result: Err(e), .. } | AppEvent::SessionOpenFailed(e) => {
                self.opening = None;
                self.notice(NoticeKind::Error, e)
            }
            AppEvent::Engine(_)
            | AppEvent::Input(_)
            | AppEvent::EngineGone
            | AppEvent::DraftEdited(_)
            | AppEvent::SuspendUnavailable
            | AppEvent::FilesIndexed(_) => {}
        }
    }
}

/// `/anchor list`: each pinned note, numbered as `/anchor rm` takes it, and whether the model
/// reads it now.
pub fn anchors_text(anchors: &[AnchorInfo]) -> String {
    let mut out = String::from("anchors:");
    for a in anchors {
        let state =
            if a.in_view { "" } else { " (not in the view yet; the next checkpoint restates it)" };
        out.push_str(&format!(
            "\n{}. {}{state}",
            a.index,
            a.text.lines().next().unwrap_or_default()
        ));
    }
    out
}

/// The `/context` view: the engine's report in words, plus the view's entry ids (what
/// `/fork`, `/checkout` and `/rewind` take).
pub fn context_text(r: &ContextReport) -> String {
    let mut out = crate::commands::context::human(r);
    out.push_str("\nview, in request order (entry id · kind · tokens):\n");
    for v in &r.view {
        out.push_str(&format!("  {} · {} · {}\n", v.id, v.kind, v.tokens));
    }
    out
}
