//! What a view's choice does. A key pressed in a view (an approval, a picker, a question)
//! comes back as a [`ViewAction`]; the view that chose it closes, then the choice is carried
//! out — an op to the engine, an effect for the event loop, or text for the composer.
//!
//! Invariants: a choice closes the view that made it before anything else happens (so a view
//! the choice opens sits on top); an interrupt closes every approval, since no call waits any
//! more; `Stay` changes nothing.

use std::path::PathBuf;

use codewhale_protocol::{ApprovalMode, Op, TakeBack};

use crate::tui::app::{App, Lifecycle, Outgoing, Pending};
use crate::tui::cells::NoticeKind;
use crate::tui::event::Effect;
use crate::tui::views::{ViewAction, ViewKind};

impl App {
    /// A view answered a key: it closes (an interrupt closes every approval), and its choice
    /// is carried out.
    pub(crate) fn on_view_action(&mut self, action: ViewAction) {
        match action {
            ViewAction::Stay => {}
            ViewAction::Interrupt => {
                self.views.close(ViewKind::Approval);
                self.submit(Op::Interrupt);
            }
            chosen => {
                self.views.pop();
                self.carry_out(chosen);
            }
        }
    }

    /// Carries out the choice of a view that just closed, one step per choice.
    fn carry_out(&mut self, chosen: ViewAction) {
        match chosen {
            // `on_view_action` handles these without closing a view, or closing is all.
            ViewAction::Stay | ViewAction::Interrupt | ViewAction::Close => {}
            ViewAction::Approve { call_id, scope } => self.answered(Op::Approve { call_id, scope }),
            ViewAction::Deny { call_id, reason } => self.answered(Op::Deny { call_id, reason }),
            ViewAction::NewSession => {
                self.effects.push(Effect::OpenSession(codewhale_engine::Resume::New))
            }
            ViewAction::Revoke(index) => self.send_op(Op::RevokeGrant { index }),
            ViewAction::Copy(text) => self.copy(text),
            ViewAction::Branch { id, fork } => self.ask_what_to_take_back(id, fork),
            ViewAction::TakeBack { to, take, fork, force } => self.take_back(to, take, fork, force),
            ViewAction::SwitchModel(model) => self.send_op(Op::SwitchModel { model }),
            ViewAction::Checkout { id } => self.send_op(Op::Checkout { to: id }),
            ViewAction::Undo { force } => self.send_keeping_transcript(Op::Undo { force }),
            ViewAction::CarryOutPlan(mode) => self.carry_out_plan(mode),
            ViewAction::RestoreBranchFiles { from, force } => {
                self.send_keeping_transcript(Op::RestoreBranchFiles { from, force })
            }
            ViewAction::Import(path) => self.import_chosen(path),
            ViewAction::OpenSession { id } => {
                self.effects.push(Effect::OpenSession(codewhale_engine::Resume::Id(id)))
            }
            ViewAction::Trust { trusted } => self.effects.push(Effect::Trust { trusted }),
            ViewAction::UseText(text) => self.use_text(text),
            ViewAction::PutBack(text) => self.put_back(text),
            ViewAction::Send(text) => self.send_chosen(text),
        }
    }

    /// Sends `op`; when no session is open, [`App::submit`] has said so.
    fn send_op(&mut self, op: Op) {
        self.submit(op);
    }

    /// An approval answered: the turn goes on.
    fn answered(&mut self, op: Op) {
        self.submit(op);
        self.lifecycle = Lifecycle::Streaming { thinking: false };
    }

    /// Sends `op`, whose answer leaves the transcript as it is (files restored, HEAD kept).
    fn send_keeping_transcript(&mut self, op: Op) {
        if let Some(id) = self.submit(op) {
            self.outbox.expect(id, Pending::KeepTranscript);
        }
    }

    /// The chosen text goes to the clipboard.
    fn copy(&mut self, text: String) {
        let lines = text.lines().count();
        self.effects.push(Effect::Copy(text));
        self.notice(NoticeKind::Info, format!("copied {lines} lines to the clipboard"));
    }

    /// Takes back the conversation, the code or both, as chosen.
    fn take_back(&mut self, to: String, take: TakeBack, fork: bool, force: bool) {
        let moves_head = take.conversation();
        if let Some(id) = self.submit(Op::TakeBack { to, take, fork, before: false, force }) {
            let what = if moves_head { Pending::HeadBack } else { Pending::KeepTranscript };
            self.outbox.expect(id, what);
        }
    }

    /// The plan is accepted: its mode is chosen and it is carried out.
    fn carry_out_plan(&mut self, mode: ApprovalMode) {
        // The engine switches the mode and journals "Carry out the plan." as the
        // next turn's message (not the user's words).
        if self.submit(Op::CarryOutPlan { mode }).is_some() {
            let text = format!("starting the plan in {mode} mode: Carry out the plan.");
            self.notice(NoticeKind::Info, text);
            self.lifecycle = Lifecycle::Streaming { thinking: false };
        }
    }

    /// A session of another tool, chosen to be imported.
    fn import_chosen(&mut self, path: PathBuf) {
        self.notice(NoticeKind::Info, format!("importing {}", path.display()));
        self.effects.push(Effect::Import(path));
    }

    /// The chosen text replaces the draft.
    fn use_text(&mut self, text: String) {
        self.composer.set_text(&text);
        self.after_edit();
    }

    /// A declined message goes back to the composer as it was typed: a large paste as its
    /// chip again.
    fn put_back(&mut self, text: String) {
        self.composer.clear();
        self.composer.paste(&text);
        self.after_edit();
    }

    /// A message confirmed although it is larger than the window is sent now, with the
    /// mentions typed; when it cannot be, it stays in the composer.
    fn send_chosen(&mut self, text: String) {
        let attachments = std::mem::take(&mut self.popups.mentions);
        let message = Outgoing { text, attachments };
        if !self.send_message(message.clone()) {
            self.composer.set_text(&message.text);
        }
    }
}
