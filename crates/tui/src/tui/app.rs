//! The app state and its input handling: the lifecycle, the transcript, the composer, the
//! status figures and the view stack, changed only by [`App::handle`].
//!
//! The app is synchronous and does no I/O: it receives [`AppEvent`]s, submits [`Op`]s to its
//! [`OpSink`] and queues [`Effect`]s for the event loop. Engine events are handled in
//! `engine_events.rs`, slash commands in `slash_dispatch.rs`, drawing in `render.rs`.
//! Invariants: what the engine is doing is one [`Lifecycle`] value, never a set of flags; a
//! message is only sent when no turn runs; an approval view exists only while its call waits.

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use std::collections::VecDeque;

use codewhale_engine::protocol::{Figure, Op, SubmissionId};

use super::cells::{NoticeCell, NoticeKind, UserCell};
use super::composer::{Composer, ComposerOutcome};
use super::event::{AppEvent, Effect, OpSink};
use super::slash;
use super::transcript::Transcript;
use super::views::{View, ViewAction};

/// What the engine is doing, as far as the UI knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lifecycle {
    /// No turn runs; the composer sends.
    Idle,
    /// A turn runs and the model is answering (or about to).
    Streaming { thinking: bool },
    /// A tool call runs.
    RunningTool { name: String },
    /// A compaction pass runs, inside a turn or on its own (`/compact`).
    Compacting { in_turn: bool },
    /// A tool call waits for the user's answer in the approval view.
    AwaitingApproval,
}

impl Lifecycle {
    /// Whether a turn is in progress (so the engine would refuse most ops).
    pub fn turn_running(&self) -> bool {
        !matches!(self, Lifecycle::Idle | Lifecycle::Compacting { in_turn: false })
    }

    /// Whether the engine is working (a turn, or a `/compact` on its own): Ctrl+C and Esc
    /// interrupt it.
    pub fn busy(&self) -> bool {
        *self != Lifecycle::Idle
    }
}

/// The context gauge's figures, from the engine's last `Usage` event (the same figures and
/// labels as `/context`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gauge {
    pub pressure: Figure,
    pub usable_input: u64,
    pub window_unverified: bool,
}

/// What an op was sent for, when its reply needs more than a generic notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pending {
    /// `/anchor TEXT`: the engine's confirmation becomes an anchor cell.
    Anchor(String),
    /// `/fork`, `/checkout`, `/rewind`: once HEAD moved, the transcript shows the new view.
    HeadMove,
    /// `/anchor list`: the engine's list is shown.
    ListAnchors,
    /// `/compact`: a refusal (a turn runs) ends the compacting state.
    Compact,
    /// An older page of the conversation, asked for while scrolling up.
    OlderHistory,
}

/// Scroll step of PageUp/PageDown, as a fraction of the transcript's height.
const PAGE_FRACTION: usize = 2;

/// Items per older page of the conversation.
pub(crate) const HISTORY_PAGE: usize = 200;

/// The whole UI state.
pub struct App {
    pub(crate) lifecycle: Lifecycle,
    pub(crate) transcript: Transcript,
    pub(crate) composer: Composer,
    pub(crate) views: Vec<Box<dyn View>>,
    pub(crate) sink: Box<dyn OpSink>,
    pub(crate) effects: Vec<Effect>,
    pub(crate) model: String,
    pub(crate) session_id: String,
    /// The directory the engine's session works in; `None` until the engine says.
    pub(crate) workspace: Option<std::path::PathBuf>,
    pub(crate) gauge: Option<Gauge>,
    pub(crate) pending: Vec<(SubmissionId, Pending)>,
    /// The cursor of the page before the oldest one shown; `None` when the beginning of the
    /// conversation is shown.
    pub(crate) older: Option<String>,
    /// A notice to show under the conversation once the engine's next page replaces it (a
    /// resumed session, a HEAD move).
    pub(crate) reset_notice: Option<String>,
    /// Messages typed while `/compact` ran, sent in order when it ends.
    pub(crate) queued: VecDeque<String>,
    /// Another session is being opened: its file's size, for the status line.
    pub(crate) opening: Option<u64>,
    /// A first Ctrl+C on an idle, empty composer; the second one quits.
    pub(crate) quit_armed: bool,
    /// Shutdown was sent; waiting for the engine to confirm.
    pub(crate) quitting: bool,
    /// The last known size of the transcript area, for page-sized scrolling.
    pub(crate) viewport: (u16, u16),
    /// Which completion the popup highlights.
    pub(crate) completion: usize,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("lifecycle", &self.lifecycle)
            .field("session_id", &self.session_id)
            .field("cells", &self.transcript.len())
            .finish_non_exhaustive()
    }
}

impl App {
    /// An app that sends its ops to `sink`; `model` is shown until the engine confirms it.
    pub fn new(sink: Box<dyn OpSink>, model: impl Into<String>) -> App {
        App {
            lifecycle: Lifecycle::Idle,
            transcript: Transcript::default(),
            composer: Composer::default(),
            views: Vec::new(),
            sink,
            effects: Vec::new(),
            model: model.into(),
            session_id: String::new(),
            workspace: None,
            gauge: None,
            pending: Vec::new(),
            older: None,
            reset_notice: None,
            queued: VecDeque::new(),
            opening: None,
            quit_armed: false,
            quitting: false,
            viewport: (80, 20),
            completion: 0,
        }
    }

    /// Replaces the engine (after `/new` or `/resume`): a fresh transcript, same composer.
    pub fn attach(&mut self, sink: Box<dyn OpSink>) {
        self.sink = sink;
        self.transcript = Transcript::default();
        self.views.retain(|v| v.approval_call().is_none());
        self.lifecycle = Lifecycle::Idle;
        self.gauge = None;
        self.pending.clear();
        self.older = None;
        self.reset_notice = None;
        self.queued.clear();
        self.opening = None;
        self.quitting = false;
    }

    /// The effects queued since the last call.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    #[cfg(test)]
    pub fn lifecycle(&self) -> &Lifecycle {
        &self.lifecycle
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    pub(crate) fn notice(&mut self, kind: NoticeKind, text: impl Into<String>) {
        self.transcript.push(NoticeCell { kind, text: text.into() });
    }

    /// Sends `op` to the engine; with no session open, says so and returns `None`.
    pub(crate) fn submit(&mut self, op: Op) -> Option<SubmissionId> {
        let id = self.sink.submit(op);
        if id.is_none() {
            self.notice(
                NoticeKind::Warning,
                "no session is open; /resume picks one, /new starts one",
            );
        }
        id
    }

    /// Starts leaving: the engine syncs the journal and stops, then the loop exits. A second
    /// request while waiting (an engine busy compacting) leaves at once.
    pub(crate) fn quit(&mut self) {
        if self.quitting {
            self.effects.push(Effect::Exit);
            return;
        }
        self.quitting = true;
        if self.sink.submit(Op::Shutdown).is_none() {
            self.effects.push(Effect::Exit);
        }
    }

    /// The single entry point for everything that happens.
    pub fn handle(&mut self, event: AppEvent) {
        match event {
            AppEvent::Engine(msg) => self.on_engine(msg),
            AppEvent::Input(TermEvent::Key(key)) if key.kind != KeyEventKind::Release => {
                self.on_key(key)
            }
            AppEvent::Input(TermEvent::Paste(text)) => {
                if self.views.is_empty() {
                    self.composer.insert_str(&text);
                }
            }
            AppEvent::Input(_) => {}
            AppEvent::EngineGone => {
                if self.quitting {
                    self.effects.push(Effect::Exit);
                } else {
                    // Ops would vanish into a closed channel; say so instead.
                    self.sink = Box::new(super::event::NoSession);
                    self.lifecycle = Lifecycle::Idle;
                    self.notice(
                        NoticeKind::Error,
                        "the engine stopped; see the log in the logs folder of the Codewhale home. /new starts a new session",
                    );
                }
            }
            other => self.on_loaded(other),
        }
    }

    /// Scrolls towards older output; at the top, asks the engine for the page before it.
    fn scroll_up(&mut self, rows: usize) {
        let (w, h) = self.viewport;
        self.transcript.scroll_up(rows, w, h);
        let loading = self.pending.iter().any(|(_, p)| *p == Pending::OlderHistory);
        if self.transcript.at_top(w, h) && !loading {
            if let Some(before) = self.older.clone() {
                let op = Op::GetHistory { before: Some(before), limit: HISTORY_PAGE };
                if let Some(id) = self.sink.submit(op) {
                    self.pending.push((id, Pending::OlderHistory));
                }
            }
        }
    }

    fn on_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let is_ctrl_c = ctrl && key.code == KeyCode::Char('c');
        if !is_ctrl_c {
            self.quit_armed = false;
        }
        if let Some(view) = self.views.last_mut() {
            let action = view.handle_key(key);
            self.on_view_action(action);
            return;
        }
        let page = usize::from(self.viewport.1 / PAGE_FRACTION as u16).max(1);
        match key.code {
            KeyCode::Char('c') if ctrl => self.on_ctrl_c(),
            KeyCode::Esc if self.lifecycle.busy() => self.interrupt(),
            KeyCode::Char('d') if ctrl => {
                if self.composer.is_empty() {
                    self.quit();
                } else {
                    self.composer.handle_key(KeyEvent::new(KeyCode::Delete, KeyModifiers::NONE));
                }
            }
            KeyCode::Char('o') if ctrl => {
                self.transcript.toggle_expanded();
            }
            KeyCode::PageUp => self.scroll_up(page),
            KeyCode::PageDown => self.transcript.scroll_down(page),
            KeyCode::Tab => self.complete(),
            KeyCode::Up | KeyCode::Down if self.popup_open() => {
                let n = slash::completions(&self.composer.text()).len().max(1);
                self.completion = if key.code == KeyCode::Up {
                    (self.completion + n - 1) % n
                } else {
                    (self.completion + 1) % n
                };
            }
            KeyCode::Enter if self.popup_open() && key.modifiers.is_empty() => {
                // Enter on a partly typed name runs the highlighted command.
                self.complete();
                self.on_submit();
            }
            _ => match self.composer.handle_key(key) {
                ComposerOutcome::Submit(text) => {
                    self.composer.set_text(&text);
                    self.on_submit();
                }
                ComposerOutcome::Edited => self.completion = 0,
                ComposerOutcome::Ignored => {}
            },
        }
    }

    /// Whether the completion popup is showing (a slash command name is being typed).
    pub(crate) fn popup_open(&self) -> bool {
        self.views.is_empty() && !slash::completions(&self.composer.text()).is_empty()
    }

    fn complete(&mut self) {
        let matches = slash::completions(&self.composer.text());
        if let Some(cmd) = matches.get(self.completion.min(matches.len().saturating_sub(1))) {
            let text = if cmd.args().is_empty() {
                format!("/{}", cmd.name())
            } else {
                format!("/{} ", cmd.name())
            };
            self.composer.set_text(&text);
            self.completion = 0;
        }
    }

    /// Stops the running turn or compaction.
    fn interrupt(&mut self) {
        self.submit(Op::Interrupt);
        self.quit_armed = false;
    }

    fn on_ctrl_c(&mut self) {
        if self.lifecycle.busy() {
            self.interrupt();
        } else if !self.composer.is_empty() {
            self.composer.clear();
            self.quit_armed = false;
        } else if self.quit_armed || self.quitting {
            self.quit();
        } else {
            self.quit_armed = true;
        }
    }

    /// Enter: a slash command or a message.
    fn on_submit(&mut self) {
        let text = self.composer.take_submission();
        if text.trim().is_empty() {
            return;
        }
        if let Some(parsed) = slash::parse(&text) {
            match parsed {
                Ok(invocation) => self.run_command(invocation),
                Err(slash::UnknownCommand(name)) => self.notice(
                    NoticeKind::Error,
                    format!("unknown command /{name}; /help lists the commands"),
                ),
            }
            return;
        }
        if self.lifecycle == (Lifecycle::Compacting { in_turn: false }) && !self.quitting {
            // The pass ends soon (or is cancelled): the message waits for it, in sight.
            self.notice(NoticeKind::Info, format!("queued until the compaction ends: {text}"));
            self.queued.push_back(text);
            self.transcript.scroll_down(usize::MAX);
            return;
        }
        if self.lifecycle.turn_running() || self.quitting {
            // Keep the text: the user should not lose a message typed during a turn.
            self.composer.set_text(&text);
            self.notice(
                NoticeKind::Warning,
                "a turn is running; wait for it to finish or press Ctrl+C to interrupt it",
            );
            return;
        }
        if !self.send_message(text.clone()) {
            self.composer.set_text(&text);
        }
        self.transcript.scroll_down(usize::MAX);
    }

    /// Starts a turn with `text`; false when no session is open to take it.
    pub(crate) fn send_message(&mut self, text: String) -> bool {
        if self.submit(Op::UserInput { text: text.clone() }).is_none() {
            return false;
        }
        self.transcript.push(UserCell { text });
        self.lifecycle = Lifecycle::Streaming { thinking: false };
        true
    }

    /// After `/compact` ended: the first queued message starts the next turn (the others wait
    /// for it, as typed).
    pub(crate) fn send_queued(&mut self) {
        if self.lifecycle != Lifecycle::Idle {
            return;
        }
        if let Some(text) = self.queued.pop_front() {
            if !self.send_message(text.clone()) {
                self.composer.set_text(&text);
            }
        }
    }

    fn on_view_action(&mut self, action: ViewAction) {
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
            ViewAction::Deny { call_id } => {
                self.views.pop();
                self.submit(Op::Deny { call_id });
                self.lifecycle = Lifecycle::Streaming { thinking: false };
            }
            ViewAction::OpenSession { id } => {
                self.views.pop();
                self.effects.push(Effect::OpenSession(codewhale_engine::Resume::Id(id)));
            }
            ViewAction::Interrupt => {
                self.views.retain(|v| v.approval_call().is_none());
                self.submit(Op::Interrupt);
            }
            ViewAction::Trust { trusted } => {
                self.views.pop();
                self.effects.push(Effect::Trust { trusted });
            }
        }
    }
}
