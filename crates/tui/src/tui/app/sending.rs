//! The way out of the composer: a typed line becomes a command, a custom command, a `!CMD` or a
//! message; a message is sent, queued while the engine is busy, or confirmed first when it is
//! larger than the usable input; a message that comes back (no reply, a rewind) returns to the
//! composer or the history.
//!
//! Invariants: a message is only sent when nothing runs (one typed meanwhile is queued, in
//! sight, and sent in the order typed when the engine is idle again); a message that could not
//! be sent is never lost — it stays in the composer.

use codewhale_protocol::Op;

use super::{App, Lifecycle, Outgoing};
use crate::tui::cells::{NoticeKind, UserCell};
use crate::tui::event::Effect;
use crate::tui::prompts::ConfirmSend;
use crate::tui::slash;

impl App {
    /// Enter on a message or a command (chips already unfolded in `text`).
    pub(crate) fn submit_text(&mut self, text: String) {
        self.popups.popup_dismissed = false;
        self.popups.mention = None;
        if text.trim().is_empty() {
            return;
        }
        self.effects.push(Effect::RememberPrompt(text.clone()));
        if let Some(parsed) = slash::parse(&text) {
            match parsed {
                Ok(invocation) => {
                    self.run_command(invocation);
                    return;
                }
                // A custom command goes like a message (queued while a turn runs); the
                // engine fills it in ([`App::send_message`]).
                Err(slash::UnknownCommand(name))
                    if slash::offered(&self.session.commands).any(|c| c.name == name) => {}
                Err(slash::UnknownCommand(name)) => {
                    let why = self
                        .session
                        .commands
                        .iter()
                        .find(|c| c.name == name)
                        .and_then(|c| c.unavailable.clone());
                    let text = why.unwrap_or_else(|| {
                        format!("unknown command /{name}; /help lists the commands")
                    });
                    self.notice(NoticeKind::Error, text);
                    return;
                }
            }
        }
        let mut mentions = std::mem::take(&mut self.popups.mentions);
        mentions.retain(|path| text.contains(&format!("@{path}")));
        mentions.dedup();
        self.typed_image_mentions(&text, &mut mentions);
        let message = Outgoing { text, attachments: mentions };
        if self.lifecycle.busy() && !self.keys.quitting {
            // Sent when the turn (or the pass) ends, in the order typed; shown meanwhile.
            self.outbox.queued.push_back(message);
            self.transcript.scroll_down(usize::MAX);
            return;
        }
        if self.keys.quitting {
            self.composer.set_text(&message.text);
            return;
        }
        let tokens = codewhale_engine::estimate_tokens(&message.text);
        if let Some(gauge) = self.session.gauge.filter(|g| tokens > g.usable_input) {
            self.views.push(ConfirmSend {
                text: message.text,
                tokens,
                usable_input: gauge.usable_input,
            });
            self.popups.mentions = message.attachments;
            return;
        }
        if !self.send_message(message.clone()) {
            self.composer.set_text(&message.text);
            self.popups.mentions = message.attachments;
        }
        self.transcript.scroll_down(usize::MAX);
    }

    /// Starts a turn with `message` — or, for `!CMD`, runs the user's own command; false when
    /// no session is open to take it.
    pub(crate) fn send_message(&mut self, message: Outgoing) -> bool {
        let Outgoing { text, attachments } = message;
        if let Some(command) = text.trim_start().strip_prefix('!') {
            if command.trim().is_empty() {
                let said = "nothing to run: type a command after `!`, e.g. `!git status`";
                self.notice(NoticeKind::Warning, said);
                return true;
            }
            // The engine's `user_shell_started` adds the cell.
            let op = Op::UserShell { command: command.to_owned() };
            if self.submit(op).is_none() {
                return false;
            }
            self.lifecycle = Lifecycle::RunningTool { name: format!("!{}", command.trim()) };
            return true;
        }
        let op = match self.custom_invocation(&text) {
            Some((name, args)) => Op::RunCommand { name, args },
            None => Op::UserInput {
                text: text.clone(),
                attachments: attachments.clone(),
                images: Vec::new(),
            },
        };
        if self.submit(op).is_none() {
            return false;
        }
        let mut shown = text;
        // An image is shown by the engine's account of it (`ImagesAttached`).
        for path in attachments.iter().filter(|p| !codewhale_engine::images::looks_like_image(p)) {
            shown.push_str(&format!("\n📎 {path}"));
        }
        self.transcript.push(UserCell { text: shown });
        self.lifecycle = Lifecycle::Streaming { thinking: false };
        true
    }

    /// `/NAME args` of a custom command this workspace offers: its name and arguments.
    fn custom_invocation(&self, text: &str) -> Option<(String, String)> {
        let Some(Err(slash::UnknownCommand(name))) = slash::parse(text) else { return None };
        slash::offered(&self.session.commands).find(|c| c.name == name)?;
        let rest = text.trim_start().strip_prefix('/')?.strip_prefix(name.as_str())?;
        Some((name, rest.trim().to_owned()))
    }

    /// Once the engine is idle: the first queued message starts the next turn (the others wait
    /// for it, as typed).
    pub(crate) fn send_queued(&mut self) {
        if self.lifecycle != Lifecycle::Idle {
            return;
        }
        if let Some(message) = self.outbox.queued.pop_front() {
            if !self.send_message(message.clone()) {
                self.composer.set_text(&message.text);
            }
        }
    }

    /// The engine gave back a message it could not answer: offered for editing.
    /// `/rewind` or `/fork` went back to before a message: its text is back for editing.
    pub(crate) fn edit_again(&mut self, text: String) {
        if self.composer.is_empty() {
            self.composer.set_text(&text);
            self.notice(
                NoticeKind::Info,
                "the message is back in the composer: edit it and press Enter to send it from here",
            );
        } else {
            self.composer.remember(&text);
            self.notice(NoticeKind::Info, "the message went back to the history; Up recalls it");
        }
    }

    pub(crate) fn message_taken_back(&mut self, text: String) {
        if self.composer.is_empty() {
            self.composer.set_text(&text);
            self.notice(
                NoticeKind::Info,
                "the message got no reply, so it is back in the composer: edit it or press \
                 Enter to send it again",
            );
        } else {
            self.composer.remember(&text);
            self.notice(
                NoticeKind::Info,
                "the message got no reply and was taken back; Up recalls it",
            );
        }
    }
}
