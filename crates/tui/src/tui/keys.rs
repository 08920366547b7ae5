//! Keys: the top view gets them first, then the `@` picker and the slash popup, then the
//! app's own keys, then the composer.
//!
//! The app's keys: Ctrl+C interrupts a turn or a compaction, clears a draft, or (twice) quits;
//! Esc closes a popup, interrupts, or (twice) clears a draft — or, on an empty composer, opens
//! the earlier messages to edit one and send it again; Ctrl+D quits on an empty
//! composer; Ctrl+O folds and unfolds; Ctrl+R searches the prompt history; Ctrl+G edits the
//! draft in `$VISUAL`/`$EDITOR`; Ctrl+Z suspends; Ctrl+S interrupts the turn so the queued
//! messages go out now; PageUp/PageDown scroll; Tab completes a slash command, and Enter on a
//! partly typed one completes it instead of running another command.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use codewhale_protocol::Op;

use super::app::{App, Lifecycle, Pending, HISTORY_PAGE};
use super::cells::NoticeKind;
use super::composer::ComposerOutcome;
use super::event::Effect;
use super::prompts::HistorySearch;
use super::slash;
use super::views::{Choice, ChoiceView, TextView, ViewAction, ViewKind};

/// Scroll step of PageUp/PageDown, as a fraction of the transcript's height.
const PAGE_FRACTION: u16 = 2;

impl App {
    pub(crate) fn on_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let is_ctrl_c = ctrl && key.code == KeyCode::Char('c');
        if !is_ctrl_c {
            self.keys.quit_armed = false;
        }
        if key.code != KeyCode::Esc {
            self.keys.esc_armed = false;
        }
        if let Some(view) = self.views.top_mut() {
            let action = view.handle_key(key);
            self.on_view_action(action);
            return;
        }
        if self.popups.mention.is_some() && self.picker_key(key) {
            return;
        }
        if self.screen.search.is_some() && self.search_key(key) {
            return;
        }
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let (w, h) = self.screen.viewport;
        let page = usize::from(self.screen.viewport.1 / PAGE_FRACTION).max(1);
        match key.code {
            KeyCode::Char('c') if ctrl => self.on_ctrl_c(),
            KeyCode::Char('d') if ctrl && self.composer.is_empty() => self.quit(),
            KeyCode::Char('o') if ctrl => {
                self.transcript.toggle_one(w, h);
            }
            KeyCode::Char('o') if alt => self.transcript.toggle_all(w, h),
            KeyCode::Up if alt => self.transcript.move_focus(true),
            KeyCode::Down if alt => self.transcript.move_focus(false),
            KeyCode::Char('t') if ctrl => self.open_pager(),
            KeyCode::Char('f') if ctrl => self.screen.search = Some(super::app::Search::default()),
            KeyCode::Char('y') if ctrl => self.copy_picker(),
            KeyCode::Char('m') if alt => {
                self.screen.mouse_capture = !self.screen.mouse_capture;
                self.effects.push(Effect::MouseCapture(self.screen.mouse_capture));
                let said = if self.screen.mouse_capture {
                    "mouse captured: the wheel scrolls the transcript; Alt+M gives the terminal \
                     its selection back"
                } else {
                    "mouse released: the terminal selects text again; Alt+M captures it"
                };
                self.notice(NoticeKind::Info, said);
            }
            KeyCode::Home if ctrl || self.composer.is_empty() => self.scroll_top(),
            KeyCode::End if ctrl || self.composer.is_empty() => {
                self.transcript.scroll_down(usize::MAX)
            }
            KeyCode::Char('r') if ctrl => {
                self.views.push(HistorySearch::new(self.composer.history()))
            }
            KeyCode::Char('g') if ctrl => {
                self.effects.push(Effect::EditDraft(self.composer.text()))
            }
            KeyCode::Char('z') if ctrl => self.effects.push(Effect::Suspend),
            KeyCode::Char('s') if ctrl => self.send_now(),
            KeyCode::Char('v') if ctrl => self.paste_clipboard_image(),
            KeyCode::BackTab => self.cycle_approval(),
            KeyCode::Esc => self.on_esc(),
            KeyCode::PageUp => self.scroll_up(page),
            KeyCode::PageDown => self.transcript.scroll_down(page),
            KeyCode::Tab if self.popup_open() => self.complete(),
            KeyCode::Up | KeyCode::Down if self.popup_open() => {
                let n = self.completions().len().max(1);
                self.popups.completion = if key.code == KeyCode::Up {
                    (self.popups.completion + n - 1) % n
                } else {
                    (self.popups.completion + 1) % n
                };
            }
            KeyCode::Enter if self.popup_open() && key.modifiers.is_empty() => {
                // A complete command name runs; a partly typed one is completed first, so
                // `/c` never runs `/compact` (a model call) by surprise.
                let typed = self.composer.text();
                let exact = slash::parse(&typed).is_some_and(|p| match p {
                    Ok(_) => true,
                    Err(slash::UnknownCommand(name)) => {
                        slash::offered(&self.session.commands).any(|c| c.name == name)
                    }
                });
                if exact {
                    let text = self.composer.take_submission();
                    self.submit_text(text);
                } else {
                    self.complete();
                }
            }
            KeyCode::Char('d') if ctrl => {
                self.composer.handle_key(KeyEvent::new(KeyCode::Delete, KeyModifiers::NONE));
                self.after_edit();
            }
            _ => match self.composer.handle_key(key) {
                ComposerOutcome::Submit(text) => self.submit_text(text),
                ComposerOutcome::Edited => self.after_edit(),
                ComposerOutcome::Ignored => {}
            },
        }
    }

    /// Keys the `@` picker takes; `false` passes the key on.
    fn picker_key(&mut self, key: KeyEvent) -> bool {
        let Some(picker) = self.popups.mention.as_mut() else { return false };
        let n = picker.results.len().max(1);
        match key.code {
            KeyCode::Up => picker.selected = (picker.selected + n - 1) % n,
            KeyCode::Down => picker.selected = (picker.selected + 1) % n,
            KeyCode::Tab => self.accept_mention(),
            KeyCode::Enter if key.modifiers.is_empty() && !picker.results.is_empty() => {
                self.accept_mention()
            }
            KeyCode::Esc => self.popups.mention = None,
            _ => return false,
        }
        true
    }

    /// Shows the start of the conversation (loading the older pages as it goes).
    fn scroll_top(&mut self) {
        let (w, h) = self.screen.viewport;
        self.transcript.scroll_to_top(w, h);
        self.scroll_up(0);
    }

    /// Keys the transcript search takes; `false` passes the key on.
    fn search_key(&mut self, key: KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let Some(search) = self.screen.search.as_mut() else { return false };
        let older = match key.code {
            KeyCode::Esc => {
                self.screen.search = None;
                self.transcript.set_highlight(None);
                return true;
            }
            KeyCode::Enter | KeyCode::Up => true,
            KeyCode::Char('f') if ctrl => true,
            KeyCode::Down => false,
            KeyCode::Backspace => {
                search.query.pop();
                search.hit = None;
                true
            }
            KeyCode::Char(c) if !ctrl => {
                search.query.push(c);
                search.hit = None;
                true
            }
            _ => return false,
        };
        let (query, from) = (search.query.clone(), search.hit);
        let found = self.transcript.find(&query, from, older);
        let count = self.transcript.count(&query);
        if let Some(search) = self.screen.search.as_mut() {
            search.count = count;
            if found.is_some() {
                search.hit = found;
            }
        }
        if let Some(index) = found {
            let (w, h) = self.screen.viewport;
            self.transcript.scroll_to_cell(index, w, h);
        }
        let hit = self.screen.search.as_ref().and_then(|s| s.hit);
        self.transcript.set_highlight(hit);
        true
    }

    /// Ctrl+T: the focused (or last) tool call's whole output in a scrollable view.
    fn open_pager(&mut self) {
        // A subagent's cell opens the child's whole conversation, asked of the engine.
        if let Some((title, session_id)) = self.transcript.target_subagent() {
            if let Some(id) = self.submit(Op::GetSubagentTranscript { session_id }) {
                self.outbox.expect(id, Pending::SubagentTranscript { title });
            }
            return;
        }
        match self.transcript.target_output() {
            Some((title, text)) => self.views.push(TextView::new(title, &text)),
            None => self.notice(NoticeKind::Info, "no tool output to show yet"),
        }
    }

    /// Ctrl+Y: choose what to put on the clipboard — the last reply, or one of its code blocks.
    fn copy_picker(&mut self) {
        let Some(reply) = self.transcript.last_reply() else {
            self.notice(NoticeKind::Info, "no reply to copy yet");
            return;
        };
        let mut choices = vec![Choice {
            label: "the whole last reply".to_owned(),
            action: ViewAction::Copy(reply.clone()),
        }];
        for block in super::markdown::code_blocks(&reply) {
            let first = block.code.lines().next().unwrap_or_default();
            let lang = if block.lang.is_empty() { "code".to_owned() } else { block.lang.clone() };
            let lines = match block.code.lines().count() {
                1 => "1 line".to_owned(),
                n => format!("{n} lines"),
            };
            choices.push(Choice {
                label: format!("{lang} block, {lines}: {first}"),
                action: ViewAction::Copy(block.code),
            });
        }
        self.views.push(ChoiceView::new(
            "copy to the clipboard",
            choices,
            "",
            "Enter copy · Esc close",
        ));
    }

    /// Scrolls towards older output; at the top, asks the engine for the page before it.
    pub(crate) fn scroll_up(&mut self, rows: usize) {
        let (w, h) = self.screen.viewport;
        self.transcript.scroll_up(rows, w, h);
        let loading = self.outbox.waiting_for(&Pending::OlderHistory);
        if self.transcript.at_top(w, h) && !loading {
            if let Some(before) = self.paging.older.clone() {
                let op = Op::GetHistory { before: Some(before), limit: HISTORY_PAGE };
                if let Some(id) = self.sink.submit(op) {
                    self.outbox.expect(id, Pending::OlderHistory);
                }
            }
        }
    }

    fn complete(&mut self) {
        let matches = self.completions();
        if let Some(cmd) = matches.get(self.popups.completion.min(matches.len().saturating_sub(1)))
        {
            let text = if cmd.takes_args() {
                format!("/{} ", cmd.name())
            } else {
                format!("/{}", cmd.name())
            };
            self.composer.set_text(&text);
            self.popups.completion = 0;
        }
    }

    /// Stops the running turn or compaction.
    pub(crate) fn interrupt(&mut self) {
        self.submit(Op::Interrupt);
        self.keys.quit_armed = false;
    }

    fn on_ctrl_c(&mut self) {
        if self.lifecycle.busy() {
            self.interrupt();
        } else if !self.composer.is_empty() {
            self.composer.clear();
            self.popups.mentions.clear();
            self.after_edit();
            self.keys.quit_armed = false;
        } else if self.keys.quit_armed || self.keys.quitting {
            self.quit();
        } else {
            self.keys.quit_armed = true;
        }
    }

    /// Esc: closes the popup, or interrupts what runs, or (pressed twice) clears the draft.
    fn on_esc(&mut self) {
        if self.popup_open() {
            self.popups.popup_dismissed = true;
        } else if self.transcript.has_focus() {
            // Alt+Up/Down focused a cell: Esc lets go of it first.
            self.transcript.clear_focus();
        } else if self.lifecycle.busy() {
            self.interrupt();
        } else if !self.composer.is_empty() {
            if self.keys.esc_armed {
                self.composer.clear();
                self.popups.mentions.clear();
                self.keys.esc_armed = false;
            } else {
                self.keys.esc_armed = true;
            }
        } else if self.keys.esc_armed {
            // Esc Esc on an empty composer, as in Codex: walk back through your messages;
            // Enter forks before the chosen one with its text in the composer, to edit and
            // send again.
            self.keys.esc_armed = false;
            if let Some(id) = self.submit(Op::ListUserMessages) {
                self.outbox.expect(id, Pending::BranchPick { fork: true });
            }
        } else {
            self.keys.esc_armed = true;
        }
    }

    /// Ctrl+S with messages queued: interrupt the turn, so they are sent at once.
    fn send_now(&mut self) {
        if self.outbox.queued.is_empty() {
            return;
        }
        if self.lifecycle.turn_running() {
            self.interrupt();
        }
    }

    pub(crate) fn on_view_action(&mut self, action: ViewAction) {
        match action {
            ViewAction::Stay => {}
            ViewAction::Close => {
                self.views.pop();
            }
            ViewAction::Approve { call_id, scope } => {
                self.views.pop();
                self.submit(Op::Approve { call_id, scope });
                self.lifecycle = Lifecycle::Streaming { thinking: false };
            }
            ViewAction::Deny { call_id, reason } => {
                self.views.pop();
                self.submit(Op::Deny { call_id, reason });
                self.lifecycle = Lifecycle::Streaming { thinking: false };
            }
            ViewAction::NewSession => {
                self.views.pop();
                self.effects.push(Effect::OpenSession(codewhale_engine::Resume::New));
            }
            ViewAction::Revoke(index) => {
                self.views.pop();
                self.submit(Op::RevokeGrant { index });
            }
            ViewAction::Copy(text) => {
                self.views.pop();
                let lines = text.lines().count();
                self.effects.push(Effect::Copy(text));
                self.notice(NoticeKind::Info, format!("copied {lines} lines to the clipboard"));
            }
            ViewAction::Branch { id, fork } => {
                self.views.pop();
                self.ask_what_to_take_back(id, fork);
            }
            ViewAction::TakeBack { to, take, fork, force } => {
                self.views.pop();
                let moves_head = take.conversation();
                if let Some(id) = self.submit(Op::TakeBack { to, take, fork, before: false, force })
                {
                    let what = if moves_head { Pending::HeadBack } else { Pending::KeepTranscript };
                    self.outbox.expect(id, what);
                }
            }
            ViewAction::SwitchModel(model) => {
                self.views.pop();
                self.submit(Op::SwitchModel { model });
            }
            ViewAction::Checkout { id } => {
                self.views.pop();
                self.submit(Op::Checkout { to: id });
            }
            ViewAction::Undo { force } => {
                self.views.pop();
                if let Some(id) = self.submit(Op::Undo { force }) {
                    self.outbox.expect(id, Pending::KeepTranscript);
                }
            }
            ViewAction::CarryOutPlan(mode) => {
                self.views.pop();
                // The engine switches the mode and journals "Carry out the plan." as the
                // next turn's message (not the user's words).
                if self.submit(Op::CarryOutPlan { mode }).is_some() {
                    let text = format!("starting the plan in {mode} mode: Carry out the plan.");
                    self.notice(NoticeKind::Info, text);
                    self.lifecycle = Lifecycle::Streaming { thinking: false };
                }
            }
            ViewAction::RestoreBranchFiles { from, force } => {
                self.views.pop();
                if let Some(id) = self.submit(Op::RestoreBranchFiles { from, force }) {
                    self.outbox.expect(id, Pending::KeepTranscript);
                }
            }
            ViewAction::Import(path) => {
                self.views.pop();
                self.notice(NoticeKind::Info, format!("importing {}", path.display()));
                self.effects.push(Effect::Import(path));
            }
            ViewAction::OpenSession { id } => {
                self.views.pop();
                self.effects.push(Effect::OpenSession(codewhale_engine::Resume::Id(id)));
            }
            ViewAction::Interrupt => {
                self.views.close(ViewKind::Approval);
                self.submit(Op::Interrupt);
            }
            ViewAction::Trust { trusted } => {
                self.views.pop();
                self.effects.push(Effect::Trust { trusted });
            }
            ViewAction::UseText(text) => {
                self.views.pop();
                self.composer.set_text(&text);
                self.after_edit();
            }
            ViewAction::PutBack(text) => {
                self.views.pop();
                self.composer.clear();
                self.composer.paste(&text);
                self.after_edit();
            }
            ViewAction::Send(text) => {
                self.views.pop();
                let attachments = std::mem::take(&mut self.popups.mentions);
                let message = super::app::Outgoing { text, attachments };
                if !self.send_message(message.clone()) {
                    self.composer.set_text(&message.text);
                }
            }
        }
    }
}

impl App {
    /// Shift+Tab: the next approval mode, plan → ask → auto-edit → full → plan. Also while a
    /// turn runs: the engine applies it from the next tool call on.
    pub(crate) fn cycle_approval(&mut self) {
        let mode = self.session.approval.next();
        // Taken as said at once, so a second press before the engine's answer goes on from it.
        if let Some(id) = self.submit(Op::SetApproval { mode }) {
            self.session.approval = mode;
            self.session.approval_asked = Some(id);
        }
    }
}
