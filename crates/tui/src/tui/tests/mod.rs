//! Snapshot tests of every visible state (`turns`: conversation and lifecycle; `views`:
//! modal views, popup, layout): the app driven through its event channel with
//! scripted engine events and keys, drawn on a fixed-size `TestBackend`. Ops the app sends
//! are recorded and asserted on. Everything shown is scripted, so no id or path varies.

use std::sync::{Arc, Mutex};

use codewhale_protocol::{Event, EventMsg, Figure, Op, Source, SubmissionId};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use tokio::sync::mpsc;

use super::app::App;
use super::event::{AppEvent, OpSink};

#[derive(Clone, Default)]
pub(super) struct Recorder(Arc<Mutex<Vec<Op>>>);

impl OpSink for Recorder {
    fn submit(&mut self, op: Op) -> Option<SubmissionId> {
        let mut ops = self.0.lock().unwrap();
        ops.push(op);
        Some(SubmissionId(ops.len() as u64))
    }
}

pub(super) struct Harness {
    pub(super) app: App,
    pub(super) tx: mpsc::UnboundedSender<AppEvent>,
    pub(super) rx: mpsc::UnboundedReceiver<AppEvent>,
    pub(super) ops: Recorder,
    pub(super) terminal: Terminal<TestBackend>,
}

impl Harness {
    pub(super) fn new() -> Harness {
        let ops = Recorder::default();
        let (tx, rx) = mpsc::unbounded_channel();
        let terminal = Terminal::new(TestBackend::new(80, 20)).unwrap();
        let mut h =
            Harness { app: App::new(Box::new(ops.clone()), "gpt-test"), tx, rx, ops, terminal };
        h.engine(
            0,
            Event::SessionConfigured {
                session_id: "0193c0de-0000-7000-8000-000000000001".into(),
                model: "gpt-test".into(),
                path: "sessions/s.jsonl".into(),
                resumed: false,
                workspace: "project".into(),
                approval: Default::default(),
                instructions: Vec::new(),
                commands: Vec::new(),
            },
        );
        h
    }

    pub(super) fn engine(&mut self, id: u64, event: Event) {
        self.tx.send(AppEvent::Engine(EventMsg { id: SubmissionId(id), event })).unwrap();
        self.pump();
    }

    pub(super) fn send(&mut self, event: AppEvent) {
        self.tx.send(event).unwrap();
        self.pump();
    }

    pub(super) fn key(&mut self, code: KeyCode, modifiers: KeyModifiers) {
        self.send(AppEvent::Input(TermEvent::Key(KeyEvent::new(code, modifiers))));
    }

    pub(super) fn ctrl(&mut self, c: char) {
        self.key(KeyCode::Char(c), KeyModifiers::CONTROL);
    }

    pub(super) fn type_str(&mut self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c), KeyModifiers::NONE);
        }
    }

    pub(super) fn enter(&mut self) {
        self.key(KeyCode::Enter, KeyModifiers::NONE);
    }

    pub(super) fn pump(&mut self) {
        while let Ok(event) = self.rx.try_recv() {
            self.app.handle(event);
        }
    }

    pub(super) fn screen(&mut self) -> String {
        self.terminal.draw(|f| self.app.draw(f)).unwrap();
        self.terminal.backend().to_string()
    }

    /// The effects asked for since the last call, but the prompt-history writes.
    pub(super) fn effects(&mut self) -> Vec<super::event::Effect> {
        let mut effects = self.app.take_effects();
        effects.retain(|e| !matches!(e, super::event::Effect::RememberPrompt(_)));
        effects
    }

    pub(super) fn ops(&self) -> Vec<Op> {
        self.ops.0.lock().unwrap().clone()
    }

    pub(super) fn usage(&mut self, tokens: u64, source: Source) {
        self.engine(
            1,
            Event::Usage {
                reported_input: Some(tokens),
                output: Some(20),
                pressure: Figure { tokens, source },
                usable_input: 100_000,
                threshold: 80_000,
                window: 128_000,
                window_unverified: false,
                model: "gpt-test".into(),
            },
        );
    }
}

mod background;
mod composer;
mod extensions;
mod habits;
mod history;
mod images;
mod one_truth;
mod pickers;
mod plan;
mod screens;
mod subagents;
mod turns;
mod views;
