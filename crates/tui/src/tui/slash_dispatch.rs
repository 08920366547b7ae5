//! Running a slash command: each [`SlashCommand`] becomes an engine op, an effect for the
//! event loop, or a view; and the results of those effects become views or notices.
//!
//! Invariant: a command that is not allowed while a turn runs is refused with a notice and
//! never reaches the engine (which would refuse it too, less clearly).

use codewhale_engine::compaction::report::ContextReport;
use codewhale_engine::protocol::Op;
use codewhale_engine::session::Resume;

use super::app::{App, Pending};
use super::cells::NoticeKind;
use super::event::{AppEvent, Effect};
use super::slash::{self, Invocation, SlashCommand};
use super::views::{SessionPicker, TextView};

impl App {
    pub(crate) fn run_command(&mut self, inv: Invocation) {
        let cmd = inv.command;
        if self.lifecycle.turn_running() && !cmd.allowed_during_turn() {
            self.notice(
                NoticeKind::Warning,
                format!(
                    "/{} is not available while a turn runs; wait for it to finish or press Ctrl+C",
                    cmd.name()
                ),
            );
            return;
        }
        let args = inv.args;
        match cmd {
            SlashCommand::Compact => {
                let focus = (!args.is_empty()).then_some(args);
                self.submit(Op::Compact { focus });
            }
            SlashCommand::Context => self.effects.push(Effect::LoadContext),
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
                self.submit(Op::SwitchModel { model: args.clone() });
                self.model = args;
            }
            SlashCommand::Help => {
                self.views.push(Box::new(TextView::new("help", &slash::help_text())))
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
            "list" if rest.trim().is_empty() => self.effects.push(Effect::ListAnchors),
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
            AppEvent::ContextLoaded(Ok(report)) => {
                self.views.push(Box::new(TextView::new("context", &context_text(&report))))
            }
            AppEvent::SessionsLoaded { all, result: Ok(rows) } => {
                let title = if all { "sessions" } else { "resume a session of this workspace" };
                self.views.push(Box::new(SessionPicker::new(title, rows)));
            }
            AppEvent::AnchorsLoaded(Ok(anchors)) if anchors.is_empty() => {
                self.notice(NoticeKind::Info, "no anchors; /anchor <text> pins one")
            }
            AppEvent::AnchorsLoaded(Ok(anchors)) => {
                let list: Vec<String> =
                    anchors.iter().enumerate().map(|(i, a)| format!("{}. {a}", i + 1)).collect();
                self.notice(NoticeKind::Info, format!("anchors:\n{}", list.join("\n")));
            }
            AppEvent::HistoryLoaded { replace, result: Ok(items) } => {
                let mut earlier = super::transcript::Transcript::default();
                super::history::push_all(&mut earlier, items);
                if replace {
                    earlier.push(super::cells::NoticeCell {
                        kind: NoticeKind::Info,
                        text: "the conversation above is what the model reads at the new HEAD"
                            .to_owned(),
                    });
                    self.transcript = earlier;
                } else {
                    self.transcript.prepend(earlier);
                }
            }
            AppEvent::NoteLoaded { id, note: Ok(note) } => {
                self.transcript.update_last(|cell| {
                    cell.as_compaction_mut().is_some_and(|c| {
                        let hit = c.summary.id == id;
                        if hit {
                            c.note = Some(note.clone());
                        }
                        hit
                    })
                });
            }
            AppEvent::ContextLoaded(Err(e))
            | AppEvent::NoteLoaded { note: Err(e), .. }
            | AppEvent::HistoryLoaded { result: Err(e), .. }
            | AppEvent::SessionsLoaded { result: Err(e), .. }
            | AppEvent::AnchorsLoaded(Err(e))
            | AppEvent::SessionOpenFailed(e) => self.notice(NoticeKind::Error, e),
            AppEvent::Engine(_) | AppEvent::Input(_) | AppEvent::EngineGone => {}
        }
    }
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
