//! The app state: the lifecycle, the transcript, the composer, the view stack and one part per
//! concern (the files beside this one: what the engine said, running work, paging, the outbox,
//! keys waiting for a second press, the popups, the screen), changed only by [`App::handle`].
//!
//! The app is synchronous and does no I/O: it receives [`AppEvent`]s, submits [`Op`]s to its
//! [`OpSink`] and queues [`Effect`]s for the event loop. Keys are handled in `keys.rs`, engine
//! events in `engine_events.rs`, slash commands in `slash_dispatch.rs`, drawing in `render.rs`,
//! sending what was typed in `app/sending.rs`.
//! Invariants: what the engine is doing is one [`Lifecycle`] value, never a set of flags; a
//! message is only sent when nothing runs (one typed meanwhile is queued, in sight, and sent
//! when the engine is idle again); an approval view exists only while its call waits.

use crossterm::event::{Event as TermEvent, KeyEventKind};

use codewhale_protocol::{Op, SubmissionId};

use super::cells::{NoticeCell, NoticeKind};
use super::composer::Composer;
use super::event::{AppEvent, Effect, OpSink};
use super::mentions::Picker;
use super::slash;
use super::transcript::Transcript;
use super::views::{ViewKind, ViewStack};

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

/// How long after the last op typing is told to the engine (well inside the 270 s idle default).
const TYPING_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

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

mod images;
mod key_state;
mod outbox;
mod paging;
mod popups;
mod progress;
mod screen;
mod sending;
mod session_facts;

pub use key_state::KeyState;
pub use outbox::{Outbox, Outgoing, Pending};
pub use paging::Paging;
pub use popups::Popups;
pub use progress::{Progress, Retry, TurnProgress};
pub use screen::{Screen, Search};
pub use session_facts::{Gauge, SessionFacts};

/// Items per older page of the conversation.
pub(crate) const HISTORY_PAGE: usize = 200;

/// The whole UI state.
pub struct App {
    pub(crate) lifecycle: Lifecycle,
    pub(crate) transcript: Transcript,
    pub(crate) composer: Composer,
    pub(crate) views: ViewStack,
    pub(crate) sink: Box<dyn OpSink>,
    pub(crate) effects: Vec<Effect>,
    /// What the engine last said about the session.
    pub(crate) session: SessionFacts,
    /// Running work and its clock.
    pub(crate) progress: Progress,
    /// Which part of the conversation is loaded.
    pub(crate) paging: Paging,
    /// Ops waiting for a reply and messages waiting to be sent.
    pub(crate) outbox: Outbox,
    /// Keys pressed once that a second press completes, and leaving.
    pub(crate) keys: KeyState,
    /// The composer's popups: slash completion and the `@` picker.
    pub(crate) popups: Popups,
    /// The terminal: its size, its abilities, the mouse and the search over the transcript.
    pub(crate) screen: Screen,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("lifecycle", &self.lifecycle)
            .field("session_id", &self.session.session_id)
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
            views: ViewStack::default(),
            sink,
            effects: Vec::new(),
            session: SessionFacts::new(model.into()),
            progress: Progress::default(),
            paging: Paging::default(),
            outbox: Outbox::default(),
            keys: KeyState::default(),
            popups: Popups::default(),
            screen: Screen::default(),
        }
    }

    /// Replaces the engine (after `/new` or `/resume`): a fresh transcript, same composer.
    pub fn attach(&mut self, sink: Box<dyn OpSink>) {
        self.sink = sink;
        self.transcript = Transcript::default();
        self.views.close(ViewKind::Approval);
        self.lifecycle = Lifecycle::Idle;
        self.session.gauge = None;
        self.paging.older = None;
        self.paging.reset_notice = None;
        self.outbox.clear();
        self.session.opening = None;
        self.keys.quitting = false;
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
        &self.session.session_id
    }

    pub(crate) fn notice(&mut self, kind: NoticeKind, text: impl Into<String>) {
        self.transcript.push_beside(NoticeCell { kind, text: text.into() });
    }

    /// Sends `op` to the engine; with no session open, says so and returns `None`.
    pub(crate) fn submit(&mut self, op: Op) -> Option<SubmissionId> {
        self.progress.typing_told = Some(self.progress.clock);
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
        if self.keys.quitting {
            self.effects.push(Effect::Exit);
            return;
        }
        self.keys.quitting = true;
        if self.sink.submit(Op::Shutdown).is_none() {
            self.effects.push(Effect::Exit);
        }
    }

    /// The conversation as shown.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// The single entry point for everything that happens.
    pub fn handle(&mut self, event: AppEvent) {
        match event {
            AppEvent::Engine(msg) => self.on_engine(msg),
            AppEvent::Input(TermEvent::Key(key)) if key.kind != KeyEventKind::Release => {
                self.on_key(key)
            }
            AppEvent::Input(TermEvent::Paste(text)) => {
                if self.views.is_empty() && !self.paste_image_path(&text) {
                    self.composer.paste(&text);
                    self.after_edit();
                }
            }
            AppEvent::ClipboardImage(result) => self.clipboard_image(result),
            AppEvent::Input(TermEvent::Mouse(mouse)) => self.on_mouse(mouse),
            AppEvent::Input(TermEvent::FocusGained) => self.focus_changed(true),
            AppEvent::Input(TermEvent::FocusLost) => self.focus_changed(false),
            AppEvent::Input(_) => {}
            AppEvent::EngineGone => {
                if self.keys.quitting {
                    self.effects.push(Effect::Exit);
                } else {
                    // Ops would vanish into a closed channel; say so instead.
                    self.sink = Box::new(super::event::NoSession);
                    self.lifecycle = Lifecycle::Idle;
                    let text = if self.session.session_id.is_empty() {
                        "no session is open; /new starts one, /resume picks one"
                    } else {
                        "the engine stopped; see the log in the logs folder of the Codewhale \
                         home. /new starts a new session"
                    };
                    self.notice(NoticeKind::Error, text);
                }
            }
            AppEvent::DraftEdited(Ok(text)) => {
                self.composer.set_text(text.trim_end_matches('\n'));
                self.after_edit();
            }
            AppEvent::DraftEdited(Err(e)) => self.notice(NoticeKind::Error, e),
            AppEvent::Tick(now) => self.tick(now),
            AppEvent::SuspendUnavailable => self.notice(
                NoticeKind::Warning,
                "Ctrl+Z cannot suspend here: Codewhale was not started from a shell with job \
                 control, so nothing could bring it back",
            ),
            AppEvent::FilesIndexed(files) => {
                self.popups.files = Some(files);
                self.after_edit();
            }
            other => self.on_loaded(other),
        }
    }

    /// A second passed: running calls show their elapsed time, a retry its countdown.
    fn tick(&mut self, now: std::time::Instant) {
        self.progress.tick(now);
        let running = self.progress.running_since.clone();
        self.transcript.update_all(|cell| {
            let Some(tool) = super::tool_cell::tool_mut(cell) else { return false };
            let Some((_, since)) = running.iter().find(|(id, _)| *id == tool.call_id) else {
                return false;
            };
            match &mut tool.state {
                super::tool_cell::ToolState::Running { elapsed_secs, .. } => {
                    *elapsed_secs = now.saturating_duration_since(*since).as_secs();
                    true
                }
                _ => false,
            }
        });
    }

    /// Whether anything on screen changes with time (so the loop ticks).
    pub fn animating(&self) -> bool {
        self.progress.animating()
    }

    /// The wheel, when the mouse is captured: three rows per notch.
    fn on_mouse(&mut self, mouse: crossterm::event::MouseEvent) {
        use crossterm::event::MouseEventKind;
        match mouse.kind {
            MouseEventKind::ScrollUp => self.scroll_up(3),
            MouseEventKind::ScrollDown => self.transcript.scroll_down(3),
            _ => {}
        }
    }

    /// After the composer's text changed: the popups follow it.
    pub(crate) fn after_edit(&mut self) {
        // Idle compaction never starts while the user types (docs/compaction.md, *Idle
        // compaction*): every op restarts the engine's idle clock, so typing is told only when
        // the engine has heard nothing for a while.
        let now = self.progress.clock;
        let told = self.progress.typing_told;
        if told.is_some_and(|t| now.saturating_duration_since(t) >= TYPING_EVERY) {
            self.progress.typing_told = Some(now);
            let _ = self.sink.submit(Op::Typing);
        }
        self.popups.completion = 0;
        self.popups.popup_dismissed = false;
        self.refresh_mention();
    }

    /// Opens, updates or closes the `@` picker for the mention being typed.
    pub(crate) fn refresh_mention(&mut self) {
        let Some(query) = super::mentions::typed_mention(self.composer.before_cursor()) else {
            self.popups.mention = None;
            return;
        };
        let query = query.to_owned();
        if self.popups.files.is_none() && !self.effects.contains(&Effect::IndexFiles) {
            self.effects.push(Effect::IndexFiles);
        }
        let selected =
            self.popups.mention.as_ref().filter(|m| m.query == query).map_or(0, |m| m.selected);
        let mut picker = Picker::new(&query, self.popups.files.as_ref());
        picker.selected = selected.min(picker.results.len().saturating_sub(1));
        self.popups.mention = Some(picker);
    }

    /// Puts the picker's choice in place of the mention being typed.
    pub(crate) fn accept_mention(&mut self) {
        let Some(picker) = self.popups.mention.take() else { return };
        let Some(path) = picker.chosen().map(str::to_owned) else { return };
        self.composer.replace_before_cursor(picker.query.len() + 1, &format!("@{path} "));
        self.popups.mentions.push(path);
    }

    /// Whether the completion popup is showing (a slash command name is being typed).
    /// A recalled history entry opens none: Up and Down go on walking the history.
    pub(crate) fn popup_open(&self) -> bool {
        self.views.is_empty()
            && !self.popups.popup_dismissed
            && !self.composer.is_recalled()
            && !self.completions().is_empty()
    }

    /// The popup's rows for what is typed: built-ins, then the custom commands offered.
    pub(crate) fn completions(&self) -> Vec<slash::Completion<'_>> {
        slash::completions(&self.composer.text(), &self.session.commands)
    }
}

impl App {
    /// The terminal gained or lost the focus: the engine hears it too, for the user's
    /// `Notification` hooks.
    fn focus_changed(&mut self, focused: bool) {
        self.screen.focused = focused;
        let _ = self.sink.submit(Op::Focus { focused });
    }

    /// Calls the user back with `text` if they are looking elsewhere (the terminal lost the
    /// focus) and notifications are on.
    pub(crate) fn call_back(&mut self, text: &str) {
        if let (false, Some(method)) = (self.screen.focused, self.screen.notify) {
            self.effects.push(Effect::Notify(super::notify::sequence(method, text)));
        }
    }
}
