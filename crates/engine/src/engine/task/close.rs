//! How the engine task ends, after `Shutdown` or once the front end is gone: the window the
//! server stated is journaled, the background work of the session stops, the session closes.
//!
//! Invariants: a note already written is committed, never thrown away; a note or a branch
//! summary still being written is dropped; `ShutdownComplete` is the last event.

use super::{Task, START};
use codewhale_protocol::Event;

impl Task {
    /// Stops the session's background work, closes the session and says so last.
    pub(super) async fn close(self) {
        let Task { mut session, mut compactor, sink, shutdown, .. } = self;
        let start = START;
        // The background work of the session stops before it closes: a note already written is
        // committed, never thrown away; a note or a branch summary still being written is dropped
        // (it would be for a session nobody has open).
        let closing = shutdown.unwrap_or(start);
        // A window the server stated before the end is journaled (an `exec` that got the answer
        // leaves it for the next command).
        match session.settle_probe() {
            Ok(true) => sink.emit(closing, session.usage_event(None, None)),
            Ok(false) => {}
            Err(err) => sink.emit(closing, err.event()),
        }
        compactor.close(&mut session, &sink, closing).await;
        crate::branch_summary::close(&mut session);
        if let Err(err) = session.close().await {
            sink.emit(shutdown.unwrap_or(start), err.event());
        }
        sink.emit(shutdown.unwrap_or(start), Event::ShutdownComplete);
    }
}
