//! The UI's typed events and effects: everything that reaches the app goes through
//! [`AppEvent`]; everything the app wants done outside its own state is an [`Effect`] or an
//! [`Op`] handed to an [`OpSink`].
//!
//! Keeping both as plain enums (no boxed closures) is what lets tests script an engine, feed
//! keys and assert on exactly what the app asked for.

use codewhale_engine::compaction::report::ContextReport;
use codewhale_engine::protocol::{EventMsg, Op, SubmissionId};
use codewhale_engine::session::Resume;

use super::history::HistoryItem;
use super::views::SessionRow;

/// One input to the app, by domain.
#[derive(Debug, Clone)]
pub enum AppEvent {
    /// From the engine.
    Engine(EventMsg),
    /// From the terminal (keys, paste, resize).
    Input(crossterm::event::Event),
    /// The engine's event stream ended (it stopped or crashed).
    EngineGone,
    /// Results of effects the event loop carried out.
    ContextLoaded(Result<Box<ContextReport>, String>),
    SessionsLoaded {
        all: bool,
        result: Result<Vec<SessionRow>, String>,
    },
    AnchorsLoaded(Result<Vec<String>, String>),
    /// The conversation at HEAD: shown before the rest for a resumed session, or instead of
    /// everything after a HEAD move (`replace`).
    HistoryLoaded {
        replace: bool,
        result: Result<Vec<HistoryItem>, String>,
    },
    /// The checkpoint note of compaction `id`, read from the journal.
    NoteLoaded {
        id: String,
        note: Result<String, String>,
    },
    /// Opening another session failed; the current one stays.
    SessionOpenFailed(String),
}

/// Work outside the app's state, carried out by the event loop (I/O the app must not block
/// on, or engine lifecycle).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Build the context report of the current session (reads the journal read-only through
    /// the engine's report builder).
    LoadContext,
    /// List sessions: all of them, or those of this workspace.
    LoadSessions { all: bool },
    /// Read a resumed session's conversation so far (read-only) from its journal file.
    LoadHistory { path: String, replace: bool },
    /// Read the checkpoint note of compaction record `id` (read-only).
    LoadNote { id: String },
    /// Read the workspace's anchors.
    ListAnchors,
    /// Stop the current engine and open another session.
    OpenSession(Resume),
    /// Remember the answer about trusting the workspace's config, then open the session
    /// that waited for it.
    Trust { trusted: bool },
    /// Leave: the engine has stopped (or never started), restore the terminal.
    Exit,
}

/// Where ops go: the engine handle in the binary, a recorder in tests.
pub trait OpSink: Send {
    /// Queues `op`; `None` when no session is open to receive it.
    fn submit(&mut self, op: Op) -> Option<SubmissionId>;
}

impl OpSink for codewhale_engine::EngineHandle {
    fn submit(&mut self, op: Op) -> Option<SubmissionId> {
        Some(codewhale_engine::EngineHandle::submit(self, op))
    }
}

/// The sink before any session is open (`codewhale resume` showing its picker).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSession;

impl OpSink for NoSession {
    fn submit(&mut self, _op: Op) -> Option<SubmissionId> {
        None
    }
}
