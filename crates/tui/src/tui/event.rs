//! The UI's typed events and effects: everything that reaches the app goes through
//! [`AppEvent`]; everything the app wants done outside its own state is an [`Effect`] or an
//! [`Op`] handed to an [`OpSink`]. What the app shows about the session comes from engine
//! events alone: the app never reads a session file.
//!
//! Keeping both as plain enums (no boxed closures) is what lets tests script an engine, feed
//! keys and assert on exactly what the app asked for.

use codewhale_engine::offline::import::{Candidate, Tool};
use codewhale_engine::Resume;
use codewhale_protocol::{EventMsg, Op, SubmissionId};

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
    /// The session list the event loop read (through the engine's entry point).
    SessionsLoaded { all: bool, result: Result<Vec<SessionRow>, String> },
    /// Another session is being opened (off the UI task); `bytes` is its file's size, for
    /// the progress line. `None` when nothing is opening any more.
    SessionOpening(Option<u64>),
    /// Opening another session failed; the current one stays.
    SessionOpenFailed(String),
    /// The draft as the external editor left it (Ctrl+G), or why it could not run.
    DraftEdited(Result<String, String>),
    /// Ctrl+Z could not suspend: no shell with job control started Codewhale.
    SuspendUnavailable,
    /// A second passed (sent while something on screen counts time).
    Tick(std::time::Instant),
    /// The workspace's files, for the `@` picker.
    FilesIndexed(std::sync::Arc<Vec<String>>),
    /// The sessions another tool stored for this workspace (`/import`).
    ImportsLoaded { tool: Tool, result: Vec<Candidate> },
    /// An import finished: the new session's id and a one-line report, or why it failed.
    Imported(Result<(String, String), String>),
    /// Ctrl+V: the clipboard's image kept as a file, or why there is none.
    ClipboardImage(Result<std::path::PathBuf, String>),
    /// `/export FILE` wrote the file (the line that says where), or why it could not.
    Exported(Result<String, String>),
    /// The prefix that names the conversation `/clear` left, alone among the sessions; `None`
    /// when it was not kept (nothing was written to it).
    KeptNamed(Option<String>),
}

/// Work outside the app's state, carried out by the event loop (I/O the app must not block
/// on, or engine lifecycle).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// List sessions: all of them, or those of this workspace.
    LoadSessions { all: bool },
    /// List the sessions `tool` stored for this workspace (`/import`).
    LoadImports(Tool),
    /// Import this session file as a new session (off the UI task).
    Import(std::path::PathBuf),
    /// Keep a sent prompt in the workspace's history file.
    RememberPrompt(String),
    /// Edit this draft in `$VISUAL`/`$EDITOR` (the terminal is handed over meanwhile).
    EditDraft(String),
    /// Ctrl+Z: give the terminal back and stop until `fg`.
    Suspend,
    /// Index the workspace's files for the `@` picker (once, off the UI task).
    IndexFiles,
    /// Put this text on the system clipboard (OSC 52).
    Copy(String),
    /// Ctrl+V: read the clipboard's image (off the UI task).
    PasteImage,
    /// Turn mouse capture on or off.
    MouseCapture(bool),
    /// Write these bytes to the terminal: a notification or the bell.
    Notify(String),
    /// Open another session (off the UI task); once it is open, the current engine stops.
    OpenSession(Resume),
    /// Remember the answer about trusting the workspace's config, then open the session
    /// that waited for it.
    Trust { trusted: bool },
    /// `/trust`: ask the workspace-settings question again (after a "no", say).
    AskTrust,
    /// Write `/export`'s text to `path` as typed (relative to the workspace, `~/` the home
    /// directory); `what` says how much it holds.
    WriteExport { path: String, text: String, what: String },
    /// Work out the shortest prefix of session `old` that no other session (`new` included,
    /// which may not be on disk yet) shares, for the line that says how to come back to it.
    NameKept { old: String, new: String },
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
