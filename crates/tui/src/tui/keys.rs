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
//!
//! What a view's choice does once a key made it is in `keys/view_actions.rs`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use codewhale_protocol::Op;

use super::app::{App, Pending, HISTORY_PAGE};
use super::cells::NoticeKind;
use super::composer::ComposerOutcome;
use super::event::Effect;
use super::prompts::HistorySearch;
use super::slash;
use super::views::{Choice, ChoiceView, TextView, ViewAction};

/// Scroll step of PageUp/PageDown, as a fraction of the transcript's height.
const PAGE_FRACTION: u16 = 2;

mod view_actions;

impl App {
    /// A key pressed: the views and popups that take keys first, then the app's own keys.
    pub(crate) fn on_key(&mut self, key: KeyEvent) {
        self.disarm(key);
        if self.taken_before_the_app(key) {
            return;
        }
        self.app_key(key);
    }

    /// Any key but Ctrl+C lets go of a first Ctrl+C, any but Esc of a first Esc.
    fn disarm(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let is_ctrl_c = ctrl && key.code == KeyCode::Char('c');
        if !is_ctrl_c {
            self.keys.quit_armed = false;
        }
        if key.code != KeyCode::Esc {
            self.keys.esc_armed = false;
        }
    }

    /// The top view, then the `@` picker, then the transcript search take the key first;
    /// `false` passes it on to the app.
    fn taken_before_the_app(&mut self, key: KeyEvent) -> bool {
        if let Some(view) = self.views.top_mut() {
            let action = view.handle_key(key);
            self.on_view_action(action);
            return true;
        }
        if self.popups.mention.is_some() && self.picker_key(key) {
            return true;
        }
        self.screen.search.is_some() && self.search_key(key)
    }

    /// The app's own keys, one arm each; the rest go to the composer.
    fn app_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
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
            KeyCode::Char('m') if alt => self.toggle_mouse_capture(),
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
                self.move_completion(key.code == KeyCode::Up)
            }
            KeyCode::Enter if self.popup_open() && key.modifiers.is_empty() => {
                self.enter_on_popup()
            }
            KeyCode::Char('d') if ctrl => self.delete_forward(),
            _ => self.composer_key(key),
        }
    }

    /// Alt+M: captures the mouse for the wheel, or gives the terminal its selection back.
    fn toggle_mouse_capture(&mut self) {
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

    /// Up or Down in the slash popup: the row above or below, wrapping around.
    fn move_completion(&mut self, up: bool) {
        let n = self.completions().len().max(1);
        self.popups.completion = if up {
            (self.popups.completion + n - 1) % n
        } else {
            (self.popups.completion + 1) % n
        };
    }

    /// Enter in the slash popup.
    fn enter_on_popup(&mut self) {
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

    /// Ctrl+D on a draft: deletes the character under the cursor.
    fn delete_forward(&mut self) {
        self.composer.handle_key(KeyEvent::new(KeyCode::Delete, KeyModifiers::NONE));
        self.after_edit();
    }

    /// A key for the composer: it edits the draft, or submits it.
    fn composer_key(&mut self, key: KeyEvent) {
        match self.composer.handle_key(key) {
            ComposerOutcome::Submit(text) => self.submit_text(text),
            ComposerOutcome::Edited => self.after_edit(),
            ComposerOutcome::Ignored => {}
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
