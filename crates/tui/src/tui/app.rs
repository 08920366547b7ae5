//! The app state: the lifecycle, the transcript, the composer, the status figures and the view
//! stack, changed only by [`App::handle`].
//!
//! The app is synchronous and does no I/O: it receives [`AppEvent`]s, submits [`Op`]s to its
//! [`OpSink`] and queues [`Effect`]s for the event loop. Keys are handled in `keys.rs`, engine
//! events in `engine_events.rs`, slash commands in `slash_dispatch.rs`, drawing in `render.rs`.
//! Invariants: what the engine is doing is one [`Lifecycle`] value, never a set of flags; a
//! message is only sent when nothing runs (one typed meanwhile is queued, in sight, and sent
//! when the engine is idle again); an approval view exists only while its call waits.

use std::collections::VecDeque;
use std::sync::Arc;

use crossterm::event::{Event as TermEvent, KeyEventKind};

use codewhale_engine::protocol::{Figure, Op, SubmissionId};

use super::cells::{NoticeCell, NoticeKind, UserCell};
use super::composer::Composer;
use super::event::{AppEvent, Effect, OpSink};
use super::mentions::Picker;
use super::prompts::ConfirmSend;
use super::slash;
use super::transcript::Transcript;
use super::views::View;

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
/// How far the running turn has come, for the status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnProgress {
    pub since: std::time::Instant,
    /// Bytes of reply text streamed so far.
    pub bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pending {
    /// `/anchor list`: the engine's list is shown.
    ListAnchors,
    /// `/compact`: a refusal (a turn runs) ends the compacting state.
    Compact,
    /// An older page of the conversation, asked for while scrolling up.
    OlderHistory,
    /// `/rewind` or `/fork` without an id: the messages to pick from.
    BranchPick { fork: bool },
    /// `/checkout` without an id: the tips become a picker.
    TipPick,
    /// `/rewind`, `/fork` or `/undo`: the files a restore would touch, before asking.
    Restore(super::restore_view::RestoreTarget),
}

/// A message on its way to the engine: its text and the files mentioned with `@`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub text: String,
    pub attachments: Vec<String>,
}

/// A provider request being retried: shown as "retrying in 4 s · attempt 2/5".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    pub attempt: u32,
    pub max_attempts: u32,
    pub until: std::time::Instant,
}

/// The transcript search (Ctrl+F).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Search {
    pub query: String,
    /// The cell shown as the current match.
    pub hit: Option<usize>,
    /// Cells holding the query.
    pub count: usize,
}

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
    /// HEAD's live plan, as the engine last said (the status line's "plan 2/5").
    pub(crate) plan: Option<codewhale_engine::protocol::Plan>,
    pub(crate) pending: Vec<(SubmissionId, Pending)>,
    /// The cursor of the page before the oldest one shown; `None` when the beginning of the
    /// conversation is shown.
    pub(crate) older: Option<String>,
    /// A notice to show under the conversation once the engine's next page replaces it (a
    /// resumed session, a HEAD move).
    pub(crate) reset_notice: Option<String>,
    /// A notice for the session being switched to (an import's report), shown under its
    /// conversation once it is open.
    pub(crate) carried_notice: Option<String>,
    /// Messages typed while a turn or `/compact` ran, sent in order when it ends.
    pub(crate) queued: VecDeque<Outgoing>,
    /// Another session is being opened: its file's size, for the status line.
    pub(crate) opening: Option<u64>,
    /// A first Ctrl+C on an idle, empty composer; the second one quits.
    pub(crate) quit_armed: bool,
    /// A first Esc on an idle draft; the second one clears it.
    pub(crate) esc_armed: bool,
    /// Shutdown was sent; waiting for the engine to confirm.
    pub(crate) quitting: bool,
    /// The note the engine writes in the background, if any (DESIGN §5.8).
    pub(crate) background_note: Option<codewhale_engine::protocol::BackgroundState>,
    /// A summary of the branch the user left is being written (DESIGN §2).
    pub(crate) branch_summary_writing: bool,
    /// The last known size of the transcript area, for page-sized scrolling.
    pub(crate) viewport: (u16, u16),
    /// Which completion the popup highlights.
    pub(crate) completion: usize,
    /// Esc closed the slash popup; it stays closed until the text changes.
    pub(crate) popup_dismissed: bool,
    /// The terminal reports Shift+Enter (keyboard enhancement is on).
    pub(crate) keyboard_enhanced: bool,
    /// The `@` picker while a mention is typed.
    pub(crate) mention: Option<Picker>,
    /// The workspace's files, once indexed (`None` before the first `@`).
    pub(crate) files: Option<Arc<Vec<String>>>,
    /// Paths chosen in the picker for the message being typed.
    pub(crate) mentions: Vec<String>,
    /// The time as of the last tick (elapsed times and countdowns are drawn from it).
    pub(crate) clock: std::time::Instant,
    /// Tool calls running, with when they started.
    pub(crate) running_since: Vec<(String, std::time::Instant)>,
    /// The turn that runs: since when, and how much reply text came so far (the status
    /// line's "working (7 s · ~120 tokens)").
    pub(crate) turn_progress: Option<TurnProgress>,
    /// A provider request being retried.
    pub(crate) retry: Option<Retry>,
    /// The transcript search, while open.
    pub(crate) search: Option<Search>,
    /// Whether the mouse is captured (wheel scrolls the transcript; terminal selection off).
    pub(crate) mouse_capture: bool,
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
            plan: None,
            pending: Vec::new(),
            older: None,
            reset_notice: None,
            carried_notice: None,
            queued: VecDeque::new(),
            opening: None,
            quit_armed: false,
            esc_armed: false,
            quitting: false,
            background_note: None,
            branch_summary_writing: false,
            viewport: (80, 20),
            completion: 0,
            popup_dismissed: false,
            keyboard_enhanced: false,
            mention: None,
            files: None,
            mentions: Vec::new(),
            clock: std::time::Instant::now(),
            running_since: Vec::new(),
            turn_progress: None,
            retry: None,
            search: None,
            mouse_capture: false,
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
        self.transcript.push_beside(NoticeCell { kind, text: text.into() });
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
                if self.views.is_empty() {
                    self.composer.paste(&text);
                    self.after_edit();
                }
            }
            AppEvent::Input(TermEvent::Mouse(mouse)) => self.on_mouse(mouse),
            AppEvent::Input(_) => {}
            AppEvent::EngineGone => {
                if self.quitting {
                    self.effects.push(Effect::Exit);
                } else {
                    // Ops would vanish into a closed channel; say so instead.
                    self.sink = Box::new(super::event::NoSession);
                    self.lifecycle = Lifecycle::Idle;
                    let text = if self.session_id.is_empty() {
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
                self.files = Some(files);
                self.after_edit();
            }
            other => self.on_loaded(other),
        }
    }

    /// A second passed: running calls show their elapsed time, a retry its countdown.
    fn tick(&mut self, now: std::time::Instant) {
        self.clock = now;
        if self.retry.is_some_and(|r| r.until <= now) {
            self.retry = None;
        }
        let running = self.running_since.clone();
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
        !self.running_since.is_empty() || self.retry.is_some() || self.turn_progress.is_some()
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

    /// Enter on a message or a command (chips already unfolded in `text`).
    pub(crate) fn submit_text(&mut self, text: String) {
        self.popup_dismissed = false;
        self.mention = None;
        if text.trim().is_empty() {
            return;
        }
        self.effects.push(Effect::RememberPrompt(text.clone()));
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
        let mut mentions = std::mem::take(&mut self.mentions);
        mentions.retain(|path| text.contains(&format!("@{path}")));
        mentions.dedup();
        let message = Outgoing { text, attachments: mentions };
        if self.lifecycle.busy() && !self.quitting {
            // Sent when the turn (or the pass) ends, in the order typed; shown meanwhile.
            self.queued.push_back(message);
            self.transcript.scroll_down(usize::MAX);
            return;
        }
        if self.quitting {
            self.composer.set_text(&message.text);
            return;
        }
        let tokens = codewhale_engine::estimate_tokens(&message.text);
        if let Some(gauge) = self.gauge.filter(|g| tokens > g.usable_input) {
            self.views.push(Box::new(ConfirmSend {
                text: message.text,
                tokens,
                usable_input: gauge.usable_input,
            }));
            self.mentions = message.attachments;
            return;
        }
        if !self.send_message(message.clone()) {
            self.composer.set_text(&message.text);
            self.mentions = message.attachments;
        }
        self.transcript.scroll_down(usize::MAX);
    }

    /// Starts a turn with `message`; false when no session is open to take it.
    pub(crate) fn send_message(&mut self, message: Outgoing) -> bool {
        let Outgoing { text, attachments } = message;
        let op = Op::UserInput { text: text.clone(), attachments: attachments.clone() };
        if self.submit(op).is_none() {
            return false;
        }
        let mut shown = text;
        for path in &attachments {
            shown.push_str(&format!("\n📎 {path}"));
        }
        self.transcript.push(UserCell { text: shown });
        self.lifecycle = Lifecycle::Streaming { thinking: false };
        true
    }

    /// Once the engine is idle: the first queued message starts the next turn (the others wait
    /// for it, as typed).
    pub(crate) fn send_queued(&mut self) {
        if self.lifecycle != Lifecycle::Idle {
            return;
        }
        if let Some(message) = self.queued.pop_front() {
            if !self.send_message(message.clone()) {
                self.composer.set_text(&message.text);
            }
        }
    }

    /// After the composer's text changed: the popups follow it.
    pub(crate) fn after_edit(&mut self) {
        self.completion = 0;
        self.popup_dismissed = false;
        self.refresh_mention();
    }

    /// Opens, updates or closes the `@` picker for the mention being typed.
    pub(crate) fn refresh_mention(&mut self) {
        let Some(query) = super::mentions::typed_mention(self.composer.before_cursor()) else {
            self.mention = None;
            return;
        };
        let query = query.to_owned();
        if self.files.is_none() && !self.effects.contains(&Effect::IndexFiles) {
            self.effects.push(Effect::IndexFiles);
        }
        let selected = self.mention.as_ref().filter(|m| m.query == query).map_or(0, |m| m.selected);
        let mut picker = Picker::new(&query, self.files.as_ref());
        picker.selected = selected.min(picker.results.len().saturating_sub(1));
        self.mention = Some(picker);
    }

    /// Puts the picker's choice in place of the mention being typed.
    pub(crate) fn accept_mention(&mut self) {
        let Some(picker) = self.mention.take() else { return };
        let Some(path) = picker.chosen().map(str::to_owned) else { return };
        self.composer.replace_before_cursor(picker.query.len() + 1, &format!("@{path} "));
        self.mentions.push(path);
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

    /// Whether the completion popup is showing (a slash command name is being typed).
    /// A recalled history entry opens none: Up and Down go on walking the history.
    pub(crate) fn popup_open(&self) -> bool {
        self.views.is_empty()
            && !self.popup_dismissed
            && !self.composer.is_recalled()
            && !slash::completions(&self.composer.text()).is_empty()
    }
}
